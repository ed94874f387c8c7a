import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { resolveFileToolOptions, type FileToolOptions } from "../tools/fileToolSupport.js";
import { createPatchTool, patchCore } from "../tools/patchTool.js";

let root: string;
let ws: string;
const cfg = { configurable: { thread_id: "t1" } };

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-patch-"));
  ws = path.join(root, "t1");
});
beforeEach(async () => {
  await rm(ws, { recursive: true, force: true });
  await mkdir(ws, { recursive: true });
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function patch(args: Record<string, unknown>, options: FileToolOptions = {}): Promise<Record<string, any>> {
  const { payload } = await patchCore(args as never, cfg, resolveFileToolOptions({ rootDir: root, ...options }));
  return payload;
}
const file = (p: string) => readFile(path.join(ws, p), "utf8");

const source = `function add(a, b) {\n  return a + b;\n}\n\nfunction sub(a, b) {\n  return a - b;\n}\n`;

describe("patch replace mode", () => {
  it("exact match: writes, reports the strategy and a unified diff", async () => {
    await writeFile(path.join(ws, "m.js"), source);
    const r = await patch({ path: "m.js", old_string: "return a + b;", new_string: "return a + b + 0;" });
    assert.equal(r.match_strategy, "exact");
    assert.deepEqual(r.lines, [2]);
    assert.match(r.diff, /^--- a\/m\.js\n\+\+\+ b\/m\.js\n/);
    assert.ok(r.diff.includes("-  return a + b;\n+  return a + b + 0;"), r.diff);
    assert.equal(r.hint, undefined);
    assert.equal(await file("m.js"), source.replace("return a + b;", "return a + b + 0;"));
  });
  it("a fuzzy match is reported, never silent", async () => {
    await writeFile(path.join(ws, "m.js"), source);
    const r = await patch({ path: "m.js", old_string: "function sub(a, b) {\nreturn a - b;\n}", new_string: "function sub(a, b) {\n  return b - a;\n}" });
    assert.notEqual(r.match_strategy, "exact");
    assert.match(r.hint, /did not match exactly; the ".+" strategy matched at line 5/);
    assert.match(await file("m.js"), /return b - a;/);
  });
  it("several matches: an error with the locations; replace_all changes all", async () => {
    await writeFile(path.join(ws, "d.txt"), "x = 1\ny = 2\nx = 1\n");
    const r = await patch({ path: "d.txt", old_string: "x = 1", new_string: "x = 3" });
    assert.match(r.error, /matches 2 places .* at lines 1, 3/);
    assert.equal(await file("d.txt"), "x = 1\ny = 2\nx = 1\n");
    const all = await patch({ path: "d.txt", old_string: "x = 1", new_string: "x = 3", replace_all: true });
    assert.equal(all.matches, 2);
    assert.equal(await file("d.txt"), "x = 3\ny = 2\nx = 3\n");
  });
  it("no match: did-you-mean candidates (redacted), already-applied detection", async () => {
    await writeFile(path.join(ws, "c.py"), `API_TOKEN = "tok-12345678"\ndef main():\n    print("hello world")\n`);
    const r = await patch({ path: "c.py", old_string: 'def main():\n    print("hello wrld!!")\n    return 0', new_string: "pass" });
    assert.ok(r.error);
    assert.ok(!JSON.stringify(r).includes("tok-12345678"), "candidates never reveal secrets");
    const applied = await patch({ path: "c.py", old_string: 'print("bye")', new_string: 'print("hello world")' });
    assert.equal(applied.already_applied, true);
  });
  it("guards: missing fields, new_string with markers, gutter in old_string, missing file, escapes", async () => {
    await writeFile(path.join(ws, "s.env.txt"), "TOKEN=real\nDEBUG=0\n");
    assert.match((await patch({ old_string: "a", new_string: "b" })).error, /Missing "path"/);
    assert.match((await patch({ path: "s.env.txt", new_string: "b" })).error, /Missing "old_string"/);
    assert.match((await patch({ path: "s.env.txt", old_string: "DEBUG=0", new_string: "TOKEN=«redacted»" })).error, /marker/);
    assert.match((await patch({ path: "s.env.txt", old_string: "2|DEBUG=0", new_string: "DEBUG=1" })).error, /gutter/);
    assert.match((await patch({ path: "nope.txt", old_string: "a", new_string: "b" })).error, /File not found.*write_file/);
    assert.match((await patch({ path: "../x.txt", old_string: "a", new_string: "b" })).error, /climbs out/);
    assert.match((await patch({ mode: "other" })).error, /"mode" must be/);
    assert.equal(await file("s.env.txt"), "TOKEN=real\nDEBUG=0\n");
  });
  it("the diff of a file with a secret is redacted", async () => {
    await writeFile(path.join(ws, "cfg.ts"), `const key = "sk-${"a1B2".repeat(10)}";\nconst debug = false;\n`);
    const r = await patch({ path: "cfg.ts", old_string: "const debug = false;", new_string: "const debug = true;" });
    assert.ok(!r.diff.includes("a1B2a1B2"));
    assert.match(await file("cfg.ts"), /sk-a1B2/);
  });
  it("keeps CRLF line endings", async () => {
    await writeFile(path.join(ws, "w.txt"), "one\r\ntwo\r\n");
    await patch({ path: "w.txt", old_string: "two", new_string: "2\n2b" });
    assert.equal(await file("w.txt"), "one\r\n2\r\n2b\r\n");
  });
});

const v4a = (body: string) => `*** Begin Patch\n${body}\n*** End Patch`;

describe("patch V4A mode", () => {
  it("applies update, add, delete and move together and returns the diffs", async () => {
    await writeFile(path.join(ws, "a.txt"), "alpha\nbeta\ngamma\n");
    await writeFile(path.join(ws, "old.txt"), "bye\n");
    await writeFile(path.join(ws, "mv.txt"), "moving\n");
    const r = await patch({
      mode: "patch",
      patch: v4a("*** Update File: a.txt\n@@\n alpha\n-beta\n+BETA\n gamma\n*** Add File: new/b.txt\n+fresh\n*** Delete File: old.txt\n*** Move File: mv.txt -> moved/mv.txt"),
    });
    assert.equal(r.error, undefined, r.error);
    assert.deepEqual(r.applied.map((a: any) => a.op), ["update", "add", "delete", "move"]);
    assert.equal(await file("a.txt"), "alpha\nBETA\ngamma\n");
    assert.equal(await file("new/b.txt"), "fresh\n");
    await assert.rejects(stat(path.join(ws, "old.txt")));
    assert.equal(await file("moved/mv.txt"), "moving\n");
    assert.match(r.diff, /\+\+\+ b\/a\.txt/);
  });
  it("all or nothing: one bad hunk and no file is touched", async () => {
    await writeFile(path.join(ws, "a.txt"), "alpha\nbeta\n");
    await writeFile(path.join(ws, "b.txt"), "one\ntwo\n");
    const r = await patch({
      mode: "patch",
      patch: v4a("*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Update File: b.txt\n@@\n-does not exist\n+x\n*** Add File: c.txt\n+c"),
    });
    assert.match(r.error, /nothing was changed/i);
    assert.equal(await file("a.txt"), "alpha\nbeta\n");
    assert.equal(await file("b.txt"), "one\ntwo\n");
    await assert.rejects(stat(path.join(ws, "c.txt")));
  });
  it("a failure while applying restores the files already changed", async () => {
    await writeFile(path.join(ws, "a.txt"), "alpha\n");
    await writeFile(path.join(ws, "mv.txt"), "moving\n");
    await writeFile(path.join(ws, "blocker"), "a file where a directory is needed\n");
    const r = await patch({
      mode: "patch",
      patch: v4a("*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Add File: fresh.txt\n+new\n*** Move File: mv.txt -> blocker/mv.txt"),
    });
    assert.match(r.error, /Applying the patch failed and the files already changed were restored/);
    assert.equal(await file("a.txt"), "alpha\n");
    await assert.rejects(stat(path.join(ws, "fresh.txt")));
    assert.equal(await file("mv.txt"), "moving\n");
  });
  it("ambiguous and missing anchors are errors", async () => {
    await writeFile(path.join(ws, "r.txt"), "x\nsame\nx\nsame\n");
    const ambiguous = await patch({ mode: "patch", patch: v4a("*** Update File: r.txt\n@@\n-same\n+other") });
    assert.match(ambiguous.error, /matches 2 places/);
    const missing = await patch({ mode: "patch", patch: v4a("*** Update File: r.txt\n@@ no such anchor\n-same\n+other") });
    assert.match(missing.error, /not found/);
    assert.equal(await file("r.txt"), "x\nsame\nx\nsame\n");
  });
  it("path guards apply to every file of the patch", async () => {
    await writeFile(path.join(ws, "a.txt"), "a\n");
    const r = await patch({ mode: "patch", patch: v4a("*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: ../escape.txt\n+x") });
    assert.match(r.error, /climbs out/);
    assert.equal(await file("a.txt"), "a\n");
    await assert.rejects(stat(path.join(root, "escape.txt")));
    const marker = await patch({ mode: "patch", patch: v4a("*** Update File: a.txt\n@@\n-a\n+KEY=«redacted»") });
    assert.match(marker.error, /marker/);
    assert.match((await patch({ mode: "patch", patch: "not a patch" })).error, /Invalid patch/);
    assert.match((await patch({ mode: "patch" })).error, /Missing "patch"/);
  });
  it("a patch to a write-denied path in open mode is refused before anything is written", async () => {
    const home = path.join(root, "home");
    await mkdir(path.join(home, ".ssh"), { recursive: true });
    await writeFile(path.join(ws, "a.txt"), "a\n");
    const r = await patch(
      { mode: "patch", patch: v4a(`*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: ${path.join(home, ".ssh", "authorized_keys")}\n+ssh-ed25519 AAA`) },
      { confine: false, homeDir: home },
    );
    assert.match(r.error, /protected location/);
    assert.equal(await file("a.txt"), "a\n");
  });
});

describe("patch tool object", () => {
  it("describes both modes", () => {
    const t = createPatchTool({ rootDir: root });
    assert.equal(t.name, "patch");
    assert.match(t.description, /V4A/);
    assert.match(t.description, /match_strategy/);
  });
});
