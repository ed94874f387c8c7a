// Public API of "langgraph-workbench/middleware": the FileManager middleware, its tool-call
// pipeline, the stateful file guards, and the tree and change tracking it is built on.

// FileManager middleware
export {
  createFileManagerMiddleware,
  FileManagerHooks,
  fileManagerStateSchema,
  createFileManagerStateSchema,
  fileManagerPrivateFields,
  FILE_MANAGER_CHANNEL,
  DEFAULT_READ_ONLY_TOOLS,
  type FileManagerMiddleware,
  type FileManagerOptions,
  type FileManagerErrorContext,
  type FileManagerStateView,
  type TreeView,
} from "./fileManager.js";
export { isWorkspaceTreeMessage, isWorkspaceChangeMessage, buildTreeMessage, buildTreeChangeMessage, WORKSPACE_TREE_MARKER, WORKSPACE_CHANGES_KIND } from "./treeMessage.js";
export { hoistToolImages, modelNeedsImageHoist, MOVED_IMAGE_NOTE, TOOL_IMAGES_NAME, type ImagesInToolResults } from "./hoistImages.js";

// the tool-call pipeline (add your own steps with `toolCallSteps`)
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
export { PackedFields } from "./packedState.js";
export { mapContentText, mapMessageStrings, mapMessageText, mapToolResultStrings, mapToolResultText, toolErrorMessage, withStateUpdate, type ToolCallResult } from "./toolResults.js";

// stateful file guards (read dedup, staleness, loop detection)
export {
  fileGuardsMiddleware,
  FILE_GUARDS_CHANNEL,
  fileGuardsToolCallStep,
  createFileGuardsStep,
  fileGuardStateFields,
  fileGuardsOptionsSchema,
  type FileGuardsOptions,
  type FileGuardState,
  type FileGuardsStep,
  type ReadLedgerEntry,
  type ReadTimeEntry,
  type ToolLoopState,
} from "./fileGuards.js";

// the workspace tree and change tracking
export { renderDirectoryTree, treeFingerprint, DEFAULT_TREE_MAX_ENTRIES, treeOptionsSchema, type TreeOptions } from "../src/tree.js";
export type { ChangeTracker, TrackerKind } from "../src/changes/types.js";
export { BaseTracker, type TrackerOptions } from "../src/changes/base.js";
export { DEFAULT_IGNORED_NAMES } from "../src/changes/ignore-names.js";
export { PollingTracker, DEFAULT_POLL_INTERVAL_MS, type PollingTrackerOptions } from "../src/changes/polling.js";
export { WatchingTracker, type WatchingTrackerOptions } from "../src/changes/watching.js";
export { ParcelTracker } from "../src/changes/parcel.js";
export { ChokidarTracker } from "../src/changes/chokidar.js";
export { createChangeTracker, DEFAULT_TRACKER_KIND, TRACKER_KINDS, type CreateChangeTrackerOptions } from "../src/changes/create.js";
export { TrackerPool, DEFAULT_MAX_LIVE_TRACKERS, DEFAULT_TRACKER_IDLE_MS, type TrackerPoolOptions } from "../src/changes/pool.js";
// time travel (workspace snapshots tied to checkpoints)
export { TimeTravel, timeTravelStateFields, snapshotIdOf, type WorkspaceSnapshotRef, type WorkspaceRestoreRequest, type TimeTravelThread } from "./timeTravel.js";
