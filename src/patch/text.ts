/** Line bookkeeping over an LF text, built once per file and shared by every strategy. */
export class LineIndex {
  readonly lines: string[];
  /** Offset of the first character of each line. */
  readonly starts: number[];
  private trimmedCache: string[] | undefined;

  constructor(readonly text: string) {
    this.lines = text.split("\n");
    this.starts = new Array<number>(this.lines.length);
    let offset = 0;
    for (let i = 0; i < this.lines.length; i++) {
      this.starts[i] = offset;
      offset += this.lines[i]!.length + 1;
    }
  }

  get trimmed(): string[] {
    return (this.trimmedCache ??= this.lines.map((l) => l.trim()));
  }

  /** Offset just past the last character of line `i` (before its newline). */
  lineEnd(i: number): number {
    return this.starts[i]! + this.lines[i]!.length;
  }

  /** 0-based line containing `offset` (binary search). */
  lineAt(offset: number): number {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Lines `first..last` (0-based, inclusive), each cut to `width`, at most `maxLines` of them. */
  snippet(first: number, last: number, maxLines = 4, width = 160): string {
    const out: string[] = [];
    for (let i = first; i <= last && out.length < maxLines; i++) {
      const l = this.lines[i] ?? "";
      out.push(l.length > width ? `${l.slice(0, width)}…` : l);
    }
    if (last - first + 1 > maxLines) out.push(`… (${last - first + 1 - maxLines} more lines)`);
    return out.join("\n");
  }
}

/** The lines of a search string; a trailing newline does not make an extra empty line. */
export function searchLines(find: string): string[] {
  const lines = find.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** Leading spaces and tabs of `line`. */
export function indentOf(line: string): string {
  return /^[ \t]*/.exec(line)![0];
}

/**
 * Every occurrence of `needle` (already folded) in `text` folded by `pattern` → `replace`, as
 * offsets of the original `text`. The folded text is built with one native `replace`; the offset
 * map only when there is a hit, so a miss on a large file stays cheap.
 */
export function foldedSearch(text: string, pattern: RegExp, replace: (m: string) => string, needle: string): Array<{ start: number; end: number }> {
  if (needle === "") return [];
  const hits = allIndexesOf(text.replace(pattern, replace), needle);
  if (hits.length === 0) return [];
  // Aligned checkpoints: folded offset → original offset at every replaced chunk's start and end.
  const folded: number[] = [0];
  const original: number[] = [0];
  const replaced: boolean[] = [false];
  let f = 0;
  let o = 0;
  for (const m of text.matchAll(pattern)) {
    f += m.index - o;
    o = m.index;
    folded.push(f);
    original.push(o);
    replaced.push(true);
    f += replace(m[0]).length;
    o += m[0].length;
    folded.push(f);
    original.push(o);
    replaced.push(false);
  }
  const toOriginal = (k: number): number => {
    let lo = 0;
    let hi = folded.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (folded[mid]! <= k) lo = mid;
      else hi = mid - 1;
    }
    // Inside a replacement's output: the replaced chunk's start; elsewhere: the same distance on.
    return replaced[lo] ? original[lo]! : original[lo]! + (k - folded[lo]!);
  };
  return hits.map((h) => ({ start: toOriginal(h), end: toOriginal(h + needle.length) }));
}

/** Every non-overlapping occurrence of `needle` in `haystack`. */
export function allIndexesOf(haystack: string, needle: string): number[] {
  const out: number[] = [];
  if (needle === "") return out;
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}
