import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseV4A, planV4APatch, type PatchFileOp } from "../src/patch/index.js";

/** An in-memory file system for the planner's only I/O, `read`; records what was read. */
function memoryFs(files: Record<string, string>) {
  const reads: string[] = [];
  return {
    reads,
    io: {
      read: async (p: string) => {
        reads.push(p);
        return Object.hasOwn(files, p) ? files[p]! : null;
      },
    },
  };
}

const patch = (...lines: string[]) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n");

async function planOk(text: string, files: Record<string, string>): Promise<PatchFileOp[]> {
  const plan = await planV4APatch(text, memoryFs(files).io);
  assert.ok(plan.ok, plan.ok ? "" : plan.error);
  return plan.ops;
}

describe("parseV4A", () => {
  it("parses every operation kind", () => {
    const r = parseV4A(
      patch(
        "*** Add File: new.txt",
        "+hello",
        "*** Delete File: old.txt",
        "*** Move File: a dir/x.txt -> b dir/y.txt",
        "*** Update File: src/m.ts",
        "*** Move to: src/n.ts",
        "@@ function m() {",
        " keep",
        "-drop",
        "+add",
      ),
    );
    assert.ok(r.ok);
    if (!r.ok) return;
    assert.deepEqual(
      r.ops.map((o) => o.kind),
      ["add", "delete", "move", "update"],
    );
    const move = r.ops[2]!;
    assert.ok(move.kind === "move" && move.path === "a dir/x.txt" && move.newPath === "b dir/y.txt");
    const upd = r.ops[3]!;
    assert.ok(upd.kind === "update");
    if (upd.kind !== "update") return;
    assert.equal(upd.moveTo, "src/n.ts");
    assert.equal(upd.hunks[0]!.anchor, "function m() {");
    assert.deepEqual(upd.hunks[0]!.lines, [
      { op: " ", text: "keep" },
      { op: "-", text: "drop" },
      { op: "+", text: "add" },
    ]);
  });

  it("malformed: missing Begin Patch names line 1", () => {
    const r = parseV4A("*** Update File: a\n@@\n-x\n+y\n*** End Patch");
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.equal(r.line, 1);
      assert.match(r.error, /Begin Patch/);
    }
  });

  it("malformed: missing End Patch", () => {
    const r = parseV4A("*** Begin Patch\n*** Delete File: a");
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /End Patch/);
  });

  it("malformed: unknown header with its line number", () => {
    const r = parseV4A(patch("*** Delete File: a", "*** Rename File: b"));
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.equal(r.line, 3);
      assert.match(r.error, /line 3: unknown header/);
    }
  });

  it("malformed: Move File without an arrow", () => {
    const r = parseV4A(patch("*** Move File: a b"));
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /line 2: expected "\*\*\* Move File: <from> -> <to>"/);
  });

  it("malformed: hunk line with a bad prefix", () => {
    const r = parseV4A(patch("*** Update File: a", "@@", " ok", "?bad", "+x"));
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /^line 5: a hunk line must start with/);
  });

  it("malformed: Add File line without +", () => {
    const r = parseV4A(patch("*** Add File: a", "+ok", "oops"));
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /^line 4: every line of an added file must start with "\+"/);
  });

  it("malformed: Update File without hunks, and a header without a path", () => {
    const a = parseV4A(patch("*** Update File: a", "*** Delete File: b"));
    assert.equal(a.ok, false);
    if (!a.ok) assert.match(a.error, /has no hunks/);
    const b = parseV4A(patch("*** Delete File:   "));
    assert.equal(b.ok, false);
    if (!b.ok) assert.match(b.error, /needs a path/);
  });

  it("a unified-diff range header is not taken as an anchor; the first hunk may omit @@", () => {
    const r = parseV4A(patch("*** Update File: a", "@@ -1,2 +1,2 @@", " x", "-y", "+z", "*** Update File: b", "-p", "+q"));
    assert.ok(r.ok, r.ok ? "" : r.error);
    if (!r.ok) return;
    const [a, b] = r.ops;
    assert.ok(a!.kind === "update" && a!.hunks[0]!.anchor === "");
    assert.ok(b!.kind === "update" && b!.hunks.length === 1 && b!.hunks[0]!.lines.length === 2);
  });

  it("CRLF patch text and blank separator lines are accepted", () => {
    const r = parseV4A(patch("*** Add File: a", "+x", "", "*** Update File: b", "@@", "-1", "+2", "").replace(/\n/g, "\r\n"));
    assert.ok(r.ok, r.ok ? "" : r.error);
    if (!r.ok) return;
    const upd = r.ops[1]!;
    assert.ok(upd.kind === "update" && upd.hunks[0]!.lines.length === 2);
  });
});

describe("planV4APatch", () => {
  it("add, update, delete and move in one patch", async () => {
    const ops = await planOk(
      patch(
        "*** Add File: docs/new.md",
        "+# Title",
        "+text",
        "*** Update File: src/a.ts",
        "@@",
        " const a = 1;",
        "-const b = 2;",
        "+const b = 3;",
        "*** Delete File: old.txt",
        "*** Move File: from.txt -> to dir/to.txt",
      ),
      { "src/a.ts": "const a = 1;\nconst b = 2;\n", "old.txt": "x", "from.txt": "y" },
    );
    assert.deepEqual(ops, [
      { kind: "add", path: "docs/new.md", newContent: "# Title\ntext\n" },
      { kind: "update", path: "src/a.ts", newContent: "const a = 1;\nconst b = 3;\n", strategy: "exact" },
      { kind: "delete", path: "old.txt" },
      { kind: "move", path: "from.txt", newPath: "to dir/to.txt" },
    ]);
  });

  it("multi-hunk update with @@ anchors picks the occurrence after each anchor", async () => {
    const file = ["function a() {", "  return 1;", "}", "", "function b() {", "  return 1;", "}", "", "function c() {", "  return 1;", "}", ""].join("\n");
    const ops = await planOk(
      patch("*** Update File: f.js", "@@ function b() {", "-  return 1;", "+  return 2;", "@@ function c() {", "-  return 1;", "+  return 3;"),
      { "f.js": file },
    );
    assert.equal(ops[0]!.newContent, file.replace("b() {\n  return 1;", "b() {\n  return 2;").replace("c() {\n  return 1;", "c() {\n  return 3;"));
  });

  it("an ambiguous hunk without an anchor is an error, not a guess", async () => {
    const plan = await planV4APatch(patch("*** Update File: f", "@@", "-x", "+y"), memoryFs({ f: "x\nx\n" }).io);
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.error, /matches 2 places .*lines 1, 2/);
  });

  it("hunks are located with fuzzy strategies and report which", async () => {
    const ops = await planOk(patch("*** Update File: p.py", "@@", " def f():", "-  return  1", "+  return 2"), {
      "p.py": "def f():\n    return 1\n",
    });
    assert.equal(ops[0]!.newContent, "def f():\n    return 2\n");
    assert.equal(ops[0]!.strategy, "whitespace-normalised");
  });

  it("update with Move to writes the new content to the new path", async () => {
    const ops = await planOk(patch("*** Update File: a.txt", "*** Move to: b.txt", "@@", "-one", "+two"), { "a.txt": "one\n" });
    assert.deepEqual(ops, [{ kind: "update", path: "a.txt", newPath: "b.txt", newContent: "two\n", strategy: "exact" }]);
  });

  it("pure insertion after an anchor, and at the end of the file", async () => {
    const ops = await planOk(patch("*** Update File: l", "@@ b", "+b2", "*** Update File: m", "@@", "+tail"), { l: "a\nb\nc\n", m: "x\n" });
    assert.equal(ops[0]!.newContent, "a\nb\nb2\nc\n");
    assert.equal(ops[1]!.newContent, "x\ntail\n");
  });

  it("End of File pins the hunk to the end", async () => {
    const ops = await planOk(patch("*** Update File: e", "@@", " }", "+// end", "*** End of File"), { e: "if (a) {\n}\nif (b) {\n}\n" });
    assert.equal(ops[0]!.newContent, "if (a) {\n}\nif (b) {\n}\n// end\n");
  });

  it("CRLF files stay CRLF", async () => {
    const ops = await planOk(patch("*** Update File: w.txt", "@@", " a", "-b", "+B"), { "w.txt": "a\r\nb\r\nc\r\n" });
    assert.equal(ops[0]!.newContent, "a\r\nB\r\nc\r\n");
  });

  it("a failing hunk in the 2nd file fails the whole plan (nothing to apply)", async () => {
    const plan = await planV4APatch(
      patch("*** Update File: one.txt", "@@", "-alpha", "+ALPHA", "*** Update File: two.txt", "@@", "-not there at all", "+x"),
      memoryFs({ "one.txt": "alpha\n", "two.txt": "beta\ngamma\n" }).io,
    );
    assert.equal(plan.ok, false);
    if (plan.ok) return;
    assert.match(plan.error, /nothing was changed/);
    assert.match(plan.error, /two\.txt, hunk 1 \(patch line 7\): its context and "-" lines were not found/);
    assert.doesNotMatch(plan.error, /one\.txt/);
  });

  it("every problem is listed, and existence rules are enforced", async () => {
    const plan = await planV4APatch(
      patch("*** Add File: exists.txt", "+x", "*** Delete File: missing.txt", "*** Update File: gone.txt", "@@", "-a", "+b", "*** Move File: m.txt -> exists2.txt"),
      memoryFs({ "exists.txt": "", "m.txt": "m", "exists2.txt": "" }).io,
    );
    assert.equal(plan.ok, false);
    if (plan.ok) return;
    assert.match(plan.error, /Add File exists\.txt \(patch line 2\): the file already exists/);
    assert.match(plan.error, /Delete File missing\.txt \(patch line 4\): the file does not exist/);
    assert.match(plan.error, /Update File gone\.txt \(patch line 5\): the file does not exist/);
    assert.match(plan.error, /Move File exists2\.txt \(patch line 9\): the destination already exists/);
  });

  it("two operations on one path conflict", async () => {
    const plan = await planV4APatch(patch("*** Delete File: a.txt", "*** Update File: ./a.txt", "@@", "-x", "+y"), memoryFs({ "a.txt": "x\n" }).io);
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.error, /Conflicting operations: .*a\.txt is touched at patch lines 2 and 3/);
  });

  it("a read failure is reported, not thrown", async () => {
    const plan = await planV4APatch(patch("*** Delete File: x"), { read: async () => Promise.reject(new Error("EACCES: permission denied")) });
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.error, /cannot read it: EACCES/);
  });

  it("a malformed patch is reported with its line and nothing is read", async () => {
    const fs = memoryFs({});
    const plan = await planV4APatch(patch("*** Frobnicate: x"), fs.io);
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.error, /^Invalid patch, line 2: unknown header/);
    assert.deepEqual(fs.reads, []);
  });

  it("a hunk that is already applied says so", async () => {
    const plan = await planV4APatch(patch("*** Update File: f", "@@", " a", "-b", "+B"), memoryFs({ f: "a\nB\nc\n" }).io);
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.error, /looks already applied/);
  });

  it("a missing @@ anchor names the hunk", async () => {
    const plan = await planV4APatch(patch("*** Update File: f", "@@ class Nope", "-a", "+b"), memoryFs({ f: "a\n" }).io);
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.error, /hunk 1 \(patch line 3\): the "@@ class Nope" line was not found/);
  });
});
