/**
 * One pass over a text for every literal the detectors look for (vendor needles, case-exact;
 * gitleaks keywords and the anchors of rules run near their literals (./anchored.ts),
 * case-folded), shared by the detectors of one redaction call.
 */
import { VENDOR_PATTERNS } from "../secretPatterns.js";
import { GITLEAKS_RULES } from "./gitleaksRules.js";
import { forEachLiteral, literalSet, type LiteralSet } from "./literals.js";

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
    if (lower.length < 2 || !/^[\x01-\x7f]+$/.test(lower)) throw new Error(`anchor literal ${JSON.stringify(l)}: 2+ ASCII characters`);
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
  return { set: literalSet(info, true), slots };
}

export interface LiteralHits {
  /** [position, needle] of every vendor needle, in position order. */
  needles: Array<[number, string]>;
  /** [position, keyword] of every gitleaks keyword (lower case), in position order. */
  keywords: Array<[number, string]>;
  /** Positions of each anchor literal, by slot, in order. */
  anchors: number[][];
}

/** The shared scan of one text: computed on first use. */
export class TextScan {
  #hits: LiteralHits | undefined;
  #leads = new Map<RegExp, Array<[number, number]>>();
  constructor(readonly text: string) {}

  /**
   * Where the matches of the global regex `lead` start (`at: "start"`) or have their last
   * character (`"last"`), in order; each lead runs once per text, whichever rules share it.
   */
  leadPositions(lead: RegExp, at: "start" | "last"): number[] {
    let spans = this.#leads.get(lead);
    if (!spans) {
      spans = [];
      lead.lastIndex = 0;
      for (const m of this.text.matchAll(lead)) spans.push([m.index, m.index + Math.max(1, m[0].length) - 1]);
      this.#leads.set(lead, spans);
    }
    return spans.map(([s, l]) => (at === "start" ? s : l));
  }

  literals(): LiteralHits {
    this.#hits ??= scanLiterals(this.text);
    return this.#hits;
  }

  /** Sorted start positions (case-folded) of any of the registered anchor literals `needles`. */
  positionsOf(needles: readonly string[]): number[] {
    const { anchors } = this.literals();
    const slots = compiled!.slots;
    const lists: number[][] = [];
    for (const n of needles) {
      const list = anchors[slots.get(n.toLowerCase()) ?? -1];
      if (!list) throw new Error(`unregistered anchor literal ${JSON.stringify(n)}`);
      lists.push(list);
    }
    return lists.length === 1 ? lists[0]! : lists.flat().sort((a, b) => a - b);
  }
}

function scanLiterals(text: string): LiteralHits {
  const c = (compiled ??= compile());
  const hits: LiteralHits = { needles: [], keywords: [], anchors: ANCHORS.map(() => []) };
  forEachLiteral(text, c.set, 0, text.length, (k, lower, e) => {
    if (e.keyword) hits.keywords.push([k, lower]);
    for (const n of e.exact) if (text.startsWith(n, k)) hits.needles.push([k, n]);
    if (e.slot >= 0) hits.anchors[e.slot]!.push(k);
  });
  return hits;
}
