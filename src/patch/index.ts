// Patch engine: pure planning of replacements and V4A multi-file patches (no file system access).
export { planReplace } from "./replace.js";
export { planV4APatch } from "./v4aPlan.js";
export { parseV4A } from "./v4aParse.js";
export type { V4AHunk, V4AHunkLine, V4AOperation, V4AParseResult } from "./v4aParse.js";
export { unifiedDiff } from "./diff.js";
export { MATCH_STRATEGIES } from "./types.js";
export type { MatchCandidate, MatchStrategy, PatchFileOp, PatchReader, ReplaceOptions, ReplacePlan, V4APlan } from "./types.js";
