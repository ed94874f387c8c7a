/**
 * One pass over a text for every literal the detectors look for (vendor needles, case-exact;
 * gitleaks keywords and the anchors of rules run near their literals (./anchored.ts),
 * case-folded) and for ESC and the invisible characters, shared by the detectors of one
 * redaction call with the text's code units and the positions of the leads.
 */
import { VENDOR_PATTERNS } from "../secretPatterns.js";
import { GITLEAKS_RULES } from "./gitleaksRules.js";
import { firstCharMatches } from "./anchored.js";
import { LITERAL_RE, charCodes, forEachLiteral, literalSet, type LiteralSet } from "./literals.js";

const VENDOR_NEEDLES = [...new Set(VENDOR_PATTERNS.map((p) => p.needle ?? p.prefix).filter((n) => n.length >= 2))];
const KEYWORDS = new Set(GITLEAKS_RULES.flatMap((r) => r.keywords));

/** What one (folded) literal of the scan stands for. */
interface LiteralInfo {
  keyword: boolean;
  /** The vendor needles with this lower case (each then checked exactly). */
  exact: string[];
  /** Index of its position list when a rule is anchored on it, else -1. */
  slot: number;
}

/** Anchor literals registered by the rule modules (lower case), by slot. */
const ANCHORS: string[] = [];
let compiled: { set: LiteralSet<LiteralInfo>; slots: Map<string, number> } | undefined;

/**
 * Adds literals (ASCII, 2+ characters; found case-folded) whose positions {@link TextScan.positionsOf}
 * gives. Called by the rule modules when they load, before any scan.
 */
export function registerAnchorLiterals(literals: Iterable<string>): void {
  for (const l of literals) {
    const lower = l.toLowerCase();
    if (lower.length < 2 || !LITERAL_RE.test(lower)) throw new Error(`anchor literal ${JSON.stringify(l)}: 2+ ASCII characters (no ESC or DEL)`);
    if (!ANCHORS.includes(lower)) ANCHORS.push(lower);
  }
  compiled = undefined;
}

function compile(): NonNullable<typeof compiled> {
  const info = new Map<string, LiteralInfo>();
  const entry = (lower: string) => {
    let e = info.get(lower);
    if (!e) info.set(lower, (e = { keyword: false, exact: [], slot: -1 }));
    return e;
  };
  for (const n of VENDOR_NEEDLES) entry(n.toLowerCase()).exact.push(n);
  for (const k of KEYWORDS) entry(k).keyword = true;
  const slots = new Map<string, number>();
  ANCHORS.forEach((a, i) => {
    entry(a).slot = i;
    slots.set(a, i);
  });
  return { set: literalSet(info, true, true), slots };
}

/** (Parallel arrays, not pairs: a scan finds 100k+ literals in 10 MB, and each pair outlived the young generation.) */
export interface LiteralHits {
  /** Position of every vendor needle, in position order, and the needle at each. */
  needleAt: number[];
  needles: string[];
  /** Position of every gitleaks keyword, in position order, and the keyword (lower case) at each. */
  keywordAt: number[];
  keywords: string[];
  /** Positions of each anchor literal, by slot, in order. */
  anchors: number[][];
  /** Positions of ESC and of the characters a terminal or editor does not show (`MARKED_CHARS` of ./literals.ts), in order. */
  marked: number[];
}

/** The shared scan of one text: computed on first use. */
export class TextScan {
  #hits: LiteralHits | undefined;
  #leads = new Map<RegExp, { start: number[]; last: number[] }>();
  /** Merged position lists of several anchor literals, by their joined names (rules ask again each call). */
  #unions = new Map<string, number[]>();
  constructor(readonly text: string) {}

  /**
   * Where the matches of the global regex `lead` start (`at: "start"`) or have their last
   * character (`"last"`), in order; each lead runs once per text, whichever rules share it.
   */
  leadPositions(lead: RegExp, at: "start" | "last"): number[] {
    let lists = this.#leads.get(lead);
    if (!lists) {
      lists = { start: [], last: [] };
      // (a lead that starts with a literal is tried only where that character occurs)
      lead.lastIndex = 0;
      for (const m of firstCharMatches(this.text, lead) ?? this.text.matchAll(lead)) {
        lists.start.push(m.index);
        lists.last.push(m.index + Math.max(1, m[0].length) - 1);
      }
      this.#leads.set(lead, lists);
    }
    return lists[at];
  }

  literals(): LiteralHits {
    this.#hits ??= scanLiterals(this.text, this.codes());
    return this.#hits;
  }

  #codes: Uint16Array | undefined;

  /** The text's code units ({@link charCodes}), for the detectors that walk it character by character. */
  codes(): Uint16Array {
    this.#codes ??= charCodes(this.text);
    return this.#codes;
  }

  /** Sorted start positions (case-folded) of any of the registered anchor literals `needles`. */
  positionsOf(needles: readonly string[]): number[] {
    const { anchors } = this.literals();
    const slots = compiled!.slots;
    const key = needles.length === 1 ? undefined : needles.join("\0").toLowerCase();
    const known = key === undefined ? undefined : this.#unions.get(key);
    if (known) return known;
    const lists: number[][] = [];
    for (const n of needles) {
      const list = anchors[slots.get(n.toLowerCase()) ?? -1];
      if (!list) throw new Error(`unregistered anchor literal ${JSON.stringify(n)}`);
      lists.push(list);
    }
    if (key === undefined) return lists[0]!;
    // (a typed array sorts numbers natively, without a comparator call per comparison)
    const union = Array.from(Int32Array.from(lists.flat()).sort());
    this.#unions.set(key, union);
    return union;
  }
}

function scanLiterals(text: string, codes: Uint16Array): LiteralHits {
  const c = (compiled ??= compile());
  const hits: LiteralHits = { needleAt: [], needles: [], keywordAt: [], keywords: [], anchors: ANCHORS.map(() => []), marked: [] };
  forEachLiteral(text, c.set, 0, text.length, (k, lower, e) => {
    if (e.keyword) {
      hits.keywordAt.push(k);
      hits.keywords.push(lower);
    }
    for (const n of e.exact) {
      if (!text.startsWith(n, k)) continue;
      hits.needleAt.push(k);
      hits.needles.push(n);
    }
    if (e.slot >= 0) hits.anchors[e.slot]!.push(k);
  }, (k) => hits.marked.push(k), codes);
  return hits;
}
