/**
 * Finding many short literals (vendor needles, gitleaks keywords) in one pass: bitmaps of their
 * first two and three characters make the scan one or two typed-array look-ups per position, and
 * only candidates are compared in full. ASCII only (every literal here is); case-folded on request.
 */

/** ASCII lower case by char code; 0 for every code ≥ 128 (never the start of a literal). */
const LOWER = new Uint8Array(65536);
const SAME = new Uint8Array(65536);
for (let c = 1; c < 128; c++) {
  LOWER[c] = c >= 65 && c <= 90 ? c + 32 : c;
  SAME[c] = c;
}

export interface LiteralSet {
  /** Literals by their first two characters (folded when the set is), longest first. */
  byPair: Array<string[] | undefined>;
  /** 1: a literal of 3+ characters starts with this pair; 2: a 2-character literal is this pair. */
  pair: Uint8Array;
  /** Bit set of the first three characters of the literals of 3+ characters (256 KiB: stays in cache). */
  triple: Uint32Array;
  fold: boolean;
}

/** A set of literals of at least two ASCII characters (lower-cased when `fold`). */
export function literalSet(literals: Iterable<string>, fold: boolean): LiteralSet {
  const set: LiteralSet = { byPair: new Array(128 * 128), pair: new Uint8Array(128 * 128), triple: new Uint32Array((128 * 128 * 128) / 32), fold };
  const all = [...new Set([...literals].map((l) => (fold ? l.toLowerCase() : l)))].filter((l) => l.length >= 2 && /^[\x01-\x7f]+$/.test(l));
  for (const l of all.sort((a, b) => b.length - a.length)) {
    const key = l.charCodeAt(0) * 128 + l.charCodeAt(1);
    (set.byPair[key] ??= []).push(l);
    set.pair[key] = l.length === 2 ? 2 : Math.max(set.pair[key]!, 1);
    if (l.length > 2) {
      const t = key * 128 + l.charCodeAt(2);
      set.triple[t >>> 5]! |= 1 << (t & 31);
    }
  }
  return set;
}

/**
 * Calls `hit(position, literal)` for every literal of `set` starting in `[from, to)` (overlaps
 * included), in position order.
 */
export function forEachLiteral(text: string, set: LiteralSet, from: number, to: number, hit: (at: number, literal: string) => void): void {
  const map = set.fold ? LOWER : SAME;
  const { pair, triple, byPair } = set;
  const end = Math.min(to, text.length - 1);
  let c0 = map[text.charCodeAt(from)]!;
  for (let k = from; k < end; k++) {
    const c1 = map[text.charCodeAt(k + 1)]!;
    const key = c0 * 128 + c1;
    c0 = c1;
    const p = pair[key]!;
    if (p === 0) continue;
    if (p === 1) {
      const t = key * 128 + (map[text.charCodeAt(k + 2)] ?? 0);
      if ((triple[t >>> 5]! & (1 << (t & 31))) === 0) continue;
    }
    for (const l of byPair[key]!) {
      let ok = k + l.length <= text.length;
      for (let i = 2; ok && i < l.length; i++) ok = map[text.charCodeAt(k + i)] === l.charCodeAt(i);
      if (ok) hit(k, l);
    }
  }
}
