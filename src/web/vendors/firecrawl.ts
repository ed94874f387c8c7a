/** Firecrawl through `@mendable/firecrawl-js` v4: POST /v2/search, one POST /v2/scrape per URL. */
import type { Firecrawl as FirecrawlClient } from "@mendable/firecrawl-js";
import pLimit from "p-limit";
import type { WebBackend, WebExtractOptions, WebSearchOptions, WebSearchResult } from "../types.js";
import { failedPage, resolveVendorOptions, text, type ExtractedPage, type VendorOptions } from "../common.js";
import { errorMessage, withRetries } from "../retry.js";

export interface FirecrawlBackendOptions extends VendorOptions {
  /**
   * Scrapes in flight at once. Default 20: Firecrawl queues jobs above the plan's browser limit
   * server-side, so sending a whole `web_extract` call at once costs nothing and keeps 20 URLs
   * close to the time of one.
   */
  concurrency?: number;
}

const CLOUD_URL = "https://api.firecrawl.dev";

export function createFirecrawlBackend(options: FirecrawlBackendOptions): WebBackend {
  // A self-hosted instance (baseUrl) may run without a key.
  const opts = resolveVendorOptions("firecrawl", options, options.baseUrl ? undefined : "FIRECRAWL_API_KEY");
  const concurrency = options.concurrency ?? 20;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError("firecrawl: concurrency must be a positive integer");
  // The SDK only retries 502 and counts attempts in maxRetries; 1 disables it so the bounded
  // retry policy here (429/5xx/timeouts) is the only one.
  let loaded: Promise<FirecrawlClient> | undefined;
  const client = () =>
    (loaded ??= import("@mendable/firecrawl-js").then(
      ({ Firecrawl }) => new Firecrawl({ apiKey: opts.apiKey ?? "", apiUrl: opts.baseUrl ?? CLOUD_URL, timeoutMs: opts.timeoutMs, maxRetries: 1 }),
    ));
  const secrets = [opts.apiKey];
  const limit = pLimit(concurrency);

  async function scrapeOne(url: string, signal?: AbortSignal): Promise<ExtractedPage> {
    try {
      // autoResume:false keeps the request within the client timeout instead of 5+ minutes.
      const doc = await withRetries(
        async () => (await client()).scrape(url, { formats: ["markdown"], autoResume: false }),
        opts.retry,
        signal,
      );
      const meta = (doc.metadata ?? {}) as Record<string, unknown>;
      const status = typeof meta.statusCode === "number" ? meta.statusCode : undefined;
      const finalUrl = text(meta.url) || undefined;
      if (status !== undefined && status >= 400) {
        const why = text(meta.error) || `the page answered HTTP ${status}`;
        return { ...failedPage(url, `firecrawl could not extract this URL: ${why}`), finalUrl };
      }
      return { url, title: text(meta.title), content: text(doc.markdown), error: null, finalUrl };
    } catch (err) {
      return failedPage(url, errorMessage("firecrawl", "scrape", err, secrets));
    }
  }

  return {
    name: "firecrawl",

    async search(query: string, { limit: max, signal }: WebSearchOptions): Promise<WebSearchResult[]> {
      try {
        const res = await withRetries(async () => (await client()).search(query, { limit: max }), opts.retry, signal);
        const web = (res.web ?? []) as Array<Record<string, unknown>>;
        return web.slice(0, max).map((r, i) => ({
          title: text(r.title),
          url: text(r.url),
          description: text(r.description),
          position: i + 1,
        }));
      } catch (err) {
        throw new Error(errorMessage("firecrawl", "search", err, secrets));
      }
    },

    async extract(urls: string[], { signal, onUrlDone }: WebExtractOptions): Promise<ExtractedPage[]> {
      return Promise.all(
        urls.map((url) =>
          limit(async () => {
            const page = await scrapeOne(url, signal);
            onUrlDone?.(url);
            return page;
          }),
        ),
      );
    },
  };
}
