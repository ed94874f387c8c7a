import path from "node:path";
import { RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import { getConfig, ReducedValue, StateSchema } from "@langchain/langgraph";
import { createMiddleware, type ToolCallRequest } from "langchain";
import { z } from "zod";
import { TrackerPool, TRACKER_KINDS, type ChangeTracker } from "../src/changes/index.js";
import { assertFileOperations, LISTING_METHODS } from "../src/fileops/assert.js";
import type { EnvironmentOption } from "../src/fileops/environment.js";
import { ENVIRONMENT_OPTION_MESSAGE, isEnvironmentOption, ThreadEnvironments } from "../src/fileops/threadEnvironment.js";
import { sharedEnvironmentsOf } from "../src/fileops/sharedEnvironments.js";
import type { FileOperations } from "../src/fileops/types.js";
import { renderDirectoryTree, treeBudgetShape, treeFingerprint } from "../src/tree.js";
import { timeTravelOptionsSchema, type TimeTravelOptions } from "../src/snapshots/index.js";
import { describeChanges, diffListings, entryPath, foldIntoDirectories, isOpaqueKey, parentKey, parseTreeListing, type TreeListing } from "../src/treeListing.js";
import { Workspace, resolveRootDir } from "../src/workspace.js";
import { assertUsableRootDir, rootDirIsLocal } from "../src/fileops/rootDir.js";
import { threadIdFromConfig } from "../src/context/thread.js";
import { checkedFileGuardsToolCallStep, fileGuardsModelCallHook, fileGuardsOptionsSchema, fileGuardStateFields, type FileGuardsOptions } from "./fileGuards.js";
import {
  catchToolErrorsStep,
  composeToolCallSteps,
  dirtyMark,
  mapPathArgsStep,
  markTreeDirtyStep,
  rewritePathsStep,
  type ToolCallStep,
} from "./toolCallSteps.js";
import type { ToolCallResult } from "./toolResults.js";
import { describeThrown, errorToolMessage } from "../tools/toolResult.js";
import { signToolResult } from "./receivedResults.js";
import { runAddressesCheckpoint, TimeTravel, timeTravelStateFields, type TimeTravelThread, type WorkspaceSnapshotRef } from "./timeTravel.js";
import { buildTreeChangeMessage, buildTreeMessage, isWorkspaceTreeMessage, treeTextOf } from "./treeMessage.js";
import { parseOptions } from "../src/options.js";
import { EVICTED_RESULTS_DIR, evictLargeResultsOptionsSchema, evictLargeResultsStep, type EvictLargeResultsOptions } from "./evictLargeResults.js";
import { PackedFields } from "./packedState.js";
import { hoistImagesModelCallStep, imagesInToolResultsSchema, type HoistRequestView, type ImagesInToolResults } from "./hoistImages.js";

/** Tools of this package that never change the workspace. */
export const DEFAULT_READ_ONLY_TOOLS: readonly string[] = ["get_current_time", "read_file", "search_files", "web_search", "web_extract"];

/** Where a FileManager failure happened (passed to `onError`). */
export type FileManagerErrorContext = { hook: "beforeAgent" | "beforeModel" | "wrapModelCall" | "wrapToolCall"; threadId: string };

/** Options of {@link createFileManagerMiddleware}. */
export interface FileManagerOptions {
  /**
   * Root holding one directory per thread (`rootDir/<thread_id>`). Default: `WORKBENCH_ROOT`,
   * else `./agent_files`, resolved once when the middleware is created. Give the tools the same.
   */
  rootDir?: string;
  /**
   * Where the workspace files live (default: this machine). Give the same backend to
   * `createFileTools({ fileOps })`: with e.g. `new ShellFileOperations(new SshEnvironment({…}))`
   * the thread directories are created, listed for the tree, checked for symlink escapes and
   * polled for changes on the SSH host (`rootDir` is then a path on that host). Any backend
   * other than the local disk is tracked by polling (`tracker.kind` does not apply).
   */
  fileOps?: FileOperations;
  /**
   * Where each thread's files are: an Environment, or `(threadId) => Environment` for one per
   * thread. The thread directory is created, listed for the tree, checked for symlink escapes
   * and tracked (polled unless it is the local disk) through the environment's file access.
   * Give the tools the same. With `fileOps` as well, `fileOps` wins. Default: this machine.
   */
  environment?: EnvironmentOption;
  /** How the tree is shown, and its budget. */
  tree?: {
    /**
     * `"append"` (default): the first tree is sent in full; later structural changes are
     * appended as a short change message (`+ added`, `- removed`, `renamed a => b`) and earlier
     * messages are never edited or removed, so the provider's prefix cache keeps working. A full
     * tree is appended again when the last one left the history (summarised or trimmed), or when
     * the changes since it add up to more than a fresh tree. `"replace"`: each change removes
     * the previous tree message and adds a new full tree (see `keepOnlyLatestTree`).
     */
    mode?: "append" | "replace";
    /** Most entries listed (default 200; `Infinity`: no cap); the rest is summarised per directory. */
    maxEntries?: number;
    /**
     * Most characters of a tree (default 8,000; at least 200): over it, single-directory chains share a line,
     * long names are shortened with `...(+N chars)...`, then the last lines are counted instead.
     */
    maxChars?: number;
    /** Deepest level listed (default unlimited). */
    maxDepth?: number;
    /** Extra gitignore-style patterns to hide (`.git`, `node_modules` and `.gitignore` rules always apply). */
    ignore?: readonly string[];
  };
  /** Show the tree on a thread's first model call when the workspace is not empty. Default true. */
  injectOnFirstCall?: boolean;
  /**
   * With `tree.mode: "replace"`: remove the previous tree message when adding a new one, so
   * history holds one tree. Default true. Ignored in the default append mode.
   */
  keepOnlyLatestTree?: boolean;
  /** Replace system paths of the thread directory with agent paths in tool results. Default true. */
  rewritePaths?: boolean;
  /**
   * Argument names holding paths in tools this package did not make (deepagents', MCP tools),
   * e.g. `["path", "file_path"]`: they are mapped from agent paths to confined system paths
   * before the call. Default `[]`.
   */
  pathArgs?: string[];
  /**
   * Tools that never change the workspace: after them the next model call skips the tree check
   * unless the tracker saw a change. Default {@link DEFAULT_READ_ONLY_TOOLS}.
   */
  readOnlyTools?: string[];
  /** Change tracking: implementation, most live watchers (LRU), idle close time, poll interval. */
  tracker?: { kind?: "parcel" | "chokidar" | "polling"; maxLive?: number; idleMs?: number; pollIntervalMs?: number };
  /**
   * The stateful file guards around the file tools (read dedup, staleness warnings, loop
   * detection; see fileGuards.ts), or `false` to leave them out. Default on.
   */
  fileGuards?: FileGuardsOptions | false;
  /**
   * Extra `wrapToolCall` steps, run after the built-in ones (inside error catching and path
   * rewriting). See {@link ToolCallStep}.
   */
  toolCallSteps?: ToolCallStep[];
  /**
   * Time travel: a snapshot of the workspace after each tool step that may change it, named in
   * every checkpoint, and the files restored when a run starts from a checkpoint naming another
   * snapshot (rewind, fork, resume after a rejection). `restore`: `"auto"` (default), `"ask"`
   * (interrupt with a `WorkspaceRestoreRequest`; resume with `"restore"` or `"keep"`) or `"off"`.
   * `false` records nothing. Local workspaces only. See README "Time travel".
   */
  timeTravel?: TimeTravelOptions | false;
  /**
   * A result of a tool this package did not make (MCP, custom) over `thresholdTokens` (default
   * 20,000 tokens, 4 characters each) is saved, secrets redacted, to `.tool-results/` in the
   * thread's workspace, and the model gets its start and end with the path and how to read more.
   * The folder is hidden from the tree. `false`: results go to the model whole. Default on.
   */
  evictLargeResults?: EvictLargeResultsOptions | false;
  /**
   * Images in tool results (e.g. `read_file` of a PNG) for models that accept images only from
   * the user: `"auto"` (default) moves them, in the model request only, into a user message right
   * after that step's tool results, naming the tool call, when the model needs it (OpenAI Chat
   * Completions: `ChatOpenAI`/`AzureChatOpenAI` without `useResponsesApi`, or a profile with
   * `imageToolMessage: false`); `"user-message"` always moves them; `"inline"` never does.
   * Append-only, so prompt caches keep hitting. See hoistImages.ts.
   */
  imagesInToolResults?: ImagesInToolResults;
  /** Told about failures the middleware survived (default: one `console.warn` line). */
  onError?: (error: Error, context: FileManagerErrorContext) => void;
}

const isFunction = (v: unknown) => typeof v === "function";

/** The checks on {@link FileManagerOptions}: strict at every level (an unknown key throws, naming the accepted ones). */
export const fileManagerOptionsSchema = z.strictObject({
  rootDir: z.string().trim().min(1, "rootDir must be a non-empty path").optional(),
  fileOps: z.custom<FileOperations>((v) => {
    try {
      assertFileOperations(v, LISTING_METHODS);
      return true;
    } catch {
      return false;
    }
  }, `fileOps must implement FileOperations (${LISTING_METHODS.join(", ")}), e.g. new ShellFileOperations(new SshEnvironment({ … }))`).optional(),
  environment: z.custom<EnvironmentOption>(isEnvironmentOption, ENVIRONMENT_OPTION_MESSAGE).optional(),
  // The budget's rule is the tree's own (src/tree.ts), so both accept the same values.
  tree: z.strictObject({ mode: z.enum(["append", "replace"]).optional(), ...treeBudgetShape }).optional(),
  injectOnFirstCall: z.boolean().optional(),
  keepOnlyLatestTree: z.boolean().optional(),
  rewritePaths: z.boolean().optional(),
  pathArgs: z.array(z.string().min(1)).optional(),
  readOnlyTools: z.array(z.string().min(1)).optional(),
  tracker: z
    .object({
      kind: z.enum(TRACKER_KINDS as unknown as ["parcel", "chokidar", "polling"]).optional(),
      maxLive: z.number().int().positive().optional(),
      idleMs: z.number().positive().optional(),
      pollIntervalMs: z.number().min(20).optional(),
    })
    .strict()
    .optional(),
  fileGuards: z.union([z.literal(false), fileGuardsOptionsSchema]).optional(),
  toolCallSteps: z.array(z.custom<ToolCallStep>(isFunction, "each tool call step must be a function")).optional(),
  timeTravel: z.union([z.literal(false), timeTravelOptionsSchema]).optional(),
  evictLargeResults: z.union([z.literal(false), evictLargeResultsOptionsSchema]).optional(),
  imagesInToolResults: imagesInToolResultsSchema.optional(),
  onError: z.custom<FileManagerOptions["onError"]>(isFunction, "onError must be a function").optional(),
});

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
 * Append mode's record of what the model was told since the last full tree. What the model
 * knows is that tree's entries (parsed back from the tree message in the history) without
 * `removed`, with `added`: the record stays a few bytes while the tree can be kilobytes, and
 * every checkpoint serialises it several times per step.
 */
export interface TreeView {
  /** Entry keys the model learnt of since that tree, newline-separated. */
  added?: string;
  /** Entry keys of that tree the model was told are gone, newline-separated. */
  removed?: string;
  /** Fingerprint of the known keys (sorted): a rebuilt list is used only if it matches. */
  sum?: string;
  /** Older checkpoints: every known key, newline-separated (used as it is when present). */
  known?: string;
  /** Ids of the change messages appended since that tree (all must still be in the history). */
  ids: string[];
  /** Characters of those change messages, weighed against a fresh tree. */
  chars: number;
  /**
   * Directories the last listing showed only in part, newline-separated (`*`: any); absent when
   * they are those of the last full tree (read from its message).
   */
  partial?: string;
  /** When that listing was made (epoch ms). */
  at: number;
}

const treeViewSchema = z.object({
  added: z.string().optional(),
  removed: z.string().optional(),
  sum: z.string().optional(),
  known: z.string().optional(),
  ids: z.array(z.string()),
  chars: z.number(),
  partial: z.string().optional(),
  at: z.number(),
});

/**
 * "The workspace may have changed": `true` (older checkpoints) or a unique mark, so a check that
 * found no change can be remembered per process instead of clearing the flag in state.
 */
type DirtyMark = boolean | string;

/** True when `state` carries a dirty mark the cached render has not answered. */
function isDirty(state: FileManagerStateView, cached: TreeCacheEntry | undefined): boolean {
  const mark = state._treeDirty;
  if (!mark) return false;
  return typeof mark !== "string" || cached?.checked !== mark;
}

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

interface TreeCacheEntry {
  tracker: ChangeTracker;
  generation: number;
  fingerprint: string;
  /** The dirty mark this render answered: a check that changed nothing writes no state, so it is remembered here. */
  checked?: DirtyMark;
}

/**
 * The FileManager's hook implementations, usable without an agent (benchmarks, custom graphs).
 * One instance serves every thread; per-thread facts live in state, per-process facts (trackers,
 * the tree cache) here.
 */
export class FileManagerHooks {
  readonly rootDir: string;
  private readonly options: FileManagerOptions;
  /** Each thread's environment and file access (the host holding its files). */
  private readonly environments: ThreadEnvironments;
  private readonly pool: TrackerPool;
  private readonly readOnly: Set<string>;
  private readonly pipeline: readonly ToolCallStep[];
  private readonly cacheCap: number;
  /** dir → what the tree looked like at a tracker generation; bounded, insertion order = LRU. */
  private readonly treeCache = new Map<string, TreeCacheEntry>();
  private readonly workspaces = new Map<string, Workspace>();
  /** Workspace snapshots and restores (time travel). */
  readonly timeTravel: TimeTravel;
  /** message id → index where it was last found (bounded, insertion order = LRU). */
  private readonly messageIndex = new Map<string, number>();
  /** thread → `startWorkTime` of its latest run in this process (artifacts' default cut-off). */
  private readonly runStarts = new Map<string, number>();
  private closed = false;

  constructor(options: FileManagerOptions = {}) {
    parseOptions(fileManagerOptionsSchema, options ?? {}, "Invalid FileManager options");
    this.options = options ?? {};
    this.rootDir = resolveRootDir(this.options.rootDir);
    // createWorkbench's one view of the environments, unless this part names its own.
    this.environments = sharedEnvironmentsOf(options) ?? new ThreadEnvironments({ environment: this.options.environment, fileOps: this.options.fileOps });
    assertUsableRootDir(this.rootDir, { local: rootDirIsLocal(this.environments) });
    this.pool = new TrackerPool({ ...this.options.tracker, onError: (err, ctx) => this.report(err, "beforeAgent", path.basename(ctx.dir)) });
    this.cacheCap = Math.max(this.pool.maxLive, 16);
    this.readOnly = new Set(this.options.readOnlyTools ?? DEFAULT_READ_ONLY_TOOLS);
    const rewrite = this.options.rewritePaths ?? true;
    this.timeTravel = new TimeTravel(this.rootDir, this.options.timeTravel, {
      // A restore rewrites entries in place (the directory stays, so does its watcher): the next
      // model call renders the tree afresh.
      onRestored: (ws) => void this.treeCache.delete(ws.dir),
      report: (err, threadId) => this.report(err, "beforeAgent", threadId),
      tracker: (ws) => (this.closed || !this.pool.has(ws.dir) ? undefined : this.pool.get(ws.dir)),
      environment: (threadId) => this.environments.environmentFor(threadId),
    });
    this.pipeline = [
      this.timeTravel.step,
      markTreeDirtyStep,
      catchToolErrorsStep({ rewrite, onError: (err, ctx) => this.report(err, "wrapToolCall", ctx.workspace.threadId, false) }),
      // Outside rewriting: the saved text and the preview show workspace paths.
      ...(this.options.evictLargeResults === false
        ? []
        : [evictLargeResultsStep(this.options.evictLargeResults, (err) => this.report(err, "wrapToolCall", undefined, false))]),
      ...(rewrite ? [rewritePathsStep] : []),
      mapPathArgsStep(this.options.pathArgs ?? []),
      ...(this.options.fileGuards === false ? [] : [checkedFileGuardsToolCallStep(this.options.fileGuards)]),
      ...(this.options.toolCallSteps ?? []),
    ];
  }

  /** `startWorkTime` of the thread's latest run in this process, if any. */
  lastRunStart(threadId: string | undefined): number | undefined {
    return this.runStarts.get(threadId ?? "");
  }

  /** The workspace of a thread (cached, so its real path is learned once). */
  workspaceFor(threadId: string | undefined): Workspace {
    const key = threadId ?? "";
    let ws = this.workspaces.get(key);
    if (ws) {
      this.workspaces.delete(key);
    } else {
      ws = Workspace.forThread(this.rootDir, threadId);
    }
    this.workspaces.set(key, ws);
    if (this.workspaces.size > 1024) this.workspaces.delete(this.workspaces.keys().next().value as string);
    return ws;
  }

  /** Start of a run: timestamps, the directory, the tracker, and a tree check at the first model call. */
  beforeAgent = async (state: FileManagerStateView, runtime?: FileManagerRuntimeView): Promise<FileManagerUpdate> => {
    const startWorkTime = Date.now();
    const threadId = threadIdOf(runtime);
    this.runStarts.delete(threadId ?? "");
    this.runStarts.set(threadId ?? "", startWorkTime);
    if (this.runStarts.size > 1024) this.runStarts.delete(this.runStarts.keys().next().value as string);
    try {
      const ws = this.workspaceFor(threadId);
      const host = await this.hostFor(ws);
      await ws.ensure(host);
      // ensure() is memoised; the directory may have been deleted since.
      await host.mkdirp(ws.dir);
      let tracker = this.trackerFor(ws, host);
      // Outside the catch below: with restore "ask" it raises an interrupt.
      const addressed = runAddressesCheckpoint(runtime?.configurable);
      const { restored, ...travel } = (await this.timeTravel.sync(state, { ws, host, tracker }, { scan: true, addressed }).catch(rethrow)) ?? {};
      if (restored) tracker = this.trackerFor(ws, host);
      const newest = tracker?.newestMtimeMs ?? (await host.stat(ws.dir))?.mtimeMs ?? 0;
      return {
        ...travel,
        startWorkTime,
        fileUpdateTime: Math.max(state.fileUpdateTime ?? 0, newest),
        // Watcher events are asynchronous: files changed just before this run may not be
        // reported yet, so the first model call of every run checks the tree itself.
        _treeDirty: dirtyMark(),
      };
    } catch (error) {
      if (error instanceof Rethrow) throw error.error;
      this.report(error, "beforeAgent", threadId);
      return { startWorkTime, _treeDirty: dirtyMark() };
    }
  };

  /**
   * Before each model call: O(1) when nothing changed (tracker generation and the cached
   * fingerprint agree with state); otherwise renders the tree and, if it differs from what the
   * model last saw, appends a change message or a full tree (replace mode: replaces the tree).
   */
  beforeModel = async (state: FileManagerStateView, runtime?: FileManagerRuntimeView): Promise<FileManagerUpdate | undefined> => {
    const threadId = threadIdOf(runtime);
    try {
      const ws = this.workspaceFor(threadId);
      if (this.provenUnchanged(state, ws)) return undefined;
      const host = await this.hostFor(ws);
      await ws.ensure(host);
      // A replay may start right here: bring the files to this checkpoint's snapshot first.
      const { restored, ...travel } = (await this.timeTravel.sync(state, { ws, host, tracker: this.trackerFor(ws, host) }).catch(rethrow)) ?? {};
      if (restored) state = { ...state, _treeDirty: dirtyMark() };
      const tracker = this.trackerFor(ws, host);
      const seen = state._treeFingerprint;
      const treeGone = this.treeGone(state);
      const cached = this.treeCache.get(ws.dir);
      const unchanged =
        seen !== undefined &&
        !isDirty(state, cached) &&
        !treeGone &&
        tracker !== undefined &&
        tracker.live &&
        cached !== undefined &&
        cached.tracker === tracker &&
        cached.generation === tracker.generation &&
        cached.fingerprint === seen;
      if (unchanged) return travel._workspaceSnapshot ? travel : undefined;
      const update = { ...(await this.checkTree(state, ws, host, tracker, treeGone)), ...travel };
      // Any update, even an empty one, makes langchain write the whole state back (every message
      // serialised again): a check that found nothing new returns undefined.
      return Object.keys(update).length > 0 ? update : undefined;
    } catch (error) {
      if (error instanceof Rethrow) throw error.error;
      this.report(error, "beforeModel", threadId);
      return undefined;
    }
  };

  /**
   * Around each model call: records which tool results the file guards rely on reached the model
   * intact, seen at the model itself whatever the middleware order (see receivedResults.ts).
   */
  readonly wrapModelCall = fileGuardsModelCallHook((error) => this.report(error, "wrapModelCall", threadIdOf(undefined), false));

  /** Around each model call, outside {@link wrapModelCall}: moves tool-result images per `imagesInToolResults`. */
  readonly hoistImages = <Q extends HoistRequestView, R>(request: Q, handler: (request: Q) => Promise<R>): Promise<R> =>
    hoistImagesModelCallStep(this.options.imagesInToolResults, (error) => this.report(error, "wrapModelCall", threadIdOf(undefined), false))(request, handler);

  /** Runs a tool call through the pipeline (path mapping, rewriting, error catching, dirty marking). */
  wrapToolCall = async (
    request: ToolCallRequest,
    handler: (request: ToolCallRequest) => ToolCallResult | Promise<ToolCallResult>,
  ): Promise<ToolCallResult> => {
    const threadId = threadIdOf(request.runtime as FileManagerRuntimeView | undefined);
    const ws = this.workspaceFor(threadId);
    const readOnly = this.readOnly.has(request.toolCall.name);
    let host: FileOperations | undefined;
    try {
      host = await this.hostFor(ws);
    } catch (error) {
      this.report(error, "wrapToolCall", threadId, false);
      // Only path mapping needs the host here; the tools report the failure themselves.
      if ((this.options.pathArgs ?? []).length === 0) return composeToolCallSteps(this.pipeline, handler)({ request, workspace: ws, readOnly });
      return errorToolMessage(request.toolCall, describeThrown(error));
    }
    // Signed as it leaves the pipeline (after path rewriting): what "reached the model intact" is checked against.
    return signToolResult(await composeToolCallSteps(this.pipeline, handler)({ request, workspace: ws, readOnly, host }), request.toolCall.id);
  };

  /** Runs `fn` with a thread's workspace and host (the app's time-travel calls). */
  async withThread<T>(threadId: string, fn: (t: TimeTravelThread) => Promise<T>): Promise<T> {
    const ws = this.workspaceFor(threadId);
    const host = await this.hostFor(ws);
    return fn({ ws, host });
  }

  /** Where a thread's files are (its environment's file access, or the `fileOps` option). */
  private hostFor(ws: Workspace): Promise<FileOperations> {
    return this.environments.fileOpsFor(ws.threadId);
  }

  /**
   * The change tracker of a thread's workspace (started lazily; undefined once closed, and with a
   * per-thread `environment` provider until the thread's first run started it).
   */
  trackerOf(threadId: string | undefined): ChangeTracker | undefined {
    const ws = this.workspaceFor(threadId);
    const fixed = this.environments.fixedFileOps;
    // With a per-thread provider the backend is known only inside a run: report started trackers only.
    if (!fixed && !this.pool.has(ws.dir)) return undefined;
    return this.trackerFor(ws, fixed);
  }

  /** Closes every tracker; afterwards the hooks still work but check the tree on every call. */
  async close(): Promise<void> {
    this.closed = true;
    this.treeCache.clear();
    await this.timeTravel.close();
    await this.pool.close();
  }

  private trackerFor(ws: Workspace, host: FileOperations | undefined): ChangeTracker | undefined {
    if (this.closed) return undefined;
    return this.pool.get(ws.dir, host);
  }

  /**
   * The steady state without a single await: a live tracker already serving this directory
   * has not moved since the render the model was shown. Otherwise the full check below runs.
   */
  private provenUnchanged(state: FileManagerStateView, ws: Workspace): boolean {
    const seen = state._treeFingerprint;
    const cached = this.treeCache.get(ws.dir);
    if (seen === undefined || this.closed || cached === undefined || isDirty(state, cached) || cached.fingerprint !== seen || !this.pool.has(ws.dir)) return false;
    const tracker = this.pool.get(ws.dir);
    return tracker === cached.tracker && tracker.live && cached.generation === tracker.generation && !this.treeGone(state);
  }

  /** The last full tree, or a change message since, is no longer in the history. */
  private treeGone(state: FileManagerStateView): boolean {
    const id = state._treeMessageId;
    if (!id) return false;
    const messages = state.messages ?? [];
    if (!this.hasMessage(messages, id)) return true;
    for (const changeId of state._treeView?.ids ?? []) if (!this.hasMessage(messages, changeId)) return true;
    return false;
  }

  /**
   * History is append-only between summarisations, so a message stays at the index it was
   * found at: checking that index first keeps the steady state O(1) however far back it is.
   */
  private hasMessage(messages: readonly BaseMessage[], id: string): boolean {
    return this.findMessage(messages, id) !== undefined;
  }

  private findMessage(messages: readonly BaseMessage[], id: string): BaseMessage | undefined {
    const hint = this.messageIndex.get(id);
    if (hint !== undefined && messages[hint]?.id === id) return messages[hint];
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i]?.id !== id) continue;
      this.messageIndex.delete(id);
      this.messageIndex.set(id, i);
      if (this.messageIndex.size > 4096) this.messageIndex.delete(this.messageIndex.keys().next().value as string);
      return messages[i];
    }
    return undefined;
  }

  private async checkTree(
    state: FileManagerStateView,
    ws: Workspace,
    host: FileOperations,
    tracker: ChangeTracker | undefined,
    treeGone: boolean,
  ): Promise<FileManagerUpdate | undefined> {
    // Read the generation before rendering: a change during the render bumps it past the cached
    // value, so the next call checks again instead of trusting a possibly stale render.
    const wasLive = tracker?.live === true;
    const generation = tracker?.generation ?? 0;
    const { mode = "append", ...budget } = this.options.tree ?? {};
    // Saved large results are named in their previews; the tree leaves them out.
    if (this.options.evictLargeResults !== false) budget.ignore = [...(budget.ignore ?? []), `/${EVICTED_RESULTS_DIR}/`];
    const text = await renderDirectoryTree(ws.dir, { ...budget, rootLabel: ".", fileOps: host });
    const fingerprint = treeFingerprint(text);
    if (tracker && wasLive) this.remember(ws.dir, { tracker, generation, fingerprint, checked: state._treeDirty });

    const seen = state._treeFingerprint;
    const first = seen === undefined;
    const empty = !text.includes("\n");
    const update: FileManagerUpdate = { _treeFingerprint: fingerprint, _treeDirty: false };
    const show = first ? (this.options.injectOnFirstCall ?? true) && !empty : fingerprint !== seen || treeGone;
    if (!show) {
      // Unchanged: the dirty mark stays in state and the cache above remembers it was answered.
      if (!first) return undefined;
      update._treeMessageId = "";
      return update;
    }
    const structureChanged = !first && fingerprint !== seen;
    const known = state.fileUpdateTime ?? 0;
    let fileUpdateTime = Math.max(known, tracker?.newestMtimeMs ?? 0);
    // A change the tracker has not reported yet: its detection time stands in for its mtime.
    if (structureChanged && fileUpdateTime <= known) fileUpdateTime = Date.now();
    if (fileUpdateTime > 0) update.fileUpdateTime = fileUpdateTime;
    const changedAt = fileUpdateTime || Date.now();
    const tree = buildTreeMessage(text, { first: !structureChanged, changedAt });

    if (mode === "replace") {
      const removals =
        (this.options.keepOnlyLatestTree ?? true)
          ? (state.messages ?? []).filter((m) => isWorkspaceTreeMessage(m) && m.id).map((m) => new RemoveMessage({ id: m.id! }))
          : [];
      update.messages = [...removals, tree];
      update._treeMessageId = tree.id;
      return update;
    }

    const listing = parseTreeListing(text);
    const view = state._treeView;
    if (structureChanged && !treeGone && state._treeMessageId && view) {
      const known = this.knownOf(view, state);
      const changed = known && (await this.changeMessage(view, known, listing, ws, host, changedAt, contentLength(tree)));
      if (changed) return { ...update, ...changed };
    }
    // Append a full tree; the earlier messages stay as they are.
    update.messages = [tree];
    update._treeMessageId = tree.id;
    // Too many entries to diff against: the next change then sends a full tree.
    update._treeView =
      knownChars(listing.entries) <= MAX_KNOWN_CHARS
        ? { added: "", removed: "", sum: knownSum(listing.entries), ids: [], chars: 0, at: Date.now() }
        : undefined;
    return update;
  }

  /**
   * The change message from what the model knows to `listing`, with the view it leaves, or
   * undefined when a full tree is the better message (more changes than a tree's worth, names
   * that cannot be checked, too many entries to check).
   */
  private async changeMessage(
    view: TreeView,
    { base, known, basePartial }: KnownEntries,
    listing: TreeListing,
    ws: Workspace,
    host: FileOperations,
    changedAt: number,
    treeChars: number,
  ): Promise<FileManagerUpdate | undefined> {
    const { added, missing } = diffListings(known, listing.entries);
    if (missing.length + added.length > MAX_UNLISTED_CHECKS || missing.some(isOpaqueKey)) return undefined;
    const at = Date.now();
    const lstat = (key: string) => host.lstat(`${ws.dir}/${entryPath(key)}`);
    // Out of a budgeted listing is not necessarily gone: ask the host about those.
    const gone = listing.complete ? missing : (await Promise.all(missing.map(async (k) => ((await lstat(k)) === null ? k : undefined)))).filter(isString);
    // Newly listed is not necessarily new when its directory was shown only in part before:
    // such an entry counts as added only if it was modified since that listing.
    const knownSet = new Set(known);
    const partial = new Set(view.partial === undefined ? basePartial : splitKeys(view.partial));
    const fresh = new Set<string>();
    const news: string[] = [];
    for (const key of added) {
      const parent = parentKey(key);
      const unsure = partial.has("*") || partial.has(parent) || (parent !== "" && !knownSet.has(parent) && !fresh.has(parent));
      if (unsure && ((await lstat(key))?.mtimeMs ?? 0) < view.at - CLOCK_SLACK_MS) continue;
      fresh.add(key);
      news.push(key);
    }
    const goneSet = new Set(gone);
    const nextKnown = [...known.filter((k) => !goneSet.has(k)), ...added];
    if (knownChars(nextKnown) > MAX_KNOWN_CHARS) return undefined;
    const changes = describeChanges(news, foldIntoDirectories(gone), known);
    const baseSet = new Set(base);
    const nextSet = new Set(nextKnown);
    const { known: _legacy, ...rest } = view;
    const next: TreeView = {
      ...rest,
      added: knownText(nextKnown.filter((k) => !baseSet.has(k))),
      removed: knownText(base.filter((k) => !nextSet.has(k))),
      sum: knownSum(nextKnown),
      partial: sameKeys(listing.partial, basePartial) ? undefined : listing.partial.join("\n"),
      at,
    };
    if (changes.length === 0) return { _treeView: next };
    const message = buildTreeChangeMessage(changes, { changedAt });
    const chars = view.chars + contentLength(message);
    if (chars > treeChars) return undefined;
    return { messages: [message], _treeView: { ...next, ids: [...view.ids, message.id!], chars } };
  }

  /**
   * What the model knows: the last full tree's entries (parsed from that message) with the
   * view's changes, or the record of an older checkpoint. Undefined when the tree message is
   * not in the history or was altered (the fingerprint disagrees): then a full tree is sent.
   */
  private knownOf(view: TreeView, state: FileManagerStateView): KnownEntries | undefined {
    const id = state._treeMessageId;
    const text = id ? treeTextOf(this.findMessage(state.messages ?? [], id)) : undefined;
    if (text === undefined) return undefined;
    const { entries: base, partial: basePartial } = parseTreeListing(text);
    if (view.known !== undefined) return { base, known: splitKeys(view.known), basePartial };
    const removed = new Set(splitKeys(view.removed ?? ""));
    const known = [...base.filter((k) => !removed.has(k)), ...splitKeys(view.added ?? "")];
    return knownSum(known) === view.sum ? { base, known, basePartial } : undefined;
  }

  private remember(dir: string, entry: TreeCacheEntry): void {
    this.treeCache.delete(dir);
    this.treeCache.set(dir, entry);
    if (this.treeCache.size > this.cacheCap) this.treeCache.delete(this.treeCache.keys().next().value as string);
  }

  private report(error: unknown, hook: FileManagerErrorContext["hook"], threadId: string | undefined, warnByDefault = true): void {
    const err = error instanceof Error ? error : new Error(String(error));
    const context = { hook, threadId: threadId ?? "default" };
    try {
      if (this.options.onError) this.options.onError(err, context);
      else if (warnByDefault) console.warn(`[langgraph-workbench] FileManager ${hook} (thread ${context.threadId}): ${err.message}`);
    } catch {
      // The caller's hook failed; nothing sensible left to do with it.
    }
  }
}

/** Carries an interrupt raised by time travel past the hooks' catch-all. */
class Rethrow {
  constructor(readonly error: unknown) {}
}

function rethrow(error: unknown): never {
  throw new Rethrow(error);
}

function threadIdOf(runtime: FileManagerRuntimeView | undefined): string | undefined {
  const id = runtime?.configurable?.thread_id;
  if (id !== undefined && id !== null && id !== "") return String(id);
  try {
    return threadIdFromConfig(getConfig());
  } catch {
    return undefined; // Called outside a LangGraph run (benchmarks, direct calls).
  }
}

/** Entries whose absence from a budgeted listing is checked on the host; more → a full tree. */
const MAX_UNLISTED_CHECKS = 64;
/** Tolerated clock difference between this process and the host holding the files. */
const CLOCK_SLACK_MS = 2_000;
const isString = (v: unknown): v is string => typeof v === "string";
/** Bound of the known keys diffed against a fresh listing (characters); more → a full tree. */
const MAX_KNOWN_CHARS = 64_000;

/** The last full tree's entries and partial directories, and what the model knows now (those with the changes since). */
interface KnownEntries {
  base: string[];
  known: string[];
  basePartial: string[];
}

function knownText(entries: readonly string[]): string {
  return entries.join("\n");
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((k, i) => k === b[i]);
}

function splitKeys(text: string): string[] {
  return text === "" ? [] : text.split("\n");
}

/** Characters of the known keys, newline-separated: what bounds the diff's work. */
function knownChars(entries: readonly string[]): number {
  let n = Math.max(0, entries.length - 1);
  for (const k of entries) n += k.length;
  return n;
}

/** Order-free: a rebuilt list may order a removed-then-re-added entry differently. */
function knownSum(entries: readonly string[]): string {
  return treeFingerprint(knownText([...entries].sort()));
}

function contentLength(message: BaseMessage): number {
  return typeof message.content === "string" ? message.content.length : JSON.stringify(message.content).length;
}

/**
 * Shows the agent its workspace and keeps its paths honest:
 * - **beforeAgent** records `startWorkTime` / `fileUpdateTime` and starts the thread's tracker;
 * - **beforeModel** shows the directory tree as a user message on the first call (per
 *   `injectOnFirstCall`) and, when the structure changed, appends a short change message
 *   (`tree.mode: "append"`, the default: earlier messages stay byte-identical for prompt
 *   caching) or replaces the tree (`"replace"`); with nothing changed it costs O(1), no
 *   filesystem walk;
 * - **wrapToolCall** maps foreign tools' path arguments (`pathArgs`), rewrites system paths in
 *   results, turns tool exceptions into error ToolMessages, and marks the tree dirty after tools
 *   that may change files so the very next model call sees the change.
 *
 * Place it after `summarizationMiddleware` in the `middleware` array so a tree that was
 * summarised away is restored before the same model call. Call `close()` when done so the
 * process can exit (it stops the file watchers).
 */
export function createFileManagerMiddleware(options: FileManagerOptions = {}) {
  const hooks = new FileManagerHooks(options);
  const packed = fileManagerPrivateFields(options.fileGuards ? options.fileGuards.maxEntries : undefined);
  const middleware = createMiddleware({
    name: "FileManagerMiddleware",
    stateSchema: createFileManagerStateSchema(undefined, packed),
    beforeAgent: packed.wrapHook(hooks.beforeAgent) as never,
    beforeModel: packed.wrapHook(hooks.beforeModel) as never,
    wrapToolCall: packed.wrapToolCall(hooks.wrapToolCall) as never,
    ...modelCallWrapper(hooks, packed, options),
  });
  return Object.assign(middleware, {
    /** The hook implementations (benchmarks, custom graphs). */
    hooks,
    /** Stops the file watchers so the process can exit. Idempotent. */
    close: () => hooks.close(),
  });
}

/**
 * The FileManager's `wrapModelCall`: tool-result images moved for the model (outer), then the
 * record of what the model received for dedup (context editing clears results in the request
 * only). None when both are off.
 */
function modelCallWrapper(hooks: FileManagerHooks, packed: PackedFields, options: FileManagerOptions) {
  const received = options.fileGuards === false ? undefined : packed.wrapModelCall(hooks.wrapModelCall);
  const hoist = options.imagesInToolResults === "inline" ? undefined : hooks.hoistImages;
  if (!hoist) return received ? { wrapModelCall: received as never } : {};
  const inner = received ?? ((request: never, handler: (request: never) => Promise<unknown>) => handler(request));
  return { wrapModelCall: ((request: never, handler: never) => hoist(request as HoistRequestView, (r) => inner(r as never, handler))) as never };
}

/** What {@link createFileManagerMiddleware} returns: the middleware plus `close()` and `hooks`. */
export type FileManagerMiddleware = ReturnType<typeof createFileManagerMiddleware>;
