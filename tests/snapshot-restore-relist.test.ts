// What a restore looks at before it rewrites (the state it records first, told what changed by a
// live watcher): every directory it will touch or remove, listed again in one round trip, never
// through a link; and the mtimes it leaves (libuv sets them to whole microseconds), which the
// stat cache must take as the recorded ones, or every restored file is read again at the next look.
import assert from "node:assert/strict";
import { mkdir, open, readFile, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, test } from "node:test";
import { sameMtime } from "../src/snapshots/format.js";
import { WorkspaceScan } from "../src/snapshots/workspaceScan.js";
import { snapshotCases } from "./helpers/snapshotCases.js";

const cases = snapshotCases("wb-relist-");

/** Counts the files a store's looks read from the workspace while `fn` runs (the scan's own reader, called through). */
async function filesReadDuring(fn: () => Promise<unknown>): Promise<number> {
  const proto = WorkspaceScan.prototype as unknown as { readSmall: (dirs: { files: unknown[] }[]) => Promise<unknown> };
  const original = proto.readSmall;
  let count = 0;
  proto.readSmall = function (this: unknown, dirs: { files: unknown[] }[]) {
    for (const d of dirs) count += d.files.length;
    return original.call(this, dirs);
  };
  try {
    await fn();
  } finally {
    proto.readSmall = original;
  }
  return count;
}

describe("sameMtime (pure)", () => {
  test("the recorded mtime and what a restore sets through libuv are the same; a millisecond apart is not", async () => {
    assert.ok(sameMtime(1796233217205.9517, 1796233217205.9517));
    assert.ok(sameMtime(1796233217205.9517, 1796233217205.951), "truncated to the microsecond");
    assert.ok(sameMtime(1796233217205.951, 1796233217205.95), "and one more lost to the seconds-as-double");
    assert.ok(!sameMtime(1796233217205.9517, 1796233217204.9517));
    assert.ok(!sameMtime(1796233217205.9517, 1796233217205.9417), "10 µs apart is a change");
    // What the file system gives back for real: 200 mtimes with nanoseconds, set again as a restore sets them.
    const file = path.join(cases.tmp(), "mtime-probe");
    await writeFile(file, "x");
    let exact = 0;
    for (let i = 0; i < 200; i++) {
      const t = Date.now() - i * 1_234.567891 + i / 7;
      await utimes(file, t / 1000, t / 1000);
      const recorded = (await stat(file)).mtimeMs;
      const fh = await open(file, "r+");
      try {
        await fh.utimes(recorded / 1000, recorded / 1000);
      } finally {
        await fh.close();
      }
      const restored = (await stat(file)).mtimeMs;
      if (restored === recorded) exact++;
      assert.ok(sameMtime(recorded, restored), `${recorded} set again reads ${restored}`);
    }
    assert.ok(exact < 200, "some restored mtimes differ from the recorded ones (else this test proves nothing)");
  });
});

describe("the state a restore records first", () => {
  test("a look after a restore reads none of the files it wrote (every one of them read again before sameMtime)", async () => {
    const { dir, store } = await cases.fresh();
    for (let d = 0; d < 4; d++) {
      await mkdir(path.join(dir, `d${d}`), { recursive: true });
      for (let f = 0; f < 10; f++) await writeFile(path.join(dir, `d${d}`, `f${f}.txt`), `first ${d}/${f}\n`);
    }
    const first = await store.snapshot();
    for (let d = 0; d < 4; d++) for (let f = 0; f < 10; f++) await writeFile(path.join(dir, `d${d}`, `f${f}.txt`), `second ${d}/${f}\n`);
    const second = await store.snapshot();
    await store.restore(first, { changed: [] });
    assert.equal(await readFile(path.join(dir, "d2", "f3.txt"), "utf8"), "first 2/3\n");
    // The next restore lists every directory it rewrites again: the 40 files there are the ones just restored.
    const read = await filesReadDuring(() => store.restore(second, { changed: [] }));
    assert.equal(read, 0, "the restored files match the stat cache");
    assert.equal(await readFile(path.join(dir, "d2", "f3.txt"), "utf8"), "second 2/3\n");
    assert.equal(await filesReadDuring(() => store.snapshot()), 0, "a full look after it reads nothing either");
  });

  test("the directories a restore rewrote are held sealed as the stored trees they are (hash and bytes): nothing to make and hash again", async () => {
    const { dir, store } = await cases.fresh();
    await mkdir(path.join(dir, "d"), { recursive: true });
    await writeFile(path.join(dir, "d", "a.txt"), "first a\n");
    await writeFile(path.join(dir, "d", "b.txt"), "first bb\n");
    const first = await store.snapshot();
    await writeFile(path.join(dir, "d", "a.txt"), "second, longer\n");
    await store.snapshot();
    await store.restore(first, { changed: [] });
    const working = (store as unknown as { working: Map<string, { hash?: string; bytes?: number; map?: unknown }> }).working;
    const d = working.get("d")!;
    assert.equal(d.map, undefined, "packed");
    assert.equal(d.bytes, "first a\n".length + "first bb\n".length, "its bytes are known");
    const again = await store.snapshot();
    assert.equal(again, first, "a look finds the restored snapshot as it is");
  });

  test("every directory the restore touches is listed in one round: edits, a directory gone, one swapped for a link, one new below", async () => {
    const { dir, store } = await cases.fresh();
    const outside = path.join(path.dirname(dir), "outside");
    await mkdir(outside, { recursive: true });
    await writeFile(path.join(outside, "a.txt"), "OUTSIDE_CONTENT\n");
    for (const d of ["x", "y", "z", "w/deep"]) {
      await mkdir(path.join(dir, d), { recursive: true });
      await writeFile(path.join(dir, d, "a.txt"), `first ${d}\n`);
    }
    const first = await store.snapshot();
    for (const d of ["x", "y", "z", "w/deep"]) await writeFile(path.join(dir, d, "a.txt"), `second ${d}\n`);
    await store.snapshot();
    // Unreported (a watcher that missed them): an edit in two directories, one removed, one swapped
    // for a link to an outside tree with the same names, and a new directory below another.
    await writeFile(path.join(dir, "x", "a.txt"), "x unreported\n");
    await writeFile(path.join(dir, "w", "deep", "a.txt"), "deep unreported\n");
    await rm(path.join(dir, "y"), { recursive: true });
    await rm(path.join(dir, "z"), { recursive: true });
    await symlink(outside, path.join(dir, "z"));
    await mkdir(path.join(dir, "x", "new"), { recursive: true });
    await writeFile(path.join(dir, "x", "new", "b.txt"), "new unreported\n");
    const { previous } = await store.restore(first, { changed: [] });
    const before = (await store.manifest(previous)).files;
    const blob = async (rel: string) => (await store.readBlob(before.get(rel)!.h)).toString();
    assert.equal(await blob("x/a.txt"), "x unreported\n");
    assert.equal(await blob("w/deep/a.txt"), "deep unreported\n");
    assert.equal(await blob("x/new/b.txt"), "new unreported\n", "the new directory was looked at");
    assert.ok(!before.has("y/a.txt"), "the removed directory is recorded as gone");
    assert.ok(!before.has("z/a.txt"), "nothing was listed through the link");
    assert.ok(before.get("z")?.l, "the link is recorded as a link");
    for (const [rel, f] of before) if (!f.l) assert.notEqual(await blob(rel), "OUTSIDE_CONTENT\n", `${rel} is not the outside file`);
    // And the restore itself: the snapshot's files are back, the outside tree untouched.
    for (const d of ["x", "y", "z", "w/deep"]) assert.equal(await readFile(path.join(dir, d, "a.txt"), "utf8"), `first ${d}\n`);
    assert.equal((await stat(path.join(dir, "z"))).isDirectory(), true);
    assert.equal(await readFile(path.join(outside, "a.txt"), "utf8"), "OUTSIDE_CONTENT\n");
  });
});
