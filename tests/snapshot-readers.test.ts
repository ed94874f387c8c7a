// A baseline's reads shared out between the blob worker and the list workers (blobWorker.ts,
// listWorker.ts), and its listing streamed in chunks: the list workers' reads keep the store's
// rules (a file swapped for a link, another inode or a FIFO is not read), a streamed listing
// names what a whole one does, and a baseline big enough to use every reader records each file
// (a directory of more files than one read request takes included).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile, lstat, rename } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { isCredentialPath } from "../src/guards/credentials.js";
import { listTree, readListedFiles, type ListedDir } from "../src/environment/listWorker.js";
import { readResultAt } from "../src/snapshots/blobWorker.js";
import { SnapshotStore } from "../src/snapshots/store.js";

const policy = { ignoreNames: [".git"], excludePath: (rel: string) => isCredentialPath(rel) };
const lots = { maxSnapshots: 1000, maxAgeMs: 1e12, maxBytes: 1e12 };

let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-readers-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

test("a list worker's read reads only the regular file listed", async () => {
  const dir = path.join(tmp, "hostile");
  await mkdir(dir);
  for (const n of ["plain", "swapped", "linked", "fifo", "gone"]) await writeFile(path.join(dir, n), `content of ${n}\n`);
  const listed = new Map<string, { ino: number; dev: number; size: number }>();
  for (const n of ["plain", "swapped", "linked", "fifo", "gone"]) {
    const st = await lstat(path.join(dir, n));
    listed.set(n, { ino: st.ino, dev: st.dev, size: st.size });
  }
  // After the listing: another inode under one name, a link under another (to a readable file), a FIFO, a removal.
  await writeFile(path.join(dir, "other"), "content of swapped\n");
  await rename(path.join(dir, "other"), path.join(dir, "swapped"));
  await rm(path.join(dir, "linked"));
  await symlink(path.join(dir, "plain"), path.join(dir, "linked"));
  await rm(path.join(dir, "fifo"));
  execFileSync("mkfifo", [path.join(dir, "fifo")]);
  await rm(path.join(dir, "gone"));
  const names = [...listed.keys()];
  const stats = new Float64Array(names.flatMap((n) => [listed.get(n)!.ino, listed.get(n)!.dev, listed.get(n)!.size]));
  const { batch, data } = await readListedFiles(1, tmp, [{ rel: "hostile", names, stats }]);
  const results = names.map((_, k) => readResultAt(batch, k));
  assert.deepEqual(results.slice(1), ["changed-while-read", "changed-while-read", "changed-while-read", "gone"]);
  const plain = results[0] as [string, number, number, number];
  assert.equal(data.toString("utf8", 0, plain[1]), "content of plain\n");
  assert.equal(data.length, listed.get("plain")!.size + listed.get("swapped")!.size + listed.get("linked")!.size + listed.get("fifo")!.size + listed.get("gone")!.size);
});

test("a streamed listing names the directories and entries a whole one does", async () => {
  const dir = path.join(tmp, "tree");
  for (let d = 0; d < 30; d++) {
    await mkdir(path.join(dir, `d${d}`, "sub"), { recursive: true });
    for (let f = 0; f < 120; f++) await writeFile(path.join(dir, `d${d}`, f % 2 ? "sub" : "", `f${f}`), String(f));
  }
  const whole = await listTree(dir, "", [], { followStart: true, split: true });
  const chunks: ListedDir[][] = [];
  const streamed = await listTree(dir, "", [], { followStart: true, split: true, onDirs: (dirs) => void chunks.push(dirs) });
  assert.equal(streamed.dirs.length, 0);
  assert.ok(chunks.length > 2, `several chunks (got ${chunks.length})`);
  const byRel = (dirs: ListedDir[]) => new Map(dirs.map((d) => [d.rel, d.entries?.map((e) => `${e.name}:${e.kind}:${e.size}`).sort()]));
  assert.deepEqual(byRel(chunks.flat()), byRel(whole.dirs));
  // Parents before their children, within the chunks.
  const order = chunks.flat().map((d) => d.rel);
  for (const rel of order) if (rel.includes("/")) assert.ok(order.indexOf(rel.slice(0, rel.lastIndexOf("/"))) < order.indexOf(rel));
});

test("a baseline read by every reader records each file with its content (a large directory too)", async () => {
  const base = path.join(tmp, "big");
  const dir = path.join(base, "ws");
  const files = new Map<string, string>();
  for (let d = 0; d < 40; d++) {
    await mkdir(path.join(dir, `d${d}`), { recursive: true });
    // d0 is larger than one read request: cut in pieces, read by several readers.
    for (let f = 0; f < (d === 0 ? 2_500 : 150); f++) {
      const rel = `d${d}/f${f}.txt`;
      files.set(rel, `${rel} ${"x".repeat(f)}\n`);
      await writeFile(path.join(dir, rel), files.get(rel)!);
    }
  }
  const store = new SnapshotStore(dir, path.join(base, "store"), policy, lots);
  const id = await store.snapshot({ reason: "baseline" });
  const { files: recorded } = await store.manifest(id);
  assert.equal(recorded.size, files.size);
  for (const [rel, content] of files) {
    const entry = recorded.get(rel);
    assert.ok(entry, rel);
    assert.equal((await store.readBlob(entry.h)).toString("utf8"), content, rel);
  }
});

test("a listing keeps a literal U+FFFD name and a name that is not UTF-8 apart, and a known digest still answers without rows", async () => {
  const dir = path.join(tmp, "names");
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "a\uFFFDb.txt"), "literal\n");
  const latin1 = Buffer.concat([Buffer.from(dir + "/"), Buffer.from([0x72, 0xe9, 0x73, 0x75, 0x6d, 0xe9]), Buffer.from(".txt")]);
  await writeFile(latin1, "latin\n"); // A Buffer path: the name's bytes as they are.
  await writeFile(path.join(dir, "plain.txt"), "plain\n");
  const first = await listTree(dir, "", [], { followStart: true });
  const entries = first.dirs[0]!.entries!;
  assert.deepEqual(entries.filter((e) => e.name !== undefined).map((e) => e.name).sort(), ["a\uFFFDb.txt", "plain.txt"]);
  const raw = entries.find((e) => e.name === undefined)!;
  assert.deepEqual([...raw.raw!], [0x72, 0xe9, 0x73, 0x75, 0x6d, 0xe9, ...Buffer.from(".txt")], "the not-UTF-8 name comes back as its bytes");
  const again = await listTree(dir, "", [], { followStart: true, known: new Map([["", first.dirs[0]!.sig]]) });
  assert.equal(again.dirs[0]!.entries, undefined, "unchanged: no rows");
  await writeFile(path.join(dir, "a\uFFFDb.txt"), "literal, longer\n");
  const changed = await listTree(dir, "", [], { followStart: true, known: new Map([["", first.dirs[0]!.sig]]) });
  assert.ok(changed.dirs[0]!.entries, "a changed size changes the digest");
});
