import { createHash } from "node:crypto";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { isAtomicTempName } from "../environment/tempFiles.js";
import pLimit from "p-limit";
import type { FileOperations } from "../environment/fileOperations.js";
import { BaseTracker, type TrackerOptions } from "./base.js";
import { assertFileOperations } from "../environment/assertFileOperations.js";
import { isLocalFileOperations } from "../environment/locality.js";

/** Options of {@link PollingTracker}. */
export interface PollingTrackerOptions extends TrackerOptions {
  /** Milliseconds between background polls (default 1000, minimum 20). `refresh()` polls on demand. */
  intervalMs?: number;
  /**
   * Where the directory lives (default: this machine, native `fs`). With a remote backend
   * (`ShellFileOperations` over SSH or docker) each poll runs one `stat` per known directory
   * and one `readdir` per directory whose mtime moved, through `fileOps`.
   */
  fileOps?: FileOperations;
}

/** A directory's modification stamp: exact nanoseconds locally, the backend's mtime otherwise. */
type Stamp = bigint | number;

/** The two reads a poll needs, from the local disk or through a FileOperations. */
interface PollSource {
  /** Rejects when the directory is gone. */
  stamp(dir: string): Promise<{ stamp: Stamp; mtimeMs: number }>;
  list(dir: string): Promise<{ name: string; isDirectory(): boolean; isSymbolicLink(): boolean }[]>;
}

const LOCAL_SOURCE: PollSource = {
  async stamp(dir) {
    const s = await stat(dir, { bigint: true });
    return { stamp: s.mtimeNs, mtimeMs: Number(s.mtimeMs) };
  },
  list: (dir) => readdir(dir, { withFileTypes: true }),
};

function sourceOver(ops: FileOperations): PollSource {
  return {
    async stamp(dir) {
      const s = await ops.stat(dir);
      if (!s) throw Object.assign(new Error(`${dir} is gone`), { code: "ENOENT" });
      return { stamp: s.mtimeMs, mtimeMs: s.mtimeMs };
    },
    async list(dir) {
      return (await ops.readdir(dir)).map((e) => ({
        name: e.name,
        isDirectory: () => e.type === "directory",
        isSymbolicLink: () => e.type === "symlink",
      }));
    },
  };
}

export const DEFAULT_POLL_INTERVAL_MS = 1000;

/**
 * Directory mtimes come from a coarse kernel clock (a few ms), so an entry added in the same
 * tick as the previous read leaves the mtime unchanged. A directory whose mtime is this close to
 * the moment we read it is re-listed on the next poll too ("racy git" handling).
 */
const RACY_WINDOW_MS = 2000;
const STAT_CONCURRENCY = 32;

interface DirState {
  stamp: Stamp;
  mtimeMs: number;
  /** When the listing below was read (epoch ms). */
  readAtMs: number;
  /** Digest of the sorted entry names and types: changes on create, delete, rename. */
  fingerprint: string;
  subdirs: string[];
}

/**
 * Polls directory metadata instead of every file: a directory's mtime changes when entries are
 * added, removed or renamed in it, so one `stat` per directory finds structural changes; only
 * directories whose mtime moved are re-listed, and their entry names tell a real change from a
 * temp file that came and went (editors' atomic saves). Content-only edits are invisible to it
 * by design, `newestMtimeMs` reflects directory mtimes only, and `changesSince` cannot answer.
 */
export class PollingTracker extends BaseTracker {
  readonly kind = "polling" as const;
  readonly intervalMs: number;
  private readonly dirs = new Map<string, DirState>();
  private readonly isIgnored: (name: string) => boolean;
  private readonly source: PollSource;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<number> | undefined;

  constructor(dir: string, options: PollingTrackerOptions = {}) {
    super(dir, options);
    const interval = options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    if (typeof interval !== "number" || !Number.isFinite(interval) || interval < 20) {
      throw new TypeError("intervalMs must be a finite number of milliseconds, at least 20");
    }
    this.intervalMs = interval;
    assertFileOperations(options.fileOps, ["stat", "readdir"]);
    this.source = isLocalFileOperations(options.fileOps) ? LOCAL_SOURCE : sourceOver(options.fileOps!);
    const names = new Set(this.options.ignoreNames);
    this.isIgnored = (name) => names.has(name);
  }

  /** Number of directories currently known (for diagnostics and benchmarks). */
  get directoryCount(): number {
    return this.dirs.size;
  }

  /**
   * Always `undefined`: a poll sees which directories' listings changed, not which files did
   * (content-only edits are invisible to it), so it cannot list what changed.
   */
  override changesSince(cursor: number): undefined {
    super.changesSince(cursor); // validates the argument like every tracker
    return undefined;
  }

  /** Polls now; a poll already running is awaited first so the result reflects this call's moment. */
  override refresh(): Promise<number> {
    if (this.closed) return Promise.resolve(this.generation);
    if (this.queued) return this.queued;
    const previous = this.running ?? Promise.resolve();
    const next = previous.then(() => {
      if (this.queued === next) this.queued = undefined;
      return this.pollOnce();
    });
    this.queued = next;
    return next;
  }

  protected async open(): Promise<void> {
    await this.scan(this.dir);
    this.schedule();
  }

  protected async shut(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
    this.dirs.clear();
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.refresh()
        .catch(() => undefined)
        .finally(() => this.schedule());
    }, this.intervalMs);
    // A poller must never be the reason a process stays alive.
    this.timer.unref();
  }

  private async pollOnce(): Promise<number> {
    const run = this.poll();
    this.running = run;
    try {
      await run;
    } finally {
      if (this.running === run) this.running = undefined;
    }
    return this.generation;
  }

  private async poll(): Promise<void> {
    const limit = pLimit(STAT_CONCURRENCY);
    const pollStart = Date.now();
    let changed = false;
    const entries = [...this.dirs.entries()];
    await Promise.all(
      entries.map(([dir, state]) =>
        limit(async () => {
          if (this.closed || this.dirs.get(dir) !== state) return; // dropped with a removed parent
          let now: { stamp: Stamp; mtimeMs: number };
          try {
            now = await this.source.stamp(dir);
          } catch {
            if (state.fingerprint !== "") changed = true;
            this.forget(dir, dir === this.dir);
            return;
          }
          const racy = state.mtimeMs + RACY_WINDOW_MS >= state.readAtMs;
          if (now.stamp === state.stamp && !racy) return;
          if (await this.relist(dir, state, pollStart)) changed = true;
        }),
      ),
    );
    if (changed && !this.closed) this.bump(pollStart);
  }

  /** Re-reads one directory; true when its entry set changed. */
  private async relist(dir: string, old: DirState, readAtMs: number): Promise<boolean> {
    const fresh = await this.read(dir, readAtMs);
    if (!fresh) {
      const wasThere = old.fingerprint !== "";
      this.forget(dir, dir === this.dir);
      return wasThere;
    }
    this.dirs.set(dir, fresh);
    this.noteTime(fresh.mtimeMs);
    if (fresh.fingerprint === old.fingerprint) return false;
    const before = new Set(old.subdirs);
    const after = new Set(fresh.subdirs);
    for (const gone of old.subdirs) if (!after.has(gone)) this.forget(gone, false);
    await Promise.all(fresh.subdirs.filter((d) => !before.has(d)).map((d) => this.scan(d)));
    return true;
  }

  /** Snapshots `dir` and everything below it. */
  private async scan(dir: string): Promise<void> {
    const state = await this.read(dir, Date.now());
    if (!state) {
      if (dir === this.dir) this.dirs.set(dir, emptyState());
      return;
    }
    this.dirs.set(dir, state);
    this.noteTime(state.mtimeMs);
    await Promise.all(state.subdirs.map((d) => this.scan(d)));
  }

  private async read(dir: string, readAtMs: number): Promise<DirState | undefined> {
    try {
      // stat before readdir: a change racing the pair then shows up as a newer mtime next poll.
      const s = await this.source.stamp(dir);
      const dirents = await this.source.list(dir);
      const names: string[] = [];
      const subdirs: string[] = [];
      for (const d of dirents) {
        if (this.isIgnored(d.name) || isAtomicTempName(d.name)) continue;
        const isDir = d.isDirectory();
        names.push(`${isDir ? "d" : d.isSymbolicLink() ? "l" : "f"}:${d.name}`);
        if (isDir) subdirs.push(path.join(dir, d.name));
      }
      names.sort();
      const fingerprint = createHash("sha1").update(names.join("\0")).digest("base64");
      return { stamp: s.stamp, mtimeMs: s.mtimeMs, readAtMs, fingerprint, subdirs };
    } catch {
      return undefined;
    }
  }

  /** Drops a directory and its known subtree; the root stays known (empty) so it can reappear. */
  private forget(dir: string, keepAsEmpty: boolean): void {
    const state = this.dirs.get(dir);
    if (state) for (const sub of state.subdirs) this.forget(sub, false);
    if (keepAsEmpty) this.dirs.set(dir, emptyState());
    else this.dirs.delete(dir);
  }
}

function emptyState(): DirState {
  return { stamp: -1n, mtimeMs: 0, readAtMs: 0, fingerprint: "", subdirs: [] };
}
