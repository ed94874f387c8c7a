/**
 * The one windowing of a text read, shared by read_file (1-based offsets, `N|text` output) and
 * WorkbenchBackend.read (deepagents: 0-based offsets, a `ReadResult`): which lines are asked for,
 * which are kept (cut ones marked), where the window ends, whether there is more, whether the
 * total is worth counting, and the past-the-end refusal. Pure: the caller reads (`readLines`),
 * counts, redacts and words the answer in its own convention.
 */
import { LIMITS, LINE_CUT_MARKER } from "../guards/limits.js";
import { LineWindowCollector, type LinesResult } from "./lineWindow.js";

/** The caller's offset convention: 1 for read_file, 0 for deepagents. */
export type OffsetBase = 0 | 1;

/** A read request normalised: `firstLine` is 1-based whatever the caller's convention. */
export interface ReadRequest {
  firstLine: number;
  /** Lines to read; 0 only when the caller asked for none. */
  limit: number;
  /** The limit asked for was over `maxLines` and was lowered to it. */
  limitCapped: boolean;
}

/**
 * Normalises an offset and limit from the model: a missing or broken offset is the first line, a
 * missing, broken or negative limit is `defaultLines`, a limit of exactly 0 stays 0 (nothing
 * asked), any other is at least 1 and at most `maxLines`.
 */
export function readRequest(
  offset: unknown,
  limit: unknown,
  base: OffsetBase,
  o: { defaultLines?: number; maxLines?: number } = {},
): ReadRequest {
  const defaultLines = o.defaultLines ?? LIMITS.readDefaultLines;
  const maxLines = o.maxLines ?? LIMITS.readMaxLines;
  const firstLine = typeof offset === "number" && Number.isFinite(offset) ? Math.max(1, Math.floor(offset) - base + 1) : 1;
  let asked: number;
  if (limit === 0) asked = 0;
  else if (typeof limit === "number" && Number.isFinite(limit) && limit > 0) asked = Math.max(1, Math.floor(limit));
  else asked = defaultLines;
  return { firstLine, limit: Math.min(asked, maxLines), limitCapped: asked > maxLines };
}

/** A window of lines to show. Line numbers are 1-based. */
export interface ReadWindowLines {
  kind: "lines";
  /** The kept lines, cut ones ending in {@link LINE_CUT_MARKER}. */
  lines: string[];
  /** The same lines as read (unmarked), for callers that redact before marking. */
  raw: string[];
  /** Line numbers of the kept lines that were cut at the width limit. */
  cutLines: number[];
  firstLine: number;
  /** The last line kept (`firstLine - 1` when none). */
  endLine: number;
  /** Lines were dropped to stay within `maxChars`. */
  capped: boolean;
  /** There are lines after `endLine`. */
  more: boolean;
  /** The total is unknown and the file is small enough to count it now. */
  countTotal: boolean;
}

/** The file has no lines at all and the window starts at its top. */
export interface ReadWindowEmpty {
  kind: "empty";
}

/**
 * The window starts past the last line. `offset` is in the caller's convention; word it with
 * `readPastEndMessage` (src/guards/limits.ts) once `totalLines` is known.
 */
export interface ReadWindowPastEnd {
  kind: "past-end";
  offset: number;
  base: OffsetBase;
  totalLines: number | undefined;
  /** The total is unknown and the file is small enough to count it for the message. */
  countTotal: boolean;
}

export type ReadWindow = ReadWindowLines | ReadWindowEmpty | ReadWindowPastEnd;

/** A line as shown: cut ones carry the marker. */
function marked(text: string, cut: boolean): string {
  return cut ? `${text}${LINE_CUT_MARKER}` : text;
}

/**
 * Decides the window over what `readLines` returned for `request`: keeps whole lines while
 * they (with one newline each) fit `maxChars` — the first line always, as it was cut to the
 * width limit already — and says whether the total is worth counting (`fileSize` at most
 * `countLinesMaxBytes`; an unknown size is not).
 */
export function readWindow(
  read: LinesResult,
  request: { firstLine: number; limit: number },
  base: OffsetBase,
  o: { maxChars?: number; fileSize?: number; countLinesMaxBytes?: number } = {},
): ReadWindow {
  const { firstLine } = request;
  const total = read.totalLines;
  const countLinesMaxBytes = o.countLinesMaxBytes ?? LIMITS.readCountLinesMaxBytes;
  const countTotal = total === undefined && o.fileSize !== undefined && o.fileSize <= countLinesMaxBytes;
  if (read.lines.length === 0 && request.limit > 0) {
    if (firstLine === 1) return { kind: "empty" };
    return { kind: "past-end", offset: firstLine - 1 + base, base, totalLines: total, countTotal };
  }
  const maxChars = o.maxChars ?? Number.POSITIVE_INFINITY;
  const cut = new Set(read.cutLines);
  const lines: string[] = [];
  let chars = 0;
  for (let i = 0; i < read.lines.length; i++) {
    const line = marked(read.lines[i]!, cut.has(firstLine + i));
    if (lines.length > 0 && chars + line.length + 1 > maxChars) break;
    chars += line.length + 1;
    lines.push(line);
  }
  const capped = lines.length < read.lines.length;
  const endLine = firstLine + lines.length - 1;
  return {
    kind: "lines",
    lines,
    raw: read.lines.slice(0, lines.length),
    cutLines: read.cutLines.filter((n) => n <= endLine),
    firstLine,
    endLine,
    capped,
    more: capped || read.hasMore || (total !== undefined && endLine < total),
    countTotal,
  };
}

/** Marks the cut lines of `lines` (numbered from `firstLine`): for lines redacted after windowing. */
export function markCutLines(lines: readonly string[], firstLine: number, cutLines: readonly number[]): string[] {
  const cut = new Set(cutLines);
  return lines.map((l, i) => marked(l, cut.has(firstLine + i)));
}

/**
 * `readLines` over lines already in memory (a PDF's extracted text): the same width cut as a
 * file read, so such lines window exactly like a file's.
 */
export function readLinesOf(all: readonly string[], request: { firstLine: number; limit: number }, maxLineChars: number): LinesResult {
  const first = Math.max(1, Math.floor(request.firstLine));
  const slice = all.slice(first - 1, first - 1 + Math.max(0, request.limit));
  const collector = new LineWindowCollector({ offset: first, limit: slice.length, maxLineChars }, first);
  for (const line of slice) collector.push(Buffer.from(`${line}\n`));
  const { lines, cutLines } = collector.end();
  return { lines, cutLines, hasMore: first - 1 + slice.length < all.length, totalLines: all.length };
}
