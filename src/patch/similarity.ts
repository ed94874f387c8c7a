/**
 * Levenshtein distance, giving up once it must exceed `maxDistance` (returns `maxDistance + 1`).
 * The cut-off keeps fuzzy matching linear-ish on large files: most windows are rejected early.
 */
export function boundedLevenshtein(a: string, b: string, maxDistance: number): number {
  if (Math.abs(a.length - b.length) > maxDistance) return maxDistance + 1;
  if (a === b) return 0;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let prev = new Uint32Array(b.length + 1);
  let curr = new Uint32Array(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    curr[0] = i;
    let rowMin = i;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j <= b.length; j++) {
      const cost = ca === b.charCodeAt(j - 1) ? 0 : 1;
      const v = Math.min(prev[j]! + 1, curr[j - 1]! + 1, prev[j - 1]! + cost);
      curr[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > maxDistance) return maxDistance + 1;
    [prev, curr] = [curr, prev];
  }
  return prev[b.length]!;
}

/**
 * Normalised Levenshtein similarity in 0..1, or 0 when it is below `minimum` (so callers can pass
 * their threshold and let the distance computation stop early).
 */
export function levenshteinSimilarity(a: string, b: string, minimum = 0): number {
  const longest = Math.max(a.length, b.length);
  if (longest === 0) return 1;
  const maxDistance = Math.floor((1 - minimum) * longest);
  const d = boundedLevenshtein(a, b, maxDistance);
  return d > maxDistance ? 0 : 1 - d / longest;
}

/** The character bigrams of `s` as sorted codes, for repeated {@link profileSimilarity} calls. */
export function bigramProfile(s: string): Uint32Array {
  if (s.length < 2) return new Uint32Array(0);
  const codes = new Uint32Array(s.length - 1);
  for (let i = 0; i < codes.length; i++) codes[i] = ((s.charCodeAt(i) << 16) | s.charCodeAt(i + 1)) >>> 0;
  return codes.sort();
}

/** Dice coefficient of two bigram profiles (a merge of sorted arrays: no allocation). */
export function profileSimilarity(a: Uint32Array, b: Uint32Array): number {
  if (a.length === 0 || b.length === 0) return 0;
  let i = 0;
  let j = 0;
  let shared = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      shared++;
      i++;
      j++;
    } else if (a[i]! < b[j]!) i++;
    else j++;
  }
  return (2 * shared) / (a.length + b.length);
}
