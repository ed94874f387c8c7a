// The snapshot store on its own: deduplication, incremental snapshots from named paths,
// retention (count, bytes) with unreferenced objects swept, credential files and ignored folders
// left out, crash safety of restores (a SIGKILL at any point leaves the old or the restored
// workspace once recovered, never a mix), and the diff between snapshots.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, readlink, rm, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { brotliDecompressSync } from "node:zlib";
import { TimeTravel } from "../middleware/timeTravel.js";
import { diffSnapshots, SnapshotStore } from "../src/snapshots/index.js";
import { ObjectStore } from "../src/snapshots/objects.js";
import { SnapshotRecords } from "../src/snapshots/snapshotRecords.js";
import { chunkDirMap } from "../src/snapshots/store.js";
import { StoreFiles } from "../src/snapshots/storeFiles.js";
import { WorkingIndex } from "../src/snapshots/workingIndex.js";
import { WorkspaceScan } from "../src/snapshots/workspaceScan.js";
import { chooseByCountAndAge } from "../src/snapshots/retention.js";
import { Workspace } from "../src/workspace.js";
import { contents } from "./helpers/files.js";
import { lots, policy, snapshotCases } from "./helpers/snapshotCases.js";

const child = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "snapshot-restore-child.ts");

const cases = snapshotCases("wb-snap-");
const fresh = cases.fresh;

async function countFiles(d: string): Promise<number> {
  let count = 0;
  for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
    if (e.isDirectory()) count += await countFiles(path.join(d, e.name));
    else count++;
  }
  return count;
}

/** The entries of the store's packs (format.ts): hash, kind (0 raw, 1 brotli), body. */
async function packEntries(storeDir: string): Promise<{ h: string; kind: number; body: Buffer }[]> {
  const out = [];
  for (const name of await readdir(path.join(storeDir, "packs")).catch(() => [] as string[])) {
    if (!name.endsWith(".pack")) continue;
    const buf = await readFile(path.join(storeDir, "packs", name));
    for (let off = 0; off + 48 <= buf.length; ) {
      const len = buf.readUInt32BE(off + 8);
      out.push({ h: buf.toString("hex", off + 12, off + 44), kind: buf[off + 4]!, body: buf.subarray(off + 48, off + 48 + len) });
      off += 48 + len;
    }
  }
  return out;
}

/** Blobs stored raw (`blobs/`, pack entries of kind 0) or compressed (`zblobs/`, kind 1). */
async function countStored(storeDir: string, kind: "blobs" | "zblobs"): Promise<number> {
  const packed = (await packEntries(storeDir)).filter((e) => e.kind === (kind === "zblobs" ? 1 : 0)).length;
  return (await countFiles(path.join(storeDir, kind))) + packed;
}

/** Blobs stored any way: loose raw (`blobs/`) and compressed (`zblobs/`), and packed. */
async function countBlobs(storeDir: string): Promise<number> {
  return (await countStored(storeDir, "blobs")) + (await countStored(storeDir, "zblobs"));
}

/** The stored size of blob `hash` stored as `kind`, loose or packed (throws when it is not stored so). */
async function storedSize(storeDir: string, kind: "blobs" | "zblobs", hash: string): Promise<number> {
  const loose = await stat(blobFile(storeDir, kind, hash)).catch(() => undefined);
  if (loose) return loose.size;
  const entry = (await packEntries(storeDir)).find((e) => e.h === hash && e.kind === (kind === "zblobs" ? 1 : 0));
  if (!entry) throw new Error(`blob ${hash} is not stored in ${kind}`);
  return entry.body.length;
}

/** Bytes of the files under `d`. */
async function du(d: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
    if (e.isDirectory()) total += await du(path.join(d, e.name));
    else total += (await stat(path.join(d, e.name))).size;
  }
  return total;
}

/** Blob file `hash` of `kind` ("blobs" raw, "zblobs" compressed). */
const blobFile = (storeDir: string, kind: "blobs" | "zblobs", hash: string) => path.join(storeDir, kind, hash.slice(0, 2), hash.slice(2));
const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");

/** A generated text report (compressible, as logs and reports are), `bytes` long; version `v` edits two lines. */
function report(bytes: number, v: number): string {
  let out = `report version ${v}\n`;
  for (let i = 0; out.length < bytes; i++) out += `line ${String(i).padStart(6, "0")}: value ${i === 10 + v ? `edited in ${v}` : (i * 7919) % 10007} of a generated report\n`;
  return out.slice(0, bytes);
}

describe("snapshot store", () => {
  test("between snapshots the working set is packed: one buffer per directory (off the JavaScript heap), unpacked only where a snapshot reads", async () => {
    const { dir, store } = await fresh();
    for (const d of ["a", "b", "c"]) {
      await mkdir(path.join(dir, d), { recursive: true });
      for (let i = 0; i < 30; i++) await writeFile(path.join(dir, d, `f${i}.txt`), `${d} ${i}\n`);
    }
    const first = await store.snapshot();
    // The working set is private; its packing is what keeps a 100k-file workspace off the heap.
    const working = () => (store as unknown as { working: Map<string, { size: number; map?: unknown; packed?: unknown }> }).working;
    for (const [rel, d] of working()) assert.ok(d.map === undefined && Buffer.isBuffer(d.packed), `directory ${JSON.stringify(rel)} is packed`);
    assert.equal(working().get("b")!.size, 30, "its size is known while packed");
    await writeFile(path.join(dir, "b", "f7.txt"), "edited\n");
    const second = await store.snapshot({ paths: [path.join(dir, "b", "f7.txt")] });
    assert.notEqual(second, first);
    for (const [rel, d] of working()) assert.ok(d.map === undefined, `directory ${JSON.stringify(rel)} packed again after the snapshot`);
    const files = (await store.manifest(second)).files;
    assert.equal(files.size, 90);
    assert.equal(files.get("b/f7.txt")!.s, "edited\n".length, "the edit is in the snapshot");
    assert.equal(files.get("a/f7.txt")!.s, "a 7\n".length, "untouched directories keep their entries through packing");
    await store.restore(first);
    assert.equal(await readFile(path.join(dir, "b", "f7.txt"), "utf8"), "b 7\n", "a restore from packed directories is exact");
  });

  test("a full look holds each directory packed, its tree written, as soon as it is recorded: before any commit", async () => {
    const { dir, storeDir } = await fresh();
    for (const d of ["a", "a/b", "c"]) {
      await mkdir(path.join(dir, d), { recursive: true });
      for (let i = 0; i < 20; i++) await writeFile(path.join(dir, d, `f${i}.txt`), `${d} ${i}\n`);
    }
    const files = new StoreFiles();
    const records = new SnapshotRecords(storeDir, files);
    const index = new WorkingIndex(storeDir, records, files);
    const scan = new WorkspaceScan(dir, policy, { maxFileBytes: 1e9, maxSnapshotBytes: 1e12 }, new ObjectStore(storeDir), index);
    index.working = new Map();
    scan.resetBudget();
    await scan.scan();
    const working = index.working as unknown as Map<string, { map?: unknown; packed?: unknown; hash?: string; size: number }>;
    assert.deepEqual([...working.keys()].sort(), ["", "a", "a/b", "c"]);
    for (const [rel, d] of working) {
      assert.ok(d.map === undefined && Buffer.isBuffer(d.packed) && d.hash !== undefined, `directory ${JSON.stringify(rel)} is packed and hashed`);
      assert.ok((await stat(path.join(records.trees, d.hash!))).isFile(), `the tree of ${JSON.stringify(rel)} is stored`);
    }
    assert.equal(working.get("a/b")!.size, 20);
    assert.equal(await readdir(path.join(storeDir, "snaps")).catch(() => []).then((n) => n.length), 0, "no record was written");
  });

  test("unchanged files cost nothing; one edit adds one blob and one tree", async () => {
    const { dir, storeDir, store } = await fresh();
    for (let i = 0; i < 20; i++) await writeFile(path.join(dir, `f${i}.txt`), `file ${i}\n`);
    await writeFile(path.join(dir, "copy.txt"), "file 0\n");
    const a = await store.snapshot();
    assert.equal(await store.snapshot(), a, "nothing changed: same id");
    assert.equal(await countBlobs(storeDir), 20, "identical content is stored once");
    await writeFile(path.join(dir, "f3.txt"), "changed\n");
    const b = await store.snapshot({ paths: [path.join(dir, "f3.txt")] });
    assert.notEqual(b, a);
    assert.equal(await countBlobs(storeDir), 21, "one new blob");
    const objects = await readdir(path.join(storeDir, "trees"));
    assert.equal(objects.filter((n) => /^[0-9a-f]{64}$/.test(n)).length, 2, "one new tree (root dir)");
    assert.equal(objects.filter((n) => /^c[0-9a-f]{40}$/.test(n)).length, 2, "one directory-map chunk per record (a one-directory map is one chunk)");
    const diff = await diffSnapshots(store, a, b);
    assert.deepEqual(diff.files, [{ path: "f3.txt", change: "modified", binary: false, sizeBefore: 7, sizeAfter: 8 }]);
    assert.match(diff.diff, /-file 3\n\+changed/);
  });

  test("a background look names what changed (by ctime) from the time a command started beside it, in every record until told to stop; a restore says so", async () => {
    const { dir, store } = await fresh();
    await mkdir(path.join(dir, "old"), { recursive: true });
    await writeFile(path.join(dir, "old", "kept.txt"), "before the command\n");
    await writeFile(path.join(dir, "edited.txt"), "before\n");
    assert.equal(store.flagChangesFrom(Date.now()), false, "no look open: the caller must wait instead");
    await new Promise((r) => setTimeout(r, 60)); // Past the ctime slack.
    const at = Date.now();
    // What the command did before the look read the files.
    await writeFile(path.join(dir, "edited.txt"), "after\n");
    await writeFile(path.join(dir, "made.txt"), "made\n");
    await symlink("made.txt", path.join(dir, "link"));
    const look = store.snapshot({ background: true, reason: "baseline" });
    assert.equal(store.flagChangesFrom(at), true);
    const baseline = await look;
    await writeFile(path.join(dir, "later.txt"), "later\n");
    const queued = await store.snapshot({ paths: [path.join(dir, "later.txt")] });
    store.flagChangesFrom(undefined);
    await writeFile(path.join(dir, "last.txt"), "last\n");
    const exact = await store.snapshot();
    const info = new Map((await store.list()).map((x) => [x.id, x]));
    assert.deepEqual(info.get(baseline)!.changedWhileTaken, ["./", "edited.txt", "link", "made.txt"], "the root (entries came), the edit, the new file and link; not old/ or old/kept.txt");
    assert.equal(info.get(baseline)!.changedWhileTakenCount, 4);
    assert.deepEqual(info.get(queued)!.changedWhileTaken, ["./", "edited.txt", "later.txt", "link", "made.txt"], "a snapshot before the mark ends names them too, and what it read changed since");
    assert.equal(info.get(exact)!.changedWhileTaken, undefined, "after the mark ends, snapshots are exact again");
    const back = await store.restore(baseline);
    assert.deepEqual(back.changedWhileTaken, ["./", "edited.txt", "link", "made.txt"]);
    assert.equal((await store.restore(exact)).changedWhileTaken, undefined);
  });

  test("snapshots from named paths see writes, deletes and new directories", async () => {
    const { dir, store } = await fresh();
    await writeFile(path.join(dir, "keep.txt"), "k\n");
    await writeFile(path.join(dir, "gone.txt"), "g\n");
    const a = await store.snapshot();
    await mkdir(path.join(dir, "sub", "deeper"), { recursive: true });
    await writeFile(path.join(dir, "sub", "deeper", "new.txt"), "n\n");
    await rm(path.join(dir, "gone.txt"));
    const b = await store.snapshot({ paths: [path.join(dir, "sub", "deeper", "new.txt"), path.join(dir, "gone.txt")] });
    const m = await store.manifest(b);
    assert.deepEqual([...m.files.keys()].sort(), ["keep.txt", "sub/deeper/new.txt"]);
    assert.deepEqual(m.dirs.sort(), ["", "sub", "sub/deeper"]);
    // The same state found by a full scan has the same id.
    const c = await new SnapshotStore(dir, path.join(path.dirname(dir), "store2"), policy, lots).snapshot();
    assert.equal(c, b, "incremental and full snapshots agree");
    await store.restore(a);
    assert.deepEqual(await contents(dir), { "gone.txt": Buffer.from("g\n").toString("base64"), "keep.txt": Buffer.from("k\n").toString("base64") });
  });

  test("a new process starts from the working-set cache and still sees every change made meanwhile", async () => {
    const { dir, storeDir, store } = await fresh();
    for (const d of ["a", "b", "c"]) {
      await mkdir(path.join(dir, d), { recursive: true });
      for (let i = 0; i < 30; i++) await writeFile(path.join(dir, d, `f${i}.txt`), `${d} ${i}\n`);
    }
    await store.snapshot(); // a full look: the cache is written
    await writeFile(path.join(dir, "b", "f1.txt"), "changed by a tool\n");
    await store.snapshot({ paths: [path.join(dir, "b", "f1.txt")] });
    // While no process runs: a hand edit (same size, new mtime), a new file, a removed one.
    await writeFile(path.join(dir, "c", "f2.txt"), "C 2\n");
    await writeFile(path.join(dir, "a", "new.txt"), "new\n");
    await rm(path.join(dir, "a", "f0.txt"));
    const next = new SnapshotStore(dir, storeDir, policy, lots);
    await next.warm();
    const id = await next.snapshot({ paths: [path.join(dir, "b", "f1.txt")] }); // a cold start looks at everything
    const files = (await next.manifest(id)).files;
    assert.equal((await next.readBlob(files.get("c/f2.txt")!.h)).toString(), "C 2\n", "a same-size edit made while down is seen");
    assert.ok(files.has("a/new.txt") && !files.has("a/f0.txt"), "created and removed files are seen");
    assert.equal((await next.readBlob(files.get("b/f1.txt")!.h)).toString(), "changed by a tool\n");
    assert.equal(files.size, 90);
    const fromScratch = await new SnapshotStore(dir, path.join(path.dirname(dir), "store-fresh"), policy, lots).snapshot();
    assert.equal(id, fromScratch, "the same snapshot as a store that never had a cache");
  });

  test("a restore told what changed still records every entry it overwrites or removes, reported or not", async () => {
    const { dir, store } = await fresh();
    await mkdir(path.join(dir, "src"), { recursive: true });
    await mkdir(path.join(dir, "other"), { recursive: true });
    await writeFile(path.join(dir, "src", "a.txt"), "one\n");
    await writeFile(path.join(dir, "other", "b.txt"), "b\n");
    const first = await store.snapshot();
    await writeFile(path.join(dir, "src", "a.txt"), "two\n");
    await store.snapshot({ paths: [path.join(dir, "src", "a.txt")] });
    // Changes nobody reports (a watcher that missed them): in the directory the restore rewrites, and elsewhere.
    await writeFile(path.join(dir, "src", "a.txt"), "three, unreported\n");
    await writeFile(path.join(dir, "src", "extra.txt"), "unreported too\n");
    await writeFile(path.join(dir, "other", "b.txt"), "hand edit\n");
    const { previous } = await store.restore(first, { changed: [] });
    const before = (await store.manifest(previous)).files;
    assert.equal((await store.readBlob(before.get("src/a.txt")!.h)).toString(), "three, unreported\n", "the overwritten content was recorded first");
    assert.equal((await store.readBlob(before.get("src/extra.txt")!.h)).toString(), "unreported too\n", "the removed file was recorded first");
    assert.equal(await readFile(path.join(dir, "src", "a.txt"), "utf8"), "one\n");
    await assert.rejects(readFile(path.join(dir, "src", "extra.txt")));
    assert.equal(await readFile(path.join(dir, "other", "b.txt"), "utf8"), "hand edit\n", "a directory the restore does not touch is left as it is");
  });

  test("credential files and ignored folders stay out of the store and survive restores", async () => {
    const { dir, storeDir, store } = await fresh();
    await mkdir(path.join(dir, "node_modules", "x"), { recursive: true });
    await mkdir(path.join(dir, ".ssh"), { recursive: true });
    await writeFile(path.join(dir, "node_modules", "x", "i.js"), "NODE_MODULE_CONTENT");
    await writeFile(path.join(dir, ".env"), "TOKEN=ENV_SECRET_VALUE");
    await writeFile(path.join(dir, ".ssh", "id_ed25519"), "PRIVATE_KEY_CONTENT");
    await writeFile(path.join(dir, "a.txt"), "v1");
    const a = await store.snapshot();
    await writeFile(path.join(dir, "a.txt"), "v2");
    await writeFile(path.join(dir, ".env"), "TOKEN=ENV_SECRET_VALUE_2");
    await store.snapshot({ paths: [path.join(dir, "a.txt"), path.join(dir, ".env")] });
    let all = "";
    const walk = async (d: string): Promise<void> => {
      for (const e of await readdir(d, { withFileTypes: true })) {
        if (e.isDirectory()) await walk(path.join(d, e.name));
        else {
          const content = await readFile(path.join(d, e.name));
          all += content.toString("latin1");
          // Compressed blobs are searched as what they hold.
          if (path.relative(storeDir, d).startsWith("zblobs")) all += brotliDecompressSync(content).toString("latin1");
        }
      }
    };
    await walk(storeDir);
    for (const secret of ["ENV_SECRET_VALUE", "PRIVATE_KEY_CONTENT", "NODE_MODULE_CONTENT"]) assert.ok(!all.includes(secret), `${secret} is not in the store`);
    await store.restore(a);
    assert.equal(await readFile(path.join(dir, "a.txt"), "utf8"), "v1");
    assert.equal(await readFile(path.join(dir, ".env"), "utf8"), "TOKEN=ENV_SECRET_VALUE_2", "the current .env is kept, not rewound");
    assert.equal(await readFile(path.join(dir, ".ssh", "id_ed25519"), "utf8"), "PRIVATE_KEY_CONTENT");
    assert.equal(await readFile(path.join(dir, "node_modules", "x", "i.js"), "utf8"), "NODE_MODULE_CONTENT");
  });

  test("retention keeps the newest snapshots and sweeps what no kept snapshot references", async () => {
    const { dir, storeDir, store } = await fresh({ maxSnapshots: 3, maxAgeMs: 1e12, maxBytes: 1e12 });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      await writeFile(path.join(dir, "a.txt"), `version ${i}\n`);
      ids.push(await store.snapshot({ paths: [path.join(dir, "a.txt")] }));
      await new Promise((r) => setTimeout(r, 5));
    }
    const { removed } = await store.prune();
    assert.deepEqual(removed.sort(), ids.slice(0, 3).sort(), "the three oldest are pruned");
    assert.deepEqual((await store.list()).map((s) => s.id), ids.slice(3).reverse());
    assert.equal(await countBlobs(storeDir), 3, "blobs only the kept snapshots use");
    await assert.rejects(store.restore(ids[0]!), /not in the store/);

    const bounded = await fresh({ maxSnapshots: 100, maxAgeMs: 1e12, maxBytes: 2500 });
    for (let i = 0; i < 5; i++) {
      // Incompressible: stored as its 1000 raw bytes (the bound counts stored bytes).
      await writeFile(path.join(bounded.dir, "big.bin"), randomBytes(1000));
      await bounded.store.snapshot({ paths: [path.join(bounded.dir, "big.bin")] });
      await new Promise((r) => setTimeout(r, 5));
    }
    await bounded.store.prune();
    assert.equal((await bounded.store.list()).length, 2, "byte bound keeps what fits (2 × 1000 bytes)");
  });

  test("snapshots of a remote workspace are refused with a clear message unless timeTravel.remote is on", async () => {
    const tt = new TimeTravel(cases.tmp(), {}, { onRestored: () => undefined, report: () => undefined });
    const ws = Workspace.forThread(cases.tmp(), "remote");
    await assert.rejects(tt.snapshots({ ws, host: { kind: "ssh" } as never }), /files live on another host.*set timeTravel: \{ remote: true \}/);
  });
});

describe("compressed blobs", () => {
  test("20 versions of a 1 MB text file take a small fraction of their raw size; each diffs and restores exactly", async () => {
    const { dir, storeDir, store } = await fresh();
    const ids: string[] = [];
    const versions: string[] = [];
    let raw = 0;
    for (let v = 0; v < 20; v++) {
      // Just under the 1 MiB diff limit, so the diff reads both blobs back.
      const text = report(1_000_000, v);
      versions.push(text);
      raw += text.length;
      await writeFile(path.join(dir, "report.txt"), text);
      ids.push(await store.snapshot({ paths: [path.join(dir, "report.txt")] }));
    }
    assert.equal(new Set(ids).size, 20);
    const stored = await store.storeBytes();
    const blobBytes = (await du(path.join(storeDir, "blobs"))) + (await du(path.join(storeDir, "zblobs"))) + (await du(path.join(storeDir, "packs")));
    assert.ok(stored >= blobBytes && blobBytes > 0, `storeBytes (${stored}) counts the compressed blobs (${blobBytes})`);
    assert.ok(stored * 5 < raw, `20 versions: ${stored} bytes stored for ${raw} raw bytes (ratio ${(raw / stored).toFixed(1)}, want > 5)`);
    assert.equal(await countStored(storeDir, "zblobs"), 20, "every version stored compressed");
    const h = sha256(versions[3]!);
    assert.ok((await storedSize(storeDir, "zblobs", h)) < versions[3]!.length / 5, "named by the hash of the raw content");
    assert.deepEqual(await store.readBlob(h), Buffer.from(versions[3]!), "readBlob returns the raw bytes");

    const diff = await diffSnapshots(store, ids[3]!, ids[4]!);
    assert.equal(diff.files.length, 1);
    assert.equal(diff.files[0]!.binary, false, "a text diff, from decompressed blobs");
    assert.match(diff.diff, /-report version 3\n\+report version 4\n/);
    for (const v of [3, 17, 0]) {
      await store.restore(ids[v]!);
      assert.equal(await readFile(path.join(dir, "report.txt"), "utf8"), versions[v], `version ${v} restored byte for byte`);
    }
  });

  test("restores are byte-exact: a large file on the stream path, incompressible binaries, a long link target", async () => {
    const { dir, storeDir, store } = await fresh();
    const bigText = Buffer.from(report(5 * 1024 * 1024 + 123, 1));
    const bigBinary = randomBytes(5 * 1024 * 1024 + 7);
    const smallBinary = randomBytes(100_000);
    const small = Buffer.from(report(50_000, 1));
    // A link target over the compression threshold that resolves to small.txt.
    const target = `${"./".repeat(200)}small.txt`;
    await writeFile(path.join(dir, "big.txt"), bigText);
    await writeFile(path.join(dir, "big.bin"), bigBinary);
    await writeFile(path.join(dir, "small.bin"), smallBinary);
    await writeFile(path.join(dir, "small.txt"), small);
    await symlink(target, path.join(dir, "link"));
    const a = await store.snapshot();
    const before = await contents(dir);

    assert.ok((await stat(blobFile(storeDir, "zblobs", sha256(bigText)))).size < bigText.length / 5, "the large text file (stream path) is stored compressed");
    assert.ok((await storedSize(storeDir, "zblobs", sha256(small))) < small.length / 5, "the small text file is stored compressed");
    assert.ok((await storedSize(storeDir, "zblobs", sha256(target))) < target.length, "the long link target is stored compressed");
    assert.equal((await storedSize(storeDir, "blobs", sha256(smallBinary))), smallBinary.length, "an incompressible small file is stored raw");
    assert.ok(
      (await stat(blobFile(storeDir, "zblobs", sha256(bigBinary)))).size <= bigBinary.length + 1024,
      "an incompressible large file costs at most a few bytes more than its size",
    );
    assert.deepEqual(await store.readBlob(sha256(bigBinary)), bigBinary);
    assert.deepEqual(await store.readBlob(sha256(smallBinary)), smallBinary);

    // Everything changes (the link too), then back.
    await writeFile(path.join(dir, "big.txt"), Buffer.from(report(5 * 1024 * 1024 + 99, 2)));
    await writeFile(path.join(dir, "big.bin"), randomBytes(4096));
    await writeFile(path.join(dir, "small.bin"), randomBytes(100_000));
    await writeFile(path.join(dir, "small.txt"), report(50_000, 2));
    await rm(path.join(dir, "link"));
    await symlink("small.bin", path.join(dir, "link"));
    const b = await store.snapshot();
    const after = await contents(dir);
    const diff = await diffSnapshots(store, a, b);
    assert.match(diff.diff, /-report version 1\n\+report version 2\n/, "small.txt diffs from its compressed blobs");
    assert.match(diff.diff, new RegExp(`-symlink → ${target.replaceAll(".", "\\.")}`), "the link target is read back from its compressed blob");
    assert.ok(diff.files.find((f) => f.path === "small.bin")!.binary);

    await store.restore(a);
    assert.deepEqual(await contents(dir), before, "restored byte for byte");
    assert.equal(await readlink(path.join(dir, "link")), target);
    assert.ok((await readFile(path.join(dir, "big.bin"))).equals(bigBinary));
    assert.ok((await readFile(path.join(dir, "big.txt"))).equals(bigText));
    await store.restore(b);
    assert.deepEqual(await contents(dir), after);
    assert.equal(await readlink(path.join(dir, "link")), "small.bin");
  });

  test("a store of raw blobs (the format before compression) is read, restored and reused as it is", async () => {
    const { dir, storeDir, store } = await fresh();
    const big = Buffer.from(report(5 * 1024 * 1024 + 5, 1));
    const text = report(20_000, 1);
    await writeFile(path.join(dir, "a.txt"), text);
    await writeFile(path.join(dir, "big.txt"), big);
    await symlink(`${"./".repeat(200)}a.txt`, path.join(dir, "link"));
    const oldId = await store.snapshot();
    const oldFiles = await contents(dir);
    // Rewrite the store as the old format had it: every blob raw under blobs/ab/cdef…, no zblobs/, no packs/.
    for (const e of await packEntries(storeDir)) {
      await mkdir(path.join(storeDir, "blobs", e.h.slice(0, 2)), { recursive: true });
      await writeFile(path.join(storeDir, "blobs", e.h.slice(0, 2), e.h.slice(2)), e.kind === 1 ? brotliDecompressSync(e.body) : e.body);
    }
    await rm(path.join(storeDir, "packs"), { recursive: true, force: true });
    const zblobs = path.join(storeDir, "zblobs");
    for (const fan of await readdir(zblobs)) {
      for (const name of await readdir(path.join(zblobs, fan)).catch(() => [])) {
        const raw = brotliDecompressSync(await readFile(path.join(zblobs, fan, name)));
        assert.equal(sha256(raw), fan + name);
        await mkdir(path.join(storeDir, "blobs", fan), { recursive: true });
        await writeFile(path.join(storeDir, "blobs", fan, name), raw);
      }
    }
    await rm(zblobs, { recursive: true });
    const rawBlobs = await countFiles(path.join(storeDir, "blobs"));
    assert.equal(rawBlobs, 3, "a.txt, big.txt, the link target, and nothing else");

    // A new process on the old store: new content is stored compressed beside the raw blobs.
    const reopened = new SnapshotStore(dir, storeDir, policy, lots);
    await writeFile(path.join(dir, "a.txt"), report(20_000, 2));
    await writeFile(path.join(dir, "big.txt"), report(5 * 1024 * 1024 + 5, 2));
    const newId = await reopened.snapshot();
    const newFiles = await contents(dir);
    assert.equal(await countStored(storeDir, "zblobs"), 2, "the two new versions, compressed");
    const diff = await diffSnapshots(reopened, oldId, newId);
    assert.match(diff.diff, /-report version 1\n\+report version 2\n/, "an old raw blob diffs against a new compressed one");
    assert.deepEqual(await reopened.readBlob(sha256(text)), Buffer.from(text));

    await reopened.restore(oldId);
    assert.deepEqual(await contents(dir), oldFiles, "restored from raw blobs, the large one too");
    assert.ok((await readFile(path.join(dir, "big.txt"))).equals(big));
    // The old content again: deduplicated against the raw blobs, not stored a second time.
    await writeFile(path.join(dir, "copy.txt"), text);
    await reopened.snapshot();
    assert.equal(await countFiles(path.join(storeDir, "blobs")), rawBlobs, "raw blobs kept as they are");
    assert.equal(await countStored(storeDir, "zblobs"), 2, "content already stored raw is not stored again");
    await reopened.restore(newId);
    assert.deepEqual(await contents(dir), newFiles);
  });

  test("retention sweeps compressed and raw blobs, and bounds the bytes they take stored", async () => {
    const { dir, storeDir, store } = await fresh({ maxSnapshots: 3, maxAgeMs: 1e12, maxBytes: 1e12 });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      await writeFile(path.join(dir, "a.txt"), report(30_000, i));
      await writeFile(path.join(dir, "r.bin"), randomBytes(2000));
      ids.push(await store.snapshot());
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.equal(await countStored(storeDir, "zblobs"), 8);
    assert.equal(await countStored(storeDir, "blobs"), 8);
    const { removed } = await store.prune();
    assert.deepEqual(removed.sort(), ids.slice(0, 5).sort());
    // Five eighths of the pack are dead (past half): it is rewritten with the live entries only.
    assert.equal(await countStored(storeDir, "zblobs"), 3, "compressed blobs only the kept snapshots use");
    assert.equal(await countStored(storeDir, "blobs"), 3, "raw blobs only the kept snapshots use");
    await store.restore(ids[5]!);
    assert.equal(await readFile(path.join(dir, "a.txt"), "utf8"), report(30_000, 5));

    // 5 versions of a 10 KB text file: 50 KB raw, under 2 KB stored each, all within 20,000 stored bytes.
    const bounded = await fresh({ maxSnapshots: 100, maxAgeMs: 1e12, maxBytes: 20_000 });
    for (let i = 0; i < 5; i++) {
      await writeFile(path.join(bounded.dir, "a.txt"), report(10_000, i));
      await bounded.store.snapshot({ paths: [path.join(bounded.dir, "a.txt")] });
      await new Promise((r) => setTimeout(r, 5));
    }
    const storedBlobs = (await du(path.join(bounded.storeDir, "zblobs"))) + (await du(path.join(bounded.storeDir, "packs")));
    assert.ok(storedBlobs <= 20_000, `stored: ${storedBlobs} bytes`);
    await bounded.store.prune();
    assert.equal((await bounded.store.list()).length, 5, "the byte bound counts stored bytes: every snapshot fits");
  });
});

describe("crash safety of restores", () => {
  async function setup() {
    const { dir, storeDir, store } = await fresh();
    await mkdir(path.join(dir, "node_modules", "pkg"), { recursive: true });
    await writeFile(path.join(dir, "node_modules", "pkg", "index.js"), "nm");
    await writeFile(path.join(dir, ".env"), "S=1");
    for (let d = 0; d < 20; d++) {
      await mkdir(path.join(dir, `d${d}`), { recursive: true });
      for (let f = 0; f < 50; f++) await writeFile(path.join(dir, `d${d}`, `f${f}.txt`), `old ${d}/${f}\n`);
    }
    const oldId = await store.snapshot();
    const oldFiles = await contents(dir);
    // Target: every file different, some gone, some new.
    for (let d = 0; d < 20; d++) {
      for (let f = 0; f < 50; f++) await writeFile(path.join(dir, `d${d}`, `f${f}.txt`), `new ${d}/${f}\n`);
      await rm(path.join(dir, `d${d}`, "f0.txt"));
      await writeFile(path.join(dir, `d${d}`, "extra.txt"), "extra\n");
    }
    const newId = await store.snapshot();
    const newFiles = await contents(dir);
    // The workspace is at `new`; the child restores `old`.
    return { dir, storeDir, oldId, newId, oldFiles, newFiles };
  }

  function runChild(dir: string, storeDir: string, id: string, mode: string, killAfterMs?: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const p = spawn(process.execPath, ["--import", "tsx", child, dir, storeDir, id, mode], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      p.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (killAfterMs !== undefined && out.includes("start")) setTimeout(() => p.kill("SIGKILL"), killAfterMs);
      });
      p.stderr.on("data", (d: Buffer) => (err += d.toString()));
      p.on("error", reject);
      p.on("exit", (code, signal) => resolve(`${code ?? signal} ${out.trim().split("\n").at(-1)} ${err.slice(0, 300)}`));
    });
  }

  for (const mode of ["after-journal", "mid-apply"]) {
    test(`killed ${mode}: the next use finishes the restore`, async () => {
      const s = await setup();
      const outcome = await runChild(s.dir, s.storeDir, s.oldId, mode);
      assert.match(outcome, /SIGKILL/, `the child was killed (${outcome})`);
      if (mode === "mid-apply") {
        const partial = JSON.stringify(await contents(s.dir));
        assert.ok(partial !== JSON.stringify(s.oldFiles) && partial !== JSON.stringify(s.newFiles), "killed part-way: neither the old nor the new workspace yet");
      }
      const store = new SnapshotStore(s.dir, s.storeDir, policy, lots);
      const head = await store.headId(); // any use recovers
      assert.equal(head, s.oldId, "the interrupted restore is finished");
      assert.deepEqual(await contents(s.dir), s.oldFiles, "the workspace is exactly the restored one");
      assert.equal(await readFile(path.join(s.dir, "node_modules", "pkg", "index.js"), "utf8"), "nm", "the ignored folder was never touched");
      assert.ok((await store.list()).some((r) => r.id === s.newId), "the state before the restore is still stored");
      const leftovers = (await readdir(s.storeDir)).filter((x) => /^(staging|trash|restore-cases.tmp())-/.test(x) || x === "restore.json");
      assert.deepEqual(leftovers, [], "no journal or temporary file left");
    });
  }

  test("killed at random moments: always the old or the restored workspace", async () => {
    const s = await setup();
    let target = s.oldId;
    const seen = new Set<string>();
    const outcomes: string[] = [];
    // How long one restore takes here, from the child's "start" to its exit; kills spread over it.
    const t0 = Date.now();
    let full = "";
    await new Promise<void>((resolve) => {
      const p = spawn(process.execPath, ["--import", "tsx", child, s.dir, s.storeDir, target, "random"], { stdio: ["ignore", "pipe", "inherit"] });
      let started = 0;
      p.stdout.on("data", (d: Buffer) => {
        full += d.toString();
        if (!started && full.includes("start")) started = Date.now();
      });
      p.on("exit", () => {
        full = `${Date.now() - (started || t0)}`;
        resolve();
      });
    });
    const span = Number(full);
    target = s.newId;
    for (const fraction of [0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95]) {
      const delay = Math.round(span * fraction);
      const outcome = await runChild(s.dir, s.storeDir, target, "random", delay);
      const store = new SnapshotStore(s.dir, s.storeDir, policy, lots);
      const head = await store.headId();
      const now = await contents(s.dir);
      const isOld = JSON.stringify(now) === JSON.stringify(s.oldFiles);
      const isNew = JSON.stringify(now) === JSON.stringify(s.newFiles);
      assert.ok(isOld || isNew, `after a kill at ${delay} ms (${outcome}) the workspace is one of the two, never a mix`);
      assert.equal(head, isOld ? s.oldId : s.newId, "head names what is on disk");
      seen.add(isOld === (target === s.oldId) ? "restored" : "kept");
      outcomes.push(`${delay}ms → ${isOld === (target === s.oldId) ? "restored" : "kept"} (${outcome.split(" ")[0]})`);
      target = isOld ? s.newId : s.oldId;
      assert.ok((await stat(path.join(s.dir, "node_modules"))).isDirectory(), "node_modules present");
    }
    assert.ok(seen.size >= 1, `outcomes: ${[...seen].join(", ")}`);
    console.log(`random kills over a ${span} ms restore: ${outcomes.join("; ")}`);
  });
});

describe("snapshot records: the directory map in chunks", () => {
  test("chunkDirMap splits a large map by path component and is deterministic", () => {
    const entries: [string, string][] = [["", "r"]];
    for (let t = 0; t < 20; t++) {
      entries.push([`pkg${t}`, `h${t}`]);
      for (let m = 0; m < 50; m++) entries.push([`pkg${t}/mod${m}`, `h${t}-${m}`]);
    }
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const a = chunkDirMap(entries);
    const b = chunkDirMap(entries);
    assert.equal(a.root, b.root);
    assert.equal(a.chunks.size, 21, "a root chunk and one per top-level directory");
    const changed = entries.map(([rel, h]) => [rel, rel === "pkg7/mod13" ? "new" : h] as [string, string]);
    const c = chunkDirMap(changed);
    const fresh = [...c.chunks.keys()].filter((h) => !a.chunks.has(h));
    assert.equal(fresh.length, 2, "a change in one directory makes new chunks on its path only");
    const small = chunkDirMap([["", "r"], ["a", "x"]]);
    assert.equal(small.chunks.size, 1);
  });

  test("100 edits of one file at 1,000 directories add small records; every snapshot reads back whole; pruning keeps live chunks", async () => {
    const { dir, storeDir, store } = await fresh({ maxSnapshots: 60, maxAgeMs: 1e12, maxBytes: 1e12 });
    for (let t = 0; t < 20; t++) for (let m = 0; m < 50; m++) {
      await mkdir(path.join(dir, `pkg${t}`, `mod${m}`), { recursive: true });
      await writeFile(path.join(dir, `pkg${t}`, `mod${m}`, "f.txt"), `${t}/${m}\n`);
    }
    const first = await store.snapshot();
    const before = await du(storeDir);
    const target = path.join(dir, "pkg7", "mod13", "f.txt");
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      await writeFile(target, `edit ${i}\n`);
      ids.push(await store.snapshot({ paths: [target] }));
    }
    const growth = (await du(storeDir)) - before;
    // Was ~80 KB of record per snapshot (the whole map): 8 MB for these 100.
    assert.ok(growth < 1024 * 1024, `100 one-file snapshots grew the store by ${growth} bytes`);
    assert.ok(first);
    const m = await store.manifest(ids[90]!);
    assert.equal(m.dirs.length, 1 + 20 + 1000);
    const restored = await store.restore(ids[80]!);
    assert.equal(restored.restored, ids[80]);
    assert.equal(await readFile(target, "utf8"), "edit 80\n");
    await store.prune();
    const listed = await store.list();
    assert.ok(listed.length <= 61, `${listed.length} snapshots kept`);
    for (const s of listed) assert.equal((await store.manifest(s.id)).dirs.length, 1021, `snapshot ${s.id} reads back whole after pruning`);
  });

  test("records written before chunks (v1: the whole map inline) are still read", async () => {
    const { dir, storeDir, store } = await fresh();
    await writeFile(path.join(dir, "a.txt"), "a\n");
    const id = await store.snapshot();
    const file = path.join(storeDir, "snaps", `${id}.json`);
    const v3 = JSON.parse(await readFile(file, "utf8")) as { root: string };
    const chunk = JSON.parse(await readFile(path.join(storeDir, "trees", v3.root), "utf8")) as { d: Record<string, string> };
    const { root: _root, ...rest } = v3 as Record<string, unknown>;
    await writeFile(file, JSON.stringify({ ...rest, v: 1, dirs: chunk.d }));
    const reopened = new SnapshotStore(dir, storeDir, policy, lots);
    assert.deepEqual([...(await reopened.manifest(id)).files.keys()], ["a.txt"]);
  });
});

describe("retention choice (pure)", () => {
  test("count and age drop the oldest first; the head is always kept", () => {
    const rec = (id: string, ageMs: number) => ({ id, createdAt: 1_000_000 - ageMs, files: 0, bytes: 0, v: 3 as const, dirs: {} });
    const records = [rec("a", 0), rec("b", 10), rec("c", 20), rec("d", 5_000)]; // newest first
    const byCount = chooseByCountAndAge(records, undefined, { maxSnapshots: 2, maxAgeMs: 1e12, maxBytes: 1e12 }, 1_000_000);
    assert.deepEqual([byCount.keep.map((r) => r.id), byCount.removed], [["a", "b"], ["c", "d"]]);
    const headKept = chooseByCountAndAge(records, "d", { maxSnapshots: 2, maxAgeMs: 1e12, maxBytes: 1e12 }, 1_000_000);
    assert.deepEqual(headKept.keep.map((r) => r.id), ["a", "b", "d"]);
    const byAge = chooseByCountAndAge(records, undefined, { maxSnapshots: 100, maxAgeMs: 1_000, maxBytes: 1e12 }, 1_000_000);
    assert.deepEqual(byAge.removed, ["d"]);
  });
});
