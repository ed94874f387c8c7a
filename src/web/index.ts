// Web backends: the four vendor adapters, backend selection, retries and the debug log.
export * from "./common.js";
export * from "./retry.js";
export * from "./select.js";
export * from "./debug.js";
export * from "./tavily.js";
export * from "./exa.js";
export * from "./firecrawl.js";
export * from "./parallel.js";
