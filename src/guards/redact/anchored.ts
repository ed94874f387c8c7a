/**
 * A rule's regex run only near the literals its matches contain, instead of over the whole text:
 * one pass of a regex over 10 MB costs 4–20 ms whatever it finds, and a redaction call runs
 * dozens, while the shared literal scan (./scan.ts) finds every literal of every rule at once.
 */
import type { TextScan } from "./scan.js";

/**
 * Where a rule may match: every match holds an occurrence of one of `needles` (ASCII, found
 * case-folded) starting at most `back` characters after the match starts; or every match starts
 * where a match of `lead` (a global regex shared by rules, run once per text) starts or ends
 * (`at`: its first or last character).
 */
export type Anchor = { needles: readonly string[]; back: number } | { lead: RegExp; at: "start" | "last" };

/** `<name>` (XML start tags): where the XML-element rules can start or continue. */
export const XML_TAG_LEAD = /<[\w.:-]+>/g;

/** The sticky twin of a rule's regex (same flags, `y` for `g`), compiled once per regex. */
const STICKY = new WeakMap<RegExp, RegExp>();

function stickyOf(re: RegExp): RegExp {
  let sticky = STICKY.get(re);
  if (!sticky) {
    sticky = new RegExp(re.source, re.flags.replace("g", "") + "y");
    STICKY.set(re, sticky);
  }
  return sticky;
}

/**
 * Exactly the matches of `text.matchAll(re)` (leftmost, not overlapping, in order), found by
 * trying `re` (sticky) only at the `back + 1` positions up to each needle occurrence: every
 * position where a match can start is tried, in order, from the end of the previous match.
 */
export function anchoredMatches(text: string, scan: TextScan, re: RegExp, anchor: Anchor): RegExpExecArray[] {
  const starts = "lead" in anchor ? scan.leadPositions(anchor.lead, anchor.at) : scan.positionsOf(anchor.needles);
  if (starts.length === 0) return [];
  const back = "lead" in anchor ? 0 : anchor.back;
  const sticky = stickyOf(re);
  const out: RegExpExecArray[] = [];
  let next = 0; // where the global scan would resume (and no earlier position is left to try)
  for (const at of starts) {
    for (let p = Math.max(next, at - back); p <= at; p++) {
      sticky.lastIndex = p;
      const m = sticky.exec(text);
      next = p + 1;
      if (m === null) continue;
      out.push(m);
      if (m[0].length > 0) next = p + m[0].length;
      break;
    }
  }
  return out;
}

const FIRST_CHARS = new WeakMap<RegExp, { first: string; sticky: RegExp } | null>();

/**
 * The character every match of `re` starts with, when its source opens with a literal
 * punctuation character (not quantified) and has no alternation (a branch could start with
 * another), with the sticky twin of `re`; else null.
 */
function firstCharOf(re: RegExp): { first: string; sticky: RegExp } | null {
  let known = FIRST_CHARS.get(re);
  if (known === undefined) {
    const m = /^(?:\\([^\w\s])|([^\w\s\\^$.|?*+()[\]{}]))(?![?*+{])/.exec(re.source);
    const plain = /^[dgi]*$/.test(re.flags) && !re.source.includes("|");
    known = m && plain ? { first: (m[1] ?? m[2])!, sticky: stickyOf(re) } : null;
    FIRST_CHARS.set(re, known);
  }
  return known;
}

/**
 * Exactly the matches of `text.matchAll(re)` (`re` global) when every match starts with one
 * literal character ({@link firstCharOf}): `re` is tried (sticky) only where that character
 * occurs, found with `indexOf`, instead of at every position of the text. Undefined otherwise.
 */
export function firstCharMatches(text: string, re: RegExp): RegExpExecArray[] | undefined {
  const known = firstCharOf(re);
  if (!known) return undefined;
  const { first, sticky } = known;
  const out: RegExpExecArray[] = [];
  let next = 0;
  for (let i = text.indexOf(first); i !== -1; i = text.indexOf(first, i + 1)) {
    if (i < next) continue;
    sticky.lastIndex = i;
    const m = sticky.exec(text);
    if (m === null) continue;
    out.push(m);
    next = i + Math.max(1, m[0].length);
  }
  return out;
}
