/**
 * A bounded record of the paths a tracker saw change, addressable by cursor. Pure bookkeeping:
 * it neither watches nor filters; the tracker decides what to note and when to invalidate.
 */

/** Most distinct paths one record keeps (see {@link ChangeRecord}). */
export const MAX_RECORDED_PATHS = 10_000;
/** Most path characters one record keeps, summed over its paths (≈ 200 chars per path at the path bound). */
export const MAX_RECORDED_PATH_CHARS = 2_000_000;

/**
 * One logical clock for every record in this module instance: a cursor is "the clock when it was
 * read", so a cursor handed to the wrong record (say, the new tracker a pool made for the same
 * directory) is older than that record's start and gets `undefined`, never a false empty list.
 */
let clock = 0;

/** What {@link ChangeRecord.since} answers. */
export interface ChangesSince {
  /** The cursor to pass next time. */
  cursor: number;
  /** Deduplicated, oldest change first. */
  paths: string[];
}

/** Options of {@link ChangeRecord}. */
export interface ChangeRecordOptions {
  /** Most distinct paths kept (default {@link MAX_RECORDED_PATHS}). */
  maxPaths?: number;
  /** Most characters kept, summed over the paths (default {@link MAX_RECORDED_PATH_CHARS}). */
  maxChars?: number;
}

/**
 * Keeps each changed path once, with the clock value of its latest change, in order of that
 * value. When the bound is exceeded the least recently changed paths are dropped and every cursor
 * older than the newest dropped change becomes unanswerable (`since` gives `undefined`); cursors
 * newer than that keep working, so the record is a sliding window of the latest changes.
 */
export class ChangeRecord {
  readonly maxPaths: number;
  readonly maxChars: number;
  /** path -> clock of its latest change; Map order is insertion order, kept ascending by clock. */
  private readonly entries = new Map<string, number>();
  private chars = 0;
  /** Cursors below this cannot be answered (overflow or invalidation). */
  private lostBefore: number;
  /** Clock of the newest entry (0 when empty), for the common "nothing since" answer. */
  private newest = 0;

  constructor(options: ChangeRecordOptions = {}) {
    const { maxPaths = MAX_RECORDED_PATHS, maxChars = MAX_RECORDED_PATH_CHARS } = options;
    if (!Number.isInteger(maxPaths) || maxPaths < 1) throw new TypeError("maxPaths must be a positive integer");
    if (!Number.isInteger(maxChars) || maxChars < 1) throw new TypeError("maxChars must be a positive integer");
    this.maxPaths = maxPaths;
    this.maxChars = maxChars;
    // Nothing was recorded before the record existed: older cursors cannot be answered.
    this.lostBefore = ++clock;
  }

  /** The current position: changes noted from now on are "after" it. Monotonic. */
  get cursor(): number {
    return clock;
  }

  /** Number of distinct paths held (for tests and diagnostics). */
  get size(): number {
    return this.entries.size;
  }

  /** Records that `p` changed now. */
  note(p: string): void {
    const at = ++clock;
    if (this.entries.delete(p)) this.chars -= p.length;
    this.entries.set(p, at);
    this.chars += p.length;
    this.newest = at;
    while (this.entries.size > this.maxPaths || (this.chars > this.maxChars && this.entries.size > 0)) {
      const [oldest, when] = this.entries.entries().next().value as [string, number];
      this.entries.delete(oldest);
      this.chars -= oldest.length;
      // A cursor read before `when` would miss this change: it can no longer be answered.
      if (when > this.lostBefore) this.lostBefore = when;
    }
  }

  /**
   * Every cursor read before now becomes unanswerable (the owner stopped seeing events, or
   * restarted); frees the paths held.
   */
  invalidate(): void {
    this.entries.clear();
    this.chars = 0;
    this.newest = 0;
    this.lostBefore = ++clock;
  }

  /**
   * The paths noted after `cursor` was read, or `undefined` when some of them may be missing
   * (the cursor predates an overflow, an invalidation or this record, or is from the future,
   * i.e. not from this module's clock).
   */
  since(cursor: number): ChangesSince | undefined {
    if (typeof cursor !== "number" || !Number.isSafeInteger(cursor) || cursor < 0) {
      throw new TypeError("cursor must be a value read from a tracker's `cursor`");
    }
    const now = clock;
    if (cursor < this.lostBefore || cursor > now) return undefined;
    if (this.newest <= cursor) return { cursor: now, paths: [] };
    const paths: string[] = [];
    for (const [p, at] of this.entries) if (at > cursor) paths.push(p);
    return { cursor: now, paths };
  }
}
