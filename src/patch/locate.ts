import { bigramProfile, profileSimilarity } from "./similarity.js";
import { STRATEGIES, type Span, type Strategy } from "./strategies.js";
import { LineIndex, indentOf, searchLines } from "./text.js";
import type { MatchCandidate } from "./types.js";

export interface Located {
  strategy: Strategy;
  spans: Span[];
}

/**
 * Tries the strategies in order and returns the first that finds `find` (only spans passing
 * `accept`, e.g. "after the previous hunk"), or `undefined`.
 */
export function locate(index: LineIndex, find: string, accept: (s: Span) => boolean = () => true): Located | undefined {
  for (const strategy of STRATEGIES) {
    const spans = strategy.find(index, find).filter(accept);
    if (spans.length > 0) return { strategy, spans: spans.map((s) => withTrailingNewline(index.text, find, s)) };
  }
  return undefined;
}

/**
 * The text that replaces `span`: adapted like the search string was (trimmed-boundary), and, when a
 * fuzzy strategy matched whole lines at a different indentation, shifted to the file's indentation
 * so the edit does not leave a block mis-indented.
 */
export function replacementFor(index: LineIndex, strategy: Strategy, find: string, span: Span, replacement: string): string {
  const region = index.text.slice(span.start, span.end);
  const adapted = strategy.adapt ? strategy.adapt(find, replacement, region) : replacement;
  const atLineStart = span.start === 0 || index.text[span.start - 1] === "\n";
  if (strategy.name === "exact" || !atLineStart) return adapted;
  const indentMap = indentationMap(searchLines(strategy.matchedForm ? strategy.matchedForm(find) : find), region.split("\n"));
  if (indentMap.size === 0) return adapted;
  return adapted
    .split("\n")
    .map((line) => {
      if (line.trim() === "") return line;
      const own = indentOf(line);
      const mapped = indentMap.get(own);
      if (mapped !== undefined) return mapped + line.slice(own.length);
      // A new, deeper level: shift it like the deepest shallower level we know.
      let best: string | undefined;
      for (const k of indentMap.keys()) if (own.startsWith(k) && (best === undefined || k.length > best.length)) best = k;
      return best === undefined ? line : indentMap.get(best)! + line.slice(best.length);
    })
    .join("\n");
}

/**
 * How the model's indentation levels correspond to the file's: non-blank lines of the search
 * string paired in order with those of the matched region (only the first and last when the
 * counts differ). Only real differences are kept; the first pairing of a level wins.
 */
function indentationMap(findLines: string[], regionLines: string[]): Map<string, string> {
  const a = findLines.filter((l) => l.trim() !== "");
  const b = regionLines.filter((l) => l.trim() !== "");
  const pairs: Array<[string, string]> = [];
  if (a.length === b.length) a.forEach((l, k) => pairs.push([l, b[k]!]));
  else if (a.length > 0 && b.length > 0) pairs.push([a[0]!, b[0]!], [a[a.length - 1]!, b[b.length - 1]!]);
  const map = new Map<string, string>();
  for (const [x, y] of pairs) {
    const from = indentOf(x);
    if (!map.has(from)) map.set(from, indentOf(y));
  }
  for (const [k, v] of map) if (k === v) map.delete(k);
  // Keep identities when any level moved, so unmoved levels are not re-mapped by prefix.
  if (map.size === 0) return map;
  for (const [x, y] of pairs) if (indentOf(x) === indentOf(y) && !map.has(indentOf(x))) map.set(indentOf(x), indentOf(y));
  return map;
}

/** Applies non-overlapping replacements (any order) to `text`. */
export function applyEdits(text: string, edits: Array<{ start: number; end: number; text: string }>): string {
  let out = text;
  for (const e of [...edits].sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/** Locations of matches as 1-based lines with a short excerpt, at most `max`. */
export function describeSpans(index: LineIndex, spans: Span[], max = 5): MatchCandidate[] {
  return spans.slice(0, max).map((s) => {
    const first = index.lineAt(s.start);
    const last = index.lineAt(Math.max(s.start, s.end - 1));
    return { line: first + 1, endLine: last + 1, snippet: index.snippet(first, last, 3) };
  });
}

/** Suggestions are scored on at most this many lines of the search string (keeps big files fast). */
const SUGGESTION_MAX_LINES = 40;

/**
 * The `count` regions most similar to `find` (same number of lines; per-line bigram similarity,
 * averaged), best first, for the "did you mean" answer when nothing matched.
 */
export function closestRegions(index: LineIndex, find: string, count = 3): MatchCandidate[] {
  const wanted = searchLines(find)
    .slice(0, SUGGESTION_MAX_LINES)
    .map((l) => l.trim());
  const m = wanted.length;
  const t = index.trimmed;
  const wantedProfiles = wanted.map(bigramProfile);
  const lineProfiles = t.map(bigramProfile);
  const lineScore = (k: number, j: number): number =>
    wanted[k] === t[j] ? 1 : profileSimilarity(wantedProfiles[k]!, lineProfiles[j]!);
  const scored: Array<{ i: number; score: number }> = [];
  for (let i = 0; i + m <= t.length || (i === 0 && t.length > 0); i++) {
    let sum = 0;
    const width = Math.min(m, t.length - i);
    for (let k = 0; k < width; k++) sum += lineScore(k, i + k);
    scored.push({ i, score: sum / m });
  }
  scored.sort((a, b) => b.score - a.score || a.i - b.i);
  const picked: Array<{ i: number; score: number }> = [];
  for (const s of scored) {
    if (picked.length >= count || s.score <= 0) break;
    if (picked.every((p) => s.i + m <= p.i || s.i >= p.i + m)) picked.push(s);
  }
  return picked.map(({ i, score }) => {
    const last = Math.min(i + m, t.length) - 1;
    return { line: i + 1, endLine: last + 1, snippet: index.snippet(i, last, 6), similarity: Math.round(score * 100) / 100 };
  });
}

/** A search string ending in a newline replaces that newline too, whichever strategy matched. */
function withTrailingNewline(text: string, find: string, span: Span): Span {
  if (find.endsWith("\n") && text[span.end - 1] !== "\n" && text[span.end] === "\n") return { ...span, end: span.end + 1 };
  return span;
}
