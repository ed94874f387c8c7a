import { lstat, stat } from "node:fs/promises";
import path from "node:path";
import type { ChangeTracker, TrackerKind } from "./types.js";
import { DEFAULT_IGNORED_NAMES } from "./ignore-names.js";
import { ChangeRecord } from "./changeRecord.js";

/** Options shared by every tracker implementation. */
export interface TrackerOptions {
  /**
   * Entry names ignored wherever they occur (default `[".git", "node_modules"]`). Changes under
   * them neither bump `generation`, update `newestMtimeMs` nor appear in `changesSince`.
   */
  ignoreNames?: readonly string[];
  /**
   * Told about watcher failures (e.g. inotify `ENOSPC`) and the switch to polling. Default:
   * one `console.warn` line. Never throws into the tracker.
   */
  onError?: (error: Error, context: { dir: string; kind: TrackerKind; fallback?: TrackerKind }) => void;
}

/** Resolved, validated form of {@link TrackerOptions}. */
export interface ResolvedTrackerOptions {
  ignoreNames: readonly string[];
  onError: NonNullable<TrackerOptions["onError"]>;
}

export function resolveTrackerOptions(dir: unknown, options: TrackerOptions = {}): ResolvedTrackerOptions {
  if (typeof dir !== "string" || dir === "") throw new TypeError("dir must be a non-empty path string");
  if (options === null || typeof options !== "object") throw new TypeError("tracker options must be an object");
  const ignoreNames = options.ignoreNames ?? DEFAULT_IGNORED_NAMES;
  if (!Array.isArray(ignoreNames) || ignoreNames.some((n) => typeof n !== "string" || n === "" || /[\\/]/.test(n))) {
    throw new TypeError("ignoreNames must be an array of plain entry names (no slashes), e.g. [\".git\", \"node_modules\"]");
  }
  if (options.onError !== undefined && typeof options.onError !== "function") {
    throw new TypeError("onError must be a function");
  }
  return { ignoreNames, onError: options.onError ?? defaultOnError };
}

function defaultOnError(error: Error, context: { dir: string; kind: TrackerKind; fallback?: TrackerKind }): void {
  const then = context.fallback ? `; falling back to ${context.fallback}` : "";
  console.warn(`[langgraph-workbench] ${context.kind} tracker for ${context.dir} failed: ${error.message}${then}`);
}

/** Safely reports an error: a throwing `onError` must not take the tracker down. */
export function report(options: ResolvedTrackerOptions, error: unknown, context: Parameters<ResolvedTrackerOptions["onError"]>[1]): void {
  try {
    options.onError(error instanceof Error ? error : new Error(String(error)), context);
  } catch {
    // The hook is the caller's; its failure is not ours to surface.
  }
}

/**
 * Bookkeeping common to every tracker: the generation counter, the newest mtime, the record of
 * changed paths, `live`, and idempotent start/close. Subclasses implement `open`/`shut` and
 * report what they observe (`bump`, `noteTime`, `notePath`).
 */
export abstract class BaseTracker implements ChangeTracker {
  abstract readonly kind: TrackerKind;
  readonly dir: string;
  protected readonly options: ResolvedTrackerOptions;
  private gen = 0;
  private newest: number | undefined;
  private isLive = false;
  private starting: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  /** Paths seen changing while live; invalidated whenever the tracker goes live or stops being live. */
  private readonly record = new ChangeRecord();
  /**
   * Directories created or moved in while live (top-most only): a watcher that adds its watches
   * after the fact (parcel's inotify backend) may never see inside them, so every answer of
   * {@link changesSince} lists them again. Cleared when watching starts over (a fresh crawl).
   */
  private readonly unwatched = new Set<string>();
  /** More than this many: {@link changesSince} cannot tell (callers look at every file). */
  private static readonly MAX_UNWATCHED = 1_000;
  /** `lstat`s of created paths under way (is it a directory?): {@link settle} waits for them. */
  protected readonly pendingKinds = new Set<Promise<void>>();

  constructor(dir: string, options: TrackerOptions = {}) {
    this.options = resolveTrackerOptions(dir, options);
    this.dir = path.resolve(dir);
  }

  get generation(): number {
    return this.gen;
  }

  get live(): boolean {
    return this.isLive && !this.closing;
  }

  get newestMtimeMs(): number | undefined {
    return this.newest;
  }

  get cursor(): number {
    return this.record.cursor;
  }

  changesSince(cursor: number): { cursor: number; paths: string[] } | undefined {
    const answer = this.record.since(cursor);
    if (!answer || !this.isLive || this.closing || this.unwatched.size > BaseTracker.MAX_UNWATCHED) return undefined;
    if (this.unwatched.size === 0) return answer;
    const paths = new Set(answer.paths);
    for (const d of this.unwatched) paths.add(d);
    return { cursor: answer.cursor, paths: [...paths] };
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  start(): Promise<void> {
    if (this.closing) return Promise.reject(new Error(`tracker for ${this.dir} is closed`));
    this.starting ??= (async () => {
      // The directory's own mtime is a cheap lower bound for "newest mtime" before any event.
      await this.noteMtimeOf(this.dir);
      await this.open();
      if (this.closing) {
        await this.shut();
        return;
      }
      // Changes before this moment were not watched: no older cursor can be answered.
      this.record.invalidate();
      this.unwatched.clear();
      this.isLive = true;
    })();
    return this.starting;
  }

  async refresh(): Promise<number> {
    return this.gen;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.isLive = false;
      this.record.invalidate();
      // Let a start in flight finish first so its native handle is not leaked.
      await this.starting?.catch(() => undefined);
      await this.shut();
    })();
    return this.closing;
  }

  /** Begins delivering changes; resolves when ready. */
  protected abstract open(): Promise<void>;
  /** Frees every handle. Called at most once, after `open` settled (or was never called). */
  protected abstract shut(): Promise<void>;

  /** Records a structural change (create, delete, rename, mkdir, rmdir). */
  protected bump(timeMs: number = Date.now()): void {
    this.gen++;
    this.noteTime(timeMs);
  }

  /**
   * Records that `absPath` was created, changed or deleted (any event kind). Ignored while not
   * live: such changes are covered by the invalidation that ends or begins a live interval.
   */
  protected notePath(absPath: string): void {
    if (this.isLive && !this.closing) this.record.note(absPath);
  }

  /**
   * For watchers that add watches to new directories after the fact: `absPath` was created (or
   * moved in); if it is a directory, what happens inside it may go unseen, so it is listed in
   * every later answer (see {@link unwatched}).
   */
  protected noteCreated(absPath: string): void {
    if (!this.isLive || this.closing) return;
    for (let p = path.dirname(absPath); p.length > this.dir.length; p = path.dirname(p)) if (this.unwatched.has(p)) return;
    const check = lstat(absPath).then(
      (st) => {
        if (!st.isDirectory() || this.closing) return;
        for (const d of this.unwatched) if (d.startsWith(absPath + path.sep)) this.unwatched.delete(d);
        this.unwatched.add(absPath);
      },
      () => undefined, // Gone again: its delete event says so.
    );
    this.pendingKinds.add(check);
    void check.finally(() => this.pendingKinds.delete(check));
  }

  protected noteTime(timeMs: number): void {
    if (Number.isFinite(timeMs) && (this.newest === undefined || timeMs > this.newest)) this.newest = timeMs;
  }

  protected async noteMtimeOf(p: string): Promise<void> {
    try {
      this.noteTime((await stat(p)).mtimeMs);
    } catch {
      // Gone already (deleted right after its event): the event time stands in for it.
    }
  }

  /** The tracker stopped seeing events (watcher error): cursors read before now are unanswerable. */
  protected markNotLive(): void {
    this.isLive = false;
    this.record.invalidate();
  }
}
