import pLimit from "p-limit";
import type { WebsitePolicy } from "../guards/policy.js";
import type { UrlSafetyOptions } from "../guards/url.js";
import { stripDataImages } from "./htmlToMarkdown.js";
import { sharedHtmlConversionPool, type HtmlConversionPool } from "./htmlWorkerPool.js";
import {
  DEFAULT_FETCH_MAX_BYTES,
  DEFAULT_FETCH_MAX_REDIRECTS,
  DEFAULT_FETCH_TIMEOUT_MS,
  WORKBENCH_USER_AGENT,
  safeFetch,
  type SafeFetchResponse,
} from "./safeFetch.js";
import type { ExtractedPage } from "./common.js";
import type { WebBackend, WebExtractOptions, WebExtractResult } from "./types.js";

/** Options of {@link createFetchBackend}. */
export interface FetchBackendOptions {
  /** Body size cap per URL, in bytes. Default 5 MB. */
  maxBytes?: number;
  /** Deadline per URL (all redirect hops and the body), in ms. Default 20 s. */
  timeoutMs?: number;
  /** Redirects followed per URL, each re-checked. Default 5. */
  maxRedirects?: number;
  /** `User-Agent` header. Default `langgraph-workbench/<version> (+…)`. */
  userAgent?: string;
  /** URL-safety options applied to every hop. */
  urlSafety?: UrlSafetyOptions;
  /** Website policy re-checked on every redirect hop (the caller checks the first URL too). */
  policy?: WebsitePolicy;
  /**
   * URLs fetched at once. Default 20: the work per URL is mostly waiting on the network, and
   * HTML conversion runs in the worker pool, bounded by its own size.
   */
  concurrency?: number;
  /**
   * Where HTML is converted to Markdown. Default: a process-wide pool of worker threads, so big
   * pages never block the event loop.
   */
  htmlPool?: HtmlConversionPool;
}

const HTML_TYPES = ["text/html", "application/xhtml+xml"];

/** Default of {@link FetchBackendOptions.concurrency}. */
export const DEFAULT_FETCH_CONCURRENCY = 20;

/**
 * The keyless extraction backend: a guarded GET per URL (see `safeFetch`), HTML turned into
 * readable Markdown, text and JSON passed through, PDFs and binaries refused per URL. It cannot
 * search. Each URL is independent: a failure fills that result's `error` only.
 */
export function createFetchBackend(options: FetchBackendOptions = {}): WebBackend {
  const concurrency = options.concurrency ?? DEFAULT_FETCH_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError("concurrency must be a positive integer");
  const fetchOptions = {
    maxBytes: options.maxBytes ?? DEFAULT_FETCH_MAX_BYTES,
    timeoutMs: options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS,
    maxRedirects: options.maxRedirects ?? DEFAULT_FETCH_MAX_REDIRECTS,
    userAgent: options.userAgent ?? WORKBENCH_USER_AGENT,
    urlSafety: options.urlSafety,
  };
  const htmlPool = options.htmlPool;
  const policy = options.policy;
  const checkHop = policy
    ? async (url: string) => {
        const decision = await policy.check(url);
        const block = decision.blocked_by_policy;
        return decision.allowed || !block ? undefined : `blocked by website policy: ${block.host} matches ${block.rule} (${block.source})`;
      }
    : undefined;

  return {
    name: "fetch",
    async extract(urls: string[], extractOptions: WebExtractOptions): Promise<WebExtractResult[]> {
      const limit = pLimit(concurrency);
      return Promise.all(
        urls.map((url) =>
          limit(async () => {
            const result = await extractOne(url, { ...fetchOptions, checkHop, signal: extractOptions.signal }, htmlPool ?? sharedHtmlConversionPool());
            extractOptions.onUrlDone?.(url);
            return result;
          }),
        ),
      );
    },
  };
}

/** One URL; `finalUrl` is set after redirects so the tool can report and re-vet where it landed. */
async function extractOne(url: string, options: Parameters<typeof safeFetch>[1], htmlPool: HtmlConversionPool): Promise<ExtractedPage> {
  try {
    const response = await safeFetch(url, {
      ...options,
      headers: { accept: "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5" },
    });
    if (response.status < 200 || response.status >= 300) {
      return failure(url, `HTTP ${response.status} from ${response.url}`);
    }
    const page: ExtractedPage = { url, ...(await toReadable(response, htmlPool)), error: null };
    return response.url !== url ? { ...page, finalUrl: response.url } : page;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return failure(url, message.split("\n")[0]!);
  }
}

/** Decides by declared type, then by sniffing, what the body is and how to present it. */
async function toReadable(response: SafeFetchResponse, htmlPool: HtmlConversionPool): Promise<{ title: string; content: string }> {
  const mime = response.contentType.split(";")[0]!.trim();
  const body = response.body;
  if (mime === "application/pdf" || body.subarray(0, 5).toString("latin1") === "%PDF-") {
    throw new Error(
      "PDF documents are not supported by the keyless fetch backend; use a Firecrawl, Tavily, Exa or Parallel backend for PDFs",
    );
  }
  const looksBinary = body.subarray(0, 4096).includes(0);
  const textual = mime === "" || mime.startsWith("text/") || /[/+](json|xml)$/.test(mime) || mime === "application/javascript";
  if (!textual || looksBinary) {
    throw new Error(`unsupported content type ${mime || "(binary)"}; the fetch backend reads HTML, text and JSON only`);
  }
  const text = decode(body, response.contentType);
  const isHtml = HTML_TYPES.includes(mime) || (mime === "" && /^\s*(<!doctype html|<html)/i.test(text));
  if (isHtml) {
    const page = await htmlPool.convert(text, response.url);
    return { title: page.title, content: page.markdown };
  }
  return { title: "", content: stripDataImages(text) };
}

function decode(body: Buffer, contentType: string): string {
  const charset = /charset\s*=\s*"?([\w-]+)/i.exec(contentType)?.[1];
  try {
    return new TextDecoder(charset ?? "utf-8").decode(body);
  } catch {
    return new TextDecoder("utf-8").decode(body);
  }
}

function failure(url: string, error: string): WebExtractResult {
  return { url, title: "", content: "", error };
}
