/**
 * Parser for V4A patches (the `apply_patch` format):
 *
 * ```
 * *** Begin Patch
 * *** Update File: src/a.ts        (optionally followed by "*** Move to: src/b.ts")
 * @@ function foo() {              (optional anchor: a line above the change)
 *  context line
 * -removed line
 * +added line
 * *** Add File: notes.md           (every line starts with "+")
 * +hello
 * *** Delete File: old.txt
 * *** Move File: a.txt -> b.txt
 * *** End Patch
 * ```
 */
import { WorkbenchError } from "../workbenchError.js";

export interface V4AHunkLine {
  op: " " | "-" | "+";
  text: string;
}

export interface V4AHunk {
  /** Text after `@@` (an anchor line to find first), "" when none. */
  anchor: string;
  lines: V4AHunkLine[];
  /** `*** End of File` followed the hunk: it must match at the end of the file. */
  endOfFile: boolean;
  /** 1-based line of the hunk's first line in the patch text. */
  line: number;
}

export type V4AOperation =
  | { kind: "add"; path: string; lines: string[]; line: number }
  | { kind: "delete"; path: string; line: number }
  | { kind: "move"; path: string; newPath: string; line: number }
  | { kind: "update"; path: string; moveTo?: string; hunks: V4AHunk[]; line: number };

export type V4AParseResult = { ok: true; ops: V4AOperation[] } | { ok: false; error: string; line: number };

class PatchSyntaxError extends WorkbenchError {
  readonly code = "PATCH_SYNTAX";
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

const BEGIN = "*** Begin Patch";
const END = "*** End Patch";
const END_OF_FILE = "*** End of File";
/** A unified-diff range header (`@@ -3,4 +3,5 @@`) carries no anchor text. */
const RANGE_HEADER = /^-\d+(,\d+)?\s+\+\d+(,\d+)?\s*@@\s*/;

/** Parses a V4A patch; errors name the 1-based patch line and say what was expected. */
export function parseV4A(text: string): V4AParseResult {
  if (typeof text !== "string") return { ok: false, error: "the patch must be a string", line: 0 };
  try {
    return { ok: true, ops: parseLines(text.replace(/\r\n/g, "\n").split("\n")) };
  } catch (err) {
    if (err instanceof PatchSyntaxError) return { ok: false, error: `line ${err.line}: ${err.message}`, line: err.line };
    throw err;
  }
}

function parseLines(lines: string[]): V4AOperation[] {
  let first = 0;
  while (first < lines.length && lines[first]!.trim() === "") first++;
  let last = lines.length - 1;
  while (last > first && lines[last]!.trim() === "") last--;
  if (first >= lines.length || lines[first]!.trim() !== BEGIN) {
    throw new PatchSyntaxError(first + 1, `the patch must start with "${BEGIN}"`);
  }
  if (last === first || lines[last]!.trim() !== END) {
    throw new PatchSyntaxError(last + 1, `the patch must end with "${END}"`);
  }
  const ops: V4AOperation[] = [];
  let i = first + 1;
  while (i < last) {
    const raw = lines[i]!;
    const lineNo = i + 1;
    // Between operations only headers are valid, so indentation (a model's formatting) is ignored.
    const header = raw.trim();
    if (header.trim() === "") {
      i++;
      continue;
    }
    if (header.startsWith("*** Add File:")) {
      const path = pathOf(header, "*** Add File:", lineNo);
      const body: string[] = [];
      for (i++; i < last && !isHeader(lines[i]!); i++) {
        const l = lines[i]!;
        if (l.trim() === "" && onlyBlankUntilHeader(lines, i, last)) break;
        if (!l.startsWith("+")) {
          throw new PatchSyntaxError(i + 1, `every line of an added file must start with "+" (found ${JSON.stringify(l.slice(0, 40))})`);
        }
        body.push(l.slice(1));
      }
      ops.push({ kind: "add", path, lines: body, line: lineNo });
    } else if (header.startsWith("*** Delete File:")) {
      ops.push({ kind: "delete", path: pathOf(header, "*** Delete File:", lineNo), line: lineNo });
      i = expectHeaderNext(lines, i + 1, last, "a deleted file takes no lines");
    } else if (header.startsWith("*** Move File:")) {
      const spec = header.slice("*** Move File:".length);
      const arrow = spec.indexOf("->");
      if (arrow === -1) throw new PatchSyntaxError(lineNo, `expected "*** Move File: <from> -> <to>"`);
      const path = spec.slice(0, arrow).trim();
      const newPath = spec.slice(arrow + 2).trim();
      if (path === "" || newPath === "") throw new PatchSyntaxError(lineNo, `expected "*** Move File: <from> -> <to>" with both paths`);
      ops.push({ kind: "move", path, newPath, line: lineNo });
      i = expectHeaderNext(lines, i + 1, last, "a moved file takes no lines (use Update File with Move to, to edit it too)");
    } else if (header.startsWith("*** Update File:")) {
      const path = pathOf(header, "*** Update File:", lineNo);
      i++;
      let moveTo: string | undefined;
      if (i < last && lines[i]!.trim().startsWith("*** Move to:")) {
        moveTo = pathOf(lines[i]!.trim(), "*** Move to:", i + 1);
        i++;
      }
      const parsed = parseHunks(lines, i, last, path);
      i = parsed.next;
      ops.push({ kind: "update", path, ...(moveTo !== undefined ? { moveTo } : {}), hunks: parsed.hunks, line: lineNo });
    } else if (header.startsWith("***")) {
      throw new PatchSyntaxError(
        lineNo,
        `unknown header ${JSON.stringify(header.slice(0, 60))}; expected "*** Update File:", "*** Add File:", "*** Delete File:", "*** Move File:" or "*** End Patch"`,
      );
    } else {
      throw new PatchSyntaxError(lineNo, `expected a "*** Update/Add/Delete/Move File:" header, found ${JSON.stringify(header.slice(0, 60))}`);
    }
  }
  if (ops.length === 0) throw new PatchSyntaxError(first + 1, "the patch contains no file operations");
  return ops;
}

function parseHunks(lines: string[], start: number, last: number, path: string): { hunks: V4AHunk[]; next: number } {
  const hunks: V4AHunk[] = [];
  let current: V4AHunk | undefined;
  const blank = new Set<V4AHunkLine>();
  let i = start;
  for (; i < last; i++) {
    const l = lines[i]!;
    if (l.trimEnd() === END_OF_FILE) {
      if (!current) throw new PatchSyntaxError(i + 1, `"${END_OF_FILE}" must follow a hunk`);
      current.endOfFile = true;
      continue;
    }
    if (isHeader(l)) break;
    if (l.startsWith("@@")) {
      const anchor = l.slice(2).trim().replace(RANGE_HEADER, "").replace(/\s*@@$/, "").trim();
      current = { anchor, lines: [], endOfFile: false, line: i + 1 };
      hunks.push(current);
      continue;
    }
    const op = l === "" ? " " : l[0];
    if (op !== " " && op !== "-" && op !== "+") {
      throw new PatchSyntaxError(
        i + 1,
        `a hunk line must start with " " (context), "-" (remove) or "+" (add), or be an "@@" header; found ${JSON.stringify(l.slice(0, 40))}`,
      );
    }
    if (!current) {
      // The first hunk may omit its "@@" line.
      current = { anchor: "", lines: [], endOfFile: false, line: i + 1 };
      hunks.push(current);
    }
    const hunkLine: V4AHunkLine = { op, text: l.slice(1) };
    if (l === "") blank.add(hunkLine);
    current.lines.push(hunkLine);
  }
  // Blank lines between two file sections are separators, not empty context lines.
  for (const h of hunks) while (h.lines.length > 0 && blank.has(h.lines[h.lines.length - 1]!)) h.lines.pop();
  if (hunks.length === 0) throw new PatchSyntaxError(start + 1, `"*** Update File: ${path}" has no hunks ("@@" followed by " ", "-", "+" lines)`);
  for (const h of hunks) {
    if (!h.lines.some((l) => l.op !== " ")) {
      throw new PatchSyntaxError(h.line, `this hunk of ${path} changes nothing (no "-" or "+" lines)`);
    }
  }
  return { hunks, next: i };
}

function onlyBlankUntilHeader(lines: string[], i: number, last: number): boolean {
  for (; i < last && !isHeader(lines[i]!); i++) if (lines[i]!.trim() !== "") return false;
  return true;
}

const FILE_HEADERS = ["*** Update File:", "*** Add File:", "*** Delete File:", "*** Move File:"];
/** Two or more leading spaces, or a tab: more than the one-character context marker. */
const INDENTED = /^(?: {2,}|[ ]*\t)/;

/**
 * Whether `line` ends the current hunk or added file. An indented file header (`  *** Update
 * File: b.txt`) counts; a line with one leading space is a context line whatever follows it, so
 * ` *** End Patch` or ` *** Update File: x` quoted from a file stays context.
 */
function isHeader(line: string): boolean {
  const t = line.trimEnd();
  if (t.startsWith("*** ")) return t !== END_OF_FILE;
  return INDENTED.test(t) && FILE_HEADERS.some((h) => t.trimStart().startsWith(h));
}

function pathOf(header: string, prefix: string, lineNo: number): string {
  const p = header.slice(prefix.length).trim();
  if (p === "") throw new PatchSyntaxError(lineNo, `"${prefix}" needs a path`);
  return p;
}

function expectHeaderNext(lines: string[], i: number, last: number, why: string): number {
  while (i < last && lines[i]!.trim() === "") i++;
  if (i < last && !isHeader(lines[i]!)) throw new PatchSyntaxError(i + 1, `${why}; expected the next "***" header`);
  return i;
}
