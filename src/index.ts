// Public API of langgraph-workbench. Each area keeps its own line(s) below.

// workspace
export * from "./workspace.js";
export type * from "./fileops/types.js";
export type * from "./changes/types.js";
export type * from "./web/types.js";

// tree + change tracking

// file operations backends

// guards

// patch engine

// web backends

// middleware and tools (also available as "langgraph-workbench/middleware" and "/tools")
export * from "../middleware/index.js";
export * from "../tools/index.js";
