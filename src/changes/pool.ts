import path from "node:path";
import type { FileOperations } from "../environment/fileOperations.js";
import { report, type TrackerOptions } from "./base.js";
import { createChangeTracker, DEFAULT_TRACKER_KIND, TRACKER_KINDS } from "./create.js";
import type { ChangeTracker, TrackerKind } from "./types.js";

/** Options of {@link TrackerPool}. */
export interface TrackerPoolOptions extends TrackerOptions {
  /** Tracker implementation (default {@link DEFAULT_TRACKER_KIND}). */
  kind?: TrackerKind;
  /** Most trackers kept running at once; the least recently used one is closed (default 32). */
  maxLive?: number;
  /** A tracker not asked for during this many ms is closed (default 600000 = 10 min). */
  idleMs?: number;
  /** Poll interval for polling trackers and the watchers' fallback (default 1000 ms). */
  pollIntervalMs?: number;
  /** Where the tracked directories live (default: this machine); remote ones are polled through it. */
  fileOps?: FileOperations;
}

export const DEFAULT_MAX_LIVE_TRACKERS = 32;
export const DEFAULT_TRACKER_IDLE_MS = 10 * 60 * 1000;

interface Slot {
  tracker: ChangeTracker;
  idle: NodeJS.Timeout;
}

/**
 * One change tracker per directory, started lazily, capped (LRU) and closed when idle, so a
 * server with many threads holds a bounded number of watchers. Timers never keep the process
 * alive; `close()` releases every native handle so the process can exit on its own.
 */
export class TrackerPool {
  readonly kind: TrackerKind;
  readonly maxLive: number;
  readonly idleMs: number;
  private readonly pollIntervalMs: number | undefined;
  private readonly fileOps: FileOperations | undefined;
  private readonly trackerOptions: TrackerOptions;
  /** Map iteration order is insertion order: re-inserting on use keeps the LRU at the front. */
  private readonly slots = new Map<string, Slot>();
  private readonly closing = new Set<Promise<void>>();
  private closed = false;

  constructor(options: TrackerPoolOptions = {}) {
    if (options === null || typeof options !== "object") throw new TypeError("TrackerPool options must be an object");
    const { kind = DEFAULT_TRACKER_KIND, maxLive = DEFAULT_MAX_LIVE_TRACKERS, idleMs = DEFAULT_TRACKER_IDLE_MS } = options;
    if (!TRACKER_KINDS.includes(kind)) throw new TypeError(`kind must be one of ${TRACKER_KINDS.join(", ")}`);
    if (!Number.isInteger(maxLive) || maxLive < 1) throw new TypeError("maxLive must be a positive integer");
    if (typeof idleMs !== "number" || !(idleMs > 0) || idleMs > 2 ** 31 - 1) {
      throw new TypeError("idleMs must be a positive number of milliseconds (at most 2^31-1)");
    }
    this.kind = kind;
    this.maxLive = maxLive;
    this.idleMs = idleMs;
    this.pollIntervalMs = options.pollIntervalMs;
    this.fileOps = options.fileOps;
    this.trackerOptions = { ignoreNames: options.ignoreNames, onError: options.onError };
    // Fail on bad tracker options now rather than at the first get().
    createChangeTracker(process.cwd(), this.trackerFactoryOptions());
  }

  /** Number of trackers currently held. */
  get size(): number {
    return this.slots.size;
  }

  /**
   * The tracker of `dir`, created and started in the background on first use (check `live`
   * before trusting `generation`). Marks it most recently used and resets its idle timer.
   * `fileOps`: where `dir` lives, for a pool serving several environments (default: the pool's
   * `fileOps`); a tracker keeps the backend it was created with. Throws once the pool is closed.
   */
  get(dir: string, fileOps?: FileOperations): ChangeTracker {
    if (this.closed) throw new Error("TrackerPool is closed; create a new pool to track directories again");
    if (typeof dir !== "string" || dir === "") throw new TypeError("dir must be a non-empty path string");
    const key = path.resolve(dir);
    const slot = this.slots.get(key);
    if (slot) {
      this.slots.delete(key);
      this.slots.set(key, slot);
      slot.idle.refresh();
      return slot.tracker;
    }
    const tracker = createChangeTracker(key, { ...this.trackerFactoryOptions(), ...(fileOps ? { fileOps } : {}) });
    tracker.start().catch((err: unknown) => report(
      { ignoreNames: [], onError: this.trackerOptions.onError ?? (() => undefined) },
      err,
      { dir: key, kind: this.kind },
    ));
    const idle = setTimeout(() => this.evict(key), this.idleMs);
    idle.unref();
    this.slots.set(key, { tracker, idle });
    while (this.slots.size > this.maxLive) {
      const oldest = this.slots.keys().next().value as string;
      this.evict(oldest);
    }
    return tracker;
  }

  /** True when `dir` has a tracker in the pool (does not touch its LRU position). */
  has(dir: string): boolean {
    return this.slots.has(path.resolve(dir));
  }

  /** Closes the tracker of `dir` (e.g. the directory was replaced); the next `get` starts a new one. */
  forget(dir: string): void {
    this.evict(path.resolve(dir));
  }

  /** Closes every tracker and refuses further `get` calls. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    for (const key of [...this.slots.keys()]) this.evict(key);
    await Promise.all([...this.closing]);
  }

  private evict(key: string): void {
    const slot = this.slots.get(key);
    if (!slot) return;
    this.slots.delete(key);
    clearTimeout(slot.idle);
    const done: Promise<void> = slot.tracker.close().catch(() => undefined).finally(() => this.closing.delete(done));
    this.closing.add(done);
  }

  private trackerFactoryOptions() {
    return { ...this.trackerOptions, kind: this.kind, pollIntervalMs: this.pollIntervalMs, fileOps: this.fileOps };
  }
}
