/**
 * What read_file remembers between calls: total line counts per file version, the counts still
 * running in the background, and the line indexes of big files. One `FileToolCaches` belongs to
 * the tool set (or workbench) that made it; its `close()` waits for the background counts and
 * empties everything, so nothing outlives its owner.
 */
import type { FileOperations, FileStat, OpenGuard } from "../src/environment/fileOperations.js";
import { LineIndexCache } from "../src/environment/lineIndex.js";

const LINE_COUNT_CACHE_SIZE = 512;
/** An offset every this many lines: a read deep in the file skips at most this many lines. */
const LINE_INDEX_EVERY = 1024;

export class FileToolCaches {
  private readonly counts = new Map<string, number>();
  private readonly pending = new Map<string, Promise<number>>();
  /** Files with a background count running (by system path). */
  private readonly counting = new Set<string>();
  /** Line indexes of big files (bounded LRU: 16 MiB of offsets, 64 files). */
  readonly lineIndexes = new LineIndexCache();

  static key(ops: FileOperations, p: string, s: FileStat): string {
    return `${ops.kind}\0${p}\0${s.size}\0${s.mtimeMs}`;
  }

  knownLineCount(key: string): number | undefined {
    return this.counts.get(key);
  }

  /** Counts the lines once per file version; with `index`, builds the line index in the same pass. */
  countLinesOnce(ops: FileOperations, p: string, key: string, guard: OpenGuard | undefined, index: boolean): Promise<number> {
    const indexLines = index ? ops.indexLines?.bind(ops) : undefined;
    const pendingKey = indexLines ? `${key}\0index` : key;
    let pending = this.pending.get(pendingKey);
    if (!pending) {
      const counted = indexLines
        ? indexLines(p, LINE_INDEX_EVERY, guard).then((lineIndex) => {
            this.lineIndexes.set(key, lineIndex);
            return lineIndex.totalLines;
          })
        : ops.countLines(p, guard);
      pending = counted
        .then((n) => {
          this.remember(key, n);
          return n;
        })
        .finally(() => this.pending.delete(pendingKey));
      this.pending.set(pendingKey, pending);
    }
    return pending;
  }

  /** Starts a background count unless one already runs for `p` (a growing log is not rescanned on every read). */
  countInBackground(ops: FileOperations, p: string, key: string, guard: OpenGuard | undefined, index: boolean): void {
    if (this.counting.has(p)) return;
    this.counting.add(p);
    this.countLinesOnce(ops, p, key, guard, index)
      .catch(() => undefined)
      .finally(() => this.counting.delete(p));
  }

  /** Resolves once every background line count has finished. */
  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending.values()]);
  }

  /** Entries held (line counts, running counts, line indexes); 0 after {@link close}. */
  get size(): number {
    return this.counts.size + this.pending.size + this.counting.size + this.lineIndexes.count;
  }

  /** Waits for the background counts, then forgets everything. */
  async close(): Promise<void> {
    await this.settle();
    this.counts.clear();
    this.counting.clear();
    this.lineIndexes.close();
  }

  remember(key: string, count: number): void {
    this.counts.delete(key);
    this.counts.set(key, count);
    if (this.counts.size > LINE_COUNT_CACHE_SIZE) this.counts.delete(this.counts.keys().next().value!);
  }
}
