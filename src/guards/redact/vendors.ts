/**
 * Vendor token formats (./secretPatterns.ts): found by their literal needle, also when split by
 * invisible characters, ANSI escapes or a line break.
 */
import { escapeRegExp } from "../regexp.js";
import { anchoredMatches } from "./anchored.js";
import { LITERAL_RE, forEachLiteral, literalSet } from "./literals.js";
import { registerAnchorLiterals, type TextScan } from "./scan.js";
import { VENDOR_PATTERNS, type VendorPattern } from "../secretPatterns.js";
import { isKeyChar, lineEnd } from "./text.js";
import type { RedactOptions, SecretSpan } from "./types.js";

const INVISIBLE_RE = /[\u200B-\u200D\u2060\uFEFF\u00AD]|\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]/g;
const INVISIBLE_STICKY_RE = new RegExp(INVISIBLE_RE.source, "y");
const TOKEN_CHAR = /[A-Za-z0-9_+/=.-]/;

/**
 * Vendor tokens hidden by characters a terminal or editor does not show, or wrapped onto the
 * next line: matched on a folded copy of the surrounding region (invisible characters removed, a
 * line break between two token characters joined), mapped back to the original positions. Only
 * regions around an invisible character or a vendor prefix at a line end are folded.
 */
function foldedVendorSpans(text: string, scan: TextScan, direct: SecretSpan[], out: SecretSpan[]): void {
  const regions: Array<[number, number]> = [];
  // The matches of INVISIBLE_RE, from the characters the shared scan marked: each starts at one
  // (an escape sequence holds no other), so it is tried only there.
  for (const at of scan.literals().marked) {
    let len = 1;
    if (text.charCodeAt(at) === 27) {
      INVISIBLE_STICKY_RE.lastIndex = at;
      const m = INVISIBLE_STICKY_RE.exec(text);
      if (!m) continue;
      len = m[0].length;
    }
    regions.push([Math.max(0, at - 300), Math.min(text.length, at + len + 300)]);
  }
  for (const at of wrappedPrefixes(text, scan)) {
    const nextLine = text.indexOf("\n", at) + 1;
    regions.push([at, Math.min(text.length, lineEnd(text, nextLine) + 1, nextLine + 400)]);
  }
  if (regions.length === 0) return;
  regions.sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const r of regions) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1]) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  const directEnds = new Map(direct.map((s) => [s.start, s.end]));
  for (const [from, to] of merged) foldRegion(text, from, to, directEnds, out);
}

function foldRegion(text: string, from: number, to: number, directEnds: Map<number, number>, out: SecretSpan[]): void {
  const map: number[] = [];
  const removedAfter: boolean[] = [];
  const chars: string[] = [];
  let i = from;
  while (i < to) {
    const c = text[i]!;
    if (c === "\x1b" || (c >= "\u200B" && c <= "\u200D") || c === "\u2060" || c === "\uFEFF" || c === "\u00AD") {
      // (sticky: a global search from a broken escape would run on through the rest of the text)
      INVISIBLE_STICKY_RE.lastIndex = i;
      const m = INVISIBLE_STICKY_RE.exec(text);
      if (m) {
        i += m[0].length;
        if (removedAfter.length) removedAfter[removedAfter.length - 1] = true;
        continue;
      }
    }
    if ((c === "\n" || (c === "\r" && text[i + 1] === "\n")) && i > from && TOKEN_CHAR.test(text[i - 1]!)) {
      const next = c === "\r" ? i + 2 : i + 1;
      if (next < to && TOKEN_CHAR.test(text[next]!)) {
        i = next;
        if (removedAfter.length) removedAfter[removedAfter.length - 1] = true;
        continue;
      }
    }
    map.push(i);
    removedAfter.push(false);
    chars.push(c);
    i++;
  }
  const folded = chars.join("");
  const present = presentNeedles(folded);
  for (const p of VENDOR_PATTERNS) {
    if (!mayMatch(p, present)) continue;
    p.re.lastIndex = 0;
    for (const m of folded.matchAll(p.re)) {
      const fs = m.index;
      const fe = fs + m[0].length;
      let crosses = false;
      for (let k = fs; k < fe - 1 && !crosses; k++) crosses = removedAfter[k]!;
      if (!crosses) continue;
      const start = map[backFrom(p, folded, fs)]!;
      const directEnd = directEnds.get(start);
      // A complete token at the end of a line continues onto the next only if that line is nothing but token characters.
      if (directEnd !== undefined && !continuesOnNextLine(text, directEnd)) continue;
      out.push({ start, end: map[fe - 1]! + 1, label: vendorLabel(p, m[0]) });
    }
  }
}

const needleOf = (p: VendorPattern) => p.needle ?? p.prefix;
const NEEDLES = [...new Set(VENDOR_PATTERNS.map(needleOf).filter((n) => n.length >= 2))].sort((a, b) => b.length - a.length);
const NEEDLE_RE = new RegExp(NEEDLES.map(escapeRegExp).join("|"), "g");
/** For each needle, the shorter needles it starts with (`sk-ant-` → `sk-`): found together. */
const NEEDLE_PREFIXES = new Map(NEEDLES.map((n) => [n, NEEDLES.filter((m) => n.startsWith(m))]));

/**
 * The needles as a case-exact literal set (./literals.ts): a regex alternation of 120 literals
 * tries them one by one at each position and cost more than the rest of the folded-region pass.
 */
const NEEDLE_SET = NEEDLES.every((n) => LITERAL_RE.test(n)) ? literalSet(NEEDLES.map((n) => [n, n] as [string, string]), false) : undefined;

/** The vendor needles present in `text`, in one scan instead of one `includes` per pattern. */
function presentNeedles(text: string): Set<string> {
  const found = new Set<string>();
  const add = (needle: string) => {
    if (found.has(needle)) return;
    for (const n of NEEDLE_PREFIXES.get(needle) ?? [needle]) found.add(n);
  };
  if (NEEDLE_SET) {
    // The matches of NEEDLE_RE: leftmost, the longest needle at a position (the scan reports it
    // first), not overlapping.
    let end = 0;
    forEachLiteral(text, NEEDLE_SET, 0, text.length, (at, needle) => {
      if (at < end) return;
      end = at + needle.length;
      add(needle);
    });
    return found;
  }
  NEEDLE_RE.lastIndex = 0;
  for (const m of text.matchAll(NEEDLE_RE)) add(m[0]);
  return found;
}

/** Characters of a vendor token and of the context its look-behind needs (`[A-Za-z0-9_.+/=~-]`). */
const RUN_CHAR = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+/=~-") RUN_CHAR[c.charCodeAt(0)] = 1;
/** The shortest run of token characters a needle-anchored pattern can match in (`xoxb-` + 10). */
const MIN_TOKEN_RUN = 15;

/**
 * Every position where a needle starts (overlaps included), by needle, inside runs of token
 * characters long enough to hold a token: one literal scan (./literals.ts), the run measured
 * only around a hit.
 */
function needlePositions(text: string, scan: TextScan): Map<string, number[]> {
  const codes = scan.codes();
  const at = new Map<string, number[]>();
  const len = text.length;
  // The run of token characters around the last hit (hits come in position order).
  let runStart = -1;
  let runEnd = -1;
  const isRun = (c: number) => c < 128 && RUN_CHAR[c] === 1;
  const { needleAt, needles } = scan.literals();
  for (let h = 0; h < needleAt.length; h++) {
    const k = needleAt[h]!;
    const n = needles[h]!;
    if (k >= runEnd) {
      runStart = k;
      while (runStart > 0 && isRun(codes[runStart - 1]!)) runStart--;
      runEnd = k;
      while (runEnd < len && isRun(codes[runEnd]!)) runEnd++;
    }
    if (k + n.length > runEnd || runEnd - runStart < MIN_TOKEN_RUN) continue;
    const list = at.get(n);
    if (list) list.push(k);
    else at.set(n, [k]);
  }
  return at;
}


/**
 * Patterns whose every match starts with their needle: matched (sticky) only where a needle
 * starts, instead of scanning the whole text once per pattern; the others scan the text when
 * their needle occurs (or always, without one).
 */
const STICKY = new Map<VendorPattern, RegExp>();
const ANCHORED = new Set<VendorPattern>();
for (const p of VENDOR_PATTERNS) {
  const needle = needleOf(p);
  if (needle.length < 2) continue;
  // Past a leading boundary look-behind (`(?<![A-Za-z0-9_-])`), the source must start with the needle.
  const src = p.re.source.replace(/^\(\?<!\[[^\]]*\]\)/, "");
  const lit = escapeRegExp(needle);
  // Needle positions are kept only inside token runs: a needle with another character (`:AA`) scans.
  const inRuns = [...needle].every((c) => c.charCodeAt(0) < 128 && RUN_CHAR[c.charCodeAt(0)] === 1);
  if (src.startsWith(lit) && inRuns) STICKY.set(p, new RegExp(p.re.source, p.re.flags.replace("g", "") + "y"));
  // The others that start with their needle (`:AA`, `Q~`, `-us`) are tried at each of its occurrences.
  else if (src.startsWith(lit)) ANCHORED.add(p);
}
registerAnchorLiterals([...ANCHORED].map(needleOf));

/** The vendor-pattern spans of `text`, in pattern order (as a scan per pattern would push them). */
function vendorSpans(text: string, scan: TextScan, spans: SecretSpan[]): void {
  const positions = needlePositions(text, scan);
  for (const p of VENDOR_PATTERNS) {
    const needle = needleOf(p);
    const sticky = STICKY.get(p);
    // A pattern that scans the whole text runs when its needle occurs anywhere.
    // (an anchored one finds nothing without it: no need to look)
    if (needle.length >= 2 && !(sticky ? positions.has(needle) : ANCHORED.has(p) || text.includes(needle))) continue;
    if (sticky) {
      let doneUntil = 0;
      for (const pos of positions.get(needle)!) {
        if (pos < doneUntil) continue;
        sticky.lastIndex = pos;
        const m = sticky.exec(text);
        if (!m) continue;
        spans.push({ start: backFrom(p, text, m.index), end: m.index + m[0].length, label: vendorLabel(p, m[0]) });
        doneUntil = m.index + Math.max(1, m[0].length);
      }
      continue;
    }
    p.re.lastIndex = 0;
    const matches = p.lead
      ? anchoredMatches(text, scan, p.re, { lead: p.lead, at: "last" })
      : ANCHORED.has(p)
        ? anchoredMatches(text, scan, p.re, { needles: [needle], back: 0 })
        : text.matchAll(p.re);
    for (const m of matches) spans.push({ start: backFrom(p, text, m.index), end: m.index + m[0].length, label: vendorLabel(p, m[0]) });
  }
}

function mayMatch(p: VendorPattern, present: Set<string>): boolean {
  const needle = needleOf(p);
  return needle.length < 2 || present.has(needle);
}

function continuesOnNextLine(text: string, end: number): boolean {
  let i = end;
  if (text[i] === "\r") i++;
  if (text[i] !== "\n") return false;
  const next = text.slice(i + 1, lineEnd(text, i + 1));
  return /^[A-Za-z0-9_-]+$/.test(next);
}

/** Vendor prefixes a wrapped token can start with (literal starts of the patterns). */
const WRAP_PREFIXES = new Set(VENDOR_PATTERNS.map((p) => p.prefix).filter((p) => p.length >= 2));

/** `[A-Za-z0-9_+/=.-]`: a character of a token body. */
function isBodyChar(c: number): boolean {
  return isKeyChar(c) || c === 43 || c === 47 || c === 61;
}

/**
 * Starts of tokens wrapped onto the next line: a vendor prefix (not inside a longer token), 4–120
 * body characters, a line break, and 4 more body characters. Found from the prefix hits of the
 * shared scan, so only candidates are walked.
 */
function wrappedPrefixes(text: string, scan: TextScan): number[] {
  const codes = scan.codes();
  const out: number[] = [];
  let doneUntil = 0;
  const { needleAt, needles } = scan.literals();
  for (let h = 0; h < needleAt.length; h++) {
    const k = needleAt[h]!;
    const n = needles[h]!;
    if (k < doneUntil || !WRAP_PREFIXES.has(n)) continue;
    const prev = k > 0 ? codes[k - 1]! : 0;
    if ((prev >= 48 && prev <= 57) || (prev >= 65 && prev <= 90) || (prev >= 97 && prev <= 122) || prev === 95 || prev === 45) continue;
    const bodyStart = k + n.length;
    let e = bodyStart;
    while (e < text.length && e - bodyStart <= 120 && isBodyChar(codes[e]!)) e++;
    const body = e - bodyStart;
    if (body < 4 || body > 120) continue;
    let nl = e;
    if (codes[nl]! === 13) nl++;
    if (codes[nl]! !== 10 || nl + 4 >= text.length) continue;
    let ok = true;
    for (let q = nl + 1; q <= nl + 4 && ok; q++) ok = isBodyChar(codes[q]!);
    if (!ok) continue;
    out.push(k);
    doneUntil = nl + 5;
  }
  return out;
}

/** Where a match's secret starts: `back` characters before it, or back over a run of `back.run`. */
function backFrom(p: VendorPattern, text: string, index: number): number {
  const back = p.back;
  if (back === undefined) return index;
  if (typeof back === "number") return Math.max(0, index - back);
  let i = index;
  while (i > 0 && index - i < back.max && back.run.test(text[i - 1]!)) i--;
  return i;
}

function vendorLabel(p: VendorPattern, match: string): string {
  return typeof p.label === "string" ? p.label : p.label(match);
}

/** The vendor detector: direct matches, then tokens hidden by invisible characters or a wrap. */
export function detectVendorTokens(text: string, _opts: RedactOptions, scan: TextScan): SecretSpan[] {
  const spans: SecretSpan[] = [];
  vendorSpans(text, scan, spans);
  foldedVendorSpans(text, scan, spans.slice(), spans);
  return spans;
}
