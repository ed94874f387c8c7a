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

/** Dice coefficient over character bigrams: cheap, order-tolerant; ranks "did you mean" regions. */
export function bigramSimilarity(a: string, b: string): number {
  if (a === b) return 1;
  if (a.length < 2 || b.length < 2) return 0;
  const counts = new Map<string, number>();
  for (let i = 0; i < a.length - 1; i++) {
    const g = a.slice(i, i + 2);
    counts.set(g, (counts.get(g) ?? 0) + 1);
  }
  let shared = 0;
  for (let i = 0; i < b.length - 1; i++) {
    const g = b.slice(i, i + 2);
    const n = counts.get(g);
    if (n) {
      shared++;
      counts.set(g, n - 1);
    }
  }
  return (2 * shared) / (a.length + b.length - 2);
}
