/**
 * Finds a set of literal spellings in text with one regular expression, and tells afterwards
 * which spelling a match was. V8 runs the literal alternation as compiled regexp code, and
 * `RegExp#test` allocates nothing per match: on dense tool output, finding every match this way
 * costs about half of a JavaScript `indexOf` loop that checks the characters around each hit.
 * `test` reports only where a match ends; a small decision tree over the characters before that
 * end names the match in a few character reads.
 */

import { escapeRegExp } from "../guards/regexp.js";

export interface FinderSpelling {
  readonly text: string;
  /** Set for `C:`-style spellings: the drive letter matches in either case (upper, lower). */
  readonly drive: readonly [number, number] | undefined;
}

export interface FinderEntry<S extends FinderSpelling> {
  spelling: S;
  /**
   * Literal endings tried in this order (a separator, say): the match is the spelling and the
   * first ending that is followed by `lookahead`. Without endings the match is the spelling.
   */
  endings?: readonly string[];
  /** Regular-expression source that must follow an ending (not consumed). */
  lookahead?: string;
}

/** One text a match can be: a spelling, or a spelling and one of its endings. */
export interface FinderMatch<S extends FinderSpelling> {
  readonly spelling: S;
  /** Characters matched (the spelling plus the ending). */
  readonly length: number;
  /** The match carries one of the entry's endings. */
  readonly ended: boolean;
}

interface Expansion<S extends FinderSpelling> extends FinderMatch<S> {
  readonly text: string;
  /** Sticky: this exact match at `lastIndex` (boundary, drive letter, lookahead included). */
  readonly exact: RegExp;
}

/** One shape for inner nodes and leaves, so the walk stays monomorphic. */
interface Node<S extends FinderSpelling> {
  /** Distance from the match end of the character that decides; 0 for a leaf. */
  at: number;
  ascii: readonly (Node<S> | undefined)[];
  wide: ReadonlyMap<number, Node<S>>;
  leaf: readonly Expansion<S>[];
}

const NO_CHILDREN: readonly never[] = [];
const NO_WIDE = new Map<number, never>();

/** Characters that continue a path segment: a spelling never starts right after one. */
const BOUNDARY = "(?<![\\w.\\-])";

export class SpellingFinder<S extends FinderSpelling> {
  private constructor(
    /** Global; set `lastIndex` before each search. */
    readonly re: RegExp,
    /** Every spelling, longest first. */
    readonly spellings: readonly S[],
    private readonly tree: Node<S>,
  ) {}

  /**
   * Entries are tried in order at each start (put longer, more specific ones first). `null` when
   * there is nothing to find or the engine refuses the expression.
   */
  static build<S extends FinderSpelling>(entries: readonly FinderEntry<S>[]): SpellingFinder<S> | null {
    if (entries.length === 0) return null;
    const expansions: Expansion<S>[] = [];
    const sources: string[] = [];
    try {
      for (const e of entries) {
        const head = literal(e.spelling);
        const after = e.lookahead ?? "";
        if (e.endings && e.endings.length > 0) {
          sources.push(`${head}(?:${e.endings.map(escapeRegExp).join("|")})${after}`);
          for (const end of e.endings) {
            const text = e.spelling.text + end;
            expansions.push({ spelling: e.spelling, text, length: text.length, ended: true, exact: new RegExp(`${BOUNDARY}${head}${escapeRegExp(end)}${after}`, "y") });
          }
        } else {
          sources.push(head);
          expansions.push({ spelling: e.spelling, text: e.spelling.text, length: e.spelling.text.length, ended: false, exact: new RegExp(`${BOUNDARY}${head}`, "y") });
        }
      }
      const re = new RegExp(`${BOUNDARY}(?:${sources.join("|")})`, "g");
      const spellings = [...new Set(entries.map((e) => e.spelling))].sort((a, b) => b.text.length - a.text.length);
      return new SpellingFinder(re, spellings, buildTree(expansions.sort((a, b) => b.length - a.length)));
    } catch {
      return null;
    }
  }

  /**
   * The match the last successful `re.test` found: it ends at `end` (the new `lastIndex`) and
   * starts at or after `from` (the `lastIndex` that search started at). Undefined only when no
   * expansion fits, which a match rules out.
   */
  identify(text: string, end: number, from: number): FinderMatch<S> | undefined {
    let node = this.tree;
    while (node.at !== 0) {
      const c = text.charCodeAt(end - node.at);
      const next = c < 128 ? node.ascii[c] : node.wide.get(c);
      if (next === undefined) return undefined;
      node = next;
    }
    const leaf = node.leaf;
    if (leaf.length === 1) return leaf[0];
    // Matches that are suffixes of each other: the longest really there (the regex reports the
    // leftmost start).
    for (const x of leaf) {
      const start = end - x.length;
      if (start < from) continue;
      x.exact.lastIndex = start;
      if (x.exact.test(text) && x.exact.lastIndex === end) return x;
    }
    return undefined;
  }
}

/** Whether `sp` is in `text` at `start` (the drive letter in either case). */
export function matchesAt(text: string, sp: FinderSpelling, start: number): boolean {
  if (start < 0 || start + sp.text.length > text.length) return false;
  const s = sp.text;
  let i = 0;
  if (sp.drive) {
    const c = text.charCodeAt(start);
    if (c !== sp.drive[0] && c !== sp.drive[1]) return false;
    i = 1;
  }
  for (; i < s.length; i++) if (text.charCodeAt(start + i) !== s.charCodeAt(i)) return false;
  return true;
}

/** `[\w.\-]`: a character that continues a path segment. */
export function isPathWordChar(c: number): boolean {
  return isWordChar(c) || c === 46 || c === 45;
}

/** `\w`. */
export function isWordChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

function literal(sp: FinderSpelling): string {
  if (!sp.drive) return escapeRegExp(sp.text);
  return `[${String.fromCharCode(sp.drive[0])}${String.fromCharCode(sp.drive[1])}]` + escapeRegExp(sp.text.slice(1));
}

/**
 * Splits the expansions on the character at the distance from the end (within the shortest) that
 * splits them into the most groups, recursively. A drive letter never decides (it matches in either case).
 * Expansions that agree on every position left are suffixes of each other: one leaf, checked
 * longest first.
 */
function buildTree<S extends FinderSpelling>(expansions: readonly Expansion<S>[]): Node<S> {
  const leaf = (): Node<S> => ({ at: 0, ascii: NO_CHILDREN, wide: NO_WIDE, leaf: expansions });
  if (expansions.length === 1) return leaf();
  const shortest = Math.min(...expansions.map((x) => x.length));
  const charAt = (x: Expansion<S>, at: number) => (x.spelling.drive && at === x.length ? -1 : x.text.charCodeAt(x.length - at));
  // The position that splits the group into the most parts (the nearest to the end on a tie):
  // fewer levels to walk per match.
  let best = 0;
  let bestParts = 1;
  for (let at = 1; at <= shortest; at++) {
    const chars = new Set(expansions.map((x) => charAt(x, at)));
    if (chars.has(-1)) continue;
    if (chars.size > bestParts) {
      best = at;
      bestParts = chars.size;
    }
  }
  if (best !== 0) {
    const groups = new Map<number, Expansion<S>[]>();
    for (const x of expansions) {
      const c = charAt(x, best);
      const group = groups.get(c) ?? [];
      group.push(x);
      groups.set(c, group);
    }
    const ascii: (Node<S> | undefined)[] = new Array(128).fill(undefined);
    const wide = new Map<number, Node<S>>();
    for (const [c, group] of groups) {
      const node = buildTree(group);
      if (c < 128) ascii[c] = node;
      else wide.set(c, node);
    }
    return { at: best, ascii, wide, leaf: NO_CHILDREN };
  }
  return leaf();
}
