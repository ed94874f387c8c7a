/**
 * `web_search` and `web_extract`: one normalised shape over Tavily, Exa, Firecrawl, Parallel and
 * the keyless fetch backend. Every URL passes the SSRF guard and the website policy before any
 * backend sees it (and again at the final URL when a backend reports a redirect); each URL
 * succeeds or fails on its own; nothing throws out of a tool.
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { tool, type StructuredTool } from "@langchain/core/tools";
import { z } from "zod";
import { WebsitePolicy, type PolicyBlock } from "../src/guards/policy.js";
import { createWebsitePolicy, type WebPolicyOptions } from "../src/web/robots.js";
import { checkUrlSafety, type UrlSafetyOptions } from "../src/guards/url.js";
import { urlKey, type ExtractedPage } from "../src/web/common.js";
import { createWebDebugLog, type DebugUrlRecord, type WebDebugOptions } from "../src/web/debug.js";
import { stripDataImages } from "../src/web/htmlToMarkdown.js";
import { scrubSecrets } from "../src/web/retry.js";
import { markWorkbenchTool } from "../src/context/thread.js";
import {
  buildBackend,
  configuredSecrets,
  selectBackend,
  type Env,
  type WebBackendsConfig,
  type WebTask,
} from "../src/web/select.js";
import type { SummarizeOptions, SummarizeResult } from "../src/web/summarize.js";
import type { WebBackend, WebBackendName } from "../src/web/types.js";

/** Summarisation thresholds; the model, URL, signal and progress are supplied per call. */
export type SummaryTuning = Omit<SummarizeOptions, "model" | "onProgress" | "signal" | "url">;

/** Options of {@link createWebTools}. */
export interface WebToolsOptions {
  /**
   * Backend for `web_search`: a ready {@link WebBackend}, or a name. Default: env
   * `WEB_SEARCH_BACKEND`, else the first vendor with credentials (firecrawl > parallel > tavily > exa).
   */
  searchBackend?: Exclude<WebBackendName, "fetch"> | WebBackend;
  /** Backend for `web_extract`, chosen like `searchBackend` (env `WEB_EXTRACT_BACKEND`), else the keyless `fetch`. */
  extractBackend?: WebBackendName | WebBackend;
  /** Per-backend keys, base URLs, timeouts, retries. Unset keys/URLs come from the environment. */
  backends?: WebBackendsConfig;
  /** Environment to read keys and switches from. Default `process.env` (read once, here). */
  env?: Env;
  /** SSRF guard options for every URL (`allowPrivate`, `allowHosts`). Default private off (env `WORKBENCH_ALLOW_PRIVATE_URLS`). */
  urlSafety?: UrlSafetyOptions;
  /** Website policy (blocklist, robots.txt) or its options. Default: no blocklist, robots.txt advisory. */
  policy?: WebsitePolicy | WebPolicyOptions;
  /** LLM used to summarise long pages; `false` disables. Default: `summarizerFromEnv()` (env `WORKBENCH_SUMMARY_MODEL`). */
  summarizer?: BaseChatModel | false;
  /** Summarisation thresholds and limits (see `summarizeContent`). */
  summary?: SummaryTuning;
  /** Debug log (`WEB_TOOLS_DEBUG=true` → `logs/web_tools_debug_<uuid>.json`). */
  debug?: WebDebugOptions;
  /** Most URLs one `web_extract` call accepts. Default 10, at most 50. */
  maxUrls?: number;
  /**
   * Cap of the raw (unsummarised) content per URL; longer pages are cut with a warning. Default
   * 100,000 characters, so one page cannot flood the context.
   */
  maxContentChars?: number;
}

/** One `web_extract` result as the model sees it. */
export interface WebExtractToolResult {
  url: string;
  title: string;
  content: string;
  error: string | null;
  blocked_by_policy?: PolicyBlock;
  summarized?: boolean;
  original_chars?: number;
  /** original_chars / returned characters, when summarised (20 = twenty times smaller). */
  compression_ratio?: number;
  warning?: string;
}

/** Custom stream event, visible with `streamMode: "custom"`. */
export interface WebProgressEvent {
  type: "web_progress";
  tool: "web_search" | "web_extract";
  url: string;
  stage: "checking" | "blocked" | "fetching" | "fetched" | "summarizing" | "done" | "failed";
  done: number;
  total: number;
}

const MAX_SEARCH_RESULTS = 20;
const DEFAULT_SEARCH_RESULTS = 5;

const optionsSchema = z.object({
  searchBackend: z.union([z.string(), z.object({ name: z.string() }).passthrough()]).optional(),
  extractBackend: z.union([z.string(), z.object({ name: z.string() }).passthrough()]).optional(),
  backends: z.record(z.string(), z.unknown()).optional(),
  env: z.record(z.string(), z.string().optional()).optional(),
  urlSafety: z.record(z.string(), z.unknown()).optional(),
  policy: z.unknown().optional(),
  summarizer: z.unknown().optional(),
  summary: z.record(z.string(), z.unknown()).optional(),
  debug: z.record(z.string(), z.unknown()).optional(),
  maxUrls: z.number().int().min(1).max(50).optional(),
  maxContentChars: z.number().int().min(1_000).optional(),
});

type Writer = ((chunk: unknown) => void) | null | undefined;

interface CallContext {
  writer: Writer;
  signal?: AbortSignal;
}

function contextOf(runtime: unknown): CallContext {
  const r = (runtime ?? {}) as { writer?: Writer; signal?: AbortSignal; config?: { writer?: Writer; signal?: AbortSignal } };
  return { writer: r.writer ?? r.config?.writer, signal: r.signal ?? r.config?.signal };
}

function emit(ctx: CallContext, event: WebProgressEvent): void {
  try {
    ctx.writer?.(event);
  } catch {
    // A broken stream consumer must not fail the tool.
  }
}

/** Resolves backends lazily (first use) so a missing key surfaces as a tool error, not at startup. */
class BackendSlot {
  private backend?: WebBackend;
  private reason = "";
  constructor(
    private readonly task: WebTask,
    private readonly choice: string | WebBackend | undefined,
    private readonly build: (name: WebBackendName) => WebBackend,
    private readonly env: Env,
  ) {}

  get(): { backend: WebBackend; reason: string } | { error: string } {
    if (this.backend) return { backend: this.backend, reason: this.reason };
    if (this.choice && typeof this.choice === "object") {
      this.backend = this.choice;
      this.reason = `${this.task}Backend option`;
      return { backend: this.backend, reason: this.reason };
    }
    const selection = selectBackend(this.task, { configured: this.choice, env: this.env });
    if ("error" in selection) return selection;
    try {
      this.backend = this.build(selection.name);
      this.reason = selection.reason;
      return { backend: this.backend, reason: this.reason };
    } catch (err) {
      return { error: `The ${selection.name} backend is not usable: ${err instanceof Error ? err.message : String(err)}` };
    }
  }
}

const searchInput = z.object({
  query: z.string().describe("What to look for, in plain words, e.g. `langgraph sqlite checkpointer`. Not a URL."),
  limit: z
    .number()
    .optional()
    .describe(`How many results to return: an integer from 1 to ${MAX_SEARCH_RESULTS}. Default ${DEFAULT_SEARCH_RESULTS}.`),
});

/**
 * Builds `web_search` and `web_extract`. Backends, guards and the summariser are resolved once,
 * here; the environment is read once (pass `env` to isolate it).
 */
export function createWebTools(options: WebToolsOptions = {}): StructuredTool[] {
  optionsSchema.parse(options);
  const env: Env = options.env ?? process.env;
  const config = options.backends ?? {};
  const maxUrls = options.maxUrls ?? 10;
  const secrets = configuredSecrets(config, env);
  const urlSafety: UrlSafetyOptions = {
    ...options.urlSafety,
    allowPrivate: options.urlSafety?.allowPrivate ?? env.WORKBENCH_ALLOW_PRIVATE_URLS?.trim().toLowerCase() === "true",
  };
  const policy =
    options.policy instanceof WebsitePolicy
      ? options.policy
      : createWebsitePolicy({ urlSafety, ...(options.policy as WebPolicyOptions | undefined) });
  const build = (name: WebBackendName) => buildBackend(name, config, env, { urlSafety, policy });
  const searchSlot = new BackendSlot("search", options.searchBackend, build, env);
  const extractSlot = new BackendSlot("extract", options.extractBackend, build, env);
  // A summariser from the environment pulls in @langchain/openai (seconds to import): build it on first use.
  let summarizer: Promise<Summarizer> | undefined;
  const loadSummarizer = () =>
    (summarizer ??= import("../src/web/summarize.js").then(async (m) => ({
      model: options.summarizer === false ? undefined : (options.summarizer ?? (await m.summarizerFromEnv(env))),
      summarize: m.summarizeContent,
    })));
  const debug = createWebDebugLog(options.debug ?? {}, env, secrets);
  const deps: ExtractDeps = {
    urlSafety,
    policy,
    maxContentChars: options.maxContentChars ?? 100_000,
    summarizer: options.summarizer === false ? undefined : loadSummarizer,
    summary: options.summary ?? {},
    secrets,
  };

  const webSearch = tool(
    neverThrows(secrets, async (input: z.infer<typeof searchInput>, runtime: unknown) => {
      const started = Date.now();
      const slot = searchSlot.get();
      const backendName = "backend" in slot ? slot.backend.name : null;
      const result = await runSearch(input, slot, contextOf(runtime), secrets);
      await debug?.record({
        tool: "web_search",
        started_at: new Date(started).toISOString(),
        duration_ms: Date.now() - started,
        parameters: { query: input.query, limit: input.limit },
        backend: backendName,
        backend_reason: "reason" in slot ? slot.reason : undefined,
        result_count: "data" in result ? result.data.web.length : 0,
        error: "error" in result ? result.error : undefined,
      });
      return JSON.stringify(result);
    }),
    {
      name: "web_search",
      description:
        "Search the web. Returns JSON {success, data: {web: [{title, url, description, position}]}, backend}. " +
        "Use web_extract afterwards to read the pages you need.",
      schema: searchInput,
    },
  );

  const extractInput = z.object({
    urls: z
      .array(z.string())
      .describe(`1 to ${maxUrls} absolute http(s) URLs to read, e.g. ["https://example.com/docs"]. Private and local addresses are refused.`),
    summarize: z
      .boolean()
      .optional()
      .describe("Summarise long pages with the configured model (default: true when a summariser is configured). Set false for the raw text."),
  });

  const webExtract = tool(
    neverThrows(secrets, async (input: z.infer<typeof extractInput>, runtime: unknown) => {
      const started = Date.now();
      const slot = extractSlot.get();
      const ctx = contextOf(runtime);
      const { output, records } = await runExtract(input, maxUrls, slot, deps, ctx);
      await debug?.record({
        tool: "web_extract",
        started_at: new Date(started).toISOString(),
        duration_ms: Date.now() - started,
        parameters: { urls: input.urls, summarize: input.summarize },
        backend: "backend" in slot ? slot.backend.name : null,
        backend_reason: "reason" in slot ? slot.reason : undefined,
        result_count: records.length,
        urls: records,
        error: "error" in output ? output.error : undefined,
      });
      return JSON.stringify(output);
    }),
    {
      name: "web_extract",
      description:
        "Read web pages as Markdown. Returns JSON {results: [{url, title, content, error, ...}], backend}; " +
        "each URL succeeds or fails on its own (see its `error`). Long pages may come back summarised.",
      schema: extractInput,
    },
  );

  return [markWorkbenchTool(webSearch), markWorkbenchTool(webExtract)];
}

type Slot = ReturnType<BackendSlot["get"]>;

/** Last line of defence: an unexpected bug becomes an error result, never an exception in the agent loop. */
function neverThrows<I>(secrets: string[], fn: (input: I, runtime: unknown) => Promise<string>) {
  return async (input: I, runtime: unknown): Promise<string> => {
    try {
      return await fn(input, runtime);
    } catch (err) {
      const message = scrubSecrets(err instanceof Error ? err.message : String(err), secrets).split("\n")[0];
      return JSON.stringify({ success: false, error: `internal error: ${message}. Retry the call; if it persists, report it.` });
    }
  };
}

async function runSearch(
  input: { query: string; limit?: number },
  slot: Slot,
  ctx: CallContext,
  secrets: string[],
): Promise<{ success: true; data: { web: unknown[] }; backend: string } | { success: false; error: string; backend?: string }> {
  const query = typeof input.query === "string" ? input.query.trim() : "";
  if (!query) return { success: false, error: "query is empty: pass the words to search for, e.g. {\"query\": \"node 20 fetch timeout\"}" };
  const limit = input.limit ?? DEFAULT_SEARCH_RESULTS;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_RESULTS) {
    return { success: false, error: `limit must be an integer from 1 to ${MAX_SEARCH_RESULTS} (got ${input.limit}); omit it for ${DEFAULT_SEARCH_RESULTS}` };
  }
  if ("error" in slot) return { success: false, error: slot.error };
  const { backend } = slot;
  if (!backend.search) {
    return { success: false, error: `The ${backend.name} backend cannot search; configure a vendor backend for web_search`, backend: backend.name };
  }
  emit(ctx, { type: "web_progress", tool: "web_search", url: "", stage: "fetching", done: 0, total: 1 });
  try {
    const web = await backend.search(query, { limit, signal: ctx.signal });
    emit(ctx, { type: "web_progress", tool: "web_search", url: "", stage: "done", done: 1, total: 1 });
    return { success: true, data: { web }, backend: backend.name };
  } catch (err) {
    emit(ctx, { type: "web_progress", tool: "web_search", url: "", stage: "failed", done: 1, total: 1 });
    const message = scrubSecrets(err instanceof Error ? err.message : String(err), secrets).split("\n")[0];
    return { success: false, error: `${message}. Try again later or with a different query.`, backend: backend.name };
  }
}

interface Summarizer {
  model: BaseChatModel | undefined;
  summarize: (content: string, opts: SummarizeOptions) => Promise<SummarizeResult>;
}

interface ExtractDeps {
  urlSafety: UrlSafetyOptions;
  policy: WebsitePolicy;
  maxContentChars: number;
  /** Absent when summarisation is disabled (`summarizer: false`). */
  summarizer?: () => Promise<Summarizer>;
  summary: SummaryTuning;
  secrets: string[];
}

type Verdict = { ok: true; warning?: string } | { ok: false; error: string; blocked_by_policy?: PolicyBlock };

/** URL safety, then the website policy. Never throws. */
async function vet(url: string, deps: ExtractDeps): Promise<Verdict> {
  try {
    const safety = await checkUrlSafety(url, deps.urlSafety);
    if (!safety.safe) {
      return { ok: false, error: `URL refused: ${safety.reason ?? "not a public http(s) address"}. Only public http(s) URLs can be read.` };
    }
    const decision = await deps.policy.check(url);
    if (!decision.allowed) {
      const b = decision.blocked_by_policy;
      return {
        ok: false,
        error: b ? `blocked by website policy: ${b.host} matches "${b.rule}" (${b.source})` : "blocked by website policy",
        blocked_by_policy: b,
      };
    }
    return { ok: true, warning: decision.warning };
  } catch (err) {
    return { ok: false, error: `URL could not be checked: ${err instanceof Error ? err.message : String(err)}` };
  }
}

function joinWarnings(...parts: Array<string | undefined>): string | undefined {
  const kept = parts.filter((p): p is string => Boolean(p));
  return kept.length ? kept.join("; ") : undefined;
}

async function runExtract(
  input: { urls: string[]; summarize?: boolean },
  maxUrls: number,
  slot: Slot,
  deps: ExtractDeps,
  ctx: CallContext,
): Promise<{ output: { results: WebExtractToolResult[]; backend: string } | { success: false; error: string }; records: DebugUrlRecord[] }> {
  const urls = Array.isArray(input.urls) ? input.urls.map((u) => (typeof u === "string" ? u.trim() : "")) : [];
  if (urls.length < 1 || urls.length > maxUrls) {
    const error = `urls must hold 1 to ${maxUrls} URLs (got ${urls.length}); split longer lists into several web_extract calls`;
    return { output: { success: false, error }, records: [] };
  }
  if ("error" in slot) return { output: { success: false, error: slot.error }, records: [] };
  const { backend } = slot;
  const total = urls.length;
  let done = 0;
  const progress = (url: string, stage: WebProgressEvent["stage"]) =>
    emit(ctx, { type: "web_progress", tool: "web_extract", url, stage, done, total });
  const finish = (url: string, stage: "done" | "failed" | "blocked") => {
    done += 1;
    progress(url, stage);
  };

  const verdicts = await Promise.all(
    urls.map(async (url) => {
      progress(url, "checking");
      const verdict = await vet(url, deps);
      if (!verdict.ok) finish(url, "blocked");
      return verdict;
    }),
  );
  const allowed = urls.filter((_, i) => verdicts[i]!.ok);
  for (const url of allowed) progress(url, "fetching");

  let pages: ExtractedPage[] = [];
  if (allowed.length > 0) {
    try {
      pages = (await backend.extract(allowed, { signal: ctx.signal, onUrlDone: (url) => progress(url, "fetched") })) as ExtractedPage[];
      if (!Array.isArray(pages)) throw new Error("the backend returned no result list");
    } catch (err) {
      const message = scrubSecrets(err instanceof Error ? err.message : String(err), deps.secrets).split("\n")[0]!;
      pages = allowed.map((url) => ({ url, title: "", content: "", error: `${backend.name} failed: ${message}` }));
    }
  }

  let next = 0;
  const wantSummary = input.summarize !== false;
  const results = await Promise.all(
    urls.map(async (url, i): Promise<{ result: WebExtractToolResult; raw: number }> => {
      const verdict = verdicts[i]!;
      if (!verdict.ok) {
        const result: WebExtractToolResult = { url, title: "", content: "", error: verdict.error };
        if (verdict.blocked_by_policy) result.blocked_by_policy = verdict.blocked_by_policy;
        return { result, raw: 0 };
      }
      const page = pages[next++] ?? { url, title: "", content: "", error: `${backend.name} returned no result for this URL` };
      const result = await finishPage(url, page, verdict.warning, wantSummary, input.summarize === true, deps, ctx.signal, (stage) =>
        progress(url, stage),
      );
      finish(url, result.result.error ? "failed" : "done");
      return result;
    }),
  );

  const records: DebugUrlRecord[] = results.map(({ result, raw }) => ({
    url: result.url,
    error: result.error,
    blocked_by_policy: result.blocked_by_policy,
    raw_chars: raw,
    returned_chars: result.content.length,
    summarized: result.summarized,
    compression_ratio: result.compression_ratio,
  }));
  return { output: { results: results.map((r) => r.result), backend: backend.name }, records };
}

/** Redirect re-check, base64 stripping, summarisation. */
async function finishPage(
  url: string,
  page: ExtractedPage,
  warning: string | undefined,
  wantSummary: boolean,
  askedForSummary: boolean,
  deps: ExtractDeps,
  signal: AbortSignal | undefined,
  progress: (stage: "summarizing") => void,
): Promise<{ result: WebExtractToolResult; raw: number }> {
  const title = page.title ?? "";
  if (page.error) return { result: { url, title, content: "", error: page.error, ...(warning ? { warning } : {}) }, raw: 0 };

  if (page.finalUrl && urlKey(page.finalUrl) !== urlKey(url)) {
    const verdict = await vet(page.finalUrl, deps);
    if (!verdict.ok) {
      const result: WebExtractToolResult = { url, title: "", content: "", error: `redirected to ${page.finalUrl}, which is refused: ${verdict.error}` };
      if (verdict.blocked_by_policy) result.blocked_by_policy = verdict.blocked_by_policy;
      return { result, raw: 0 };
    }
    warning = joinWarnings(warning, verdict.warning);
  }

  const content = stripDataImages(page.content ?? "");
  const base: WebExtractToolResult = { url, title, content, error: null };
  const summarizer = wantSummary && deps.summarizer ? await deps.summarizer().catch(() => undefined) : undefined;
  if (!summarizer?.model) {
    if (askedForSummary) {
      warning = joinWarnings(warning, "no summariser is configured (set WORKBENCH_SUMMARY_MODEL or pass summarizer); raw content returned");
    }
    if (content.length > deps.maxContentChars) {
      base.content = content.slice(0, deps.maxContentChars);
      base.original_chars = content.length;
      warning = joinWarnings(
        warning,
        `content cut to the first ${deps.maxContentChars} of ${content.length} characters; read a more specific page or enable summarisation`,
      );
    }
    return { result: warning ? { ...base, warning } : base, raw: content.length };
  }
  if (content.length >= (deps.summary.minChars ?? 5_000)) progress("summarizing");
  let summary: SummarizeResult;
  try {
    summary = await summarizer.summarize(content, { ...deps.summary, model: summarizer.model, url, signal });
  } catch (err) {
    // summarizeContent only throws on bad options; the page still goes back, raw.
    summary = { content, summarized: false, original_chars: content.length, note: `not summarised: ${err instanceof Error ? err.message : String(err)}` };
  }
  const result: WebExtractToolResult = { ...base, content: summary.content };
  if (summary.summarized) {
    result.summarized = true;
    result.original_chars = summary.original_chars;
    if (summary.compression_ratio !== undefined) result.compression_ratio = Number(summary.compression_ratio.toFixed(2));
  } else if (summary.content.length !== content.length) {
    result.original_chars = summary.original_chars;
  }
  warning = joinWarnings(warning, summary.note);
  if (warning) result.warning = warning;
  return { result, raw: content.length };
}
