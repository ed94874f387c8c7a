/**
 * Change tracking contract shared by the watcher and polling implementations and the
 * FileManager middleware. A tracker watches one thread directory.
 */
export interface ChangeTracker {
  /** The directory being tracked (absolute system path). */
  readonly dir: string;
  /**
   * Bumped on every *structural* change seen so far (create, delete, rename, mkdir, rmdir).
   * Content-only edits do not bump it. Compare two readings to learn whether anything moved.
   */
  readonly generation: number;
  /**
   * True once the tracker delivers events (watcher ready, or a poller that has taken its first
   * snapshot). While false, callers must verify by other means (render and compare the tree).
   */
  readonly live: boolean;
  /**
   * Newest modification time (epoch ms) seen for anything in the directory, if known. Watchers
   * stamp an event with the time it *arrived* (after the change, by up to the watcher's debounce:
   * parcel batches for 50-500 ms), not the file's mtime, which may lie in the past (`cp -p`,
   * `tar x`); pollers use directory mtimes. An upper bound, so "newer than my snapshot" may be a
   * false alarm for changes made just before the snapshot: use {@link changesSince} to learn
   * what changed.
   */
  readonly newestMtimeMs: number | undefined;
  /**
   * A position in the tracker's change record (monotonic; compare only values of the same
   * tracker). Read it *before* the scan or snapshot you will later compare against: a change
   * whose event is delivered between the two is then reported (perhaps needlessly), never lost.
   */
  readonly cursor: number;
  /**
   * The paths (absolute, as the watcher reports them) seen created, changed or deleted after
   * `cursor` was read, deduplicated, with the cursor to pass next time; `undefined` when the
   * tracker cannot tell (not live, not started, restarted or fell back since `cursor`, the record
   * overflowed its bound, or the implementation does not know paths — e.g. polling, which stats
   * directories only). Every event kind counts, content-only edits too; paths under
   * `ignoreNames` (and atomic-save temp files) are never listed.
   *
   * - Events arrive asynchronously (parcel debounces 50-500 ms, then hops threads; chokidar stats
   *   first): a change made just before the call may not be listed yet; {@link settle} first
   *   when it must be.
   * - A listed directory stands for everything below it: a directory created or moved in (or
   *   deleted) may be reported alone, without the entries inside it; one whose insides the
   *   watcher may not see (parcel adds its watches after the fact) is listed in every later
   *   answer too, until watching starts over.
   * - The record keeps at most 10,000 distinct paths (`MAX_RECORDED_PATHS`) and 2,000,000 path
   *   characters (`MAX_RECORDED_PATH_CHARS`), dropping the least recently changed first; a cursor
   *   read before a dropped change then answers `undefined`, newer cursors keep working.
   */
  changesSince(cursor: number): { cursor: number; paths: string[] } | undefined;
  /**
   * Waits until every change made before the call has been delivered (so `changesSince` lists
   * it): watchers create and delete a marker file (an atomic-write temp name, which nothing
   * records) in `dir` and wait for its event — events of one watcher arrive in order. Resolves
   * `false` when it cannot tell within `timeoutMs` (default 1,000): not live, on the polling
   * fallback, or the marker's event did not come. Optional: callers treat a tracker without it
   * as unable to settle.
   */
  settle?(timeoutMs?: number): Promise<boolean>;
  /** Begins watching; idempotent; resolves when live (or rejects, leaving `live` false). */
  start(): Promise<void>;
  /**
   * For polling trackers: take a fresh snapshot now (stats directories, not every file) and
   * update `generation`. Watchers may treat it as a no-op. Resolves to the new generation.
   */
  refresh(): Promise<number>;
  /** Stops watching and frees native handles. Idempotent. */
  close(): Promise<void>;
}

/** Which tracker implementation to use. */
export type TrackerKind = "parcel" | "chokidar" | "polling";
