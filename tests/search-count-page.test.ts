// One page of a big count answer (src/search/results.ts): only the page is displayed and kept,
// yet it must be exactly the page a full sort by the *displayed* path gives, with the totals of
// every result — whatever order the system paths themselves are in.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { shapeResults, type ShapeOptions } from "../src/search/results.js";
import { emptyOutcome } from "../src/search/types.js";

const N = 5_000;
/** System paths whose displayed form sorts differently (the display reverses the name). */
const system = Array.from({ length: N }, (_, i) => `/ws/d${i % 7}/f${String((i * 7919) % N).padStart(5, "0")}`);
const display = (p: string) => [...p.slice(4)].reverse().join("");

function page(offset: number, limit: number, screenedByName: boolean, hidden = (_p: string) => false) {
  const outcome = { ...emptyOutcome("ripgrep"), counts: system.map((p, i) => ({ path: p, count: (i % 3) + 1 })), screenedByName };
  const o: ShapeOptions = { display, isHidden: hidden, redact: (t) => t, maxLineChars: 500, offset, limit, context: 0 };
  return shapeResults(outcome, "content", "count", o) as { counts: Array<{ path: string; count: number }>; total_files: number; total_matches: number; next_offset?: number };
}

const expected = system
  .map((p, i) => ({ path: display(p), count: (i % 3) + 1 }))
  .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
const allMatches = expected.reduce((n, c) => n + c.count, 0);

describe("count mode pages over many results", () => {
  for (const offset of [0, 50, 450]) {
    it(`offset ${offset}, limit 50: the full sort's page, totals of everything`, () => {
      const r = page(offset, 50, true);
      assert.deepEqual(r.counts, expected.slice(offset, offset + 50));
      assert.equal(r.total_files, N);
      assert.equal(r.total_matches, allMatches);
      assert.equal(r.next_offset, offset + 50);
    });
  }

  it("the same page whether the engine screened names or the shaping does", () => {
    assert.deepEqual(page(100, 50, false), page(100, 50, true));
  });

  it("hidden files (shaping-time check) are left out of the page and the totals", () => {
    const hidden = (p: string) => p.startsWith("0");
    const r = page(0, 50, false, hidden);
    const kept = expected.filter((c) => !hidden(c.path));
    assert.deepEqual(r.counts, kept.slice(0, 50));
    assert.equal(r.total_files, kept.length);
    assert.equal(r.total_matches, kept.reduce((n, c) => n + c.count, 0));
  });
});
