// Small blobs of the snapshot store in pack files (objects.ts, blobWorker.ts; format in format.ts):
// round trip through snapshot and restore, two processes writing one store at once, a torn pack
// tail ignored and its blob written again, GC rewriting a pack with dead bytes, and a store of
// loose blobs (the format before packs) still read, restored and deduplicated against.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { appendFile, mkdir, readdir, readFile, rm, truncate, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { brotliDecompressSync } from "node:zlib";
import { PACK_HEADER_BYTES } from "../src/snapshots/format.js";
import { ObjectStore, PACK_MAX } from "../src/snapshots/objects.js";
import { SnapshotStore } from "../src/snapshots/store.js";
import { lots, policy, snapshotCases } from "./helpers/snapshotCases.js";

const objectsModule = pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "src", "snapshots", "objects.ts")).href;
const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");

const cases = snapshotCases("wb-packs-");
const fresh = cases.fresh;

async function files(d: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
    if (e.isDirectory()) out.push(...(await files(path.join(d, e.name))));
    else out.push(path.join(d, e.name));
  }
  return out;
}

const packsOf = async (storeDir: string) => (await readdir(path.join(storeDir, "packs")).catch(() => [] as string[])).filter((f) => f.endsWith(".pack")).sort();

/** The entries of a pack as format.ts describes them (hash, kind, offset, total bytes). */
async function entriesOf(file: string): Promise<{ h: string; kind: number; off: number; total: number }[]> {
  const buf = await readFile(file);
  const out = [];
  for (let off = 0; off + PACK_HEADER_BYTES <= buf.length; ) {
    assert.equal(buf.toString("latin1", off, off + 4), "WBP1", `an entry starts at ${off}`);
    const len = buf.readUInt32BE(off + 8);
    out.push({ h: buf.toString("hex", off + 12, off + 44), kind: buf[off + 4]!, off, total: PACK_HEADER_BYTES + len });
    off += PACK_HEADER_BYTES + len;
  }
  return out;
}

/** Runs `code` (an ES module body with `ObjectStore` in scope) in a child Node process; resolves with its stdout. */
function inChild(code: string, args: string[]): Promise<string> {
  const source = `import { ObjectStore } from ${JSON.stringify(objectsModule)};\nconst args = ${JSON.stringify(args)};\n${code}`;
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", source], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.on("error", reject);
    p.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

/** Writes buffers `prefix-0` … `prefix-(count-1)` (and the shared ones) as blobs from a child process, in a few requests. */
const WRITER = `
const store = new ObjectStore(args[0]);
const [prefix, count] = [args[1], Number(args[2])];
for (let i = 0; i < count; i += 50) {
  const batch = [];
  for (let j = i; j < Math.min(count, i + 50); j++) batch.push(Buffer.from(prefix + "-" + j + "\\n" + "x".repeat(j % 7 === 0 ? 3000 : j)));
  batch.push(Buffer.from("shared " + (i % 200) + "\\n"));
  for (const b of batch) await store.putBuffer(b);
}
process.stdout.write("done");
`;

describe("snapshot store packs", () => {
  test("small files go into one pack, large ones stay loose; snapshots and restores are byte-exact", async () => {
    const { dir, storeDir, store } = await fresh();
    const want = new Map<string, Buffer>();
    await mkdir(path.join(dir, "src", "deep"), { recursive: true });
    for (let i = 0; i < 300; i++) {
      const rel = path.join(i % 2 ? "src" : path.join("src", "deep"), `f${i}.txt`);
      const body = i % 5 === 0 ? randomBytes(100 + i) : Buffer.from(`file ${i}\n${"line of text\n".repeat(i)}`);
      want.set(rel, body);
      await writeFile(path.join(dir, rel), body);
    }
    const big = randomBytes(PACK_MAX * 3); // incompressible, over the pack threshold: a loose raw blob
    want.set("big.bin", big);
    await writeFile(path.join(dir, "big.bin"), big);
    const first = await store.snapshot();
    const packs = await packsOf(storeDir);
    assert.equal(packs.length, 1, "one pack for this process");
    const entries = await entriesOf(path.join(storeDir, "packs", packs[0]!));
    assert.equal(entries.length, 300, "every small file once, in the pack");
    assert.ok(entries.some((e) => e.kind === 1) && entries.some((e) => e.kind === 0), "compressed and raw entries");
    assert.deepEqual(
      (await files(path.join(storeDir, "blobs"))).map((f) => path.basename(path.dirname(f)) + path.basename(f)),
      [sha256(big)],
      "only the large blob is a loose file",
    );
    assert.deepEqual(await files(path.join(storeDir, "zblobs")), []);
    for (const [rel, body] of want) assert.deepEqual(await store.readBlob(sha256(body)), body, `${rel} reads back`);

    for (const rel of want.keys()) await writeFile(path.join(dir, rel), "changed\n");
    await store.snapshot();
    await store.restore(first);
    for (const [rel, body] of want) assert.deepEqual(await readFile(path.join(dir, rel)), body, `${rel} restored byte-exact`);
  });

  test("two processes write one store at once: one pack each, and every blob reads back everywhere", async () => {
    const { storeDir } = await fresh();
    const here = new ObjectStore(storeDir);
    // This process's worker indexes the store before the others write (a miss must look again).
    await here.putBuffer(Buffer.from("written first, here\n"));
    await Promise.all([inChild(WRITER, [storeDir, "alpha", "400"]), inChild(WRITER, [storeDir, "beta", "400"])]);
    const packs = await packsOf(storeDir);
    assert.equal(packs.length, 3, `a pack per writing process (${packs.join(", ")})`);
    for (const p of packs) await entriesOf(path.join(storeDir, "packs", p)); // each parses whole
    for (const prefix of ["alpha", "beta"]) {
      for (let j = 0; j < 400; j++) {
        const body = Buffer.from(`${prefix}-${j}\n${"x".repeat(j % 7 === 0 ? 3000 : j)}`);
        assert.deepEqual(await here.get(sha256(body)), body, `${prefix}-${j} reads here`);
      }
    }
    for (let i = 0; i < 200; i += 50) assert.deepEqual(await here.get(sha256(`shared ${i}\n`)), Buffer.from(`shared ${i}\n`));
    // And a child reads what this process and the other child wrote.
    const check = await inChild(
      `const s = new ObjectStore(args[0]); const a = await s.get(args[1]); const b = await s.get(args[2]); process.stdout.write(a.toString() + b.toString());`,
      [storeDir, sha256("written first, here\n"), sha256(`beta-3\n${"x".repeat(3)}`)],
    );
    assert.equal(check, `written first, here\nbeta-3\nxxx`);
  });

  test("a torn pack tail is ignored and its blob is written again", async () => {
    const { storeDir } = await fresh();
    const bodies = Array.from({ length: 20 }, (_, i) => Buffer.from(`blob ${i}\n${"y".repeat(i * 10)}`));
    await inChild(`const s = new ObjectStore(args[0]); for (const b of args.slice(1)) await s.putBuffer(Buffer.from(b, "base64")); process.stdout.write("ok");`, [
      storeDir,
      ...bodies.map((b) => b.toString("base64")),
    ]);
    const [pack] = await packsOf(storeDir);
    const file = path.join(storeDir, "packs", pack!);
    const entries = await entriesOf(file);
    const last = entries.at(-1)!;
    // The writer died mid-entry: half of the last entry reached the disk.
    await truncate(file, last.off + Math.floor(last.total / 2));
    const here = new ObjectStore(storeDir);
    for (const b of bodies.slice(0, -1)) assert.deepEqual(await here.get(sha256(b)), b, "entries before the tear read");
    await assert.rejects(here.get(sha256(bodies.at(-1)!)), "the torn entry is not a blob");
    assert.equal(await here.has(sha256(bodies.at(-1)!)), false);
    await here.putBuffer(bodies.at(-1)!);
    assert.deepEqual(await here.get(sha256(bodies.at(-1)!)), bodies.at(-1), "written again, to this process's pack");
    assert.equal((await packsOf(storeDir)).length, 2);
    // A tail of zeros (a crash after the file grew, before its data was written) is no entry either.
    await appendFile(file, Buffer.alloc(4096));
    const again = await inChild(`const s = new ObjectStore(args[0]); process.stdout.write(String(await s.has(args[1])) + " " + (await s.get(args[2])).toString());`, [
      storeDir,
      sha256("never written\n"),
      sha256(bodies[3]!),
    ]);
    assert.equal(again, `false ${bodies[3]!.toString()}`);
  });

  test("a store whose records name a corrupt entry fails the read instead of returning other bytes", async () => {
    const { storeDir } = await fresh();
    const body = Buffer.from("to be corrupted\n".repeat(3));
    await inChild(`const s = new ObjectStore(args[0]); await s.putBuffer(Buffer.from(args[1], "base64")); process.stdout.write("ok");`, [storeDir, body.toString("base64")]);
    const [pack] = await packsOf(storeDir);
    const file = path.join(storeDir, "packs", pack!);
    const buf = await readFile(file);
    buf[buf.length - 2] = buf[buf.length - 2]! ^ 0xff;
    await writeFile(file, buf);
    await assert.rejects(new ObjectStore(storeDir).get(sha256(body)));
  });

  test("GC rewrites a pack once half its bytes are dead, keeps the live blobs, and leaves a mostly live pack alone", async () => {
    const { dir, storeDir, store } = await fresh({ maxSnapshots: 1, maxAgeMs: 1e12, maxBytes: 1e12 });
    await mkdir(path.join(dir, "a"), { recursive: true });
    const text = (i: number, v: number) => `file ${i} version ${v}\n${"some text of the file\n".repeat(20 + (i % 13))}`;
    for (let i = 0; i < 200; i++) await writeFile(path.join(dir, "a", `f${i}.txt`), text(i, 0));
    await store.snapshot();
    const [firstPack] = await packsOf(storeDir);
    // A tenth changes: the old pack is 90% live and stays as it is.
    for (let i = 0; i < 20; i++) await writeFile(path.join(dir, "a", `f${i}.txt`), text(i, 1));
    await store.snapshot();
    await store.prune();
    assert.ok((await packsOf(storeDir)).includes(firstPack!), "a pack with a tenth dead is not rewritten");
    // Now most of the first version dies.
    for (let i = 0; i < 200; i++) await writeFile(path.join(dir, "a", `f${i}.txt`), text(i, 2));
    const before = await store.storeBytes();
    const last = await store.snapshot();
    await store.prune();
    const after = await packsOf(storeDir);
    assert.ok(!after.includes(firstPack!), "the mostly dead pack is gone");
    const live = new Set<string>();
    for (const f of (await store.manifest(last)).files.values()) live.add(f.h);
    const stored = new Set<string>();
    for (const p of after) for (const e of await entriesOf(path.join(storeDir, "packs", p))) stored.add(e.h);
    for (const h of live) assert.ok(stored.has(h), `live blob ${h} kept`);
    assert.ok(stored.size <= live.size + 20, `dead blobs reclaimed (${stored.size} stored for ${live.size} live)`);
    assert.ok((await store.storeBytes()) < before, "the store shrank");
    for (let i = 0; i < 200; i++) await writeFile(path.join(dir, "a", `f${i}.txt`), "scribbled\n");
    await store.restore(last);
    for (let i = 0; i < 200; i += 17) assert.equal(await readFile(path.join(dir, "a", `f${i}.txt`), "utf8"), text(i, 2));
  });

  test("GC leaves a recent pack of another process alone, and collects one whose writer is long gone", async () => {
    const { storeDir } = await fresh();
    const bodies = Array.from({ length: 30 }, (_, i) => Buffer.from(`foreign ${i}\n`));
    await inChild(`const s = new ObjectStore(args[0]); for (const b of args.slice(1)) await s.putBuffer(Buffer.from(b, "base64")); process.stdout.write("ok");`, [
      storeDir,
      ...bodies.map((b) => b.toString("base64")),
    ]);
    const [pack] = await packsOf(storeDir);
    const here = new ObjectStore(storeDir);
    const live = new Map(bodies.slice(0, 3).map((b) => [sha256(b), b.length]));
    await here.gc(live);
    assert.deepEqual(await packsOf(storeDir), [pack], "a pack written a moment ago may still be appended to: left alone");
    const old = Date.now() / 1000 - 3600;
    await utimes(path.join(storeDir, "packs", pack!), old, old);
    await here.gc(live);
    const now = await packsOf(storeDir);
    assert.ok(!now.includes(pack!), "the dead writer's pack was rewritten");
    for (const b of bodies.slice(0, 3)) assert.deepEqual(await here.get(sha256(b)), b);
    await assert.rejects(here.get(sha256(bodies[10]!)));
  });

  test("a store of loose blobs (the format before packs) is read, restored and deduplicated against", async () => {
    const { dir, storeDir, store } = await fresh();
    for (let i = 0; i < 30; i++) await writeFile(path.join(dir, `f${i}.txt`), `old format ${i}\n${"z".repeat(i * 20)}`);
    const id = await store.snapshot();
    // Rewrite the store as the previous format had it: every blob a file under blobs/ or zblobs/, no packs.
    for (const p of await packsOf(storeDir)) {
      const buf = await readFile(path.join(storeDir, "packs", p));
      for (const e of await entriesOf(path.join(storeDir, "packs", p))) {
        const body = buf.subarray(e.off + PACK_HEADER_BYTES, e.off + e.total);
        const base = path.join(storeDir, e.kind === 1 ? "zblobs" : "blobs", e.h.slice(0, 2));
        await mkdir(base, { recursive: true });
        await writeFile(path.join(base, e.h.slice(2)), body);
        if (e.kind === 1) assert.equal(sha256(brotliDecompressSync(body)), e.h);
      }
    }
    await rm(path.join(storeDir, "packs"), { recursive: true });
    const old = new Set([...(await files(path.join(storeDir, "blobs"))), ...(await files(path.join(storeDir, "zblobs")))].map((f) => path.basename(path.dirname(f)) + path.basename(f)));
    assert.equal(old.size, 30);

    const reopened = new SnapshotStore(dir, storeDir, policy, lots);
    for (let i = 0; i < 30; i++) await writeFile(path.join(dir, `f${i}.txt`), "overwritten\n");
    await reopened.restore(id);
    for (let i = 0; i < 30; i += 7) assert.equal(await readFile(path.join(dir, `f${i}.txt`), "utf8"), `old format ${i}\n${"z".repeat(i * 20)}`);
    // A snapshot of the same content again, after a fresh look: nothing stored twice.
    await writeFile(path.join(dir, "new.txt"), "the one new file\n");
    await reopened.snapshot();
    const entries = [];
    for (const p of await packsOf(storeDir)) entries.push(...(await entriesOf(path.join(storeDir, "packs", p))));
    assert.ok(entries.some((e) => e.h === sha256("the one new file\n")), "new content goes into a pack");
    assert.deepEqual(entries.filter((e) => old.has(e.h)), [], "content stored loose is not stored again");
    assert.equal((await files(path.join(storeDir, "blobs"))).length + (await files(path.join(storeDir, "zblobs"))).length, 30, "loose blobs kept as they are");
  });
});
