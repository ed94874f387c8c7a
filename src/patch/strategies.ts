import { diffChars } from "diff";
import { levenshteinSimilarity } from "./similarity.js";
import { LineIndex, allIndexesOf, foldedSearch, searchLines } from "./text.js";
import type { MatchStrategy } from "./types.js";

/** A located region of the (LF) text: `[start, end)` offsets. */
export interface Span {
  start: number;
  end: number;
  /** Only for the scored strategies (block-anchor, context-aware). */
  score?: number;
}

export interface Strategy {
  name: MatchStrategy;
  /** Guesses rather than equivalences: a match must be unique, even with replace_all. */
  requiresUnique: boolean;
  find(index: LineIndex, find: string): Span[];
  /**
   * Adjusts new_string the way the search string was adjusted: the padding trimmed-boundary
   * dropped, the escapes escape-normalised undid, the file's own characters where
   * unicode-normalised folded them. `region` is the matched text of the file.
   */
  adapt?(find: string, replacement: string, region: string): string;
  /** The search string as it was actually matched (for the indentation map). */
  matchedForm?(find: string): string;
}

/** block-anchor: first and last lines equal, the middle at least this similar. */
export const BLOCK_ANCHOR_MIN_SIMILARITY = 0.7;
/** context-aware: the whole window at least this similar, with half its lines equal. */
export const CONTEXT_AWARE_MIN_SIMILARITY = 0.8;

const exact: Strategy = {
  name: "exact",
  requiresUnique: false,
  find: (index, find) => allIndexesOf(index.text, find).map((start) => ({ start, end: start + find.length })),
};

/** Every line equal once leading and trailing whitespace is ignored. */
const lineTrimmed: Strategy = {
  name: "line-trimmed",
  requiresUnique: false,
  find(index, find) {
    const wanted = searchLines(find).map((l) => l.trim());
    if (wanted.every((l) => l === "")) return [];
    return windowsWhere(index, wanted.length, (i) => wanted.every((w, k) => index.trimmed[i + k] === w));
  },
};

/** Runs of spaces and tabs count as one space (also inside a line: `f(a,  b)` finds `f(a, b)`). */
const whitespaceNormalised: Strategy = {
  name: "whitespace-normalised",
  requiresUnique: false,
  find(index, find) {
    const collapse = () => " ";
    return foldedSearch(index.text, SPACE_RUNS, collapse, find.replace(SPACE_RUNS, collapse));
  },
};

/**
 * Non-blank lines equal once indentation is ignored, blank lines skipped on both sides: catches a
 * block the model re-indented and whose blank lines it dropped or added.
 */
const indentationFlexible: Strategy = {
  name: "indentation-flexible",
  requiresUnique: false,
  find(index, find) {
    const wanted = searchLines(find)
      .map((l) => l.trim())
      .filter((l) => l !== "");
    if (wanted.length === 0) return [];
    const t = index.trimmed;
    const spans: Span[] = [];
    for (let i = 0; i < t.length; i++) {
      if (t[i] !== wanted[0]) continue;
      let k = 1;
      let j = i;
      for (let n = i + 1; k < wanted.length && n < t.length; n++) {
        if (t[n] === "") continue;
        if (t[n] !== wanted[k]) break;
        k++;
        j = n;
      }
      if (k === wanted.length) {
        spans.push({ start: index.starts[i]!, end: index.lineEnd(j) });
        i = j;
      }
    }
    return spans;
  },
};

/**
 * One pass over a double-escaped string: `\\n` → newline, `\\t` → tab, `\\r` dropped (the text
 * is matched as LF; a CRLF file gets its CRs back when written), `\\"` `\\'` `\\`` `\\\\` → the
 * character. One pass, so `\\\\n` stays a literal backslash followed by `n`.
 */
function unescapeOnce(s: string): string {
  return s.replace(/\\(n|t|r|"|'|`|\\)/g, (_m, c: string) => (c === "n" ? "\n" : c === "t" ? "\t" : c === "r" ? "" : c));
}

/**
 * The model double-escaped the text (`\"`, `\\n` for a newline): search the unescaped form, and
 * unescape new_string the same way — it was escaped by the same hand, and written verbatim its
 * `\\t` would replace the file's tab with a backslash and a `t`.
 */
const escapeNormalised: Strategy = {
  name: "escape-normalised",
  requiresUnique: false,
  find(index, find) {
    const unescaped = unescapeOnce(find);
    if (unescaped === find) return [];
    return exact.find(index, unescaped);
  },
  adapt: (_find, replacement) => unescapeOnce(replacement),
  matchedForm: unescapeOnce,
};

/** Leading/trailing whitespace of the whole search string ignored. */
const trimmedBoundary: Strategy = {
  name: "trimmed-boundary",
  requiresUnique: false,
  find(index, find) {
    const trimmed = find.trim();
    if (trimmed === find || trimmed === "") return [];
    return exact.find(index, trimmed);
  },
  adapt(find, replacement) {
    // Drop from new_string the same padding that was dropped from old_string, so the file's own
    // surroundings stay as they are.
    const lead = find.slice(0, find.length - find.trimStart().length);
    const trail = find.slice(find.trimEnd().length);
    let r = replacement.startsWith(lead) ? replacement.slice(lead.length) : replacement.trimStart();
    r = trail !== "" && r.endsWith(trail) ? r.slice(0, r.length - trail.length) : trail !== "" ? r.trimEnd() : r;
    return r;
  },
};

const UNICODE_FOLDS: Record<string, string> = {
  "\u201C": '"', "\u201D": '"', "\u201E": '"', "\u201F": '"', "\u2033": '"', "\u00AB": '"', "\u00BB": '"',
  "\u2018": "'", "\u2019": "'", "\u201A": "'", "\u201B": "'", "\u2032": "'",
  "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
  "\u2026": "...",
  "\u00A0": " ", "\u2000": " ", "\u2001": " ", "\u2002": " ", "\u2003": " ", "\u2004": " ", "\u2005": " ", "\u2006": " ",
  "\u2007": " ", "\u2008": " ", "\u2009": " ", "\u200A": " ", "\u202F": " ", "\u205F": " ", "\u3000": " ",
  "\u200B": "", "\u200C": "", "\u200D": "", "\u2060": "", "\uFEFF": "",
};

/**
 * The ASCII an em dash may have been typed as: Codex folds it to `-`, Hermes to `--`; both are
 * tried, so `value--fallback` and `value-fallback` both find `value—fallback`.
 */
const EM_DASH_FOLDS = ["-", "--"] as const;

/** The fold of one character, with the em dash typed as `emDash`. */
function unicodeFold(emDash: string): (c: string) => string {
  return (c) => (c === "\u2014" ? emDash : (UNICODE_FOLDS[c] ?? c));
}

// An alternation, not a class: a class holding U+200D (zero-width joiner) reads as a joined sequence.
const UNICODE_FOLDABLE = new RegExp(Object.keys(UNICODE_FOLDS).join("|"), "g");
/** Two or more spaces/tabs, or a tab: what whitespace-normalised folds to one space. */
const SPACE_RUNS = /[ \t]{2,}|\t/g;

/**
 * Smart quotes, dashes, ellipses, exotic spaces and zero-width characters folded to ASCII. The
 * replacement keeps the file's own characters wherever new_string leaves old_string's text as
 * it was (see {@link keepFileCharacters}).
 */
const unicodeNormalised: Strategy = {
  name: "unicode-normalised",
  requiresUnique: false,
  find(index, find) {
    const spans: Span[] = [];
    for (const emDash of EM_DASH_FOLDS) {
      const fold = unicodeFold(emDash);
      for (const span of foldedSearch(index.text, UNICODE_FOLDABLE, fold, find.replace(UNICODE_FOLDABLE, fold))) {
        if (spans.every((k) => span.end <= k.start || span.start >= k.end)) spans.push(span);
      }
    }
    return spans.sort((a, b) => a.start - b.start);
  },
  adapt(find, replacement, region) {
    for (const emDash of EM_DASH_FOLDS) {
      const fold = unicodeFold(emDash);
      const kept = keepFileCharacters(region, find.replace(UNICODE_FOLDABLE, fold), replacement, fold);
      if (kept !== undefined) return kept;
    }
    return replacement;
  },
};

/**
 * new_string with the file's characters put back: old_string and new_string are compared (after
 * folding old_string), and every stretch new_string keeps unchanged is copied from the matched
 * `region` as the file has it (`…`, `−`, U+3000, smart quotes); only what the model changed is
 * written as it typed it. `undefined` when `region` does not fold to `foldedFind`.
 */
export function keepFileCharacters(region: string, foldedFind: string, replacement: string, fold: (c: string) => string): string | undefined {
  // Folded offset of each character of the region (and one past the end).
  const foldedAt: number[] = [];
  let folded = "";
  for (const ch of region) {
    for (let u = 0; u < ch.length; u++) foldedAt.push(folded.length);
    folded += ch.match(UNICODE_FOLDABLE_ONE) ? fold(ch) : ch;
  }
  foldedAt.push(folded.length);
  if (folded !== foldedFind) return undefined;
  // Folded offset → the first region offset there (only offsets on a character boundary).
  const regionAt = new Map<number, number>();
  for (let i = foldedAt.length - 1; i >= 0; i--) regionAt.set(foldedAt[i]!, i);
  const parts = diffChars(foldedFind, replacement, { maxEditLength: MAX_FOLD_DIFF_EDITS });
  if (!parts) return undefined;
  let out = "";
  let at = 0;
  for (const part of parts) {
    if (part.added) {
      out += part.value;
      continue;
    }
    const end = at + part.value.length;
    if (!part.removed) {
      const from = regionAt.get(at);
      const to = regionAt.get(end);
      // A kept stretch that starts or ends inside one folded character (half of "--") is written as typed.
      out += from !== undefined && to !== undefined && foldedAt[from] === at && foldedAt[to] === end ? region.slice(from, to) : part.value;
    }
    at = end;
  }
  return out;
}

/** Beyond this many edits between old_string and new_string, new_string is written as typed. */
const MAX_FOLD_DIFF_EDITS = 2_000;
const UNICODE_FOLDABLE_ONE = new RegExp(`^(?:${Object.keys(UNICODE_FOLDS).join("|")})$`);

/**
 * At least 3 lines; first and last line equal (trimmed) act as anchors; the lines between must be
 * {@link BLOCK_ANCHOR_MIN_SIMILARITY} similar; the block may be a few lines longer or shorter.
 */
const blockAnchor: Strategy = {
  name: "block-anchor",
  requiresUnique: true,
  find(index, find) {
    const wanted = searchLines(find).map((l) => l.trim());
    const m = wanted.length;
    const first = wanted[0]!;
    const last = wanted[m - 1]!;
    if (m < 3 || first === "" || last === "") return [];
    const middle = wanted.slice(1, -1).join("\n");
    const slack = Math.max(2, Math.ceil(m * 0.25));
    const t = index.trimmed;
    const spans: Span[] = [];
    for (let i = 0; i < t.length; i++) {
      if (t[i] !== first) continue;
      for (let j = i + Math.max(2, m - 1 - slack); j <= Math.min(t.length - 1, i + m - 1 + slack); j++) {
        if (t[j] !== last) continue;
        const score = levenshteinSimilarity(middle, t.slice(i + 1, j).join("\n"), BLOCK_ANCHOR_MIN_SIMILARITY);
        if (score >= BLOCK_ANCHOR_MIN_SIMILARITY) spans.push({ start: index.starts[i]!, end: index.lineEnd(j), score });
      }
    }
    return bestNonOverlapping(spans);
  },
};

/**
 * A window of the same number of lines, at least half of them equal (trimmed) and the whole
 * {@link CONTEXT_AWARE_MIN_SIMILARITY} similar: catches a typo or a changed line in the old text.
 */
const contextAware: Strategy = {
  name: "context-aware",
  requiresUnique: true,
  find(index, find) {
    const wanted = searchLines(find).map((l) => l.trim());
    const m = wanted.length;
    if (m < 2 || wanted.filter((l) => l !== "").length < 2) return [];
    const joined = wanted.join("\n");
    const needEqual = Math.ceil(m / 2);
    const t = index.trimmed;
    const spans: Span[] = [];
    for (let i = 0; i + m <= t.length; i++) {
      let equal = 0;
      for (let k = 0; k < m; k++) if (t[i + k] === wanted[k] && wanted[k] !== "") equal++;
      if (equal < needEqual) continue;
      const score = levenshteinSimilarity(joined, t.slice(i, i + m).join("\n"), CONTEXT_AWARE_MIN_SIMILARITY);
      if (score >= CONTEXT_AWARE_MIN_SIMILARITY) spans.push({ start: index.starts[i]!, end: index.lineEnd(i + m - 1), score });
    }
    return bestNonOverlapping(spans);
  },
};

/** Every strategy in the order it is tried. */
export const STRATEGIES: readonly Strategy[] = [
  exact,
  lineTrimmed,
  whitespaceNormalised,
  indentationFlexible,
  escapeNormalised,
  trimmedBoundary,
  unicodeNormalised,
  blockAnchor,
  contextAware,
];

function windowsWhere(index: LineIndex, size: number, test: (i: number) => boolean): Span[] {
  const spans: Span[] = [];
  for (let i = 0; i + size <= index.lines.length; i++) {
    if (!test(i)) continue;
    spans.push({ start: index.starts[i]!, end: index.lineEnd(i + size - 1) });
    i += size - 1;
  }
  return spans;
}

/** Overlapping windows describe one place: keep the best-scoring of each cluster. */
function bestNonOverlapping(spans: Span[]): Span[] {
  const kept: Span[] = [];
  for (const s of [...spans].sort((a, b) => (b.score ?? 0) - (a.score ?? 0))) {
    if (kept.every((k) => s.end <= k.start || s.start >= k.end)) kept.push(s);
  }
  return kept.sort((a, b) => a.start - b.start);
}
