/**
 * The shared literal scan also marks ESC and the characters a terminal or editor does not show
 * (src/guards/redact/literals.ts), and leads that start with a literal are tried only where that
 * character occurs (src/guards/redact/anchored.ts): both must give exactly what the passes they
 * replace gave (a regex over the whole text), checked against those references on generated texts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { XML_TAG_LEAD, firstCharMatches } from "../src/guards/redact/anchored.js";
import { MARKED_CHARS, forEachLiteral, literalSet } from "../src/guards/redact/literals.js";
import { TextScan } from "../src/guards/redact/scan.js";
import { redactSecrets } from "../src/guards/redact.js";
import { splicedTexts } from "./helpers/splicedTexts.js";

/** Deterministic texts spliced from fragments (tests/helpers/splicedTexts.ts). */
const texts = (fragments: string[], count: number) => splicedTexts(fragments, count, { seed: 11, maxPieces: 10 });

const MARKS = [...MARKED_CHARS];
const INVISIBLE_RE = /[\u200B-\u200D\u2060\uFEFF\u00AD]|\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]/g;

describe("marked characters in the literal scan", () => {
  it("are reported at every position (first, last, runs), and the literals around them are found as before", () => {
    const literals = ["sk", "sk-", "ghp_", "akia"];
    const plain = literalSet(literals.map((l) => [l, l] as [string, string]), true);
    const marking = literalSet(literals.map((l) => [l, l] as [string, string]), true, true);
    const frags = [...literals, ...MARKS, "\x7f", "«", "\u0130", "s", "k", "-", " ", "\n", "x", "[31m"];
    for (const t of texts(frags, 3000)) {
      const hits = (set: typeof plain) => {
        const got: string[] = [];
        const marked: number[] = [];
        forEachLiteral(t, set, 0, t.length, (at, l) => got.push(`${at}:${l}`), (at) => marked.push(at));
        return { got, marked };
      };
      const a = hits(plain);
      const b = hits(marking);
      assert.deepEqual(b.got, a.got, JSON.stringify(t));
      assert.deepEqual(a.marked, [], "a set built without marks reports none");
      const want = [...t].flatMap((c, i) => (MARKS.includes(c) ? [i] : []));
      assert.deepEqual(b.marked, want, JSON.stringify(t));
    }
  });

  it("refuse ESC and DEL in a literal (the scan reads them as no character)", () => {
    const set = literalSet([["a\x1bb", 1], ["a\x7fb", 2], ["ab", 3]], false);
    const got: number[] = [];
    forEachLiteral("a\x1bb a\x7fb ab", set, 0, 11, (_at, _l, v) => got.push(v));
    assert.deepEqual(got, [3]);
  });

  it("give the TextScan the positions a global search for them gives", () => {
    for (const t of texts(["ghp_", "abc", ...MARKS, "\x1b[0m", "\x1b[", "\x1bX", "\n"], 500)) {
      const want = [...t].flatMap((c, i) => (MARKS.includes(c) ? [i] : []));
      assert.deepEqual(new TextScan(t).literals().marked, want);
    }
  });
});

describe("tokens split by marked characters", () => {
  it("are still masked when the character is the text's first or last", () => {
    const token = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
    for (const mark of MARKS) {
      for (const t of [`${token.slice(0, 10)}${mark}${token.slice(10)}${mark}`, `${mark}${token.slice(0, 12)}${mark}${token.slice(12)}`]) {
        const out = redactSecrets(t);
        assert.ok(!out.includes("c3D4e5F6"), JSON.stringify([t, out]));
      }
    }
  });

  it("an invisible-character region is found where a global search for them finds it", () => {
    for (const t of texts(["x", "\x1b[31m", "\x1b[", "\x1b", "\x1bY", "\u200b", "\u00ad", "\ufeff", " "], 500)) {
      const want = [...t.matchAll(INVISIBLE_RE)].map((m) => m.index);
      const marked = new TextScan(t).literals().marked;
      // Every match starts at a marked character; a marked ESC that starts no match is skipped.
      assert.ok(want.every((p) => marked.includes(p)), JSON.stringify(t));
    }
  });
});

describe("leads that start with a literal", () => {
  it("give exactly the matches of a global scan", () => {
    const quoted = /\(\s{0,8}["']/g;
    const frags = ["(", "((", "( ", "(\t\"", "('", "\"", "'", " ", "\u00a0", "<a>", "<", ">", "<a.b:c-d>", "<<x>>", "x", "\n"];
    for (const t of texts(frags, 3000)) {
      for (const re of [quoted, XML_TAG_LEAD]) {
        re.lastIndex = 0;
        const want = [...t.matchAll(re)].map((m) => [m.index, m[0]]);
        assert.deepEqual(firstCharMatches(t, re)!.map((m) => [m.index, m[0]]), want, JSON.stringify(t));
      }
    }
  });

  it("are not taken for ones that may start elsewhere", () => {
    for (const re of [/<?x/g, /\(*a/g, /<a|b/g, /[MNO]x/g, /abc/g, /\d/g]) assert.equal(firstCharMatches("x(a<ab", re), undefined, re.source);
  });
});
