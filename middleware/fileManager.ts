import path from "node:path";
import { RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import { getConfig } from "@langchain/langgraph";
import { createMiddleware, type ToolCallRequest } from "langchain";
import { TrackerPool, type ChangeTracker } from "../src/changes/index.js";
import { ThreadEnvironments } from "../src/environment/threadEnvironment.js";
import { sharedEnvironmentsOf } from "../src/environment/sharedEnvironments.js";
import type { FileOperations } from "../src/environment/fileOperations.js";
import { renderDirectoryTree, treeFingerprint } from "../src/tree.js";
import { entryPath, parseTreeListing, type TreeListing } from "../src/treeListing.js";
import { Workspace, resolveRootDir } from "../src/workspace.js";
import { assertUsableRootDir, rootDirIsLocal } from "../src/environment/rootDir.js";
import { threadIdFromConfig } from "../src/context/thread.js";
import { parseOptions } from "../src/options.js";
import { describeThrown, errorToolMessage } from "../tools/toolResult.js";
import { EVICTED_RESULTS_DIR, evictLargeResultsStep } from "./evictLargeResults.js";
import { checkedFileGuardsToolCallStep, fileGuardsModelCallHook } from "./fileGuards.js";
import { DEFAULT_READ_ONLY_TOOLS, fileManagerOptionsSchema, type FileManagerErrorContext, type FileManagerOptions } from "./fileManagerOptions.js";
import { createFileManagerStateSchema, fileManagerPrivateFields, type DirtyMark, type FileManagerRuntimeView, type FileManagerStateView, type FileManagerUpdate } from "./fileManagerState.js";
import { hoistImagesModelCallStep, type HoistRequestView } from "./hoistImages.js";
import type { PackedFields } from "./packedState.js";
import { signToolResult } from "./receivedResults.js";
import { runAddressesCheckpoint, TimeTravel, type TimeTravelThread } from "./timeTravel.js";
import { catchToolErrorsStep, composeToolCallSteps, dirtyMark, mapPathArgsStep, markTreeDirtyStep, rewritePathsStep, type ToolCallStep } from "./toolCallSteps.js";
import type { ToolCallResult } from "./toolResults.js";
import { buildTreeMessage, isWorkspaceTreeMessage, treeTextOf } from "./treeMessage.js";
import { messageChars, nextTreeUpdate, treeUpdateProbes } from "./treeUpdate.js";
import { knownEntriesOf, viewAfterFullTree, type KnownEntries, type TreeView } from "./treeView.js";

export type { TreeView } from "./treeView.js";
export { DEFAULT_READ_ONLY_TOOLS, fileManagerOptionsSchema, type FileManagerErrorContext, type FileManagerOptions } from "./fileManagerOptions.js";
export {
  createFileManagerStateSchema,
  FILE_MANAGER_CHANNEL,
  fileManagerPrivateFields,
  fileManagerStateSchema,
  type FileManagerRuntimeView,
  type FileManagerStateView,
  type FileManagerUpdate,
} from "./fileManagerState.js";

/** True when `state` carries a dirty mark the cached render has not answered. */
function isDirty(state: FileManagerStateView, cached: TreeCacheEntry | undefined): boolean {
  const mark = state._treeDirty;
  if (!mark) return false;
  return typeof mark !== "string" || cached?.checked !== mark;
}

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
      // A look at every file that goes without the watcher anyway (a restart on a large
      // workspace) runs before the watcher starts, not beside its crawl.
      const watcherAfter = !this.closed && !this.pool.has(ws.dir) && (await this.timeTravel.looksBeforeWatcher({ ws, host }));
      let tracker = watcherAfter ? undefined : this.trackerFor(ws, host);
      // Outside the catch below: with restore "ask" it raises an interrupt.
      const addressed = runAddressesCheckpoint(runtime?.configurable);
      const { restored, ...travel } = (await this.timeTravel.sync(state, { ws, host, tracker }, { scan: true, addressed }).catch(rethrow)) ?? {};
      if (restored || watcherAfter) tracker = this.trackerFor(ws, host);
      // That look left no mark (no watcher was live): one is set once a background listing finds
      // the files as the look recorded them, so the next run does not look at every file again.
      if (watcherAfter && !restored && tracker) void this.timeTravel.markWhenVerified({ ws, host, tracker });
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
      const changed = known && (await this.changeUpdate(view, known, listing, ws, host, changedAt, messageChars(tree)));
      if (changed) return { ...update, ...changed };
    }
    // Append a full tree; the earlier messages stay as they are.
    update.messages = [tree];
    update._treeMessageId = tree.id;
    update._treeView = viewAfterFullTree(listing, Date.now());
    return update;
  }

  /** Append mode's change message from what the model knows to `listing`, or undefined when a full tree is due (see treeUpdate.ts). */
  private async changeUpdate(view: TreeView, known: KnownEntries, listing: TreeListing, ws: Workspace, host: FileOperations, changedAt: number, treeChars: number) {
    const probes = treeUpdateProbes(view, known, listing);
    if (!probes) return undefined;
    const at = Date.now();
    const answers = await Promise.all(probes.map(async (key) => [key, (await host.lstat(`${ws.dir}/${entryPath(key)}`))?.mtimeMs ?? null] as const));
    const update = nextTreeUpdate(view, listing, { known, host: new Map(answers), at, changedAt, treeChars });
    return update && { _treeView: update.view, ...(update.message ? { messages: [update.message] } : {}) };
  }

  /** What the model knows (see {@link knownEntriesOf}); undefined when the tree message left the history. */
  private knownOf(view: TreeView, state: FileManagerStateView): KnownEntries | undefined {
    const id = state._treeMessageId;
    const text = id ? treeTextOf(this.findMessage(state.messages ?? [], id)) : undefined;
    return text === undefined ? undefined : knownEntriesOf(view, text);
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
