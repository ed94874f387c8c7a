// Public API of "langgraph-workbench/middleware".
// FileManager middleware
export {
  createFileManagerMiddleware,
  FileManagerHooks,
  fileManagerStateSchema,
  createFileManagerStateSchema,
  DEFAULT_READ_ONLY_TOOLS,
  type FileManagerMiddleware,
  type FileManagerOptions,
  type FileManagerErrorContext,
  type FileManagerStateView,
  type TreeView,
} from "./fileManager.js";
export { isWorkspaceTreeMessage, isWorkspaceChangeMessage, buildTreeMessage, buildTreeChangeMessage, WORKSPACE_TREE_MARKER, WORKSPACE_CHANGES_KIND } from "./treeMessage.js";
export {
  composeToolCallSteps,
  catchToolErrorsStep,
  mapPathArgsStep,
  markTreeDirtyStep,
  rewritePathsStep,
  type ToolCallContext,
  type ToolCallNext,
  type ToolCallStep,
} from "./toolCallSteps.js";
export { mapContentText, mapMessageStrings, mapMessageText, mapToolResultStrings, mapToolResultText, toolErrorMessage, withStateUpdate, type ToolCallResult } from "./toolResults.js";
export {};
// stateful file guards (read dedup, staleness, loop detection)
export {
  fileGuardsMiddleware,
  fileGuardsToolCallStep,
  createFileGuardsStep,
  fileGuardStateFields,
  type FileGuardsOptions,
  type FileGuardState,
  type FileGuardsStep,
  type ReadLedgerEntry,
  type ReadTimeEntry,
  type ToolLoopState,
} from "./fileGuards.js";
