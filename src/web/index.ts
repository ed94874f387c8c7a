// Public API of "langgraph-workbench/web": the web backends behind web_search / web_extract,
// their selection (the vendor table), the guarded HTTP client, URL safety and the website policy.
export type { WebBackend, WebBackendName, WebExtractOptions, WebExtractResult, WebSearchOptions, WebSearchResult } from "./types.js";
export { DEFAULT_VENDOR_TIMEOUT_MS, type ExtractedPage, type VendorOptions } from "./common.js";
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry.js";

// vendors: one file each in vendors/, one row in the table
export { VENDOR_TABLE, type VendorConfigs, type VendorName, type VendorRow } from "./vendors/index.js";
export { createTavilyBackend, type TavilyBackendOptions } from "./vendors/tavily.js";
export { createExaBackend, type ExaBackendOptions } from "./vendors/exa.js";
export { createFirecrawlBackend, type FirecrawlBackendOptions } from "./vendors/firecrawl.js";
export { createParallelBackend, type ParallelBackendOptions } from "./vendors/parallel.js";
export { BACKEND_ENV, EXTRACT_BACKENDS, SEARCH_BACKENDS, selectBackend, type Selection, type WebBackendsConfig, type WebTask } from "./select.js";

// the keyless backend and its pieces
export { createFetchBackend, DEFAULT_FETCH_CONCURRENCY, type FetchBackendOptions } from "./fetchBackend.js";
export {
  safeFetch,
  SafeFetchError,
  WORKBENCH_USER_AGENT,
  DEFAULT_FETCH_MAX_BYTES,
  DEFAULT_FETCH_MAX_REDIRECTS,
  DEFAULT_FETCH_TIMEOUT_MS,
  type HopCheck,
  type SafeFetchErrorCode,
  type SafeFetchOptions,
  type SafeFetchResponse,
} from "./safeFetch.js";
export { htmlToMarkdown } from "./htmlToMarkdown.js";
export { stripDataImages, type HtmlToMarkdownOptions, type MarkdownPage } from "./htmlConvert.js";
export { HtmlConversionPool, type HtmlConversionPoolOptions } from "./htmlWorkerPool.js";

// summarising long pages, the debug log
export { summarizeContent, summarizerFromEnv, type SummarizeOptions, type SummarizeResult, type SummarizeStage } from "./summarize.js";
export { createWebDebugLog, type DebugCallRecord, type DebugUrlRecord, type WebDebugLog, type WebDebugOptions } from "./debug.js";

// URL safety and the website policy (blocklist, robots.txt)
export { checkUrlSafety, type UrlSafetyOptions, type UrlSafetyResult } from "../guards/url.js";
export { WebsitePolicy, type PolicyBlock, type PolicyDecision, type RobotsFetcher, type RobotsMode, type RobotsResponse, type WebsitePolicyOptions } from "../guards/policy.js";
export { createRobotsFetcher, createWebsitePolicy, type RobotsFetcherOptions, type WebPolicyOptions } from "./robots.js";
