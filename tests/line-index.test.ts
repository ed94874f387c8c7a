/**
 * The sparse line index of read_file: windows read from an indexed offset equal a full scan
 * (CRLF, no trailing newline, very long lines), the tool uses its index on repeat reads, and a
 * file changed between reads is never read through a stale index.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { LineIndexBuilder, LineIndexCache, lineStartFor, type LineIndex, type LineStart } from "../src/environment/lineIndex.js";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import type { OpenGuard } from "../src/environment/fileOperations.js";
import { FileToolCaches } from "../tools/lineCounts.js";
import { createReadFileTool } from "../tools/readFile.js";

let tmp: string;
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-lineidx-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const ops = new LocalFileOperations();

function corpus(kind: string, lines: number): string {
  const out: string[] = [];
  for (let i = 1; i <= lines; i++) {
    const body = kind === "long" && i % 7 === 0 ? "x".repeat(5000 + i) : kind === "unicode" ? `zeile ${i} ✓ 😀 ${"é".repeat(i % 13)}` : `line ${i}`;
    out.push(body);
  }
  const eol = kind === "crlf" ? "\r\n" : "\n";
  return out.join(eol) + (kind === "no-trailing-newline" ? "" : eol);
}

describe("line index: windows via the index equal a full scan", () => {
  for (const kind of ["lf", "crlf", "no-trailing-newline", "long", "unicode"]) {
    it(kind, async () => {
      const file = path.join(tmp, `${kind}.txt`);
      await writeFile(file, corpus(kind, 700));
      const index = await ops.indexLines(file, 16);
      const total = await ops.countLines(file);
      assert.equal(index.totalLines, total, "the index counts like countLines");
      for (const offset of [1, 16, 17, 33, 100, 401, 689, 700, 701, 750]) {
        for (const limit of [1, 5, 40]) {
          const window = { offset, limit, maxLineChars: 2000 };
          const start = lineStartFor(index, offset);
          const plain = await ops.readLines(file, window);
          const viaIndex = await ops.readLines(file, { ...window, ...(start ? { start } : {}) });
          assert.deepEqual(viaIndex, plain, `${kind} offset ${offset} limit ${limit}`);
        }
      }
    });
  }

  it("records the byte offset of every N-th line, also across chunk borders", () => {
    const text = Buffer.from(corpus("unicode", 100));
    const b = new LineIndexBuilder(10);
    for (let i = 0; i < text.length; i += 7) b.push(text.subarray(i, i + 7));
    const index = b.finish();
    const starts = [0];
    for (let i = 0; i < text.length; i++) if (text[i] === 0x0a) starts.push(i + 1);
    assert.deepEqual([...index.offsets], starts.filter((_, k) => k % 10 === 0).slice(0, index.offsets.length));
    assert.equal(index.offsets.length, 11);
    assert.equal(index.totalLines, 100);
  });

  it("a start that no longer fits the file (changed content, other inode) is ignored", async () => {
    const file = path.join(tmp, "changing.txt");
    await writeFile(file, corpus("lf", 300));
    const index = await ops.indexLines(file, 16);
    const start = lineStartFor(index, 200)!;
    const before = await stat(file);
    // Same size, same mtime, lines shifted by one byte: the byte before the offset is no newline.
    const shifted = "X" + corpus("lf", 300).slice(0, -1);
    await writeFile(file, shifted);
    await utimes(file, before.atime, before.mtime);
    const window = { offset: 200, limit: 3, maxLineChars: 2000 };
    assert.deepEqual(await ops.readLines(file, { ...window, start }), await ops.readLines(file, window));
    // Replaced by rename (another inode) with identical bytes around the offset: the inode decides.
    const other = path.join(tmp, "other.txt");
    await writeFile(other, corpus("lf", 300).replace("line 1\n", "LINE 1\n"));
    await rename(other, file);
    const wrongLine: LineStart = { ...start, line: start.line + 1 };
    assert.deepEqual(await ops.readLines(file, { ...window, start: wrongLine }), await ops.readLines(file, window), "another inode: the start is not trusted");
  });
});

describe("line index cache", () => {
  const index = (n: number): LineIndex => ({ every: 1, offsets: new Float64Array(n), totalLines: n });

  it("is bounded by bytes and entries, least recently used first out", () => {
    const cache = new LineIndexCache(8 * 100, 3);
    cache.set("a", index(40));
    cache.set("b", index(40));
    assert.equal(cache.size, 640);
    cache.get("a");
    cache.set("c", index(40)); // over 800 bytes: b (least recently used) goes
    assert.equal(cache.get("b"), undefined);
    assert.ok(cache.get("a") && cache.get("c"), "a and c stay");
    cache.set("huge", index(101));
    assert.equal(cache.get("huge"), undefined, "an index over the byte cap is not kept");
    for (const k of ["d", "e", "f"]) cache.set(k, index(1));
    assert.equal(cache.count, 3, "entry cap");
    cache.close();
    assert.equal(cache.count, 0);
    assert.equal(cache.size, 0);
  });
});

describe("read_file uses its line index", () => {
  /** The real local backend, recording the starts read_file asks for. */
  class RecordingOps extends LocalFileOperations {
    starts: (LineStart | undefined)[] = [];
    indexed = 0;
    override readLines(p: string, window: { offset: number; limit: number; maxLineChars: number; start?: LineStart }, guard?: OpenGuard) {
      this.starts.push(window.start);
      return super.readLines(p, window, guard);
    }
    override indexLines(p: string, every: number, guard?: OpenGuard) {
      this.indexed++;
      return super.indexLines(p, every, guard);
    }
  }

  it("repeat reads deep in a big file start at an indexed offset and match the file; a changed file is re-indexed", async () => {
    const root = path.join(tmp, "root");
    await mkdir(path.join(root, "t"), { recursive: true });
    const file = path.join(root, "t", "big.log");
    const lines = 40_000;
    const make = (tag: string) => Array.from({ length: lines }, (_, i) => `${tag} ${i + 1} ${"y".repeat(20)}`).join("\n") + "\n";
    await writeFile(file, make("a"));
    const recording = new RecordingOps();
    const caches = new FileToolCaches();
    const tool = createReadFileTool({ rootDir: root, fileOps: recording, caches });
    const cfg = { configurable: { thread_id: "t" } };
    const read = async (offset: number) => JSON.parse(String(await tool.invoke({ path: "big.log", offset, limit: 3 }, cfg)));

    const first = await read(30_000);
    await caches.settle();
    assert.equal(first.content, `30000|a 30000 ${"y".repeat(20)}\n30001|a 30001 ${"y".repeat(20)}\n30002|a 30002 ${"y".repeat(20)}`);
    assert.equal(recording.starts.at(-1), undefined, "no index before the first count");
    assert.equal(recording.indexed, 1, "the count built the index");

    const again = await read(30_000);
    assert.equal(again.content, first.content);
    const used = recording.starts.at(-1);
    assert.ok(used && used.line > 28_000 && used.line <= 30_000, `the repeat read started near its window (${JSON.stringify(used)})`);

    // The file changes (another mtime and size): the old index is not used, the answer is the new text.
    await writeFile(file, make("bb"));
    const changed = await read(30_000);
    assert.match(changed.content, /^30000\|bb 30000 /);
    assert.equal(recording.starts.at(-1), undefined, "a changed file is read without the stale index");
    await caches.settle();
    assert.equal(recording.indexed, 2, "and indexed again");
    assert.match((await read(39_999)).content, /^39999\|bb 39999 /);
    assert.ok(recording.starts.at(-1), "the new index is used");
    await caches.close();
  });
});
