/** Exa through `exa-js`: POST /search with highlights, POST /contents for extraction. */
import type { Exa as ExaClient } from "exa-js";
import type { WebBackend, WebExtractOptions, WebSearchOptions, WebSearchResult } from "../types.js";
import { extractInBatch, failedPage, inInputOrder, resolveVendorOptions, text, urlKey, type ExtractedPage, type VendorOptions } from "../common.js";
import { errorMessage, withRetries, withTimeout } from "../retry.js";

export type ExaBackendOptions = VendorOptions;

interface ExaStatus {
  id?: string;
  status?: string;
  error?: { tag?: string; httpStatusCode?: number } | string | null;
}

function statusError(s: ExaStatus): string {
  const e = s.error;
  if (typeof e === "string") return e;
  if (e && typeof e === "object") {
    return [e.tag, e.httpStatusCode ? `HTTP ${e.httpStatusCode}` : ""].filter(Boolean).join(", ") || "unknown error";
  }
  return s.status ?? "unknown error";
}

export function createExaBackend(options: ExaBackendOptions): WebBackend {
  const opts = resolveVendorOptions("exa", options, "EXA_API_KEY");
  // Loaded on first use: most setups use one vendor. The named export is the client class.
  let loaded: Promise<ExaClient> | undefined;
  const client = () =>
    (loaded ??= import("exa-js").then(({ Exa }) => (opts.baseUrl ? new Exa(opts.apiKey, opts.baseUrl) : new Exa(opts.apiKey))));
  const secrets = [opts.apiKey];
  // exa-js has neither a timeout nor retries: both come from here.
  const call = <T>(fn: (exa: ExaClient) => Promise<T>, signal?: AbortSignal) =>
    withRetries(async () => {
      const exa = await client();
      return withTimeout(fn(exa), opts.timeoutMs);
    }, opts.retry, signal);

  return {
    name: "exa",

    async search(query: string, { limit, signal }: WebSearchOptions): Promise<WebSearchResult[]> {
      try {
        const res = await call((exa) => exa.search(query, { numResults: limit, contents: { highlights: true } }), signal);
        return res.results.slice(0, limit).map((r, i) => {
          const highlights = (r as { highlights?: unknown }).highlights;
          const description = Array.isArray(highlights) ? highlights.filter((h) => typeof h === "string").join(" … ") : "";
          return { title: text(r.title), url: text(r.url), description, position: i + 1 };
        });
      } catch (err) {
        throw new Error(errorMessage("exa", "search", err, secrets));
      }
    },

    async extract(urls: string[], { signal, onUrlDone }: WebExtractOptions): Promise<ExtractedPage[]> {
      const runBatch = async (batch: string[]) => {
        const res = await call((exa) => exa.getContents(batch, { text: true }), signal);
        const found = new Map<string, ExtractedPage>();
        for (const r of res.results ?? []) {
          found.set(urlKey(r.url), { url: r.url, title: text(r.title), content: text((r as { text?: unknown }).text), error: null });
        }
        // Failed URLs are absent from `results`; `statuses` (keyed by the requested URL) says why.
        for (const s of (res.statuses ?? []) as ExaStatus[]) {
          if (s.id && s.status !== "success" && !found.has(urlKey(s.id))) {
            found.set(urlKey(s.id), failedPage(s.id, `exa could not extract this URL: ${statusError(s)}`));
          }
        }
        return inInputOrder(batch, found, "exa returned no content for this URL");
      };
      return extractInBatch(urls, runBatch, (err) => errorMessage("exa", "extract", err, secrets), onUrlDone);
    },
  };
}
