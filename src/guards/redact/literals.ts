/**
 * Finding many short literals (vendor needles, gitleaks keywords) in one pass: a bit set of
 * their first three characters makes the scan one typed-array look-up per position, and only
 * candidates (a few in a hundred positions) are compared in full. The look-up has no data-
 * dependent branch but the final one, which is rarely taken: a two-level test (first two
 * characters, then three) passed one position in five on config text, and its mispredictions
 * cost more than the look-ups. ASCII only (every literal here is); case-folded on request.
 */

/** ASCII lower case by char code; 0 for every code ≥ 128 (never the start of a literal). */
const LOWER = new Uint8Array(65536);
const SAME = new Uint8Array(65536);
for (let c = 1; c < 128; c++) {
  LOWER[c] = c >= 65 && c <= 90 ? c + 32 : c;
  SAME[c] = c;
}

export interface LiteralSet<T> {
  /** Bit set over 21-bit keys (three 7-bit characters): some literal may start with these three. */
  triple: Uint32Array;
  /** [literal, its value] by triple key (a 2-character literal under every third character), longest first. */
  byTriple: Map<number, Array<[string, T]>>;
  fold: boolean;
}

/**
 * A set of literals of at least two ASCII characters (lower-cased when `fold`; the first value
 * of a literal wins), each with a value handed to the scan's callback.
 */
export function literalSet<T>(literals: Iterable<[string, T]>, fold: boolean): LiteralSet<T> {
  const set: LiteralSet<T> = { triple: new Uint32Array((1 << 21) / 32), byTriple: new Map(), fold };
  const values = new Map<string, T>();
  for (const [l, v] of literals) {
    const key = fold ? l.toLowerCase() : l;
    if (key.length >= 2 && /^[\x01-\x7f]+$/.test(key) && !values.has(key)) values.set(key, v);
  }
  const add = (key: number, l: string) => {
    set.triple[key >>> 5]! |= 1 << (key & 31);
    const entry: [string, T] = [l, values.get(l)!];
    const list = set.byTriple.get(key);
    if (list) list.push(entry);
    else set.byTriple.set(key, [entry]);
  };
  for (const l of [...values.keys()].sort((a, b) => b.length - a.length)) {
    const pair = (l.charCodeAt(0) << 14) | (l.charCodeAt(1) << 7);
    // A 2-character literal is followed by anything (0: the end of the text, or a code ≥ 128).
    if (l.length === 2) for (let c = 0; c < 128; c++) add(pair | c, l);
    else add(pair | l.charCodeAt(2), l);
  }
  return set;
}

/**
 * Calls `hit(position, literal, value)` for every literal of `set` starting in `[from, to)`
 * (overlaps included), in position order (longest first at one position).
 */
export function forEachLiteral<T>(text: string, set: LiteralSet<T>, from: number, to: number, hit: (at: number, literal: string, value: T) => void): void {
  const map = set.fold ? LOWER : SAME;
  const { triple, byTriple } = set;
  const len = text.length;
  const end = Math.min(to, len - 1);
  if (from >= end) return;
  // The key of the three characters at k (the code past the end reads as 0, as does NaN).
  let key = (map[text.charCodeAt(from)]! << 7) | map[text.charCodeAt(from + 1)]!;
  for (let k = from; k < end; k++) {
    key = ((key << 7) & 0x1fffff) | (k + 2 < len ? map[text.charCodeAt(k + 2)]! : 0);
    if ((triple[key >>> 5]! & (1 << (key & 31))) === 0) continue;
    for (const [l, value] of byTriple.get(key)!) {
      let ok = k + l.length <= len;
      for (let i = 3; ok && i < l.length; i++) ok = map[text.charCodeAt(k + i)] === l.charCodeAt(i);
      if (ok) hit(k, l, value);
    }
  }
}
