// The restore journal on its own: the file round trip, leftovers, and the 0.1.x staged-swap
// journals (undone while the workspace is intact, finished once it was swapped out).
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { RestoreJournalFile, settleLegacySwap } from "../src/snapshots/restoreJournal.js";

let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-journal-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("RestoreJournalFile", () => {
  test("none, then written, read back, cleared; an unreadable journal counts as none", async () => {
    const store = path.join(tmp, "s1");
    await mkdir(store);
    const file = new RestoreJournalFile(store);
    assert.equal(await file.read(), undefined);
    await file.write({ v: 2, target: "abc", paths: ["src/a.ts"] });
    assert.deepEqual(await file.read(), { v: 2, target: "abc", paths: ["src/a.ts"] });
    await file.clear();
    assert.equal(await file.read(), undefined);
    await file.clear(); // idempotent
    await writeFile(file.path, "{ torn");
    assert.equal(await file.read(), undefined);
  });

  test("leftovers of interrupted restores go; nothing else in the store does", async () => {
    const store = path.join(tmp, "s2");
    for (const d of ["staging-1a2b", "trash-ff00", "restore-tmp-0c", "packs", "trees", "staging-notours"]) await mkdir(path.join(store, d), { recursive: true });
    await writeFile(path.join(store, "HEAD.json"), "{}");
    await new RestoreJournalFile(store).removeLeftovers();
    assert.deepEqual((await readdir(store)).sort(), ["HEAD.json", "packs", "staging-notours", "trees"]);
    await new RestoreJournalFile(path.join(tmp, "missing")).removeLeftovers(); // no store yet: nothing to do
  });
});

describe("settleLegacySwap (0.1.x journals)", () => {
  test("staging beside an intact workspace: undone, the moved directories go back, the head stays", async () => {
    const store = path.join(tmp, "s3");
    const ws = path.join(tmp, "ws3");
    const staging = path.join(store, "staging-1");
    await mkdir(path.join(staging, "node_modules", "pkg"), { recursive: true });
    await writeFile(path.join(staging, "node_modules", "pkg", "index.js"), "moved\n");
    await mkdir(ws, { recursive: true });
    await writeFile(path.join(ws, "a.txt"), "workspace\n");
    const file = new RestoreJournalFile(store);
    await file.write({ target: "t1", staging, moved: ["node_modules"] });
    let finished: string | undefined;
    await settleLegacySwap((await file.read())!, file, ws, async (t) => void (finished = t));
    assert.equal(finished, undefined, "not finished: the workspace was never swapped");
    assert.equal(await readFile(path.join(ws, "node_modules", "pkg", "index.js"), "utf8"), "moved\n");
    assert.equal(await readFile(path.join(ws, "a.txt"), "utf8"), "workspace\n");
    assert.equal(await file.read(), undefined, "the journal is cleared");
  });

  test("the workspace swapped out: staging becomes the workspace and the head moves to the target", async () => {
    const store = path.join(tmp, "s4");
    const ws = path.join(tmp, "ws4");
    const staging = path.join(store, "staging-2");
    await mkdir(staging, { recursive: true });
    await writeFile(path.join(staging, "a.txt"), "restored\n");
    const file = new RestoreJournalFile(store);
    await file.write({ target: "t2", staging, moved: [] });
    let finished: string | undefined;
    await settleLegacySwap((await file.read())!, file, ws, async (t) => void (finished = t));
    assert.equal(finished, "t2");
    assert.equal(await readFile(path.join(ws, "a.txt"), "utf8"), "restored\n");
    assert.equal(await file.read(), undefined);
  });
});
