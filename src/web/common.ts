/** Pieces every vendor adapter shares: options, base URLs, per-URL result bookkeeping. */
import type { WebExtractResult } from "./types.js";
import { describeFailure, resolveRetryPolicy, type RetryPolicy } from "./retry.js";

/** Connection options accepted by every vendor adapter. */
export interface VendorOptions {
  /** API key; optional only for a self-hosted Firecrawl. */
  apiKey?: string;
  /** Base URL (self-hosting, proxies, tests). A trailing `/` is removed. */
  baseUrl?: string;
  /** Per-request timeout. Default 30 s. */
  timeoutMs?: number;
  /** Bounded retries for 408/429/5xx and timeouts (see {@link RetryPolicy}). */
  retry?: Partial<RetryPolicy>;
}

/** A page plus the URL the vendor says it ended at, so the tool can re-check redirects. */
export interface ExtractedPage extends WebExtractResult {
  finalUrl?: string;
}

export const DEFAULT_VENDOR_TIMEOUT_MS = 30_000;

export interface ResolvedVendorOptions {
  apiKey: string | undefined;
  baseUrl: string | undefined;
  timeoutMs: number;
  retry: RetryPolicy;
}

/** Validates adapter options; `requireKey` names the env var to mention when the key is missing. */
export function resolveVendorOptions(
  backend: string,
  options: VendorOptions,
  requireKey: string | undefined,
): ResolvedVendorOptions {
  const apiKey = options.apiKey?.trim() || undefined;
  if (requireKey && !apiKey) {
    throw new TypeError(`${backend}: an API key is required (option apiKey or env ${requireKey})`);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_VENDOR_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new RangeError(`${backend}: timeoutMs must be a positive number of milliseconds`);
  }
  return { apiKey, baseUrl: trimBaseUrl(backend, options.baseUrl), timeoutMs, retry: resolveRetryPolicy(options.retry) };
}

/** SDKs build `${base}/search`; a trailing slash would give `//search`. */
export function trimBaseUrl(backend: string, baseUrl: string | undefined): string | undefined {
  if (baseUrl === undefined || baseUrl.trim() === "") return undefined;
  let parsed: URL;
  try {
    parsed = new URL(baseUrl.trim());
  } catch {
    throw new TypeError(`${backend}: baseUrl "${baseUrl}" is not an absolute URL`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new TypeError(`${backend}: baseUrl must be http(s)`);
  }
  return baseUrl.trim().replace(/\/+$/, "");
}

/** Comparable form of a URL: vendors echo URLs back normalised (trailing slash, case of host). */
export function urlKey(url: string): string {
  try {
    const u = new URL(url);
    u.hash = "";
    return u.href.replace(/\/$/, "");
  } catch {
    return url.trim().replace(/\/$/, "");
  }
}

export function failedPage(url: string, error: string): ExtractedPage {
  return { url, title: "", content: "", error };
}

/**
 * Maps vendor answers (keyed by the URL they echo) back onto the input order; URLs the vendor
 * neither returned nor reported get `missingError`.
 */
export function inInputOrder(
  urls: string[],
  found: Map<string, ExtractedPage>,
  missingError: string,
): ExtractedPage[] {
  return urls.map((url) => {
    const page = found.get(urlKey(url));
    return page ? { ...page, url } : failedPage(url, missingError);
  });
}

/** Text → string, or "" for anything else (vendor fields are often null). */
export function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** Whole-batch rejections that may come from a single bad URL. */
const SPLITTABLE_STATUSES = new Set([400, 404, 413, 422]);

/**
 * Runs a batched extraction (Tavily, Exa, Parallel). A batch the vendor rejects as a whole with
 * 400/404/413/422 — often one malformed or refused URL — is retried URL by URL, so one bad URL
 * cannot spoil the others; any other failure (auth, rate limit, timeout) fails every URL with
 * the same one-line message. Never throws.
 */
export async function extractInBatch(
  urls: string[],
  runBatch: (urls: string[]) => Promise<ExtractedPage[]>,
  describe: (err: unknown) => string,
  onUrlDone?: (url: string) => void,
): Promise<ExtractedPage[]> {
  let pages: ExtractedPage[];
  try {
    pages = await runBatch(urls);
  } catch (err) {
    const status = describeFailure(err).status;
    if (urls.length > 1 && status !== undefined && SPLITTABLE_STATUSES.has(status)) {
      pages = await Promise.all(
        urls.map((url) =>
          runBatch([url]).then(
            (one) => one[0] ?? failedPage(url, "no result for this URL"),
            (e) => failedPage(url, describe(e)),
          ),
        ),
      );
    } else {
      const message = describe(err);
      pages = urls.map((url) => failedPage(url, message));
    }
  }
  for (const p of pages) onUrlDone?.(p.url);
  return pages;
}
