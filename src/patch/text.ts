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

/** A text rewritten character by character, remembering where each output character came from. */
export interface MappedText {
  text: string;
  /** `origin[k]` = offset in the source where output character `k` starts; one extra entry at the end. */
  origin: Int32Array;
}

/**
 * Rewrites `source` with `step`, which looks at position `i` and returns the replacement text and
 * how many source characters it consumed (or `undefined` to copy one character).
 */
export function mapText(source: string, step: (s: string, i: number) => [string, number] | undefined): MappedText {
  const parts: string[] = [];
  const origin: number[] = [];
  for (let i = 0; i < source.length; ) {
    const r = step(source, i);
    if (r === undefined) {
      parts.push(source[i]!);
      origin.push(i);
      i++;
      continue;
    }
    const [out, consumed] = r;
    for (let k = 0; k < out.length; k++) origin.push(i);
    parts.push(out);
    i += Math.max(consumed, 1);
  }
  origin.push(source.length);
  return { text: parts.join(""), origin: Int32Array.from(origin) };
}

/** Every non-overlapping occurrence of `needle` in `haystack`. */
export function allIndexesOf(haystack: string, needle: string): number[] {
  const out: number[] = [];
  if (needle === "") return out;
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}
