/**
 * A sparse line index of a big text file: the byte offset of every N-th line, built in the same
 * pass that counts the lines, so a later read deep in the file starts next to its window instead
 * of scanning from byte 0. Cached per file version in a bounded LRU owned by whoever made it.
 */

const NEWLINE = 0x0a;

/** Byte offsets of lines `1, 1+every, 1+2·every, …` and the file's total line count. */
export interface LineIndex {
  every: number;
  /** `offsets[k]`: byte offset where line `1 + k·every` starts. */
  offsets: Float64Array;
  totalLines: number;
  /** Inode of the file that was indexed, when the backend knows it (a replaced file has another). */
  ino?: number;
}

/** Where a window read may start instead of byte 0: `byte` is the start of line `line`. */
export interface LineStart {
  line: number;
  byte: number;
  /** The indexed file's inode: a reader that sees another one must ignore this start. */
  ino?: number;
}

/** The indexed start at or before line `offset` (1-based), or undefined when byte 0 is as close. */
export function lineStartFor(index: LineIndex, offset: number): LineStart | undefined {
  const k = Math.min(Math.floor((offset - 1) / index.every), index.offsets.length - 1);
  if (k <= 0) return undefined;
  return { line: 1 + k * index.every, byte: index.offsets[k]!, ...(index.ino !== undefined ? { ino: index.ino } : {}) };
}

/** Counts lines over chunks fed in file order and records the offset of every `every`-th line. */
export class LineIndexBuilder {
  private count = 0;
  private position = 0;
  private lastByte = NEWLINE;
  private offsets: number[] = [0];

  constructor(readonly every: number) {
    if (!Number.isInteger(every) || every < 1) throw new RangeError("every must be a positive integer");
  }

  push(view: Buffer): void {
    if (view.length === 0) return;
    const every = this.every;
    let pos = view.indexOf(NEWLINE, 0);
    while (pos !== -1) {
      // Line `count + 1` ends here; the next one starts right after.
      if (++this.count % every === 0) this.offsets.push(this.position + pos + 1);
      pos = view.indexOf(NEWLINE, pos + 1);
    }
    this.position += view.length;
    this.lastByte = view[view.length - 1]!;
  }

  finish(ino?: number): LineIndex {
    const totalLines = this.lastByte === NEWLINE ? this.count : this.count + 1;
    return { every: this.every, offsets: Float64Array.from(this.offsets), totalLines, ...(ino !== undefined ? { ino } : {}) };
  }
}

/**
 * LRU of line indexes by key (backend, path, size, mtime), bounded by entry count and by the
 * bytes the offsets take. An index larger than the byte cap is not kept.
 */
export class LineIndexCache {
  private readonly entries = new Map<string, LineIndex>();
  private bytes = 0;

  constructor(
    readonly maxBytes = 16 * 1024 * 1024,
    readonly maxEntries = 64,
  ) {}

  get(key: string): LineIndex | undefined {
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }

  set(key: string, index: LineIndex): void {
    this.delete(key);
    const size = index.offsets.byteLength;
    if (size > this.maxBytes) return;
    this.entries.set(key, index);
    this.bytes += size;
    while (this.bytes > this.maxBytes || this.entries.size > this.maxEntries) this.delete(this.entries.keys().next().value!);
  }

  delete(key: string): void {
    const old = this.entries.get(key);
    if (!old) return;
    this.entries.delete(key);
    this.bytes -= old.offsets.byteLength;
  }

  /** Bytes held by the cached offsets. */
  get size(): number {
    return this.bytes;
  }

  get count(): number {
    return this.entries.size;
  }

  /** Drops every index. */
  close(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}
