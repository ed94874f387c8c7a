/**
 * Turns an engine's raw outcome into the search_files answer: credential files dropped (never
 * counted: a count of hidden matches is an oracle for their content), paths shown as the agent sees them, text redacted and cut, a stable order, and one
 * page of results with the offset that continues.
 */
import type { LineRecord, SearchOutcome } from "./types.js";
import { LINE_CUT_MARKER } from "../guards/limits.js";

export interface ShapeOptions {
  /** System path → the path shown to the model (workspace-relative inside the workspace). */
  display(systemPath: string): string;
  /** True for files whose content must not be shown (credential files). */
  isHidden(displayPath: string): boolean;
  /**
   * Masks secrets in a run of consecutive raw lines (a match with its context), keeping the
   * lines; `startsMidFile` says the run may begin inside a private key.
   */
  redact(text: string, opts?: { startsMidFile?: boolean }): string;
  maxLineChars: number;
  offset: number;
  limit: number;
  context: number;
}

export interface ContextLine {
  line: number;
  text: string;
}

export interface ContentMatch {
  path: string;
  line: number;
  text: string;
  before?: ContextLine[];
  after?: ContextLine[];
}

/** The JSON-ready payload fields for one page of results. */
export function shapeResults(outcome: SearchOutcome, target: "content" | "files", mode: "content" | "files_only" | "count", o: ShapeOptions): Record<string, unknown> {
  // The engine already dropped what `exclude` refuses (the same name policy): not asked twice.
  const checkHidden = target === "content" && outcome.screenedByName !== true;
  const visible = (systemPath: string): string | undefined => {
    const shown = o.display(systemPath);
    return checkHidden && o.isHidden(shown) ? undefined : shown;
  };

  let items: unknown[];
  const extra: Record<string, unknown> = {};
  if (target === "files" || mode === "files_only") {
    const files = outcome.files.map((f) => visible(f)).filter((f): f is string => f !== undefined);
    const unique = [...new Set(files)];
    items = sortedUpTo(unique, o.offset + o.limit, byPath);
    extra.total_files = unique.length;
  } else if (mode === "count") {
    const k = o.offset + o.limit;
    let counts: Array<{ path: string; count: number }>;
    if (!checkHidden && keepsFew(outcome.counts.length, k)) {
      // Nothing to filter and one short page of many: most results are compared once and
      // dropped, so a displayed copy is kept only for the page (100k retained copies were most
      // of this step's garbage collection).
      counts = outcome.counts;
      items = bestOf(counts, k, (c) => ({ path: o.display(c.path), count: c.count }), (a, b) => byPath(a.path, b.path));
    } else {
      counts = outcome.counts
        .map((c) => ({ path: visible(c.path), count: c.count }))
        .filter((c): c is { path: string; count: number } => c.path !== undefined);
      items = sortedUpTo(counts, k, (a, b) => byPath(a.path, b.path));
    }
    extra.total_files = counts.length;
    let matches = 0;
    for (const c of counts) matches += c.count;
    extra.total_matches = matches;
  } else {
    items = contentMatches(outcome.lines, visible, o);
    extra.total_matches = items.length;
    extra.files_with_matches = new Set((items as ContentMatch[]).map((m) => m.path)).size;
  }

  const total = (extra.total_files as number | undefined) ?? items.length;
  const page = items.slice(o.offset, o.offset + o.limit);
  const more = o.offset + page.length < total;
  const payload: Record<string, unknown> = { ...extra, offset: o.offset, returned: page.length };
  payload[target === "files" || mode === "files_only" ? "files" : mode === "count" ? "counts" : "matches"] = page;
  payload.truncated = more || !outcome.complete;
  if (more) payload.next_offset = o.offset + page.length;
  if (!outcome.complete) payload.incomplete = stopMessage(outcome.stopReason);
  payload.hint = hintFor(total, page.length, o.offset, more, outcome.complete);
  return payload;
}

function contentMatches(lines: LineRecord[], visible: (p: string) => string | undefined, o: ShapeOptions): ContentMatch[] {
  const byFile = new Map<string, LineRecord[]>();
  for (const r of lines) {
    let list = byFile.get(r.path);
    if (!list) byFile.set(r.path, (list = []));
    list.push(r);
  }
  const out: ContentMatch[] = [];
  for (const [systemPath, records] of byFile) {
    const shown = visible(systemPath);
    if (shown === undefined) continue;
    records.sort((a, b) => a.line - b.line);
    const shownText = redactRuns(records, o);
    const context = new Map<number, string>();
    for (const r of records) if (!r.match) context.set(r.line, shownText.get(r.line) ?? "");
    const around = (from: number, to: number): ContextLine[] => {
      const got: ContextLine[] = [];
      for (let l = from; l <= to; l++) {
        const t = context.get(l);
        if (t !== undefined) got.push({ line: l, text: cut(t, o) });
      }
      return got;
    };
    for (const r of records) {
      if (!r.match) continue;
      const m: ContentMatch = { path: shown, line: r.line, text: cut(shownText.get(r.line) ?? "", o) };
      if (o.context > 0) {
        const before = around(r.line - o.context, r.line - 1);
        const after = around(r.line + 1, r.line + o.context);
        if (before.length > 0) m.before = before;
        if (after.length > 0) m.after = after;
      }
      out.push(m);
    }
  }
  return out.sort((a, b) => byPath(a.path, b.path) || a.line - b.line);
}

/**
 * Redacts each run of consecutive lines of one file as one raw text, so a key whose BEGIN line
 * is in the context (or before it) stays masked across the run. Returns line number → text.
 */
function redactRuns(records: LineRecord[], o: ShapeOptions): Map<number, string> {
  const out = new Map<number, string>();
  let run: LineRecord[] = [];
  const flush = () => {
    if (run.length === 0) return;
    const raw = run.map((r) => r.text.replace(/\n/g, " "));
    const masked = o.redact(raw.join("\n"), { startsMidFile: true }).split("\n");
    run.forEach((r, i) => out.set(r.line, masked.length === run.length ? masked[i]! : "«redacted»"));
    run = [];
  };
  let last = -Infinity;
  for (const r of records) {
    if (r.line <= last) continue; // records are sorted; a line reported twice is shown once
    if (r.line !== last + 1) flush();
    run.push(r);
    last = r.line;
  }
  flush();
  return out;
}

function cut(text: string, o: ShapeOptions): string {
  return text.length > o.maxLineChars ? text.slice(0, o.maxLineChars) + LINE_CUT_MARKER : text;
}

/**
 * The first `k` items of `items` in `cmp` order (all of them when `k` is not much smaller):
 * one page of a 100k-file answer needs a pass with a small sorted buffer, not a full sort.
 */
export function sortedUpTo<T>(items: T[], k: number, cmp: (a: T, b: T) => number): T[] {
  if (!keepsFew(items.length, k)) return items.sort(cmp);
  return bestOf(items, k, (item) => item, cmp);
}

/** The first `k` of `items` mapped by `show`, in `cmp` order: each item is mapped once, and only the best `k` are kept. */
function bestOf<T, U>(items: T[], k: number, show: (item: T) => U, cmp: (a: U, b: U) => number): U[] {
  const best: U[] = [];
  for (const each of items) {
    const item = show(each);
    if (best.length === k && cmp(item, best[k - 1]!) >= 0) continue;
    let lo = 0;
    let hi = best.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cmp(best[mid]!, item) <= 0) lo = mid + 1;
      else hi = mid;
    }
    best.splice(lo, 0, item);
    if (best.length > k) best.pop();
  }
  return best;
}

/** Whether {@link sortedUpTo} keeps a small buffer (rather than sorting all `n` items). */
function keepsFew(n: number, k: number): boolean {
  return k * 8 < n && k <= 4_096;
}

function byPath(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function stopMessage(reason: SearchOutcome["stopReason"]): string {
  const why =
    reason === "timeout" ? "it hit the time limit" : reason === "output" ? "its output exceeded the size cap" : "it reached the result cap";
  return `The search stopped early because ${why}: totals are lower bounds. Narrow it with a more specific pattern, a sub-directory path or file_glob.`;
}

function hintFor(total: number, shown: number, offset: number, more: boolean, complete: boolean): string {
  if (total === 0) {
    return offset > 0 || !complete
      ? "Nothing on this page."
      : "No results. Check the pattern (a regular expression for content, a glob for files), the path, and file_glob; ignored (.gitignore), binary and credential files are not searched.";
  }
  if (shown === 0) return `offset ${offset} is past the end (${total} results). Use a smaller offset.`;
  const range = `Showing ${offset + 1}-${offset + shown} of ${total}${complete ? "" : "+"}.`;
  return more ? `${range} Use offset=${offset + shown} to continue, or narrow the search.` : range;
}
