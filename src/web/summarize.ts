import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import pLimit from "p-limit";
import { loadOptional } from "../optional.js";

/** Stages reported through {@link SummarizeOptions.onProgress}. */
export type SummarizeStage = "summarize" | "chunks" | "synthesize";

/** Options of {@link summarizeContent}. Sizes are in characters. */
export interface SummarizeOptions {
  /** The model that writes summaries. */
  model: BaseChatModel;
  /** Content shorter than this is returned raw. Default 5,000. */
  minChars?: number;
  /** Chunk size when splitting. Default 100,000. */
  chunkChars?: number;
  /** Content longer than this is split into chunks, summarised, then synthesised. Default 500,000. */
  chunkAbove?: number;
  /** Content longer than this is refused (head returned with guidance). Default 2,000,000. */
  refuseAbove?: number;
  /** Cap of the returned content. Default 5,000. */
  maxOutputChars?: number;
  /** Chunk summaries in flight at once. Default 4. */
  concurrency?: number;
  /** Extra attempts per model call after a failure, with exponential backoff. Default 2. */
  retries?: number;
  /** First backoff delay in ms (doubled per retry). Default 1,000. */
  retryDelayMs?: number;
  /** The page's URL, given to the model as context. */
  url?: string;
  signal?: AbortSignal;
  onProgress?: (stage: SummarizeStage, done: number, total: number) => void;
}

export interface SummarizeResult {
  content: string;
  summarized: boolean;
  original_chars: number;
  /** `original_chars / content.length` when summarised (20 means twenty times smaller). */
  compression_ratio?: number;
  /** Why the content is raw, partial or truncated. */
  note?: string;
}

const DEFAULTS = {
  minChars: 5_000,
  chunkChars: 100_000,
  chunkAbove: 500_000,
  refuseAbove: 2_000_000,
  maxOutputChars: 5_000,
  concurrency: 4,
  retries: 2,
  retryDelayMs: 1_000,
};

type Settings = typeof DEFAULTS & Pick<SummarizeOptions, "model" | "url" | "signal" | "onProgress">;

const KEEP_RULES =
  "Keep verbatim: code blocks, commands, API names, tables (as Markdown tables), numbers, dates, versions, prices and other key figures. " +
  "Drop navigation, ads, boilerplate and repetition. Write Markdown. Do not add facts that are not in the text.";

/**
 * Summarises a fetched page for an agent. Short content stays raw; long content is summarised in
 * one call; very long content is split into chunks summarised concurrently (bounded) and then
 * synthesised; oversized content is refused with guidance. A page is never lost to a model
 * failure: the truncated raw content comes back with a note. Never throws (except on bad options).
 */
export async function summarizeContent(content: string, opts: SummarizeOptions): Promise<SummarizeResult> {
  const s = settings(opts);
  const original = content.length;
  if (original < s.minChars) return { content, summarized: false, original_chars: original };
  if (original > s.refuseAbove) {
    return {
      content: truncate(content, s.maxOutputChars),
      summarized: false,
      original_chars: original,
      note:
        `content is ${original} characters, over the ${s.refuseAbove}-character summarisation limit; ` +
        `only the start is shown. Fetch a more specific page (a section, an API endpoint, a raw file) instead.`,
    };
  }
  if (original <= s.chunkAbove) {
    s.onProgress?.("summarize", 0, 1);
    try {
      const summary = await callWithRetries(s, summaryPrompt(s, content));
      s.onProgress?.("summarize", 1, 1);
      return done(summary, original, s);
    } catch (error) {
      return fallback(content, s, `summarisation failed (${describe(error)})`);
    }
  }
  return summarizeInChunks(content, s);
}

async function summarizeInChunks(content: string, s: Settings): Promise<SummarizeResult> {
  const chunks = splitIntoChunks(content, s.chunkChars);
  const limit = pLimit(s.concurrency);
  let finished = 0;
  s.onProgress?.("chunks", 0, chunks.length);
  const summaries = await Promise.all(
    chunks.map((chunk, index) =>
      limit(async () => {
        try {
          return await callWithRetries(s, chunkPrompt(s, chunk, index, chunks.length));
        } catch {
          return undefined;
        } finally {
          s.onProgress?.("chunks", ++finished, chunks.length);
        }
      }),
    ),
  );
  const failed = summaries.filter((summary) => summary === undefined).length;
  if (failed === chunks.length) return fallback(content, s, `summarisation failed for all ${chunks.length} chunks`);
  const partsNote = failed ? `${failed} of ${chunks.length} chunks could not be summarised and are missing` : undefined;
  const parts = summaries.map((summary, i) => `## Part ${i + 1} of ${chunks.length}\n${summary ?? "(this part could not be summarised)"}`);

  s.onProgress?.("synthesize", 0, 1);
  try {
    const synthesis = await callWithRetries(s, synthesisPrompt(s, parts.join("\n\n")));
    s.onProgress?.("synthesize", 1, 1);
    return done(synthesis, content.length, s, partsNote);
  } catch (error) {
    // The chunk summaries are still far better than raw truncation.
    const note = [`synthesis failed (${describe(error)}); showing the joined part summaries`, partsNote].filter(Boolean).join("; ");
    return done(parts.join("\n\n"), content.length, s, note);
  }
}

/** Splits at the last blank line (else newline) before each boundary so paragraphs stay whole. */
export function splitIntoChunks(content: string, chunkChars: number): string[] {
  const chunks: string[] = [];
  let start = 0;
  while (start < content.length) {
    let end = Math.min(start + chunkChars, content.length);
    if (end < content.length) {
      const window = content.slice(start + Math.floor(chunkChars * 0.8), end);
      const cut = window.lastIndexOf("\n\n") >= 0 ? window.lastIndexOf("\n\n") : window.lastIndexOf("\n");
      if (cut >= 0) end = start + Math.floor(chunkChars * 0.8) + cut + 1;
    }
    chunks.push(content.slice(start, end));
    start = end;
  }
  return chunks;
}

function summaryPrompt(s: Settings, content: string): Array<SystemMessage | HumanMessage> {
  return [
    new SystemMessage(
      `You condense web pages for another AI agent. Summarise the page in at most ${s.maxOutputChars} characters. ${KEEP_RULES}`,
    ),
    new HumanMessage(`${s.url ? `URL: ${s.url}\n\n` : ""}${content}`),
  ];
}

function chunkPrompt(s: Settings, chunk: string, index: number, total: number): Array<SystemMessage | HumanMessage> {
  return [
    new SystemMessage(
      `You condense one part of a long web page for another AI agent; the parts will be merged later. ` +
        `Summarise this part in at most ${Math.max(1_000, Math.floor((s.maxOutputChars * 2) / total))} characters. ${KEEP_RULES}`,
    ),
    new HumanMessage(`${s.url ? `URL: ${s.url}\n` : ""}Part ${index + 1} of ${total}:\n\n${chunk}`),
  ];
}

function synthesisPrompt(s: Settings, parts: string): Array<SystemMessage | HumanMessage> {
  return [
    new SystemMessage(
      `You merge part summaries of one long web page into a single summary of at most ${s.maxOutputChars} characters ` +
        `for another AI agent. Remove overlap between parts. ${KEEP_RULES}`,
    ),
    new HumanMessage(`${s.url ? `URL: ${s.url}\n\n` : ""}${parts}`),
  ];
}

async function callWithRetries(s: Settings, messages: Array<SystemMessage | HumanMessage>): Promise<string> {
  let lastError: unknown;
  for (let attempt = 0; attempt <= s.retries; attempt++) {
    if (s.signal?.aborted) throw new Error("aborted");
    if (attempt > 0) await sleep(s.retryDelayMs * 2 ** (attempt - 1), s.signal);
    try {
      const reply = await s.model.invoke(messages, { signal: s.signal });
      const text = reply.text.trim();
      if (!text) throw new Error("the model returned an empty summary");
      return text;
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

function done(summary: string, original: number, s: Settings, note?: string): SummarizeResult {
  const capped = truncate(summary, s.maxOutputChars);
  const notes = [note, capped.length < summary.length ? `summary cut to ${s.maxOutputChars} characters` : undefined];
  const result: SummarizeResult = {
    content: capped,
    summarized: true,
    original_chars: original,
    compression_ratio: Math.round((original / Math.max(1, capped.length)) * 100) / 100,
  };
  const joined = notes.filter(Boolean).join("; ");
  return joined ? { ...result, note: joined } : result;
}

function fallback(content: string, s: Settings, why: string): SummarizeResult {
  return {
    content: truncate(content, s.maxOutputChars),
    summarized: false,
    original_chars: content.length,
    note: `${why}; showing the first ${Math.min(s.maxOutputChars, content.length)} of ${content.length} characters of the raw content`,
  };
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max);
}

function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!.slice(0, 200);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(new Error("aborted"));
      },
      { once: true },
    );
  });
}

function settings(opts: SummarizeOptions): Settings {
  if (!opts || typeof opts.model?.invoke !== "function") throw new TypeError("summarizeContent needs opts.model (a chat model)");
  const merged = { ...DEFAULTS } as Settings;
  for (const key of Object.keys(DEFAULTS) as Array<keyof typeof DEFAULTS>) {
    const value = opts[key];
    if (value === undefined) continue;
    const min = key === "retries" || key === "retryDelayMs" ? 0 : 1;
    if (!Number.isInteger(value) || value < min) throw new RangeError(`${key} must be an integer >= ${min}, got ${value}`);
    merged[key] = value;
  }
  return { ...merged, model: opts.model, url: opts.url, signal: opts.signal, onProgress: opts.onProgress };
}

/**
 * The summariser configured by the environment: `WORKBENCH_SUMMARY_MODEL` (a model name) with
 * `OPENAI_API_KEY` and optional `OPENAI_BASE_URL` builds a `ChatOpenAI`; unset → `undefined`.
 * Async because `@langchain/openai` takes seconds to load: it is imported only here, when a
 * model is actually configured, never by importing this package.
 */
export async function summarizerFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<BaseChatModel | undefined> {
  const model = env.WORKBENCH_SUMMARY_MODEL?.trim();
  if (!model) return undefined;
  const { ChatOpenAI } = await loadOptional("@langchain/openai", "WORKBENCH_SUMMARY_MODEL (the summariser from the environment)", () => import("@langchain/openai"));
  return new ChatOpenAI({
    model,
    apiKey: env.OPENAI_API_KEY,
    configuration: env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : undefined,
    maxRetries: 0,
  });
}
