/**
 * One pass over a text for every literal the detectors look for (vendor needles, case-exact;
 * gitleaks keywords, case-folded), shared by the detectors of one redaction call.
 */
import { VENDOR_PATTERNS } from "../secretPatterns.js";
import { GITLEAKS_RULES } from "./gitleaksRules.js";
import { forEachLiteral, literalSet } from "./literals.js";

const VENDOR_NEEDLES = [...new Set(VENDOR_PATTERNS.map((p) => p.needle ?? p.prefix).filter((n) => n.length >= 2))];
const KEYWORDS = new Set(GITLEAKS_RULES.flatMap((r) => r.keywords));
/** Vendor needles by their lower case (the scan is folded; a needle is then checked exactly). */
const NEEDLES_BY_LOWER = new Map<string, string[]>();
for (const n of VENDOR_NEEDLES) NEEDLES_BY_LOWER.set(n.toLowerCase(), [...(NEEDLES_BY_LOWER.get(n.toLowerCase()) ?? []), n]);
const ALL = literalSet([...VENDOR_NEEDLES, ...KEYWORDS], true);

export interface LiteralHits {
  /** [position, needle] of every vendor needle, in position order. */
  needles: Array<[number, string]>;
  /** [position, keyword] of every gitleaks keyword (lower case), in position order. */
  keywords: Array<[number, string]>;
}

/** The shared scan of one text: computed on first use. */
export class TextScan {
  #hits: LiteralHits | undefined;
  constructor(readonly text: string) {}

  literals(): LiteralHits {
    this.#hits ??= scanLiterals(this.text);
    return this.#hits;
  }
}

function scanLiterals(text: string): LiteralHits {
  const hits: LiteralHits = { needles: [], keywords: [] };
  forEachLiteral(text, ALL, 0, text.length, (k, lower) => {
    if (KEYWORDS.has(lower)) hits.keywords.push([k, lower]);
    const exact = NEEDLES_BY_LOWER.get(lower);
    if (exact) for (const n of exact) if (text.startsWith(n, k)) hits.needles.push([k, n]);
  });
  return hits;
}
