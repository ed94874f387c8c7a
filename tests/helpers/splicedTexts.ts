/**
 * Deterministic texts spliced from `fragments` (a linear congruential generator from `seed`):
 * each text joins 1 to `maxPieces` fragments; with `upperEvery`, about one text in that many is
 * upper-cased. For checking a fast scan against the plain regex it replaces.
 */
export function splicedTexts(fragments: string[], count: number, opts: { seed: number; maxPieces: number; upperEvery?: number }): string[] {
  let seed = opts.seed;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    let s = "";
    for (let j = 0, n = 1 + rnd(opts.maxPieces); j < n; j++) s += fragments[rnd(fragments.length)]!;
    out.push(opts.upperEvery !== undefined && rnd(opts.upperEvery) === 0 ? s.toUpperCase() : s);
  }
  return out;
}
