import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { planReplace, unifiedDiff } from "../src/patch/index.js";

function ok(plan: ReturnType<typeof planReplace>) {
  assert.ok(plan.ok, `expected a plan, got: ${plan.ok ? "" : plan.error}`);
  return plan;
}

describe("planReplace strategies (each case is first matched by the named strategy)", () => {
  it("exact", () => {
    const p = ok(planReplace("a\nfoo(1)\nb\n", "foo(1)", "foo(2)"));
    assert.equal(p.strategy, "exact");
    assert.equal(p.newContent, "a\nfoo(2)\nb\n");
    assert.deepEqual(p.lines, [2]);
  });

  it("line-trimmed: trailing whitespace and different indentation per line", () => {
    const file = "function f() {\n    const a = 1;   \n    return a;\n}\n";
    const p = ok(planReplace(file, "const a = 1;\nreturn a;", "const a = 2;\nreturn a;"));
    assert.equal(p.strategy, "line-trimmed");
    // Re-indented to the file's four spaces, not the model's zero.
    assert.equal(p.newContent, "function f() {\n    const a = 2;\n    return a;\n}\n");
  });

  it("whitespace-normalised: inner runs of spaces differ", () => {
    const p = ok(planReplace("x = call(a,   b);\n", "call(a, b)", "call(a, b, c)"));
    assert.equal(p.strategy, "whitespace-normalised");
    assert.equal(p.newContent, "x = call(a, b, c);\n");
  });

  it("indentation-flexible: re-indented block with a blank line dropped", () => {
    const file = "class A {\n  run() {\n    step1();\n\n    step2();\n  }\n}\n";
    const p = ok(planReplace(file, "step1();\nstep2();", "step1();\nstepX();"));
    assert.equal(p.strategy, "indentation-flexible");
    assert.equal(p.newContent, "class A {\n  run() {\n    step1();\n    stepX();\n  }\n}\n");
  });

  it("escape-normalised: the model double-escaped quotes", () => {
    const file = 'log("hi there");\n';
    const p = ok(planReplace(file, 'log(\\"hi there\\")', 'log("bye")'));
    assert.equal(p.strategy, "escape-normalised");
    assert.equal(p.newContent, 'log("bye");\n');
  });

  it("trimmed-boundary: newline padding around a mid-line fragment", () => {
    const p = ok(planReplace("total = price*qty + tax;\n", "\nprice*qty\n", "\nprice*count\n"));
    assert.equal(p.strategy, "trimmed-boundary");
    assert.equal(p.newContent, "total = price*count + tax;\n");
  });

  it("unicode-normalised: smart quotes, dashes and ellipsis in the file (the file's quotes kept)", () => {
    const file = "msg = \u201CWait\u2026 it\u2019s done \u2014 ok\u201D;\n";
    const p = ok(planReplace(file, "msg = \"Wait... it's done - ok\";", 'msg = "Done";'));
    assert.equal(p.strategy, "unicode-normalised");
    assert.equal(p.newContent, "msg = \u201CDone\u201D;\n");
  });

  it("block-anchor: anchors equal, middle moderately different, one extra line", () => {
    const file = [
      "function total(items) {",
      "  let sum = 0;",
      "  for (const item of items) sum += item.price;",
      "  // rounding",
      "  return Math.round(sum);",
      "}",
      "",
    ].join("\n");
    const old = ["function total(items) {", "  let s = 0;", "  for (const it of items) s += it.price;", "  return Math.round(s);", "}"].join("\n");
    const p = ok(planReplace(file, old, "function total(items) {\n  return items.length;\n}"));
    assert.equal(p.strategy, "block-anchor");
    assert.equal(p.newContent, "function total(items) {\n  return items.length;\n}\n");
  });

  it("context-aware: a typo in the first line (no anchor), same line count", () => {
    const file = "const confg = load();\nconst port = confg.port;\nlisten(port);\n";
    const old = "const config = load();\nconst port = confg.port;\nlisten(port);";
    const p = ok(planReplace(file, old, "const port = 8080;\nlisten(port);"));
    assert.equal(p.strategy, "context-aware");
    assert.equal(p.newContent, "const port = 8080;\nlisten(port);\n");
  });
});

describe("planReplace safety", () => {
  it("several exact matches without replace_all: error with the locations", () => {
    const file = "x = 1;\ny = 2;\nx = 1;\nz = 3;\nx = 1;\n";
    const p = planReplace(file, "x = 1;", "x = 9;");
    assert.equal(p.ok, false);
    if (p.ok) return;
    assert.match(p.error, /matches 3 places .*lines 1, 3, 5/);
    assert.deepEqual(
      p.candidates?.map((c) => c.line),
      [1, 3, 5],
    );
  });

  it("at most 5 locations are listed", () => {
    const p = planReplace("a\n".repeat(8), "a", "b");
    assert.equal(p.ok, false);
    if (p.ok) return;
    assert.equal(p.candidates?.length, 5);
    assert.match(p.error, /matches 8 places/);
  });

  it("replace_all replaces every occurrence and reports the lines", () => {
    const p = ok(planReplace("x = 1;\ny\nx = 1;\n", "x = 1;", "x = 9;", { replaceAll: true }));
    assert.equal(p.newContent, "x = 9;\ny\nx = 9;\n");
    assert.equal(p.matches, 2);
    assert.deepEqual(p.lines, [1, 3]);
  });

  it("fuzzy guessing strategies refuse two candidate regions even with replace_all", () => {
    const block = (v: string) => `function f() {\n  const value = compute(${v});\n  return value * 2;\n}\n`;
    const file = block("aa") + "\n" + block("bb");
    const old = "function f() {\n  const value = compute(cc);\n  return value * 2;\n}";
    const p = planReplace(file, old, "function f() {}", { replaceAll: true });
    assert.equal(p.ok, false);
    if (p.ok) return;
    assert.match(p.error, /must be unique/);
    assert.equal(p.candidates?.length, 2);
  });

  it("block-anchor does not match when the middle is too different", () => {
    const file = "begin\nalpha beta gamma\ndelta epsilon\nend\n";
    const p = planReplace(file, "begin\nsomething entirely unrelated here\nend", "x");
    assert.equal(p.ok, false);
  });

  it("not found: did-you-mean with up to 3 closest regions", () => {
    const file = ["def load(path):", "    with open(path) as f:", "        return f.read()", "", "def save(path, data):", "    pass", ""].join(
      "\n",
    );
    const p = planReplace(file, "def lode(pth):\n    with opn(pth) as fh:", "x");
    assert.equal(p.ok, false);
    if (p.ok) return;
    assert.match(p.error, /Did you mean/);
    assert.ok(p.candidates && p.candidates.length >= 1 && p.candidates.length <= 3);
    assert.equal(p.candidates[0]!.line, 1);
    assert.equal(p.candidates[0]!.endLine, 2);
    assert.match(p.candidates[0]!.snippet, /def load\(path\)/);
  });

  it("already applied: new_string present, old_string absent", () => {
    const p = planReplace("const a = 2;\n", "const a = 1;", "const a = 2;");
    assert.equal(p.ok, false);
    if (p.ok) return;
    assert.equal(p.alreadyApplied, true);
    assert.match(p.error, /already applied/);
  });

  it("already applied: an insertion whose result is already there is not applied twice", () => {
    const file = "import a;\nimport b;\n\nrun();\n";
    const p = planReplace(file, "import a;\n", "import a;\nimport b;\n");
    assert.equal(p.ok, false);
    if (!p.ok) assert.equal(p.alreadyApplied, true);
    // Still fine where old_string occurs outside a copy of new_string.
    const q = ok(planReplace("import a;\nrun();\n", "import a;\n", "import a;\nimport b;\n"));
    assert.equal(q.newContent, "import a;\nimport b;\nrun();\n");
  });

  it("a deletion whose remainder is present is not reported as already applied", () => {
    const p = planReplace("keep\n", "keep\ndrop", "keep");
    assert.equal(p.ok, false);
    if (p.ok) return;
    assert.notEqual(p.alreadyApplied, true);
  });

  it("empty old_string is refused with a pointer to write_file", () => {
    const p = planReplace("abc", "", "x");
    assert.equal(p.ok, false);
    if (!p.ok) assert.match(p.error, /write_file/);
  });

  it("identical old and new are refused", () => {
    const p = planReplace("abc", "b", "b");
    assert.equal(p.ok, false);
  });

  it("CRLF: matches LF text and writes CRLF back", () => {
    const p = ok(planReplace("one\r\ntwo\r\nthree\r\n", "two\nthree", "2\n3"));
    assert.equal(p.strategy, "exact");
    assert.equal(p.newContent, "one\r\n2\r\n3\r\n");
  });

  it("CRLF in old_string matches an LF file", () => {
    const p = ok(planReplace("one\ntwo\n", "one\r\ntwo", "1\r\n2"));
    assert.equal(p.newContent, "1\n2\n");
  });

  it("BOM is kept", () => {
    const p = ok(planReplace("\uFEFFa = 1\n", "a = 1", "a = 2"));
    assert.equal(p.newContent, "\uFEFFa = 2\n");
  });

  it("unicode dashes in old_string match ASCII in the file", () => {
    const p = ok(planReplace("range: 1-5\n", "range: 1\u20135", "range: 1-9"));
    assert.equal(p.strategy, "unicode-normalised");
    assert.equal(p.newContent, "range: 1-9\n");
  });

  it("unicode folding maps offsets back exactly (zero-width removed, ellipsis expanded)", () => {
    const file = "before x\u200By \u2026 z after\n";
    const p = ok(planReplace(file, "xy ... z", "XYZ"));
    assert.equal(p.strategy, "unicode-normalised");
    assert.equal(p.newContent, "before XYZ after\n");
  });

  it("whitespace folding replaces the whole run of spaces and tabs", () => {
    const p = ok(planReplace("a =\t\t1;   b = 2;\n", "a = 1; b", "a = 3; b"));
    assert.equal(p.strategy, "whitespace-normalised");
    assert.equal(p.newContent, "a = 3; b = 2;\n");
  });

  it("a fuzzy match keeps the file's deeper indentation for every new line", () => {
    const file = "if (x) {\n\t\tif (y) {\n\t\t\tgo();\n\t\t}\n}\n";
    const p = ok(planReplace(file, "if (y) {\n\tgo();\n}", "if (y) {\n\tgo();\n\tstop();\n}"));
    assert.equal(p.strategy, "line-trimmed");
    assert.equal(p.newContent, "if (x) {\n\t\tif (y) {\n\t\t\tgo();\n\t\t\tstop();\n\t\t}\n}\n");
  });

  it("old_string ending in a newline removes that newline (also when fuzzy)", () => {
    const p = ok(planReplace("a\n  b  \nc\n", "b\n", ""));
    assert.equal(p.newContent, "a\nc\n");
  });
});

describe("unifiedDiff", () => {
  it("renders a/ b/ headers and 3 lines of context", () => {
    const before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    const after = before.replace("5\n", "five\n");
    const d = unifiedDiff("src/x.ts", before, after);
    assert.match(d, /^--- a\/src\/x\.ts\n\+\+\+ b\/src\/x\.ts\n@@ -2,7 \+2,7 @@\n 2\n 3\n 4\n-5\n\+five\n 6\n 7\n 8\n$/);
  });
});
