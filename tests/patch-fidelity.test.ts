// Patch fidelity: what the fuzzy strategies write, not only where they match. Escapes undone in
// new_string when old_string matched only unescaped; both ASCII folds of an em dash; indented
// V4A file headers; the file's unicode punctuation kept where new_string leaves it unchanged.
// Then a hostile corpus: every case states the exact result, so an edit of a wrong region fails.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { planReplace } from "../src/patch/replace.js";
import type { ReplacePlan } from "../src/patch/types.js";
import { planV4APatch } from "../src/patch/v4aPlan.js";
import { resolveFileToolOptions } from "../tools/fileToolSupport.js";
import { patchCore } from "../tools/patchTool.js";

const v4a = (body: string) => `*** Begin Patch\n${body}\n*** End Patch`;

async function planPatch(files: Record<string, string>, patchText: string) {
  return planV4APatch(patchText, { read: async (p) => files[p] ?? null });
}

function ok(plan: ReplacePlan): Extract<ReplacePlan, { ok: true }> {
  assert.ok(plan.ok, plan.ok ? "" : plan.error);
  return plan as Extract<ReplacePlan, { ok: true }>;
}

describe("escape-normalised writes what the model meant", () => {
  it("replace: a double-escaped tab is written as a tab", () => {
    const p = ok(planReplace("if (x) {\n\tfoo();\n}\n", "{\\n\\tfoo();", "{\\n\\tbar();"));
    assert.equal(p.strategy, "escape-normalised");
    assert.equal(p.newContent, "if (x) {\n\tbar();\n}\n");
  });
  it("replace: a CRLF file keeps CRLF (no literal \\r\\n text)", () => {
    const p = ok(planReplace("one\r\ntwo\r\nthree\r\n", "one\\r\\ntwo", "replaced\\r\\ntwo"));
    assert.equal(p.strategy, "escape-normalised");
    assert.equal(p.newContent, "replaced\r\ntwo\r\nthree\r\n");
  });
  it("patch mode: the same unescaping for a hunk", async () => {
    const r = await planPatch({ "f.txt": "if (x) {\n\tfoo();\n}\n" }, v4a("*** Update File: f.txt\n@@\n-{\\n\\tfoo();\n+{\\n\\tbar();"));
    assert.ok(r.ok, r.ok ? "" : r.error);
    assert.equal(r.ops[0]!.newContent, "if (x) {\n\tbar();\n}\n");
    assert.equal(r.ops[0]!.strategy, "escape-normalised");
    const crlf = await planPatch({ "g.txt": "one\r\ntwo\r\n" }, v4a("*** Update File: g.txt\n@@\n-one\\r\\ntwo\n+uno\\r\\ntwo"));
    assert.ok(crlf.ok, crlf.ok ? "" : crlf.error);
    assert.equal(crlf.ops[0]!.newContent, "uno\r\ntwo\r\n");
  });
  it("through the patch tool on disk, both modes", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "wb-fidelity-"));
    try {
      const ws = path.join(root, "t1");
      await mkdir(ws, { recursive: true });
      await writeFile(path.join(ws, "w.txt"), "alpha\r\n\tbeta\r\ngamma\r\n");
      const opts = resolveFileToolOptions({ rootDir: root });
      const cfg = { configurable: { thread_id: "t1" } };
      const a = await patchCore({ path: "w.txt", old_string: "alpha\\r\\n\\tbeta", new_string: "ALPHA\\r\\n\\tbeta" } as never, cfg, opts);
      assert.equal(a.payload.error, undefined, String(a.payload.error));
      assert.equal(await readFile(path.join(ws, "w.txt"), "utf8"), "ALPHA\r\n\tbeta\r\ngamma\r\n");
      const b = await patchCore({ mode: "patch", patch: v4a("*** Update File: w.txt\n@@\n-\\tbeta\\r\\ngamma\n+\\tBETA\\r\\ngamma") } as never, cfg, opts);
      assert.equal(b.payload.error, undefined, String(b.payload.error));
      assert.equal(await readFile(path.join(ws, "w.txt"), "utf8"), "ALPHA\r\n\tBETA\r\ngamma\r\n");
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("em dash: both ASCII folds", () => {
  it("`--` (Hermes) and `-` (Codex) both find an em dash; the em dash is kept", () => {
    for (const typed of ["value--fallback", "value-fallback"]) {
      const p = ok(planReplace("x = value\u2014fallback;\n", `x = ${typed};`, `x = ${typed.replace("fallback", "other")};`));
      assert.equal(p.strategy, "unicode-normalised", typed);
      assert.equal(p.newContent, "x = value\u2014other;\n", typed);
    }
  });
});

describe("V4A headers with leading whitespace", () => {
  it("indented file headers are accepted, first and later ones", async () => {
    const files = { "a.txt": "one\ntwo\n", "b.txt": "three\n" };
    const r = await planPatch(files, "*** Begin Patch\n  *** Update File: a.txt\n@@\n-one\n+ONE\n  *** Update File: b.txt\n@@\n-three\n+THREE\n\t*** Add File: c.txt\n+new\n  *** End Patch");
    assert.ok(r.ok, r.ok ? "" : r.error);
    assert.deepEqual(r.ops.map((o) => [o.kind, o.path, o.newContent]), [["update", "a.txt", "ONE\ntwo\n"], ["update", "b.txt", "THREE\n"], ["add", "c.txt", "new\n"]]);
  });
  it("a context line ` *** End Patch` inside a hunk stays context", async () => {
    const files = { "doc.md": "Example:\n*** End Patch\nafter\n" };
    const r = await planPatch(files, v4a("*** Update File: doc.md\n@@\n Example:\n *** End Patch\n-after\n+AFTER"));
    assert.ok(r.ok, r.ok ? "" : r.error);
    assert.equal(r.ops[0]!.newContent, "Example:\n*** End Patch\nAFTER\n");
  });
  it("a one-space ` *** Update File:` line is context (a file quoting the format), not a header", async () => {
    const files = { "doc.md": "Patch:\n*** Update File: x.ts\nend\n" };
    const r = await planPatch(files, v4a("*** Update File: doc.md\n@@\n Patch:\n *** Update File: x.ts\n-end\n+END"));
    assert.ok(r.ok, r.ok ? "" : r.error);
    assert.deepEqual(r.ops.map((o) => o.path), ["doc.md"]);
    assert.equal(r.ops[0]!.newContent, "Patch:\n*** Update File: x.ts\nEND\n");
  });
});

describe("unicode punctuation mapped back", () => {
  it("ellipsis, minus sign, ideographic space and smart quotes survive an edit next to them", () => {
    const p = ok(planReplace("a\u3000b \u2212 c\u2026\n", "a b - c...", "a b - d..."));
    assert.equal(p.strategy, "unicode-normalised");
    assert.equal(p.newContent, "a\u3000b \u2212 d\u2026\n");
    const q = ok(planReplace("say \u201Chi\u201D now\n", 'say "hi" now', 'say "hello" now'));
    assert.equal(q.newContent, "say \u201Chello\u201D now\n");
  });
});

interface Case {
  name: string;
  file: string;
  old: string;
  new: string;
  replaceAll?: boolean;
  /** The whole file afterwards, or a pattern the refusal must match (nothing written). */
  expect: string | RegExp;
  strategy?: string;
}

const CORPUS: Case[] = [
  // escapes
  { name: "a literal \\t in the file is matched exactly and new_string stays literal", file: 'sep = "\\t"\n\tindent\n', old: 'sep = "\\t"', new: 'sep = "\\n"', expect: 'sep = "\\n"\n\tindent\n', strategy: "exact" },
  { name: "an escaped backslash stays one backslash", file: 'p = "C:\\\\dir"\nnext\n', old: 'p = \\"C:\\\\\\\\dir\\"', new: 'p = \\"D:\\\\\\\\dir\\"', expect: 'p = "D:\\\\dir"\nnext\n', strategy: "escape-normalised" },
  { name: "\\\\n in new_string (escaped backslash + n) stays a literal backslash-n", file: 'msg("a");\nz\n', old: 'msg(\\"a\\");', new: 'msg(\\"a\\\\\\\\nb\\");', expect: 'msg("a\\\\nb");\nz\n', strategy: "escape-normalised" },
  { name: "escaped old_string found twice: ambiguous, refused", file: "\tx();\n\tx();\n", old: "\\tx();", new: "\\ty();", expect: /matches 2 places/ },
  { name: "escaped, replace_all: both tabs kept", file: "\tx();\n\tx();\n", old: "\\tx();", new: "\\ty();", replaceAll: true, expect: "\ty();\n\ty();\n" },
  { name: "an old_string that unescapes to nothing in the file is not found", file: "a\tb\n", old: "a\\nb", new: "c", expect: /not found/ },
  // em dash
  { name: "ASCII `--` in the file wins over the em dash (exact first)", file: "a--b\na\u2014b\n", old: "a--b", new: "a--c", expect: "a--c\na\u2014b\n", strategy: "exact" },
  { name: "two em dashes, `--` typed: ambiguous", file: "a\u2014b\nz\na\u2014b\n", old: "a--b", new: "a--c", expect: /matches 2 places/ },
  { name: "`--` typed picks the em dash, not the en dash", file: "x\u2013y\nx\u2014y\n", old: "x--y", new: "x--z", expect: "x\u2013y\nx\u2014z\n" },
  { name: "`-` typed with an en dash and an em dash: ambiguous", file: "x\u2013y\nx\u2014y\n", old: "x-y", new: "x-z", expect: /matches 2 places/ },
  { name: "a hyphen in the file is matched exactly, the em dash line untouched", file: "a-b\na\u2014b\n", old: "a-b", new: "a-c", expect: "a-c\na\u2014b\n", strategy: "exact" },
  { name: "em dash typed in old_string finds `--` in the file", file: "see--there\n", old: "see\u2014there", new: "see\u2014here", expect: "see\u2014here\n", strategy: "unicode-normalised" },
  // unicode map-back
  { name: "new_string's own unicode is written as typed", file: "say \u201Chi\u201D\n", old: 'say "hi"', new: "say \u00ABhi\u00BB", expect: "say \u00ABhi\u00BB\n" },
  { name: "deleting an ellipsis deletes it", file: "wait\u2026 go\n", old: "wait... go", new: "wait go", expect: "wait go\n" },
  { name: "replace_all keeps each region's own quotes", file: "say \u201Chi\u201D\nsay \u201Ehi\u201C\n", old: 'say "hi"', new: 'say "yo"', replaceAll: true, expect: "say \u201Cyo\u201D\nsay \u201Eyo\u201C\n" },
  { name: "zero-width characters stay where they were", file: "x\u200By end\n", old: "xy end", new: "xy END", expect: "x\u200By END\n" },
  { name: "NBSP kept, only the word changed", file: "10\u00A0km away\n", old: "10 km away", new: "10 km close", expect: "10\u00A0km close\n" },
  { name: "half of a `--` fold changed: written as typed", file: "a\u2014b\n", old: "a--b", new: "a-+b", expect: "a-+b\n" },
  { name: "unicode match is unique even when ASCII look-alikes exist elsewhere", file: "it\u2019s one\nits one\n", old: "it's one", new: "it's two", expect: "it\u2019s two\nits one\n" },
  { name: "lines around the match are never touched", file: "keep \u201Cq\u201D\nsay \u201Chi\u201D\nkeep \u2026\n", old: 'say "hi"', new: 'say "bye"', expect: "keep \u201Cq\u201D\nsay \u201Cbye\u201D\nkeep \u2026\n" },
  { name: "CRLF file with smart quotes keeps both", file: "a \u201Cb\u201D\r\nc\r\n", old: 'a "b"', new: 'a "B"', expect: "a \u201CB\u201D\r\nc\r\n" },
  { name: "a region that only looks similar is not edited", file: "alpha \u201Cone\u201D\n", old: 'alpha "two"', new: 'alpha "three"', expect: /not found/ },
];

describe("hostile corpus: no case edits a wrong region", () => {
  for (const c of CORPUS) {
    it(c.name, () => {
      const plan = planReplace(c.file, c.old, c.new, { replaceAll: c.replaceAll });
      if (c.expect instanceof RegExp) {
        assert.ok(!plan.ok, `refused, got ${plan.ok ? JSON.stringify(plan.newContent) : ""}`);
        assert.match(plan.error, c.expect);
        return;
      }
      const p = ok(plan);
      assert.equal(p.newContent, c.expect);
      if (c.strategy) assert.equal(p.strategy, c.strategy);
    });
  }
});
