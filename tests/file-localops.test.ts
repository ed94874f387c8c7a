import assert from "node:assert/strict";
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { withPathLock, withPathLocks } from "../src/environment/pathLock.js";

const ops = new LocalFileOperations();
let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "wb-localops-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const win = (offset: number, limit: number, maxLineChars = 2000) => ({ offset, limit, maxLineChars });

describe("LocalFileOperations.readLines", () => {
  it("returns a window, says whether more follows, and the total only when it reached the end", async () => {
    const p = path.join(dir, "ten.txt");
    await writeFile(p, Array.from({ length: 10 }, (_, i) => `l${i + 1}`).join("\n") + "\n");
    assert.deepEqual(await ops.readLines(p, win(1, 3)), { lines: ["l1", "l2", "l3"], cutLines: [], hasMore: true });
    assert.deepEqual(await ops.readLines(p, win(9, 5)), { lines: ["l9", "l10"], cutLines: [], hasMore: false, totalLines: 10 });
    assert.deepEqual(await ops.readLines(p, win(8, 3)), { lines: ["l8", "l9", "l10"], cutLines: [], hasMore: false, totalLines: 10 });
    assert.deepEqual(await ops.readLines(p, win(50, 3)), { lines: [], cutLines: [], hasMore: false, totalLines: 10 });
  });
  it("counts a last line without newline, strips CR of CRLF, keeps empty lines", async () => {
    const p = path.join(dir, "crlf.txt");
    await writeFile(p, "a\r\n\r\nc");
    assert.deepEqual(await ops.readLines(p, win(1, 10)), { lines: ["a", "", "c"], cutLines: [], hasMore: false, totalLines: 3 });
    assert.equal(await ops.countLines(p), 3);
  });
  it("cuts long lines without buffering them whole, and keeps multi-byte characters intact", async () => {
    const p = path.join(dir, "long.txt");
    await writeFile(p, `${"é".repeat(5000)}\nshort\n`);
    const r = await ops.readLines(p, win(1, 2, 100));
    assert.equal(r.lines[0], "é".repeat(100));
    assert.deepEqual(r.cutLines, [1]);
    assert.equal(r.lines[1], "short");
  });
  it("never cuts a line inside a surrogate pair", async () => {
    const p = path.join(dir, "emoji.txt");
    await writeFile(p, `a${"😀".repeat(10)}\n`);
    const r = await ops.readLines(p, win(1, 1, 4));
    assert.equal(r.lines[0], "a😀");
    assert.deepEqual(r.cutLines, [1]);
  });
  it("handles lines split across read chunks", async () => {
    const p = path.join(dir, "chunks.txt");
    const lines = Array.from({ length: 3000 }, (_, i) => `${i}:${"x".repeat(i % 500)}`);
    await writeFile(p, lines.join("\n"));
    const r = await ops.readLines(p, win(1, 3000, 10_000));
    assert.deepEqual(r.lines, lines);
    assert.equal(r.totalLines, 3000);
    assert.equal(await ops.countLines(p), 3000);
  });
  it("empty file: no lines, total 0", async () => {
    const p = path.join(dir, "empty.txt");
    await writeFile(p, "");
    assert.deepEqual(await ops.readLines(p, win(1, 5)), { lines: [], cutLines: [], hasMore: false, totalLines: 0 });
    assert.equal(await ops.countLines(p), 0);
  });
});

describe("LocalFileOperations writes", () => {
  it("writeAtomic creates parents, reports them, keeps the file mode and leaves no temp file", async () => {
    const p = path.join(dir, "w", "a", "b.txt");
    const r1 = await ops.writeAtomic(p, "one");
    assert.deepEqual(r1.dirsCreated, [path.join(dir, "w"), path.join(dir, "w", "a")]);
    assert.equal(r1.bytesWritten, 3);
    await chmod(p, 0o600);
    const r2 = await ops.writeAtomic(p, Buffer.from("twö"));
    assert.equal(r2.bytesWritten, 4);
    assert.deepEqual(r2.dirsCreated, []);
    assert.equal((await stat(p)).mode & 0o777, 0o600);
    assert.equal(await readFile(p, "utf8"), "twö");
    assert.deepEqual(await readdir(path.dirname(p)), ["b.txt"]);
  });
  it("stat/lstat/readdir/remove/rename/readBytes", async () => {
    const p = path.join(dir, "s.txt");
    await writeFile(p, "hello");
    assert.equal((await ops.stat(p))?.type, "file");
    assert.equal(await ops.stat(path.join(dir, "missing")), null);
    assert.equal(await ops.lstat(path.join(dir, "missing", "deeper")), null);
    assert.equal((await ops.readBytes(p, 1, 3)).toString(), "ell");
    assert.equal((await ops.readBytes(p, 3, 100)).toString(), "lo");
    await ops.rename(p, path.join(dir, "moved", "s.txt"));
    assert.ok((await ops.readdir(path.join(dir, "moved"))).some((e) => e.name === "s.txt" && e.type === "file"));
    await ops.remove(path.join(dir, "moved", "s.txt"));
    await assert.rejects(ops.remove(path.join(dir, "moved")), /directory/);
  });
});

describe("withPathLock", () => {
  it("serialises holders of one key and lets other keys run", async () => {
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const a = withPathLock("/k", async () => {
      order.push("a-start");
      await gate;
      order.push("a-end");
    });
    const b = withPathLock("/k", async () => {
      order.push("b");
    });
    const c = withPathLock("/other", async () => {
      order.push("c");
    });
    await c;
    release();
    await Promise.all([a, b]);
    assert.deepEqual(order, ["a-start", "c", "a-end", "b"]);
  });
  it("releases after a failure, and multi-key locking does not deadlock", async () => {
    await assert.rejects(withPathLock("/f", async () => Promise.reject(new Error("boom"))));
    assert.equal(await withPathLock("/f", async () => 1), 1);
    const results = await Promise.all([withPathLocks(["/x", "/y"], async () => "xy"), withPathLocks(["/y", "/x"], async () => "yx")]);
    assert.deepEqual(results, ["xy", "yx"]);
  });
});
