/** Tavily through `@tavily/core`: one POST /search, one batched POST /extract. */
import type { tavily as TavilyFactory } from "@tavily/core";
import type { WebBackend, WebExtractOptions, WebSearchOptions, WebSearchResult } from "../types.js";
import { extractInBatch, failedPage, inInputOrder, resolveVendorOptions, text, urlKey, type ExtractedPage, type VendorOptions } from "../common.js";
import { errorMessage, withRetries } from "../retry.js";

/** Tavily adapter options; `apiKey` defaults to nothing (pass `TAVILY_API_KEY` explicitly). */
export type TavilyBackendOptions = VendorOptions;

export function createTavilyBackend(options: TavilyBackendOptions): WebBackend {
  const opts = resolveVendorOptions("tavily", options, "TAVILY_API_KEY");
  // Loaded on first use: the SDK costs seconds to import and most setups use one vendor.
  let loaded: Promise<ReturnType<typeof TavilyFactory>> | undefined;
  const client = () =>
    (loaded ??= import("@tavily/core").then((m) => m.tavily({ apiKey: opts.apiKey, apiBaseURL: opts.baseUrl })));
  // Tavily takes its timeout in seconds (the API accepts 1–60) and has no retries of its own.
  const timeout = Math.min(60, Math.max(1, Math.ceil(opts.timeoutMs / 1000)));
  const secrets = [opts.apiKey];

  return {
    name: "tavily",

    async search(query: string, { limit, signal }: WebSearchOptions): Promise<WebSearchResult[]> {
      try {
        const res = await withRetries(async () => (await client()).search(query, { maxResults: limit, timeout }), opts.retry, signal);
        return res.results.slice(0, limit).map((r, i) => ({
          title: text(r.title),
          url: text(r.url),
          description: text(r.content),
          position: i + 1,
        }));
      } catch (err) {
        throw new Error(errorMessage("tavily", "search", err, secrets));
      }
    },

    async extract(urls: string[], { signal, onUrlDone }: WebExtractOptions): Promise<ExtractedPage[]> {
      const runBatch = async (batch: string[]) => {
        const res = await withRetries(
          async () => (await client()).extract(batch, { format: "markdown", timeout }),
          opts.retry,
          signal,
        );
        const found = new Map<string, ExtractedPage>();
        for (const r of res.results ?? []) {
          found.set(urlKey(r.url), { url: r.url, title: text(r.title), content: text(r.rawContent), error: null });
        }
        for (const f of res.failedResults ?? []) {
          found.set(urlKey(f.url), failedPage(f.url, `tavily could not extract this URL: ${text(f.error) || "unknown error"}`));
        }
        return inInputOrder(batch, found, "tavily returned no content for this URL");
      };
      return extractInBatch(urls, runBatch, (err) => errorMessage("tavily", "extract", err, secrets), onUrlDone);
    },
  };
}
