/** Parallel through `parallel-web`: POST /v1/search and POST /v1/extract (full content). */
import type { Parallel as ParallelClient } from "parallel-web";
import type { WebBackend, WebExtractOptions, WebSearchOptions, WebSearchResult } from "../types.js";
import { extractInBatch, failedPage, inInputOrder, resolveVendorOptions, text, urlKey, type ExtractedPage, type VendorOptions } from "../common.js";
import { errorMessage } from "../retry.js";

export interface ParallelBackendOptions extends VendorOptions {
  /** Search mode preset. Default `"fast"`. */
  mode?: "turbo" | "fast" | "basic" | "advanced";
}

export function createParallelBackend(options: ParallelBackendOptions): WebBackend {
  const opts = resolveVendorOptions("parallel", options, "PARALLEL_API_KEY");
  const mode = options.mode ?? "fast";
  // The SDK retries 408/409/429/5xx itself (honouring retry-after); retrying here as well
  // would multiply attempts, so its own counter gets our policy and nothing wraps it.
  let loaded: Promise<ParallelClient> | undefined;
  const client = () =>
    (loaded ??= import("parallel-web").then(
      ({ Parallel }) =>
        new Parallel({
          apiKey: opts.apiKey,
          baseURL: opts.baseUrl ?? null,
          timeout: opts.timeoutMs,
          maxRetries: opts.retry.attempts - 1,
          logLevel: "off",
        }),
    ));
  const secrets = [opts.apiKey];

  return {
    name: "parallel",

    async search(query: string, { limit, signal }: WebSearchOptions): Promise<WebSearchResult[]> {
      try {
        const res = await (await client()).search(
          { search_queries: [query], objective: query, mode, advanced_settings: { max_results: limit } },
          { signal },
        );
        return res.results.slice(0, limit).map((r, i) => ({
          title: text(r.title),
          url: text(r.url),
          description: (r.excerpts ?? []).filter((e) => typeof e === "string").join(" … "),
          position: i + 1,
        }));
      } catch (err) {
        throw new Error(errorMessage("parallel", "search", err, secrets));
      }
    },

    async extract(urls: string[], { signal, onUrlDone }: WebExtractOptions): Promise<ExtractedPage[]> {
      const runBatch = async (batch: string[]) => {
        const res = await (await client()).extract({ urls: batch, advanced_settings: { full_content: true } }, { signal });
        const found = new Map<string, ExtractedPage>();
        for (const r of res.results ?? []) {
          const content = text(r.full_content) || (r.excerpts ?? []).join("\n\n");
          found.set(urlKey(r.url), { url: r.url, title: text(r.title), content, error: null });
        }
        for (const e of res.errors ?? []) {
          const why = [e.error_type, e.http_status_code ? `HTTP ${e.http_status_code}` : ""].filter(Boolean).join(", ");
          found.set(urlKey(e.url), failedPage(e.url, `parallel could not extract this URL: ${why || "unknown error"}`));
        }
        return inInputOrder(batch, found, "parallel returned no content for this URL");
      };
      return extractInBatch(urls, runBatch, (err) => errorMessage("parallel", "extract", err, secrets), onUrlDone);
    },
  };
}
