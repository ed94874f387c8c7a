/**
 * Staleness: a write over a file that changed since this thread last read (or wrote) it still
 * happens, with a warning — the model may have overwritten someone else's edit. Used by the
 * FileManager's write_file/patch guard (on checkpointed read times) and by the deepagents
 * WorkbenchBackend (on {@link SeenMtimes}).
 */

/** True when the file's current mtime differs from the one this thread last saw. */
export function isStale(knownMtimeMs: number | undefined, currentMtimeMs: number | null | undefined): boolean {
  return knownMtimeMs !== undefined && currentMtimeMs !== null && currentMtimeMs !== undefined && currentMtimeMs !== knownMtimeMs;
}

/** The warning appended to a successful write over files that changed since they were read. */
export function staleWriteWarning(shownPaths: readonly string[]): string {
  const names = shownPaths.map((p) => `"${p}"`).join(", ");
  return `${names} changed after you last read ${shownPaths.length === 1 ? "it" : "them"} (another process or person edited it); your change was written over that newer version. Read it again to check nothing was lost.`;
}

/**
 * Key of a warning in a deepagents backend result's `metadata` (deepagents attaches it to the
 * ToolMessage; the FileManager middleware moves it into the text the model reads).
 */
export const BACKEND_WARNING_KEY = "workbench_warning";

/**
 * The last mtime seen of each file (key → mtime) for a caller without checkpointed state
 * (WorkbenchBackend used without the FileManager). Bounded: the oldest entry is forgotten first.
 */
export class SeenMtimes {
  private readonly seen = new Map<string, number>();

  constructor(private readonly maxFiles = 4_096) {}

  /** Remembers `mtimeMs` as the last one seen of `key`. */
  remember(key: string, mtimeMs: number): void {
    this.seen.delete(key);
    this.seen.set(key, mtimeMs);
    if (this.seen.size > this.maxFiles) this.seen.delete(this.seen.keys().next().value as string);
  }

  /** The staleness warning for a write over `key` whose current mtime is `mtimeMs`, or `undefined`. */
  warning(key: string, shown: string, mtimeMs: number): string | undefined {
    return isStale(this.seen.get(key), mtimeMs) ? staleWriteWarning([shown]) : undefined;
  }
}
