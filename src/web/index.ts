// Web backends: the four vendor adapters, backend selection, retry policy and the debug log.
export { DEFAULT_VENDOR_TIMEOUT_MS, type ExtractedPage, type VendorOptions } from "./common.js";
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry.js";
export {
  BACKEND_ENV,
  EXTRACT_BACKENDS,
  SEARCH_BACKENDS,
  buildBackend,
  selectBackend,
  type FetchGuards,
  type Selection,
  type WebBackendsConfig,
  type WebTask,
} from "./select.js";
export { createWebDebugLog, type DebugCallRecord, type DebugUrlRecord, type WebDebugLog, type WebDebugOptions } from "./debug.js";
export { createTavilyBackend, type TavilyBackendOptions } from "./vendors/tavily.js";
export { createExaBackend, type ExaBackendOptions } from "./vendors/exa.js";
export { createFirecrawlBackend, type FirecrawlBackendOptions } from "./vendors/firecrawl.js";
export { createParallelBackend, type ParallelBackendOptions } from "./vendors/parallel.js";
export { createRobotsFetcher, createWebsitePolicy, type RobotsFetcherOptions, type WebPolicyOptions } from "./robots.js";
