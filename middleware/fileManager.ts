import path from "node:path";
import { RemoveMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { getConfig, ReducedValue, StateSchema } from "@langchain/langgraph";
import { createMiddleware, type ToolCallRequest } from "langchain";
import { z } from "zod";
import { TrackerPool, TRACKER_KINDS, type ChangeTracker } from "../src/changes/index.js";
import { assertFileOperations, LISTING_METHODS } from "../src/fileops/assert.js";
import type { EnvironmentOption } from "../src/fileops/environment.js";
import { ENVIRONMENT_OPTION_MESSAGE, isEnvironmentOption, ThreadEnvironments } from "../src/fileops/threadEnvironment.js";
import type { FileOperations } from "../src/fileops/types.js";
import { renderDirectoryTree, treeFingerprint } from "../src/tree.js";
import { Workspace, resolveRootDir } from "../src/workspace.js";
import { threadIdFromConfig } from "../src/context/thread.js";
import { fileGuardStateFields, fileGuardsToolCallStep, type FileGuardsOptions } from "./fileGuards.js";
import {
  catchToolErrorsStep,
  composeToolCallSteps,
  mapPathArgsStep,
  markTreeDirtyStep,
  rewritePathsStep,
  type ToolCallStep,
} from "./toolCallSteps.js";
import type { ToolCallResult } from "./toolResults.js";
import { buildTreeMessage, isWorkspaceTreeMessage } from "./treeMessage.js";

/** Tools of this package that never change the workspace. */
export const DEFAULT_READ_ONLY_TOOLS: readonly string[] = ["get_current_time", "read_file", "search_files", "web_search", "web_extract"];

/** Where a FileManager failure happened (passed to `onError`). */
export type FileManagerErrorContext = { hook: "beforeAgent" | "beforeModel" | "wrapToolCall"; threadId: string };

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
  /** Budget of the tree shown to the model. */
  tree?: {
    /** Most entries listed (default 200); the rest is summarised per directory. */
    maxEntries?: number;
    /** Deepest level listed (default unlimited). */
    maxDepth?: number;
    /** Extra gitignore-style patterns to hide (`.git`, `node_modules` and `.gitignore` rules always apply). */
    ignore?: string[];
  };
  /** Show the tree on a thread's first model call when the workspace is not empty. Default true. */
  injectOnFirstCall?: boolean;
  /** Remove the previous tree message when adding a new one, so history holds one tree. Default true. */
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
  /** Told about failures the middleware survived (default: one `console.warn` line). */
  onError?: (error: Error, context: FileManagerErrorContext) => void;
}

const isFunction = (v: unknown) => typeof v === "function";

const optionsSchema = z.object({
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
  tree: z
    .object({
      maxEntries: z.number().int().positive().optional(),
      maxDepth: z.number().int().positive().optional(),
      ignore: z.array(z.string()).optional(),
    })
    .strict()
    .optional(),
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
  fileGuards: z.union([z.literal(false), z.object({ maxEntries: z.number().int().positive().optional(), loopWarnAt: z.number().int().optional(), loopBlockAt: z.number().int().optional() }).strict()]).optional(),
  toolCallSteps: z.array(z.custom<ToolCallStep>(isFunction, "each tool call step must be a function")).optional(),
  onError: z.custom<FileManagerOptions["onError"]>(isFunction, "onError must be a function").optional(),
});

/**
 * State kept per thread: `startWorkTime` and `fileUpdateTime` (epoch ms), and private `_` keys.
 * Private keys are never sent to the model, but they are ordinary graph state: checkpointed, and
 * visible to the application in `getState()`, `streamMode: "updates"`/`"values"` and a LangGraph
 * server's run responses. Includes the file guards' private fields (sized by `guardEntries`).
 */
export function createFileManagerStateSchema(guardEntries?: number) {
  return new StateSchema({
    /** When the current run started (epoch ms). */
    startWorkTime: z.number().optional(),
    /** Newest known change to the workspace (epoch ms). */
    fileUpdateTime: z.number().optional(),
    /** Fingerprint of the tree the model last saw (or was deliberately not shown). */
    _treeFingerprint: z.string().optional(),
    /** Id of the latest tree message, to notice when summarisation or trimming removed it. */
    _treeMessageId: z.string().optional(),
    /**
     * A tool that may change the workspace ran since the last check. Reduced (last write wins)
     * because parallel tool calls write it in the same step.
     */
    _treeDirty: new ReducedValue(z.boolean().optional(), { reducer: (_current: boolean | undefined, next: boolean | undefined) => next }),
    ...fileGuardStateFields(guardEntries),
  });
}

/** The state schema with default sizes. */
export const fileManagerStateSchema = createFileManagerStateSchema();

/** The slice of agent state the FileManager reads. */
export interface FileManagerStateView {
  messages?: BaseMessage[];
  startWorkTime?: number;
  fileUpdateTime?: number;
  _treeFingerprint?: string;
  _treeMessageId?: string;
  _treeDirty?: boolean;
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
  /** thread → `startWorkTime` of its latest run in this process (artifacts' default cut-off). */
  private readonly runStarts = new Map<string, number>();
  private closed = false;

  constructor(options: FileManagerOptions = {}) {
    const parsed = optionsSchema.safeParse(options ?? {});
    if (!parsed.success) {
      throw new TypeError(`Invalid FileManager options: ${z.prettifyError(parsed.error)}`);
    }
    this.options = options ?? {};
    this.rootDir = resolveRootDir(this.options.rootDir);
    this.environments = new ThreadEnvironments({ environment: this.options.environment, fileOps: this.options.fileOps });
    this.pool = new TrackerPool({ ...this.options.tracker, onError: (err, ctx) => this.report(err, "beforeAgent", path.basename(ctx.dir)) });
    this.cacheCap = Math.max(this.pool.maxLive, 16);
    this.readOnly = new Set(this.options.readOnlyTools ?? DEFAULT_READ_ONLY_TOOLS);
    const rewrite = this.options.rewritePaths ?? true;
    this.pipeline = [
      markTreeDirtyStep,
      catchToolErrorsStep({ rewrite, onError: (err, ctx) => this.report(err, "wrapToolCall", ctx.workspace.threadId, false) }),
      ...(rewrite ? [rewritePathsStep] : []),
      mapPathArgsStep(this.options.pathArgs ?? []),
      ...(this.options.fileGuards === false ? [] : [fileGuardsToolCallStep(this.options.fileGuards)]),
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
      const tracker = this.trackerFor(ws, host);
      const newest = tracker?.newestMtimeMs ?? (await host.stat(ws.dir))?.mtimeMs ?? 0;
      return {
        startWorkTime,
        fileUpdateTime: Math.max(state.fileUpdateTime ?? 0, newest),
        // Watcher events are asynchronous: files changed just before this run may not be
        // reported yet, so the first model call of every run checks the tree itself.
        _treeDirty: true,
      };
    } catch (error) {
      this.report(error, "beforeAgent", threadId);
      return { startWorkTime, _treeDirty: true };
    }
  };

  /**
   * Before each model call: O(1) when nothing changed (tracker generation and the cached
   * fingerprint agree with state); otherwise renders the tree and, if it differs from what the
   * model last saw, adds it as a message (removing the previous one).
   */
  beforeModel = async (state: FileManagerStateView, runtime?: FileManagerRuntimeView): Promise<FileManagerUpdate | undefined> => {
    const threadId = threadIdOf(runtime);
    try {
      const ws = this.workspaceFor(threadId);
      const host = await this.hostFor(ws);
      await ws.ensure(host);
      const tracker = this.trackerFor(ws, host);
      const seen = state._treeFingerprint;
      const treeGone = Boolean(state._treeMessageId) && !hasMessageId(state.messages, state._treeMessageId!);
      const cached = this.treeCache.get(ws.dir);
      const unchanged =
        seen !== undefined &&
        !state._treeDirty &&
        !treeGone &&
        tracker !== undefined &&
        tracker.live &&
        cached !== undefined &&
        cached.tracker === tracker &&
        cached.generation === tracker.generation &&
        cached.fingerprint === seen;
      if (unchanged) return undefined;
      return await this.checkTree(state, ws, host, tracker, treeGone);
    } catch (error) {
      this.report(error, "beforeModel", threadId);
      return undefined;
    }
  };

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
      return new ToolMessage({
        content: `Error: ${(error as Error).message}`,
        tool_call_id: request.toolCall.id ?? "",
        name: request.toolCall.name,
        status: "error",
      });
    }
    return composeToolCallSteps(this.pipeline, handler)({ request, workspace: ws, readOnly, host });
  };

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
    await this.pool.close();
  }

  private trackerFor(ws: Workspace, host: FileOperations | undefined): ChangeTracker | undefined {
    if (this.closed) return undefined;
    return this.pool.get(ws.dir, host);
  }

  private async checkTree(
    state: FileManagerStateView,
    ws: Workspace,
    host: FileOperations,
    tracker: ChangeTracker | undefined,
    treeGone: boolean,
  ): Promise<FileManagerUpdate> {
    // Read the generation before rendering: a change during the render bumps it past the cached
    // value, so the next call checks again instead of trusting a possibly stale render.
    const wasLive = tracker?.live === true;
    const generation = tracker?.generation ?? 0;
    const tree = this.options.tree ?? {};
    const text = await renderDirectoryTree(ws.dir, { ...tree, rootLabel: ".", fileOps: host });
    const fingerprint = treeFingerprint(text);
    if (tracker && wasLive) this.remember(ws.dir, { tracker, generation, fingerprint });

    const seen = state._treeFingerprint;
    const first = seen === undefined;
    const empty = !text.includes("\n");
    const update: FileManagerUpdate = { _treeFingerprint: fingerprint, _treeDirty: false };
    const show = first ? (this.options.injectOnFirstCall ?? true) && !empty : fingerprint !== seen || treeGone;
    if (!show) {
      if (first) update._treeMessageId = "";
      return update;
    }
    const structureChanged = !first && fingerprint !== seen;
    const known = state.fileUpdateTime ?? 0;
    let fileUpdateTime = Math.max(known, tracker?.newestMtimeMs ?? 0);
    // A change the tracker has not reported yet: its detection time stands in for its mtime.
    if (structureChanged && fileUpdateTime <= known) fileUpdateTime = Date.now();
    const message = buildTreeMessage(text, { first: !structureChanged, changedAt: fileUpdateTime || Date.now() });
    const removals =
      (this.options.keepOnlyLatestTree ?? true)
        ? (state.messages ?? []).filter((m) => isWorkspaceTreeMessage(m) && m.id).map((m) => new RemoveMessage({ id: m.id! }))
        : [];
    update.messages = [...removals, message];
    update._treeMessageId = message.id;
    if (fileUpdateTime > 0) update.fileUpdateTime = fileUpdateTime;
    return update;
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

function threadIdOf(runtime: FileManagerRuntimeView | undefined): string | undefined {
  const id = runtime?.configurable?.thread_id;
  if (id !== undefined && id !== null && id !== "") return String(id);
  try {
    return threadIdFromConfig(getConfig());
  } catch {
    return undefined; // Called outside a LangGraph run (benchmarks, direct calls).
  }
}

function hasMessageId(messages: BaseMessage[] | undefined, id: string): boolean {
  if (!messages) return false;
  // The tree message is usually among the last few: search from the end.
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.id === id) return true;
  return false;
}

/**
 * Shows the agent its workspace and keeps its paths honest:
 * - **beforeAgent** records `startWorkTime` / `fileUpdateTime` and starts the thread's tracker;
 * - **beforeModel** adds the directory tree as a user message when the structure changed since
 *   the tree the model last saw (first call per `injectOnFirstCall`), removing the previous tree
 *   message; with nothing changed it costs O(1), no filesystem walk;
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
  const middleware = createMiddleware({
    name: "FileManagerMiddleware",
    stateSchema: createFileManagerStateSchema(options.fileGuards ? options.fileGuards.maxEntries : undefined),
    beforeAgent: (state, runtime) => hooks.beforeAgent(state as FileManagerStateView, runtime as FileManagerRuntimeView) as never,
    beforeModel: (state, runtime) => hooks.beforeModel(state as FileManagerStateView, runtime as FileManagerRuntimeView) as never,
    wrapToolCall: (request, handler) => hooks.wrapToolCall(request as ToolCallRequest, handler as never),
  });
  return Object.assign(middleware, {
    /** The hook implementations (benchmarks, custom graphs). */
    hooks,
    /** Stops the file watchers so the process can exit. Idempotent. */
    close: () => hooks.close(),
  });
}

/** What {@link createFileManagerMiddleware} returns: the middleware plus `close()` and `hooks`. */
export type FileManagerMiddleware = ReturnType<typeof createFileManagerMiddleware>;
