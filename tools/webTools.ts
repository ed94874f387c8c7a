/**
 * `web_search` and `web_extract`: one normalised shape over Tavily, Exa, Firecrawl, Parallel and
 * the keyless fetch backend. Every URL passes the SSRF guard and the website policy before any
 * backend sees it (and again at the final URL when a backend reports a redirect); each URL
 * succeeds or fails on its own; nothing throws out of a tool.
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { tool, type StructuredTool } from "@langchain/core/tools";
import { z } from "zod";
import { requireInstalled } from "../src/optional.js";
import { WebsitePolicy, type PolicyBlock } from "../src/guards/policy.js";
import { createWebsitePolicy, type WebPolicyOptions } from "../src/web/robots.js";
import { checkUrlSafety, type UrlSafetyOptions } from "../src/guards/url.js";
import { urlKey, type ExtractedPage, type VendorOptions } from "../src/web/common.js";
import type { FetchBackendOptions } from "../src/web/fetchBackend.js";
import type { FirecrawlBackendOptions } from "../src/web/vendors/firecrawl.js";
import type { ParallelBackendOptions } from "../src/web/vendors/parallel.js";
import { createWebDebugLog, type DebugCallRecord, type DebugUrlRecord, type WebDebugOptions } from "../src/web/debug.js";
import { stripDataImages } from "../src/web/htmlToMarkdown.js";
import { scrubSecrets, type RetryPolicy } from "../src/web/retry.js";
import type { ToolMessage } from "@langchain/core/messages";
import { markWorkbenchTool, toolAnswer, toolError } from "./toolResult.js";
import {
  BACKEND_PACKAGE,
  buildBackend,
  configuredSecrets,
  selectBackend,
  setupHint,
  type Env,
  type WebBackendsConfig,
  type WebTask,
} from "../src/web/select.js";
import type { SummarizeOptions, SummarizeResult } from "../src/web/summarize.js";
import type { WebBackend, WebBackendName } from "../src/web/types.js";
import { checkedAs, parseOptions, strictKeys } from "../src/options.js";

/** Summarisation thresholds; the model, URL, signal and progress are supplied per call. */
export type SummaryTuning = Omit<SummarizeOptions, "model" | "onProgress" | "signal" | "url">;

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

const backendChoice = <Name extends WebBackendName>() =>
  z.union([
    z.custom<WebBackend>((v) => typeof v === "object" && v !== null && typeof (v as WebBackend).extract === "function", "a WebBackend object"),
    // Names are checked by chooseBackend, whose message quotes the bad name and its source (typed
    // as the names, so the option's type is the schema's).
    z.string() as unknown as z.ZodType<Name, Name>,
  ]);

// The nested options objects: their keys are checked here (an unknown key throws at build time),
// their values by the code that reads them (backends, policy, summariser, debug log); each is
// typed as the options interface it checks the keys of.
const urlSafetyKeys = strictKeys<UrlSafetyOptions>({ allowPrivate: true, allowHosts: true, lookup: true });
const vendorKeys = { apiKey: true, baseUrl: true, timeoutMs: true, retry: strictKeys<RetryPolicy>({ attempts: true, baseDelayMs: true, maxDelayMs: true }) } as const;
const backendsKeys = strictKeys<WebBackendsConfig>({
  firecrawl: strictKeys<FirecrawlBackendOptions>({ ...vendorKeys, concurrency: true }),
  parallel: strictKeys<ParallelBackendOptions>({ ...vendorKeys, mode: true }),
  tavily: strictKeys<VendorOptions>(vendorKeys),
  exa: strictKeys<VendorOptions>(vendorKeys),
  fetch: strictKeys<FetchBackendOptions>({
    maxBytes: true,
    timeoutMs: true,
    maxRedirects: true,
    userAgent: true,
    urlSafety: urlSafetyKeys,
    policy: true,
    concurrency: true,
    htmlPool: true,
  }),
});
const policyKeys = strictKeys<WebPolicyOptions>({
  blocklist: strictKeys<NonNullable<WebPolicyOptions["blocklist"]>>({ domains: true, files: true }),
  respectRobots: true,
  robotsTtlMs: true,
  userAgent: true,
  fetchRobots: true,
  robotsForVendors: true,
  urlSafety: urlSafetyKeys,
  robotsTimeoutMs: true,
});
const summaryKeys = strictKeys<SummarizeOptions>({
  model: true,
  minChars: true,
  chunkChars: true,
  chunkAbove: true,
  refuseAbove: true,
  maxOutputChars: true,
  concurrency: true,
  retries: true,
  retryDelayMs: true,
  url: true,
  signal: true,
  onProgress: true,
});

/** The options schema of {@link createWebTools}: strict at every level (an unknown key throws, naming the accepted ones). */
export const webToolsOptionsSchema = z.strictObject({
  /**
   * Backend for `web_search`: a ready {@link WebBackend}, a name, or `false` to leave web_search
   * out. Default: env `WEB_SEARCH_BACKEND`, else the first vendor with credentials (firecrawl >
   * parallel > tavily > exa), else web_search is left out with one warning at build time. A
   * backend named here or in the env switch must have its key: building throws otherwise.
   */
  searchBackend: z.union([z.literal(false), backendChoice<Exclude<WebBackendName, "fetch">>()]).optional(),
  /** Backend for `web_extract`, chosen like `searchBackend` (env `WEB_EXTRACT_BACKEND`), else the keyless `fetch`. */
  extractBackend: backendChoice<WebBackendName>().optional(),
  /** Per-backend keys, base URLs, timeouts, retries. Unset keys/URLs come from the environment. */
  backends: backendsKeys.optional(),
  /** Environment to read keys and switches from. Default `process.env` (read once, here). */
  env: checkedAs<Env>(z.record(z.string(), z.string().optional())).optional(),
  /** SSRF guard options for every URL (`allowPrivate`, `allowHosts`). Default private off (env `WORKBENCH_ALLOW_PRIVATE_URLS`). */
  urlSafety: urlSafetyKeys.optional(),
  /** Website policy (blocklist, robots.txt) or its options. Default: no blocklist, robots.txt advisory. */
  policy: z.union([z.instanceof(WebsitePolicy), policyKeys]).optional(),
  /** LLM used to summarise long pages; `false` disables. Default: `summarizerFromEnv()` (env `WORKBENCH_SUMMARY_MODEL`). */
  summarizer: z.union([z.literal(false), z.custom<BaseChatModel>((v) => typeof v === "object" && v !== null, "a chat model")]).optional(),
  /** Summarisation thresholds and limits (see `summarizeContent`). */
  summary: checkedAs<SummaryTuning>(summaryKeys).optional(),
  /** Debug log (`WEB_TOOLS_DEBUG=true` → `logs/web_tools_debug_<uuid>.json`). */
  debug: strictKeys<WebDebugOptions>({ enabled: true, dir: true, maxCalls: true }).optional(),
  /** Most URLs one `web_extract` call accepts. Default 10, at most 50. */
  maxUrls: z.number().int().min(1).max(50).optional(),
  /**
   * Cap of the raw (unsummarised) content per URL; longer pages are cut with a warning. Default
   * 100,000 characters, so one page cannot flood the context.
   */
  maxContentChars: z.number().int().min(1_000).optional(),
});

/** Options of {@link createWebTools} (the schema's input). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name for the schema's input type (tooltips, errors and docs/api.md show it); its members are the schema's
export interface WebToolsOptions extends z.input<typeof webToolsOptionsSchema> {}

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

const searchInput = z.object({
  query: z.string().describe("What to look for, in plain words, e.g. `langgraph sqlite checkpointer`. Not a URL."),
  limit: z
    .number()
    .optional()
    .describe(`How many results to return: an integer from 1 to ${MAX_SEARCH_RESULTS}. Default ${DEFAULT_SEARCH_RESULTS}.`),
});

/** What both web tools share, resolved once per {@link createWebTools} call. */
interface WebSetup {
  env: Env;
  config: WebBackendsConfig;
  urlSafety: UrlSafetyOptions;
  policy: WebsitePolicy;
  secrets: string[];
  maxUrls: number;
  debug: ReturnType<typeof createWebDebugLog>;
  deps: ExtractDeps;
}

function resolveWebSetup(options: WebToolsOptions): WebSetup {
  const env: Env = options.env ?? process.env;
  const config = options.backends ?? {};
  const secrets = configuredSecrets(config, env);
  // Optional peers: a configured feature whose package is missing is the operator's error, raised here.
  if (options.summarizer === undefined && env.WORKBENCH_SUMMARY_MODEL?.trim()) {
    requireInstalled("@langchain/openai", "WORKBENCH_SUMMARY_MODEL (the summariser from the environment)");
  }
  for (const [task, choice] of [
    ["search", options.searchBackend],
    ["extract", options.extractBackend],
  ] as const) {
    const selected = typeof choice === "object" || choice === false ? undefined : selectBackend(task, { configured: choice, env });
    if (selected && "name" in selected && selected.name !== "fetch") {
      requireInstalled(BACKEND_PACKAGE[selected.name], `The ${selected.name} web backend (${selected.reason})`);
    }
  }
  const urlSafety: UrlSafetyOptions = {
    ...options.urlSafety,
    allowPrivate: options.urlSafety?.allowPrivate ?? env.WORKBENCH_ALLOW_PRIVATE_URLS?.trim().toLowerCase() === "true",
  };
  const policy = options.policy instanceof WebsitePolicy ? options.policy : createWebsitePolicy({ urlSafety, ...options.policy });
  return {
    env,
    config,
    urlSafety,
    policy,
    secrets,
    maxUrls: options.maxUrls ?? 10,
    debug: createWebDebugLog(options.debug ?? {}, env, secrets),
    deps: {
      urlSafety,
      policy,
      maxContentChars: options.maxContentChars ?? 100_000,
      summarizer: options.summarizer === false ? undefined : summarizerLoader(options.summarizer, env),
      summary: options.summary ?? {},
      secrets,
    },
  };
}

/** A summariser from the environment pulls in @langchain/openai (seconds to import): built on first use. */
function summarizerLoader(given: BaseChatModel | undefined, env: Env): () => Promise<Summarizer> {
  let summarizer: Promise<Summarizer> | undefined;
  return () =>
    (summarizer ??= import("../src/web/summarize.js").then(async (m) => ({
      model: given ?? (await m.summarizerFromEnv(env)),
      summarize: m.summarizeContent,
    })));
}

/**
 * The backend for `task`, decided at build time. An unknown name, or a backend the operator named
 * (option or env switch) without its key, throws a TypeError for the operator; `undefined` means
 * nothing is configured for search (the caller leaves web_search out).
 */
function chooseBackend(task: WebTask, choice: string | WebBackend | undefined, setup: WebSetup): { backend: WebBackend; reason: string } | undefined {
  if (choice && typeof choice === "object") return { backend: choice, reason: `${task}Backend option` };
  const selection = selectBackend(task, { configured: choice, env: setup.env });
  if ("error" in selection) {
    if (task === "search" && !/^Unknown/.test(selection.error)) return undefined;
    throw new TypeError(`createWebTools: ${selection.error}`);
  }
  try {
    return { backend: buildBackend(selection.name, setup.config, setup.env, { urlSafety: setup.urlSafety, policy: setup.policy }), reason: selection.reason };
  } catch (err) {
    throw new TypeError(`createWebTools: the ${selection.name} backend (${selection.reason}) is not usable: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * Builds `web_search` and `web_extract`. Backends, guards and the summariser are resolved once,
 * here; the environment is read once (pass `env` to isolate it). Configuration mistakes throw
 * here, for the operator; with no search backend configured, web_search is left out (one
 * warning) and web_extract uses the keyless fetch backend.
 */
export function createWebTools(options: WebToolsOptions = {}): StructuredTool[] {
  parseOptions(webToolsOptionsSchema, options ?? {}, "Invalid createWebTools options");
  const setup = resolveWebSetup(options ?? {});
  const tools: StructuredTool[] = [];
  if (options.searchBackend !== false) {
    const search = chooseBackend("search", options.searchBackend, setup);
    if (search) tools.push(webSearchTool(setup, search));
    else console.warn(`langgraph-workbench: web_search is off: no web search backend is configured. To enable it, ${setupHint("search")}; pass searchBackend: false to silence this.`);
  }
  tools.push(webExtractTool(setup, chooseBackend("extract", options.extractBackend, setup)!));
  return tools;
}

type Chosen = { backend: WebBackend; reason: string };

/** One call in the debug log (when it is on): what every tool's entry has, then the tool's own `outcome` fields. */
function recordCall(
  setup: WebSetup,
  tool: string,
  started: number,
  chosen: Chosen,
  parameters: DebugCallRecord["parameters"],
  outcome: Pick<DebugCallRecord, "result_count" | "urls" | "error">,
): Promise<void> | undefined {
  return setup.debug?.record({
    tool,
    started_at: new Date(started).toISOString(),
    duration_ms: Date.now() - started,
    parameters,
    backend: chosen.backend.name,
    backend_reason: chosen.reason,
    ...outcome,
  });
}

function webSearchTool(setup: WebSetup, chosen: Chosen): StructuredTool {
  const webSearch = tool(
    neverThrows("web_search", setup.secrets, async (input: z.infer<typeof searchInput>, runtime: unknown) => {
      const started = Date.now();
      const result = await runSearch(input, chosen.backend, contextOf(runtime), setup.secrets);
      await recordCall(setup, "web_search", started, chosen, { query: input.query, limit: input.limit }, {
        result_count: "data" in result ? result.data.web.length : 0,
        error: "error" in result ? result.error : undefined,
      });
      return result.success ? toolAnswer("web_search", runtime, JSON.stringify(result)) : toolError("web_search", runtime, result.error, result);
    }),
    {
      name: "web_search",
      description:
        "Search the web. Returns JSON {success, data: {web: [{title, url, description, position}]}, backend}. " +
        "Use web_extract afterwards to read the pages you need.",
      schema: searchInput,
    },
  );
  return markWorkbenchTool(webSearch);
}

function webExtractTool(setup: WebSetup, chosen: Chosen): StructuredTool {
  const { maxUrls } = setup;
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
    neverThrows("web_extract", setup.secrets, async (input: z.infer<typeof extractInput>, runtime: unknown) => {
      const started = Date.now();
      const { output, records } = await runExtract(input, maxUrls, chosen.backend, setup.deps, contextOf(runtime));
      await recordCall(setup, "web_extract", started, chosen, { urls: input.urls, summarize: input.summarize }, {
        result_count: records.length,
        urls: records,
        error: "error" in output ? output.error : undefined,
      });
      return "error" in output ? toolError("web_extract", runtime, output.error, output) : toolAnswer("web_extract", runtime, JSON.stringify(output));
    }),
    {
      name: "web_extract",
      description:
        "Read web pages as Markdown. Returns JSON {results: [{url, title, content, error, ...}], backend}; " +
        "each URL succeeds or fails on its own (see its `error`). Long pages may come back summarised.",
      schema: extractInput,
    },
  );
  return markWorkbenchTool(webExtract);
}



/** Last line of defence: an unexpected bug becomes an error result, never an exception in the agent loop. */
function neverThrows<I>(toolName: string, secrets: string[], fn: (input: I, runtime: unknown) => Promise<string | ToolMessage>) {
  return async (input: I, runtime: unknown): Promise<string | ToolMessage> => {
    try {
      return await fn(input, runtime);
    } catch (err) {
      const message = scrubSecrets(err instanceof Error ? err.message : String(err), secrets).split("\n")[0];
      return toolError(toolName, runtime, `internal error: ${message}. Retry the call; if it persists, report it.`, { success: false });
    }
  };
}

async function runSearch(
  input: { query: string; limit?: number },
  backend: WebBackend,
  ctx: CallContext,
  secrets: string[],
): Promise<{ success: true; data: { web: unknown[] }; backend: string } | { success: false; error: string; backend?: string }> {
  const query = typeof input.query === "string" ? input.query.trim() : "";
  if (!query) return { success: false, error: "query is empty: pass the words to search for, e.g. {\"query\": \"node 20 fetch timeout\"}" };
  const limit = input.limit ?? DEFAULT_SEARCH_RESULTS;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_RESULTS) {
    return { success: false, error: `limit must be an integer from 1 to ${MAX_SEARCH_RESULTS} (got ${input.limit}); omit it for ${DEFAULT_SEARCH_RESULTS}` };
  }
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

/**
 * robots.txt is checked when this process fetches the page (the keyless `fetch` backend), or for
 * every backend when the policy says `robotsForVendors`.
 */
function checksRobots(backend: WebBackend, policy: WebsitePolicy): boolean {
  return backend.name === "fetch" || policy.robotsForVendors;
}

/** URL safety, then the website policy (robots.txt only when `robots`). Never throws. */
async function vet(url: string, deps: ExtractDeps, robots: boolean): Promise<Verdict> {
  try {
    const safety = await checkUrlSafety(url, deps.urlSafety);
    if (!safety.safe) {
      return { ok: false, error: `URL refused: ${safety.reason ?? "not a public http(s) address"}. Only public http(s) URLs can be read.` };
    }
    const decision = await deps.policy.check(url, { robots });
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
  backend: WebBackend,
  deps: ExtractDeps,
  ctx: CallContext,
): Promise<{ output: { results: WebExtractToolResult[]; backend: string } | { success: false; error: string }; records: DebugUrlRecord[] }> {
  const urls = Array.isArray(input.urls) ? input.urls.map((u) => (typeof u === "string" ? u.trim() : "")) : [];
  if (urls.length < 1 || urls.length > maxUrls) {
    const error = `urls must hold 1 to ${maxUrls} URLs (got ${urls.length}); split longer lists into several web_extract calls`;
    return { output: { success: false, error }, records: [] };
  }
  const robots = checksRobots(backend, deps.policy);
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
      const verdict = await vet(url, deps, robots);
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
      const result = await finishPage(page, {
        url,
        warning: verdict.warning,
        wantSummary,
        askedForSummary: input.summarize === true,
        deps,
        signal: ctx.signal,
        robots,
        progress: (stage) => progress(url, stage),
      });
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

/** How {@link finishPage} treats one page. */
interface FinishPageOptions {
  /** The URL the model asked for. */
  url: string;
  /** Advice from vetting the URL, carried into the result. */
  warning: string | undefined;
  /** Summarise when a summariser is configured (`summarize` not false). */
  wantSummary: boolean;
  /** The model passed `summarize: true` (a missing summariser is then worth a note). */
  askedForSummary: boolean;
  deps: ExtractDeps;
  signal: AbortSignal | undefined;
  /** Check robots.txt when vetting a redirect target (see `checksRobots`). */
  robots: boolean;
  progress: (stage: "summarizing") => void;
}

/** Redirect re-check, base64 stripping, summarisation. */
async function finishPage(
  page: ExtractedPage,
  { url, warning, wantSummary, askedForSummary, deps, signal, robots, progress }: FinishPageOptions,
): Promise<{ result: WebExtractToolResult; raw: number }> {
  const title = page.title ?? "";
  if (page.error) return { result: { url, title, content: "", error: page.error, ...(warning ? { warning } : {}) }, raw: 0 };

  if (page.finalUrl && urlKey(page.finalUrl) !== urlKey(url)) {
    const verdict = await vet(page.finalUrl, deps, robots);
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
