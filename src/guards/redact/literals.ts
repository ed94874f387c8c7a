/**
 * Finding many short literals (vendor needles, gitleaks keywords) in one pass: a bit set of
 * their first three characters makes the scan one typed-array look-up per position, and only
 * candidates (a few in a hundred positions) are compared in full. The look-up has no data-
 * dependent branch but the final one, which is rarely taken: a two-level test (first two
 * characters, then three) passed one position in five on config text, and its mispredictions
 * cost more than the look-ups. ASCII only (every literal here is); case-folded on request.
 */

/**
 * The code the scan reads for ESC and the characters a terminal or editor does not show (soft
 * hyphen, zero-width space/joiners, word joiner, BOM): no literal holds it, and a set built with
 * `marks` reports where it occurs, so the vendor detector needs no pass of its own to find them.
 */
const MARK = 0x7f;
/** The characters read as {@link MARK}. */
export const MARKED_CHARS = "\x1b\u00ad\u200b\u200c\u200d\u2060\ufeff";

/** ASCII lower case by char code; 0 for DEL and every other code ≥ 128 (never in a literal). */
const LOWER = new Uint8Array(65536);
const SAME = new Uint8Array(65536);
for (let c = 1; c < 127; c++) {
  LOWER[c] = c >= 65 && c <= 90 ? c + 32 : c;
  SAME[c] = c;
}
for (const ch of MARKED_CHARS) LOWER[ch.charCodeAt(0)] = SAME[ch.charCodeAt(0)] = MARK;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * The UTF-16 code units of `text` in a typed array (one native copy): the scans index it instead
 * of calling `charCodeAt`, whose optimised code slows down by half once a process has seen strings
 * of several representations (one- and two-byte, sliced, concatenated), as any long-lived one has.
 */
export function charCodes(text: string): Uint16Array {
  if (LITTLE_ENDIAN) {
    const b = Buffer.from(text, "utf16le");
    if ((b.byteOffset & 1) === 0) return new Uint16Array(b.buffer, b.byteOffset, b.length >>> 1);
  }
  const codes = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) codes[i] = text.charCodeAt(i);
  return codes;
}

/** What a literal may hold: ASCII, neither NUL, ESC nor DEL. */
export const LITERAL_RE = /^[\x01-\x1a\x1c-\x7e]+$/;

export interface LiteralSet<T> {
  /** Bit set over 21-bit keys (three 7-bit characters): some literal may start with these three. */
  triple: Uint32Array;
  /**
   * The literals by triple key (a 2-character literal under every third character), longest
   * first, in flat arrays: `keys`/`buckets` an open-addressed table (key + 1, 0 = empty) giving a
   * bucket, whose literals are `literals[first[b]] … literals[first[b + 1] - 1]`. A `Map` look-up
   * and an array of pairs per candidate cost more than the rest of the scan.
   */
  keys: Int32Array;
  buckets: Int32Array;
  first: Int32Array;
  literals: string[];
  values: T[];
  fold: boolean;
  /** Built with `marks`: the scan reports the marked characters. */
  marks: boolean;
}

/** Slot of a triple key in a table of `mask + 1` slots (a multiplicative hash). */
const slotOf = (key: number, mask: number) => (Math.imul(key, 0x9e3779b1) >>> 11) & mask;

/**
 * A set of literals of at least two ASCII characters (lower-cased when `fold`; the first value
 * of a literal wins), each with a value handed to the scan's callback.
 */
export function literalSet<T>(literals: Iterable<[string, T]>, fold: boolean, marks = false): LiteralSet<T> {
  const triple = new Uint32Array((1 << 21) / 32);
  // Every key that starts with the mark: a candidate at each marked character.
  if (marks) triple.fill(0xffffffff, (MARK << 14) >>> 5, ((MARK + 1) << 14) >>> 5);
  const values = new Map<string, T>();
  for (const [l, v] of literals) {
    const key = fold ? l.toLowerCase() : l;
    if (key.length >= 2 && LITERAL_RE.test(key) && !values.has(key)) values.set(key, v);
  }
  const byTriple = new Map<number, string[]>();
  const add = (key: number, l: string) => {
    triple[key >>> 5]! |= 1 << (key & 31);
    const list = byTriple.get(key);
    if (list) list.push(l);
    else byTriple.set(key, [l]);
  };
  for (const l of [...values.keys()].sort((a, b) => b.length - a.length)) {
    const pair = (l.charCodeAt(0) << 14) | (l.charCodeAt(1) << 7);
    // A 2-character literal is followed by anything (0: the end of the text, or a code ≥ 128).
    if (l.length === 2) for (let c = 0; c < 128; c++) add(pair | c, l);
    else add(pair | l.charCodeAt(2), l);
  }
  let size = 16;
  while (size < byTriple.size * 4) size *= 2;
  const set: LiteralSet<T> = { triple, keys: new Int32Array(size), buckets: new Int32Array(size), first: new Int32Array(byTriple.size + 1), literals: [], values: [], fold, marks };
  let b = 0;
  for (const [key, list] of byTriple) {
    let slot = slotOf(key, size - 1);
    while (set.keys[slot] !== 0) slot = (slot + 1) & (size - 1);
    set.keys[slot] = key + 1;
    set.buckets[slot] = b;
    set.first[b] = set.literals.length;
    for (const l of list) {
      set.literals.push(l);
      set.values.push(values.get(l)!);
    }
    set.first[++b] = set.literals.length;
  }
  return set;
}

/**
 * Calls `hit(position, literal, value)` for every literal of `set` starting in `[from, to)`
 * (overlaps included), in position order (longest first at one position); with a set built with
 * `marks`, also `mark(position)` at each of {@link MARKED_CHARS} there, in order.
 */
export function forEachLiteral<T>(
  text: string,
  set: LiteralSet<T>,
  from: number,
  to: number,
  hit: (at: number, literal: string, value: T) => void,
  mark?: (at: number) => void,
  codes: Uint16Array = charCodes(text),
): void {
  const map = set.fold ? LOWER : SAME;
  const { triple, keys, buckets, first, literals, values } = set;
  const mask = keys.length - 1;
  const len = text.length;
  const end = Math.min(to, len - 1);
  // (the last character starts no literal, so the loop below stops before it)
  const lastMarked = mark !== undefined && set.marks && from <= len - 1 && len - 1 < to && map[codes[len - 1]!] === MARK;
  // The key of the three characters at k (the code past the end reads as 0, as does NaN).
  let key = from < end ? (map[codes[from]!]! << 7) | map[codes[from + 1]!]! : 0;
  for (let k = from; k < end; k++) {
    key = ((key << 7) & 0x1fffff) | (k + 2 < len ? map[codes[k + 2]!]! : 0);
    if ((triple[key >>> 5]! & (1 << (key & 31))) === 0) continue;
    if (key >>> 14 === MARK) {
      mark?.(k);
      continue;
    }
    let slot = slotOf(key, mask);
    while (keys[slot] !== key + 1) slot = (slot + 1) & mask;
    const b = buckets[slot]!;
    for (let j = first[b]!, last = first[b + 1]!; j < last; j++) {
      const l = literals[j]!;
      let ok = k + l.length <= len;
      for (let i = 3; ok && i < l.length; i++) ok = map[codes[k + i]!] === l.charCodeAt(i);
      if (ok) hit(k, l, values[j]!);
    }
  }
  if (lastMarked) mark!(len - 1);
}
