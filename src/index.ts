// Public API of langgraph-workbench. Each area keeps its own line(s) below.

// workspace
export * from "./workspace.js";
export type * from "./fileops/types.js";
export type * from "./changes/types.js";
export type * from "./web/types.js";

// tree + change tracking
export * from "./tree.js";
export * from "./changes/index.js";

// file operations backends
export * from "./fileops/index.js";
export { LocalFileOperations } from "./fileops/local.js";
export { withPathLock, withPathLocks } from "./fileops/lock.js";

// guards
export * from "./guards/index.js";
export * from "./guards/url.js";
export * from "./guards/policy.js";

// patch engine
export * from "./patch/index.js";

// web backends
export * from "./web/safeFetch.js";
export * from "./web/fetchBackend.js";
export * from "./web/htmlToMarkdown.js";
export { HtmlConversionPool, sharedHtmlConversionPool, type HtmlConversionPoolOptions } from "./web/htmlWorkerPool.js";
export * from "./web/summarize.js";
export * from "./web/index.js";

// middleware and tools (also available as "langgraph-workbench/middleware" and "/tools")
export * from "../middleware/index.js";
export * from "../tools/index.js";

// ecosystem: createWorkbench (the deepagents backend is the "langgraph-workbench/deepagents" subpath)
export { createWorkbench, type Workbench, type WorkbenchOptions, type WorkbenchUploads, type WorkbenchArtifactOptions } from "./workbench.js";

// files in and out (uploads, downloads, artifacts)
export * from "./files/transfer.js";
export * from "./files/artifacts.js";
