/**
 * Staleness: a write over a file that changed since this thread last read (or wrote) it still
 * happens, with a warning — the model may have overwritten someone else's edit. Used by the
 * FileManager's write_file/patch guard and by the deepagents WorkbenchBackend.
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
