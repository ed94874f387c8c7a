import { constants } from "node:fs";
import { lstat, open, unlink } from "node:fs/promises";
import path from "node:path";
import { atomicTempName } from "../environment/tempFiles.js";
import { BaseTracker, report, type TrackerOptions } from "./base.js";
import { PollingTracker } from "./polling.js";

/** Options of the watcher-based trackers. */
export interface WatchingTrackerOptions extends TrackerOptions {
  /** Poll interval used if the watcher fails and the tracker falls back to polling (default 1000). */
  pollIntervalMs?: number;
}

/**
 * A tracker driven by a native watcher that falls back to a {@link PollingTracker} when the
 * watcher cannot start or fails later (inotify `ENOSPC`/`EMFILE`, a missing directory, a native
 * module that does not load). The switch is reported through `onError`, never thrown.
 */
export abstract class WatchingTracker extends BaseTracker {
  private fallback: PollingTracker | undefined;
  private readonly pollIntervalMs: number | undefined;
  /** Marker paths of {@link settle} calls in flight → what to call when their event arrives. */
  private readonly markers = new Map<string, () => void>();

  constructor(dir: string, options: WatchingTrackerOptions = {}) {
    super(dir, options);
    this.pollIntervalMs = options.pollIntervalMs;
    // Validate now, not at the moment of failure.
    if (this.pollIntervalMs !== undefined) new PollingTracker(dir, { ...options, intervalMs: this.pollIntervalMs });
  }

  /** True once this tracker runs on its polling fallback. */
  get fellBack(): boolean {
    return this.fallback !== undefined;
  }

  override get generation(): number {
    return super.generation + (this.fallback?.generation ?? 0);
  }

  override get live(): boolean {
    return this.fallback ? this.fallback.live && !this.closed : super.live;
  }

  override get newestMtimeMs(): number | undefined {
    const own = super.newestMtimeMs;
    const other = this.fallback?.newestMtimeMs;
    if (own === undefined) return other;
    return other === undefined ? own : Math.max(own, other);
  }

  /** `undefined` once on the polling fallback (it does not know paths), else the watcher's record. */
  override changesSince(cursor: number): { cursor: number; paths: string[] } | undefined {
    const answer = super.changesSince(cursor);
    return this.fallback ? undefined : answer;
  }

  async settle(timeoutMs = 1_000): Promise<boolean> {
    if (!this.live || this.fallback) return false;
    const marker = path.join(this.dir, atomicTempName());
    let timer: NodeJS.Timeout | undefined;
    let made = false;
    const seen = new Promise<boolean>((resolve) => {
      this.markers.set(marker, () => resolve(true));
      // Referenced: the watcher's thread is not, and a caller is waiting (bounded by the timeout).
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      // The workspace root as the tracker knows it, never through a link; the name is new (O_EXCL).
      if (!(await lstat(this.dir)).isDirectory()) return false;
      const fh = await open(marker, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW, 0o600);
      await fh.close();
      made = true;
      // Removed only once seen: parcel drops a create and a delete that fall in one batch.
      if (!(await seen)) return false;
      // Created paths still being looked at (directories are listed from then on): part of "in".
      await Promise.all([...this.pendingKinds]);
      return this.live && !this.fallback;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      this.markers.delete(marker);
      if (made) await unlink(marker).catch(() => undefined);
    }
  }

  /**
   * For subclasses, before filtering an event: true when `absPath` is a {@link settle} marker
   * (its caller is told; the event is not a change of the workspace).
   */
  protected settledBy(absPath: string): boolean {
    const done = this.markers.get(absPath);
    if (!done) return false;
    this.markers.delete(absPath);
    done();
    return true;
  }

  override async refresh(): Promise<number> {
    if (this.fallback) await this.fallback.refresh();
    return this.generation;
  }

  protected async open(): Promise<void> {
    try {
      await this.openWatcher();
    } catch (err) {
      await this.closeWatcherQuietly();
      await this.fallBack(err);
    }
  }

  protected async shut(): Promise<void> {
    await this.closeWatcherQuietly();
    await this.fallback?.close();
  }

  /** Starts the native watcher; resolves when it delivers events. */
  protected abstract openWatcher(): Promise<void>;
  /** Stops the native watcher. */
  protected abstract closeWatcher(): Promise<void>;

  /** For subclasses: the watcher reported an error after it was running. */
  protected watcherFailed(err: unknown): void {
    if (this.fallback || this.closed) return;
    this.markNotLive();
    void (async () => {
      await this.closeWatcherQuietly();
      await this.fallBack(err);
    })();
  }

  private async fallBack(err: unknown): Promise<void> {
    if (this.fallback || this.closed) return;
    report(this.options, err, { dir: this.dir, kind: this.kind, fallback: "polling" });
    // Events may have been lost between the failure and the first snapshot: assume a change.
    this.bump();
    const poller = new PollingTracker(this.dir, {
      ignoreNames: this.options.ignoreNames,
      onError: this.options.onError,
      intervalMs: this.pollIntervalMs,
    });
    this.fallback = poller;
    await poller.start();
  }

  private async closeWatcherQuietly(): Promise<void> {
    try {
      await this.closeWatcher();
    } catch {
      // Closing a broken watcher may fail too; the handle is gone either way.
    }
  }
}
