/**
 * The FileManager's graph state: its public fields, the private ones packed in one channel, and
 * the flat view of them its hooks read and write.
 */
import type { BaseMessage } from "@langchain/core/messages";
import { ReducedValue, StateSchema } from "@langchain/langgraph";
import { z } from "zod";
import { fileGuardStateFields } from "./fileGuards.js";
import { PackedFields } from "./packedState.js";
import { timeTravelStateFields, type WorkspaceSnapshotRef } from "./timeTravel.js";
import { treeViewSchema, type TreeView } from "./treeView.js";

/** The graph channel holding the FileManager's private fields (see {@link fileManagerPrivateFields}). */
export const FILE_MANAGER_CHANNEL = "_fileManager";

/**
 * The FileManager's private fields, packed in one channel (`_fileManager`): the tree's
 * (`_treeFingerprint`, `_treeMessageId`, `_treeView`, `_treeDirty`) and the file guards'
 * (`_fileReadLedger`, `_fileReadTimes`, `_toolLoop`, sized by `guardEntries`). Each graph channel
 * costs the framework work at every step, so seven fields share one; the hooks read and write
 * them flat ({@link FileManagerStateView}).
 */
export function fileManagerPrivateFields(guardEntries?: number): PackedFields {
  return new PackedFields(FILE_MANAGER_CHANNEL, {
    /** Fingerprint of the tree the model last saw (or was deliberately not shown). */
    _treeFingerprint: z.string(),
    /** Id of the latest full tree message, to notice when summarisation or trimming removed it. */
    _treeMessageId: z.string(),
    /** Append mode: what the model knows since that tree (see {@link TreeView}). */
    _treeView: treeViewSchema,
    /**
     * A tool that may change the workspace ran since the last check: a unique mark (see
     * {@link dirtyMark}), or `false` after a check that sent something. Reduced (last write wins)
     * because parallel tool calls write it in the same step.
     */
    _treeDirty: new ReducedValue(z.union([z.boolean(), z.string()]), { reducer: (_current: DirtyMark | undefined, next: DirtyMark | undefined) => next }),
    ...fileGuardStateFields(guardEntries),
  });
}

/**
 * State kept per thread: `startWorkTime` and `fileUpdateTime` (epoch ms), the private fields in
 * one `_fileManager` channel ({@link fileManagerPrivateFields}) and time travel's
 * `_workspaceSnapshot`. Private fields are never sent to the model, but they are ordinary graph
 * state: checkpointed, and visible to the application in `getState()`, `streamMode:
 * "updates"`/`"values"` and a LangGraph server's run responses.
 */
export function createFileManagerStateSchema(guardEntries?: number, packed: PackedFields = fileManagerPrivateFields(guardEntries)) {
  return new StateSchema({
    /** When the current run started (epoch ms). */
    startWorkTime: z.number().optional(),
    /** Newest known change to the workspace (epoch ms). */
    fileUpdateTime: z.number().optional(),
    [FILE_MANAGER_CHANNEL]: packed.field,
    ...timeTravelStateFields(),
  });
}

/**
 * "The workspace may have changed": `true` (older checkpoints) or a unique mark, so a check that
 * found no change can be remembered per process instead of clearing the flag in state.
 */
export type DirtyMark = boolean | string;

/** The state schema with default sizes. */
export const fileManagerStateSchema = createFileManagerStateSchema();

/** The slice of agent state the FileManager's hooks read: the `_fileManager` channel's fields spread flat. */
export interface FileManagerStateView {
  messages?: BaseMessage[];
  startWorkTime?: number;
  fileUpdateTime?: number;
  _treeFingerprint?: string;
  _treeMessageId?: string;
  _treeView?: TreeView;
  _treeDirty?: boolean | string;
  _workspaceSnapshot?: WorkspaceSnapshotRef;
}

/** The runtime parts the hooks use. */
export interface FileManagerRuntimeView {
  configurable?: { thread_id?: unknown; [key: string]: unknown };
}

/** A state update produced by the hooks. */
export type FileManagerUpdate = Partial<Omit<FileManagerStateView, "messages">> & { messages?: BaseMessage[] };
