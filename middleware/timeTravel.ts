/**
 * Time travel for the workspace: every checkpoint names the snapshot of the files that belong
 * to it (`_workspaceSnapshot`, private state), and a run that starts from a checkpoint naming
 * another snapshot than the one the workspace was last handed to (a rewind, a fork, a resume
 * after a rejection) brings the files back first. The FileManager calls these functions from
 * its hooks; all time-travel state lives here and in the per-thread store (src/snapshots/).
 */
import type { BaseMessage } from "@langchain/core/messages";
import { interrupt, ReducedValue } from "@langchain/langgraph";
import path from "node:path";
import { z } from "zod";
import { DEFAULT_IGNORED_NAMES } from "../src/changes/ignore-names.js";
import type { ChangeTracker } from "../src/changes/types.js";
import type { Environment } from "../src/environment/environment.js";
import { isLocalFileOperations as isLocalDisk } from "../src/environment/locality.js";
import type { FileOperations } from "../src/environment/fileOperations.js";
import { isPendingSnapshotId, pendingSnapshotId, SnapshotStores, type ChangeSet, type RestoreResult, type SnapshotInfo, type ThreadSnapshots, type TimeTravelOptions } from "../src/snapshots/index.js";
import type { Workspace } from "../src/workspace.js";
import type { ToolCallContext, ToolCallStep } from "./toolCallSteps.js";
import { withStateUpdate } from "./toolResults.js";

/** What a checkpoint says about its workspace: the snapshot id and when it was taken (orders parallel tool calls). */
export interface WorkspaceSnapshotRef {
  id: string;
  at: number;
}

const refSchema = z.object({ id: z.string(), at: z.number() });

/** The private state field (the newest snapshot wins when parallel tool calls each record one). */
export function timeTravelStateFields() {
  return {
    _workspaceSnapshot: new ReducedValue(refSchema.optional(), {
      reducer: (current: WorkspaceSnapshotRef | undefined, next: WorkspaceSnapshotRef | undefined) =>
        next === undefined ? current : current === undefined || next.at >= current.at ? next : current,
    }),
  };
}

/** The snapshot id a checkpoint's state values name (`(await agent.getState(config)).values`). */
export function snapshotIdOf(values: unknown): string | undefined {
  const ref = (values as { _workspaceSnapshot?: WorkspaceSnapshotRef } | undefined)?._workspaceSnapshot;
  return typeof ref?.id === "string" ? ref.id : undefined;
}

/** The interrupt value raised with `restore: "ask"`; resume with `"restore"` or `"keep"`. */
export interface WorkspaceRestoreRequest {
  type: "workspace_restore";
  threadId: string;
  /** The snapshot the checkpoint names. */
  checkpointSnapshot: string;
  /** The snapshot the workspace holds now (recorded, so choosing "restore" loses nothing). */
  workspaceSnapshot: string;
}

/** The state slice time travel reads. */
export interface TimeTravelStateView {
  messages?: BaseMessage[];
  /** Set by the FileManager's first `beforeAgent` in this checkpoint lineage. */
  startWorkTime?: number;
  _workspaceSnapshot?: WorkspaceSnapshotRef;
}

/**
 * True when the caller pointed this run at a stored checkpoint (a rewind, a fork, a replay)
 * rather than at the thread's latest. LangGraph 1.x marks such runs in the run's configurable
 * (`CONFIG_KEY_REPLAY_STATE`, not exported); tests/time-travel.test.ts notices if that changes.
 */
export function runAddressesCheckpoint(configurable: Record<string, unknown> | undefined): boolean {
  return configurable?.["__pregel_replay_state"] != null;
}

/**
 * How long a full look at the files waits for the thread's watcher to become live: a background
 * baseline can wait; a run start waits briefly (a watcher on 100k files needs ~0.4 s to be ready),
 * and without a live watcher takes its look without a mark, so the next run looks in full again.
 */
const TRACKER_READY_WAIT_MS = { background: 3_000, run: 150 } as const;
/** How long a background check for a mark ({@link TimeTravel.markWhenVerified}) waits for the watcher. */
const VERIFY_WAIT_MS = 10_000;
/** What a watcher needs per file to become live (measured: ~0.4 s at 100k files). */
const TRACKER_READY_MS_PER_FILE = 0.004;

/**
 * Whether a full look over `files` files (undefined: not known) waits up to `waitMs` for the
 * thread's watcher: only when the watcher can be live in that time; a look that did not wait sets
 * no mark either way.
 */
export function waitsForWatcher(files: number | undefined, waitMs: number): boolean {
  return files === undefined || files * TRACKER_READY_MS_PER_FILE <= waitMs;
}

/** More paths listed by the tracker than this: a stat pass instead. */
const MAX_DRIFT_PATHS = 2_000;

/**
 * How long the snapshot after a tool whose changes are unknown waits for the watcher to deliver
 * them (parcel batches for 50-500 ms) before it stat's every file instead.
 */
const SETTLE_WAIT_MS = 1_000;

/** Tool calls whose changed paths are known from their arguments (others get a stat pass). */
const PATCH_FILE_LINE = /^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$/gm;

function changedPathsOf(ctx: ToolCallContext): string[] | undefined {
  const { name, args } = ctx.request.toolCall as { name: string; args?: Record<string, unknown> };
  if (!args || typeof args !== "object") return undefined;
  const rel: string[] = [];
  if (name === "write_file" && typeof args.path === "string") rel.push(args.path);
  else if (name === "patch") {
    if (typeof args.path === "string") rel.push(args.path);
    if (typeof args.patch === "string") for (const m of args.patch.matchAll(PATCH_FILE_LINE)) rel.push((m[1] ?? m[2]!).trim());
    if (rel.length === 0) return undefined;
  } else return undefined;
  try {
    return rel.map((p) => ctx.workspace.resolveLexically(p));
  } catch {
    return []; // A refused path: the tool wrote nothing.
  }
}

/**
 * The paths a watcher listed, as the store can look them up: a name that was not UTF-8 reaches
 * JS with U+FFFD in place of its bytes (it names nothing on disk), so its nearest directory
 * whose name survived is looked at instead (the store lists directories by raw bytes).
 * Undefined when one lies outside the workspace.
 */
export function lookablePaths(dir: string, listed: readonly string[]): string[] | undefined {
  const out = new Set<string>();
  for (const p of listed) {
    if (p !== dir && !p.startsWith(dir + path.sep)) return undefined;
    let q = p;
    while (q.includes("\uFFFD") && q !== dir) q = path.dirname(q);
    out.add(q);
  }
  return [...out];
}

function lastAiMessageId(messages: BaseMessage[] | undefined): string | undefined {
  if (!messages) return undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.getType?.() === "ai") return m.id ?? `#${i}`;
  }
  return undefined;
}

/**
 * A baseline being recorded in the background and the snapshots queued behind it. `command`: a
 * tool whose changes are unknown ran during it (without waiting: the store marks what changed
 * from then on as changed while taken); every later tool of the look waits for it to drain.
 */
interface Look {
  chain: Promise<unknown>;
  command?: boolean;
}

/** What the FileManager gives time travel to reach a thread. */
export interface TimeTravelThread {
  ws: Workspace;
  host: FileOperations | Pick<FileOperations, "mkdirp" | "realpath"> | undefined;
  tracker?: ChangeTracker;
}

/** Time travel for one FileManager: snapshots after tool steps, restores on rewinds, the app's API. */
export class TimeTravel {
  readonly stores: SnapshotStores | undefined;
  readonly mode: "auto" | "ask" | "off";
  private monotonic = 0;
  /**
   * threadId → the step (last AI message) whose tool calls recorded the current snapshot, and
   * those calls: a call of that step not among them is a sibling running in parallel, not a replay.
   */
  private readonly stepOfHead = new Map<string, { step: string; calls: Set<string> }>();
  /**
   * threadId → the tracker and its cursor read before the last full look at the files (a full
   * scan, or a scan of every path the tracker listed since the mark before): what the tracker
   * lists after it is all that can have changed since. Snapshots of named paths leave the mark
   * where it is, so changes made meanwhile by anyone else stay listed.
   */
  private readonly marks = new Map<string, { tracker: ChangeTracker; cursor: number }>();
  /** The tracker ignores names time travel records: its lists are not complete for us. */
  private readonly trackerBlind: boolean;
  /**
   * threadId → the baseline being recorded in the background (a thread's first run must not wait
   * for hashing every file), and the chain of snapshots queued behind it: steps record what
   * their tools wrote right away and name a pending id, committed in order once the baseline is.
   * The entry goes when the chain has drained.
   */
  private readonly looks = new Map<string, Look>();
  /** Background listings that may set a mark after a look without a watcher ({@link markWhenVerified}). */
  private readonly verifying = new Set<Promise<void>>();
  /** Threads on other machines are snapshotted with `timeTravel.remote`; else skipped (reported once if the app configured time travel). */
  private readonly remote: boolean;
  private warnedRemote: boolean;
  /** Environments whose remote snapshots failed to start (tools missing): not tried again. */
  private readonly unsupported = new WeakSet<Environment>();

  constructor(
    rootDir: string,
    options: TimeTravelOptions | false | undefined,
    private readonly hooks: {
      /** The workspace was swapped: drop trackers and caches of `ws.dir`. */
      onRestored: (ws: Workspace) => void;
      report: (error: unknown, threadId: string) => void;
      /** The live change tracker of a workspace, if one runs. */
      tracker?: (ws: Workspace) => ChangeTracker | undefined;
      /** The thread's environment (remote snapshots run through its `exec`). */
      environment?: (threadId: string) => Promise<Environment>;
    },
  ) {
    this.stores = options === false ? undefined : new SnapshotStores(rootDir, options ?? {});
    this.mode = options === false ? "off" : (options?.restore ?? "auto");
    this.remote = options !== false && options?.remote === true;
    this.warnedRemote = options === undefined;
    const ignored = options === false ? [] : (options?.ignoreNames ?? DEFAULT_IGNORED_NAMES);
    this.trackerBlind = !DEFAULT_IGNORED_NAMES.every((n) => ignored.includes(n));
  }

  /**
   * The thread's store: the local one of its directory, or (with `timeTravel.remote`) the façade
   * that records a host-side mirror of a remote workspace through the thread's environment.
   */
  private async storeOf(t: TimeTravelThread): Promise<ThreadSnapshots | undefined> {
    if (!this.stores) return undefined;
    if (isLocalDisk(t.host as FileOperations | undefined)) return this.stores.storeFor(t.ws.threadId, t.ws.dir);
    const env = this.remote ? await this.hooks.environment?.(t.ws.threadId) : undefined;
    if (!env || this.unsupported.has(env)) {
      if (!this.warnedRemote) {
        this.warnedRemote = true;
        this.hooks.report(new Error("time travel snapshots threads on other machines only with timeTravel: { remote: true }; this thread's files are on another host, so they are not snapshotted"), t.ws.threadId);
      }
      return undefined;
    }
    const store = this.stores.remoteStoreFor(t.ws.threadId, t.ws.dir, env);
    try {
      await store.ready();
    } catch (error) {
      this.unsupported.add(env);
      this.hooks.report(error, t.ws.threadId);
      return undefined;
    }
    return store;
  }

  private ref(id: string): WorkspaceSnapshotRef {
    this.monotonic = Math.max(Date.now(), this.monotonic + 1);
    return { id, at: this.monotonic };
  }

  /**
   * Brings the workspace in line with the checkpoint `state` came from. Returns the state update
   * (the snapshot id when it changed) or undefined. With `step` (inside a tool call) a snapshot
   * recorded by a sibling call of the same step is not taken for a rewind. `addressed`: the run
   * starts from a checkpoint the caller chose ({@link runAddressesCheckpoint}).
   */
  async sync(
    state: TimeTravelStateView,
    t: TimeTravelThread,
    opts: { step?: string; call?: string; scan?: boolean; addressed?: boolean } = {},
  ): Promise<{ _workspaceSnapshot?: WorkspaceSnapshotRef; restored?: boolean } | undefined> {
    const store = await this.storeOf(t);
    if (!store) return undefined;
    const threadId = t.ws.threadId;
    // While a look is taken in the background the checkpoints of this run name its pending ids;
    // a run the caller pointed at a checkpoint waits for it (the restore needs the whole record).
    if (this.looks.has(threadId)) {
      if (!opts.addressed) return undefined;
      await this.drained(threadId);
    }
    // Steady state (every model and tool call): the checkpoint names what the workspace holds.
    const known = store.peekHead();
    const named = state._workspaceSnapshot?.id;
    if (!opts.scan && known && !known.pinned && named !== undefined && named === (known.assigned ?? known.id)) return undefined;
    try {
      // A pending id (named during a baseline) stands for the snapshot it became.
      if (named !== undefined && isPendingSnapshotId(named)) {
        const real = await store.resolve(named);
        if (real !== undefined) {
          const update = await this.sync({ ...state, _workspaceSnapshot: { id: real, at: state._workspaceSnapshot!.at } }, t, opts);
          return update?._workspaceSnapshot ? update : { ...update, _workspaceSnapshot: this.ref(real) };
        }
      }
      const head = await store.headInfo();
      if (!head) {
        this.startLook(store, t, "baseline");
        return undefined;
      }
      // A checkpoint that names no snapshot goes back to the baseline only when it belongs to the
      // thread's known history: written before time travel was on (the FileManager ran), or
      // chosen by the caller (the input checkpoint of the first run). Otherwise the checkpoints
      // are new to this workspace (an in-memory checkpointer after a restart, the same thread_id
      // with another checkpointer) and the files as they are stay.
      const fromHistory = state.startWorkTime !== undefined || opts.addressed === true;
      const want = state._workspaceSnapshot?.id ?? (fromHistory ? head.baseline : undefined);
      if (head.pinned || want === undefined) {
        // Files may have changed since the store last looked (another process, by hand).
        if (!head.pinned && opts.scan) {
          const drift = this.drift(t);
          if (drift) return { _workspaceSnapshot: this.ref(await this.recordFiles(store, t, drift)) };
        }
        await store.assign(head.id);
        return { _workspaceSnapshot: this.ref(head.id) };
      }
      if (want === (head.assigned ?? head.id)) {
        const drift = opts.scan ? this.drift(t) : undefined;
        if (!drift) return undefined;
        // Files changed outside the tools since the last snapshot: this checkpoint names them.
        // Without a live watcher to say what (a restart) every file is stat'ed, before the run goes
        // on: with several workers on one store, a look still in flight when another worker moves
        // the thread on would commit a stale head (tests/multi-worker-freshness.test.ts).
        const id = await this.recordFiles(store, t, drift);
        return id === want ? undefined : { _workspaceSnapshot: this.ref(id) };
      }
      const recorded = this.stepOfHead.get(threadId);
      if (opts.step !== undefined && recorded?.step === opts.step && !recorded.calls.has(opts.call ?? "")) return undefined;
      let decision: "restore" | "keep" = this.mode === "auto" ? "restore" : "keep";
      if (this.mode === "ask") {
        const request: WorkspaceRestoreRequest = { type: "workspace_restore", threadId, checkpointSnapshot: want, workspaceSnapshot: await store.snapshot({ reason: "scan" }) };
        const answer: unknown = interrupt(request);
        decision = answer === "restore" || (typeof answer === "object" && answer !== null && (answer as { restore?: unknown }).restore === true) ? "restore" : "keep";
      }
      if (decision === "restore" && (await store.has(want))) {
        const cursor = this.cursorOf(t);
        // With a live watcher, what it listed plus the directories the restore touches are looked at, not every file.
        const drift = this.drift(t);
        const { kept, changedWhileTaken } = await store.restore(want, drift === "all" ? {} : { changed: drift?.paths ?? [] });
        this.setMark(t, cursor);
        if (kept) this.hooks.report(new Error(`restoring snapshot ${want} left ${kept.length} path(s) as they are, because an entry time travel does not record holds the name: ${kept.slice(0, 5).join(", ")}`), threadId);
        if (changedWhileTaken) this.hooks.report(new Error(`snapshot ${want} was taken while a command ran, so ${changedWhileTaken.length} path(s) may hold what the command made of them rather than what was there before: ${changedWhileTaken.slice(0, 5).join(", ")}`), threadId);
        this.stepOfHead.delete(threadId);
        this.hooks.onRestored(t.ws);
        return state._workspaceSnapshot ? { restored: true } : { _workspaceSnapshot: this.ref(want), restored: true };
      }
      if (decision === "restore") this.hooks.report(new Error(`the checkpoint's workspace snapshot ${want} is no longer stored (retention); the files were left as they are`), threadId);
      // Keep the files: the checkpoint adopts what the workspace holds.
      const id = await store.snapshot({ reason: "scan", assign: true });
      return { _workspaceSnapshot: this.ref(id) };
    } catch (error) {
      if (isInterrupt(error)) throw error;
      this.hooks.report(error, threadId);
      return undefined;
    }
  }

  /**
   * Whether the run-start look of `t` will stat every file without waiting for a watcher: the
   * store knows too many files for a watcher to be live in time, and no mark says what changed
   * since a look. The caller then starts the thread's watcher after the look, so the watcher's own
   * crawl (~0.4 s at 100k files) does not compete with the look for the CPU; the look's result and
   * the next run's look are the same either way (no mark without a live watcher).
   */
  async looksBeforeWatcher(t: TimeTravelThread): Promise<boolean> {
    if (this.marks.has(t.ws.threadId) || this.looks.has(t.ws.threadId)) return false;
    try {
      const store = await this.storeOf(t);
      const files = store ? await store.warm() : undefined;
      return !waitsForWatcher(files, TRACKER_READY_WAIT_MS.run);
    } catch {
      return false; // sync() reports the store's failure itself.
    }
  }

  /**
   * After a run-start look that went without a watcher ({@link looksBeforeWatcher}): once the
   * thread's watcher is live, one listing in the background checks that the files are still what
   * that look recorded (directory digests only; nothing read, nothing committed, so no head can go
   * stale). If so, the watcher's cursor from before the listing becomes the mark: whatever changed
   * after it, the watcher lists, and the next run looks at just that instead of every file again.
   * A mark set meanwhile (a look, a restore) is newer and stays. `close()` waits for it.
   */
  markWhenVerified(t: TimeTravelThread): void {
    const run: Promise<void> = this.verifyThenMark(t).finally(() => this.verifying.delete(run));
    this.verifying.add(run);
  }

  private async verifyThenMark(t: TimeTravelThread): Promise<void> {
    const threadId = t.ws.threadId;
    try {
      const tracker = t.tracker ?? this.hooks.tracker?.(t.ws);
      if (!tracker || this.trackerBlind || this.marks.has(threadId)) return;
      await this.awaitLive(t, VERIFY_WAIT_MS);
      const cursor = this.cursorOf(t);
      if (!cursor || this.marks.has(threadId) || this.looks.has(threadId)) return;
      const store = await this.storeOf(t);
      if (!store || !(await store.matchesDisk())) return;
      if (!this.marks.has(threadId) && this.trackerOf(t) === cursor.tracker) this.setMark(t, cursor);
    } catch (error) {
      this.hooks.report(error, threadId);
    }
  }

  /**
   * Takes the baseline in the background (see {@link looks}). Tools that run before it commits
   * hand in their pre-images.
   */
  private startLook(store: ThreadSnapshots, t: TimeTravelThread, reason: "baseline"): void {
    const threadId = t.ws.threadId;
    store.openLook();
    const done = this.recordFiles(store, t, "all", { reason, background: true }).catch((error: unknown) => {
      store.openLook(false);
      this.hooks.report(error, threadId);
    });
    const entry: Look = { chain: done as Promise<unknown> };
    this.looks.set(threadId, entry);
    void done.then(() => this.dropDrained(threadId, entry, done));
  }

  /** Resolves once no look (and nothing queued behind one) is in flight for `threadId`. */
  private async drained(threadId: string): Promise<void> {
    for (let entry = this.looks.get(threadId); entry; entry = this.looks.get(threadId)) await entry.chain;
  }

  /** Runs `fn` after the look `entry` of `threadId` and every snapshot queued behind it. */
  private afterLook<T>(entry: Look, threadId: string, fn: () => Promise<T>): Promise<T> {
    const run = entry.chain.then(fn);
    const link = run.catch(() => undefined);
    entry.chain = link;
    void link.then(() => this.dropDrained(threadId, entry, link));
    return run;
  }

  private dropDrained(threadId: string, entry: Look, link: Promise<unknown>): void {
    if (entry.chain === link && this.looks.get(threadId) === entry) this.looks.delete(threadId);
  }

  /**
   * Records the files as they are — every file stat'ed (`"all"`), or just the paths the tracker
   * listed — and hands that snapshot to the checkpoint.
   */
  private async recordFiles(
    store: ThreadSnapshots,
    t: TimeTravelThread,
    what: "all" | { paths: string[] },
    look: { reason?: "scan" | "baseline"; background?: boolean; alias?: string } = {},
  ): Promise<string> {
    // A full look is worth a mark only with a watcher already live (its ready time is a fraction
    // of a full pass: 0.4 s at 100k files); else the next run would pay the full pass again.
    if (what === "all") {
      const wait = TRACKER_READY_WAIT_MS[look.background ? "background" : "run"];
      const files = await store.warm();
      if (waitsForWatcher(files, wait)) await this.awaitLive(t, wait);
    }
    const cursor = this.cursorOf(t);
    const id = await store.snapshot({
      reason: look.reason ?? "scan",
      assign: true,
      ...(look.alias !== undefined ? { alias: look.alias } : {}),
      ...(what === "all" ? { background: look.background === true } : { paths: what.paths, statCache: true }),
    });
    this.setMark(t, cursor);
    return id;
  }

  /** Waits (bounded) for the thread's tracker to deliver events. */
  private async awaitLive(t: TimeTravelThread, ms: number): Promise<void> {
    const tracker = t.tracker ?? this.hooks.tracker?.(t.ws);
    if (!tracker || tracker.live || this.trackerBlind) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref?.();
    });
    await Promise.race([tracker.start().catch(() => undefined), timeout]);
    clearTimeout(timer);
  }

  private trackerOf(t: TimeTravelThread): ChangeTracker | undefined {
    const tracker = t.tracker ?? this.hooks.tracker?.(t.ws);
    return tracker?.live && !this.trackerBlind ? tracker : undefined;
  }

  /** The tracker's cursor now, read before a full look at the files. */
  private cursorOf(t: TimeTravelThread): { tracker: ChangeTracker; cursor: number } | undefined {
    const tracker = this.trackerOf(t);
    return tracker ? { tracker, cursor: tracker.cursor } : undefined;
  }

  private setMark(t: TimeTravelThread, mark: { tracker: ChangeTracker; cursor: number } | undefined): void {
    const threadId = t.ws.threadId;
    this.marks.delete(threadId);
    if (!mark) return;
    this.marks.set(threadId, mark);
    if (this.marks.size > 1024) this.marks.delete(this.marks.keys().next().value as string);
  }

  /**
   * What may have changed since the last full look: undefined (nothing), the paths the live
   * tracker listed since its mark, or `"all"` when it cannot tell (no mark, another or no live
   * tracker, a record that overflowed, a path it names outside the workspace).
   */
  private drift(t: TimeTravelThread): "all" | { paths: string[] } | undefined {
    const mark = this.marks.get(t.ws.threadId);
    const tracker = this.trackerOf(t);
    if (!mark || !tracker || mark.tracker !== tracker) return "all";
    const listed = tracker.changesSince(mark.cursor);
    if (!listed) return "all";
    if (listed.paths.length === 0) return undefined;
    // Past a few thousand paths one stat pass is cheaper than walking to each.
    if (listed.paths.length > MAX_DRIFT_PATHS) return "all";
    const paths = lookablePaths(t.ws.dir, listed.paths);
    return paths ? { paths } : "all";
  }

  /**
   * The tool-call step: first the rewind check (a replay may resume right at a tool call), then
   * the tool, then a snapshot of what it may have changed — re-reading just the paths our own
   * write tools name, a stat pass after anything else — put into the state update.
   */
  readonly step: ToolCallStep = async (ctx, next) => {
    if (!this.stores) return next(ctx);
    const t: TimeTravelThread = { ws: ctx.workspace, host: ctx.host };
    const threadId = ctx.workspace.threadId;
    const state = ctx.request.state as TimeTravelStateView | undefined;
    const step = lastAiMessageId(state?.messages) ?? "";
    const call = ctx.request.toolCall.id ?? "";
    const store = await this.storeOf(t).catch((error: unknown) => {
      this.hooks.report(error, threadId);
      return undefined;
    });
    const paths = changedPathsOf(ctx);
    // During a look: a tool whose paths are known has their pre-images recorded before it runs.
    // The first tool whose changes are unknown (`run_command`) runs without waiting: from now on
    // the store marks every entry it reads changed (by ctime) as changed while taken, so a
    // rewind past the command names what it may not bring back exactly. Any later tool of the
    // look waits for it (a pre-image captured after the command would not be the baseline's).
    let early = false;
    let command: Look | undefined;
    const look = this.looks.get(threadId);
    if (store && !ctx.readOnly && look) {
      if (!look.command && !paths && store.flagChangesFrom(Date.now())) {
        look.command = true;
        command = look;
      } else {
        const before = paths && !look.command ? await store.capture(paths) : undefined;
        if (before && !look.command) {
          store.protectBaseline(before);
          early = true;
        } else await this.drained(threadId);
      }
    }
    const synced = state ? await this.sync(state, t, { step, call }) : undefined;
    // Read right before the tool: whatever the watcher lists after it may be the tool's doing.
    const cursor = this.cursorOf(t);
    const result = await next(ctx);
    if (ctx.readOnly || !store) return synced?._workspaceSnapshot ? withStateUpdate(result, { _workspaceSnapshot: synced._workspaceSnapshot }) : result;
    try {
      if (command) {
        const id = await this.afterCommandDuringLook(store, t, command, cursor);
        this.noteStep(threadId, step, call);
        return withStateUpdate(result, { _workspaceSnapshot: this.ref(id) });
      }
      if (early && paths && this.looks.has(threadId)) {
        const after = await store.capture(paths);
        // Still behind the look (the chain may have drained during the capture: then the
        // store's queue, which reads the disk in order, takes this step's snapshot below).
        const entry = this.looks.get(threadId);
        if (after && entry) {
          const alias = pendingSnapshotId();
          void this.afterLook(entry, threadId, () => store.commitCaptured(after, alias)).catch((error: unknown) => this.hooks.report(error, threadId));
          this.noteStep(threadId, step, call);
          return withStateUpdate(result, { _workspaceSnapshot: this.ref(alias) });
        }
        await this.drained(threadId);
      }
      const id = paths ? await store.snapshot({ paths, assign: true }) : await this.afterUnknownTool(store, t, cursor);
      this.noteStep(threadId, step, call);
      return withStateUpdate(result, { _workspaceSnapshot: this.ref(id) });
    } catch (error) {
      this.hooks.report(error, ctx.workspace.threadId);
      return result;
    }
  };

  /**
   * The snapshot after a tool whose changes are unknown (`run_command`, a foreign tool): with a
   * live watcher that settles, only what it listed since the last full look is re-read; else
   * every file is stat'ed and the mark moves to `cursor` (read before the tool).
   */
  private async afterUnknownTool(store: ThreadSnapshots, t: TimeTravelThread, cursor: { tracker: ChangeTracker; cursor: number } | undefined, alias?: string): Promise<string> {
    const named = alias !== undefined ? { alias } : {};
    // Queued behind a look (alias), the run has returned: no settle marker may appear in the
    // workspace after it; that snapshot stat's every file instead (off the run's path).
    if (alias === undefined && (await this.settle(t))) {
      const drift = this.drift(t);
      if (drift !== "all") return drift ? this.recordFiles(store, t, drift, named) : store.snapshot({ paths: [], assign: true, ...named });
    }
    // The watcher may have gone live while the tool ran: a cursor read now still precedes the pass.
    const mark = cursor ?? this.cursorOf(t);
    const id = await store.snapshot({ assign: true, ...named });
    this.setMark(t, mark);
    return id;
  }

  /**
   * The snapshot after a tool that ran during the look without waiting: queued behind the look
   * under a pending id (the look's records are committed first, marking what changed from the
   * tool's start); or, when the look drained meanwhile, taken now. Either way the mark ends here.
   */
  private async afterCommandDuringLook(store: ThreadSnapshots, t: TimeTravelThread, look: Look, cursor: { tracker: ChangeTracker; cursor: number } | undefined): Promise<string> {
    const threadId = t.ws.threadId;
    if (this.looks.get(threadId) !== look) {
      store.flagChangesFrom(undefined);
      return this.afterUnknownTool(store, t, cursor);
    }
    const alias = pendingSnapshotId();
    void this.afterLook(look, threadId, () => {
      store.flagChangesFrom(undefined);
      return this.afterUnknownTool(store, t, cursor, alias);
    }).catch((error: unknown) => this.hooks.report(error, threadId));
    return alias;
  }

  /** Waits (bounded) until the thread's watcher has delivered every change made so far. */
  private async settle(t: TimeTravelThread): Promise<boolean> {
    const tracker = this.trackerOf(t);
    return tracker?.settle ? tracker.settle(SETTLE_WAIT_MS).catch(() => false) : false;
  }

  /** The step (and call) whose tool recorded the thread's latest snapshot. */
  private noteStep(threadId: string, step: string, call: string): void {
    const recorded = this.stepOfHead.get(threadId);
    if (recorded?.step === step) recorded.calls.add(call);
    else this.stepOfHead.set(threadId, { step, calls: new Set([call]) });
  }

  /** The store of a thread for the app's calls, once its background baseline and queued snapshots are in. */
  private async settledStore(t: TimeTravelThread): Promise<ThreadSnapshots> {
    if (!this.stores) throw new Error("Time travel is off for this workbench (timeTravel: false); enable it to list, diff or restore snapshots.");
    const store = await this.storeOf(t);
    if (!store) {
      throw new Error(
        this.remote
          ? "This thread's files live on another host and its environment cannot be snapshotted (see the reported error: GNU find, tar and coreutils are needed there), so it has no snapshots."
          : "This thread's files live on another host (Docker/SSH environment); set timeTravel: { remote: true } to snapshot it.",
      );
    }
    await this.drained(t.ws.threadId);
    return store;
  }

  /** The thread's snapshots, newest first. */
  async snapshots(t: TimeTravelThread): Promise<SnapshotInfo[]> {
    return (await this.settledStore(t)).list();
  }

  /** A snapshot id as the app has it (perhaps a pending one, from a checkpoint of a first run) → the store's. */
  private async idOf(store: ThreadSnapshots, id: string): Promise<string> {
    return (await store.resolve(id)) ?? id;
  }

  /**
   * Restores a snapshot now (the current state is recorded first), or with `paths` only those
   * files or directories (everything else, hand edits included, stays). The thread's next run
   * keeps these files instead of restoring its checkpoint's.
   */
  async restore(t: TimeTravelThread, id: string, options: { paths?: readonly string[] | undefined } = {}): Promise<RestoreResult> {
    const store = await this.settledStore(t);
    const real = await this.idOf(store, id);
    const result = options.paths ? await store.restorePaths(real, options.paths) : await store.restore(real, { pin: true });
    this.stepOfHead.delete(t.ws.threadId);
    this.hooks.onRestored(t.ws);
    return result;
  }

  /** Unified diff and file list between two snapshots; `to` defaults to the workspace as it is now. */
  async changes(t: TimeTravelThread, range: { from: string; to?: string | undefined; paths?: readonly string[] | undefined }): Promise<ChangeSet> {
    const store = await this.settledStore(t);
    const to = range.to !== undefined ? await this.idOf(store, range.to) : await store.snapshot({ reason: "scan" });
    return this.stores!.changes(store, await this.idOf(store, range.from), to, range.paths);
  }

  /** Waits for every background baseline and the snapshots queued behind it (the FileManager's `close()`). */
  async close(): Promise<void> {
    while (this.looks.size > 0 || this.verifying.size > 0) await Promise.all([...[...this.looks.values()].map((b) => b.chain), ...this.verifying]);
  }

  /** Records the workspace now (full stat pass) and returns the snapshot id. */
  async snapshotNow(t: TimeTravelThread): Promise<string> {
    return (await this.settledStore(t)).snapshot({ reason: "scan" });
  }
}

function isInterrupt(error: unknown): boolean {
  return typeof error === "object" && error !== null && ((error as { name?: string }).name === "GraphInterrupt" || "interrupts" in error);
}
