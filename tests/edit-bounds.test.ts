// Whole-file edits have a size cap (src/guards/limits.ts): a file too large to load is refused,
// and an edit whose result would pass the cap is refused before the new text is built or written.
import assert from "node:assert/strict";
import { mkdtemp, mkdir, open, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { LIMITS } from "../src/guards/limits.js";
import { createPatchTool } from "../tools/patchTool.js";

const THREAD = "caps";
let root = "";
let ws = "";
const config = { configurable: { thread_id: THREAD } };
// 200,000 "a" lines: replace_all of "a" with 100 characters would grow the file to ~20 MB.
const MANY = "a\n".repeat(200_000);

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-caps-"));
  ws = path.join(root, THREAD);
  await mkdir(ws, { recursive: true });
  const fh = await open(path.join(ws, "huge.txt"), "w");
  const piece = Buffer.from("line of text\n".repeat(80_000));
  while ((await fh.stat()).size <= LIMITS.editMaxBytes) await fh.write(piece);
  await fh.close();
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("WorkbenchBackend.edit", () => {
  it("refuses a replace_all that would grow the file past the cap, and writes nothing", { timeout: 20_000 }, async () => {
    await writeFile(path.join(ws, "many.txt"), MANY);
    const backend = new WorkbenchBackend({ rootDir: root, threadId: THREAD });
    const res = await backend.edit("/many.txt", "a", "b".repeat(100), true);
    assert.match(res.error ?? "", /would make "\/many\.txt" 20200000 characters long \(limit 16 MiB\); nothing was written/);
    assert.equal(await readFile(path.join(ws, "many.txt"), "utf8"), MANY);
    const small = await backend.edit("/many.txt", "a", "bb", true);
    assert.equal(small.error, undefined, "growth within the cap is fine");
    assert.equal(small.occurrences, 200_000);
  });

  it("refuses to load a file over the cap", { timeout: 20_000 }, async () => {
    const backend = new WorkbenchBackend({ rootDir: root, threadId: THREAD });
    const res = await backend.edit("/huge.txt", "line of text", "x");
    assert.match(res.error ?? "", /too large to edit in one piece \(limit 16 MiB\)/);
  });
});

describe("patch", () => {
  const call = async (args: Record<string, unknown>) => JSON.parse(String(await createPatchTool({ rootDir: root }).invoke(args as never, config)));

  it("replace mode: a replace_all past the cap is refused before the text is built", { timeout: 20_000 }, async () => {
    await writeFile(path.join(ws, "many2.txt"), MANY);
    const r = await call({ path: "many2.txt", old_string: "a", new_string: "b".repeat(100), replace_all: true });
    assert.match(r.error ?? "", /would make the file more than \d+ characters long; nothing was written/);
    assert.equal((await stat(path.join(ws, "many2.txt"))).size, MANY.length);
  });

  it("replace and V4A modes refuse a file over the cap", { timeout: 20_000 }, async () => {
    const r = await call({ path: "huge.txt", old_string: "line of text", new_string: "x" });
    assert.match(r.error ?? "", /too large to edit in one piece/);
    const v4a = await call({ mode: "patch", patch: "*** Begin Patch\n*** Update File: huge.txt\n@@\n-line of text\n+x\n*** End Patch" });
    assert.match(v4a.error ?? "", /too large to edit in one piece/);
  });

  it("V4A: an added file past the cap is refused and nothing is written", { timeout: 20_000 }, async () => {
    const lines = Array(LIMITS.editMaxBytes / 64 + 10).fill(`+${"z".repeat(63)}`).join("\n");
    const r = await call({ mode: "patch", patch: `*** Begin Patch\n*** Add File: added.txt\n${lines}\n*** End Patch` });
    assert.match(r.error ?? "", /would make "added\.txt" \d+ characters long/);
    await assert.rejects(stat(path.join(ws, "added.txt")));
  });
});
