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
  /** Newest modification time (epoch ms) seen for anything in the directory, if known. */
  readonly newestMtimeMs: number | undefined;
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
