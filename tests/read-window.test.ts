/**
 * The one read-window core (src/environment/readWindow.ts) that read_file (1-based) and
 * WorkbenchBackend.read (deepagents, 0-based) both use, over what the real `readLines` returns.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { createReadFileTool } from "../tools/readFile.js";
import { readLinesOf, readRequest, readWindow, type ReadRequest } from "../src/environment/readWindow.js";
import { LIMITS, LINE_CUT_MARKER, readPastEndMessage } from "../src/guards/limits.js";

let dir: string;
const ops = new LocalFileOperations();
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "wb-readwin-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function fileWith(name: string, text: string): Promise<string> {
  const p = path.join(dir, name);
  await writeFile(p, text);
  return p;
}

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join("\n") + "\n";

async function windowOf(p: string, request: ReadRequest, base: 0 | 1, o: { maxChars?: number; fileSize?: number; maxLineChars?: number } = {}) {
  const read = await ops.readLines(p, { offset: request.firstLine, limit: request.limit, maxLineChars: o.maxLineChars ?? LIMITS.readLineMaxChars });
  return { read, win: readWindow(read, request, base, o) };
}

describe("readRequest: one normalisation, two offset conventions", () => {
  it("maps a 0-based and a 1-based offset to the same first line", () => {
    assert.equal(readRequest(10, 5, 0).firstLine, 11);
    assert.equal(readRequest(11, 5, 1).firstLine, 11);
    assert.equal(readRequest(undefined, undefined, 0).firstLine, 1);
    assert.equal(readRequest(-3, 5, 0).firstLine, 1);
    assert.equal(readRequest(0, 5, 1).firstLine, 1);
    assert.equal(readRequest(Number.NaN, 5, 1).firstLine, 1);
  });
  it("defaults, caps and keeps a limit of 0 as nothing asked", () => {
    assert.deepEqual(readRequest(0, undefined, 0), { firstLine: 1, limit: LIMITS.readDefaultLines, limitCapped: false });
    assert.deepEqual(readRequest(0, -4, 0), { firstLine: 1, limit: LIMITS.readDefaultLines, limitCapped: false });
    assert.deepEqual(readRequest(1, 10_000, 1), { firstLine: 1, limit: LIMITS.readMaxLines, limitCapped: true });
    assert.deepEqual(readRequest(0, 0, 0), { firstLine: 1, limit: 0, limitCapped: false });
    assert.equal(readRequest(1, 0.5, 1).limit, 1);
  });
});

describe("readWindow", () => {
  it("an empty file is empty, not past the end; further in it is past the end of 0 lines", async () => {
    const p = await fileWith("empty.txt", "");
    assert.deepEqual((await windowOf(p, readRequest(0, 10, 0), 0)).win, { kind: "empty" });
    const { win } = await windowOf(p, readRequest(3, 10, 0), 0, { fileSize: 0 });
    assert.equal(win.kind, "past-end");
    assert.match(readPastEndMessage({ ...(win as { offset: number; base: 0 }), totalLines: 0, file: "/empty.txt" }), /offset=3 is past the end of '\/empty\.txt' \(0 lines\): there is nothing to read\./);
  });

  it("offset past the end: one refusal, worded in each convention by the one message builder", async () => {
    const p = await fileWith("thirty.txt", lines(30));
    const zero = (await windowOf(p, readRequest(99, 5, 0), 0)).win;
    assert.deepEqual(zero, { kind: "past-end", offset: 99, base: 0, totalLines: 30, countTotal: false });
    const one = (await windowOf(p, readRequest(100, 5, 1), 1)).win;
    assert.deepEqual(one, { kind: "past-end", offset: 100, base: 1, totalLines: 30, countTotal: false });
    assert.equal(readPastEndMessage({ offset: 99, base: 0, totalLines: 30, file: "/thirty.txt" }), "offset=99 is past the end of '/thirty.txt' (30 lines). Use an offset from 0 to 29.");
    assert.equal(readPastEndMessage({ offset: 100, base: 1, totalLines: 30 }), "offset=100 is past the end of the file (30 lines). Use an offset from 1 to 30.");
    assert.equal(readPastEndMessage({ offset: 7, base: 0, totalLines: 5, file: "/d.pdf", unit: "lines of extracted PDF text" }), "offset=7 is past the end of '/d.pdf' (5 lines of extracted PDF text). Use an offset from 0 to 4.");
    assert.match(readPastEndMessage({ offset: 9, base: 1, totalLines: undefined }), /past the end of the file\. Use a smaller offset/);
    // The line just after the last one is past the end; the last one is not.
    assert.equal((await windowOf(p, readRequest(30, 5, 0), 0)).win.kind, "past-end");
    const last = (await windowOf(p, readRequest(29, 5, 0), 0)).win;
    assert.ok(last.kind === "lines");
    assert.deepEqual([last.lines, last.firstLine, last.endLine, last.more], [["line 30"], 30, 30, false]);
  });

  it("marks cut lines (and keeps them unmarked in raw), numbering them as in the file", async () => {
    const p = await fileWith("wide.txt", `short\n${"x".repeat(50)}\nshort too\n${"y".repeat(60)}\n`);
    const { win } = await windowOf(p, readRequest(1, 4, 1), 1, { maxLineChars: 10 });
    assert.ok(win.kind === "lines");
    assert.deepEqual(win.cutLines, [2, 4]);
    assert.deepEqual(win.lines, ["short", `${"x".repeat(10)}${LINE_CUT_MARKER}`, "short too", `${"y".repeat(10)}${LINE_CUT_MARKER}`]);
    assert.deepEqual(win.raw, ["short", "x".repeat(10), "short too", "y".repeat(10)]);
    // A window starting at line 4 numbers its cut line 4 and marks the first line shown.
    const later = (await windowOf(p, readRequest(3, 5, 0), 0, { maxLineChars: 10 })).win;
    assert.ok(later.kind === "lines");
    assert.deepEqual([later.cutLines, later.lines], [[4], [`${"y".repeat(10)}${LINE_CUT_MARKER}`]]);
  });

  it("the char cap keeps whole lines, always the first even when it alone is over the cap", async () => {
    const p = await fileWith("cap.txt", `${"a".repeat(40)}\nbb\ncc\n`);
    const first = (await windowOf(p, readRequest(0, 10, 0), 0, { maxChars: 20 })).win;
    assert.ok(first.kind === "lines");
    assert.deepEqual([first.lines, first.capped, first.endLine, first.more], [["a".repeat(40)], true, 1, true]);
    // Each line counts with its newline: "bb\ncc\n" is 6 characters.
    const two = (await windowOf(p, readRequest(1, 10, 0), 0, { maxChars: 6 })).win;
    assert.ok(two.kind === "lines");
    assert.deepEqual([two.lines, two.capped, two.more], [["bb", "cc"], false, false]);
    const one = (await windowOf(p, readRequest(1, 10, 0), 0, { maxChars: 5 })).win;
    assert.ok(one.kind === "lines");
    assert.deepEqual([one.lines, one.capped, one.endLine, one.more], [["bb"], true, 2, true]);
  });

  it("more: from hasMore or from a known total; the total is counted only for a file small enough", async () => {
    const p = await fileWith("ten.txt", lines(10));
    const { read, win } = await windowOf(p, readRequest(0, 3, 0), 0, { fileSize: 80 });
    assert.equal(read.hasMore, true);
    assert.equal(read.totalLines, undefined);
    assert.ok(win.kind === "lines");
    assert.deepEqual([win.endLine, win.more, win.countTotal], [3, true, true]);
    // A huge (or unknown) size: do not stream the rest to count.
    const huge = readWindow(read, readRequest(0, 3, 0), 0, { fileSize: LIMITS.readCountLinesMaxBytes + 1 });
    assert.ok(huge.kind === "lines" && !huge.countTotal && huge.more);
    const unknown = readWindow(read, readRequest(0, 3, 0), 0, {});
    assert.ok(unknown.kind === "lines" && !unknown.countTotal);
    // The read reached the end: the total is known, nothing to count, no more.
    const tail = (await windowOf(p, readRequest(7, 3, 0), 0, { fileSize: 80 })).win;
    assert.ok(tail.kind === "lines");
    assert.deepEqual([tail.endLine, tail.more, tail.countTotal], [10, false, false]);
    // A known total past the end of the window means more even without hasMore (e.g. lines from memory).
    const fromTotal = readWindow({ lines: ["a", "b"], cutLines: [], hasMore: false, totalLines: 5 }, { firstLine: 1, limit: 2 }, 1);
    assert.ok(fromTotal.kind === "lines" && fromTotal.more);
  });

  it("limit 0 asks for nothing: no lines, and neither empty nor past the end", async () => {
    const p = await fileWith("some.txt", lines(3));
    const request = readRequest(0, 0, 0);
    const { win } = await windowOf(p, request, 0);
    assert.ok(win.kind === "lines");
    assert.deepEqual([win.lines, win.endLine, win.capped], [[], 0, false]);
  });
});

describe("readLinesOf: lines in memory window like a file's", () => {
  it("gives what readLines gives for the same text", async () => {
    const all = ["one", "x".repeat(30), "three", "four"];
    const p = await fileWith("mem.txt", all.join("\n") + "\n");
    for (const request of [readRequest(0, 2, 0), readRequest(1, 2, 0), readRequest(2, 10, 0)]) {
      const fromFile = await ops.readLines(p, { offset: request.firstLine, limit: request.limit, maxLineChars: 8 });
      const fromMemory = readLinesOf(all, request, 8);
      assert.deepEqual([fromMemory.lines, fromMemory.cutLines, fromMemory.hasMore], [fromFile.lines, fromFile.cutLines, fromFile.hasMore]);
      assert.equal(fromMemory.totalLines, 4);
    }
    assert.deepEqual(readWindow(readLinesOf(all, readRequest(9, 2, 0), 8), readRequest(9, 2, 0), 0), { kind: "past-end", offset: 9, base: 0, totalLines: 4, countTotal: false });
  });
});

describe("read_file and WorkbenchBackend.read share the window", () => {
  it("past the end: the same sentence, each in its own offset convention", async () => {
    const root = path.join(dir, "both");
    const ws = path.join(root, "t1");
    await mkdir(ws, { recursive: true });
    await writeFile(path.join(ws, "f.txt"), lines(30) + `${"z".repeat(3000)}\n`);
    const tool = createReadFileTool({ rootDir: root });
    const out = JSON.parse(String(await tool.invoke({ path: "f.txt", offset: 100 } as never, { configurable: { thread_id: "t1" } })));
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t1" });
    const past = await backend.read("/f.txt", 99, 5);
    assert.equal(out.hint, readPastEndMessage({ offset: 100, base: 1, totalLines: 31 }));
    assert.equal(past.error, readPastEndMessage({ offset: 99, base: 0, totalLines: 31, file: "/f.txt" }));
    // The cut line carries the one marker in both.
    const toolLast = JSON.parse(String(await tool.invoke({ path: "f.txt", offset: 31 } as never, { configurable: { thread_id: "t1" } })));
    const backendLast = await backend.read("/f.txt", 30, 1);
    assert.equal(toolLast.content, `31|${"z".repeat(LIMITS.readLineMaxChars)}${LINE_CUT_MARKER}`);
    assert.equal(backendLast.content, `${"z".repeat(LIMITS.readLineMaxChars)}${LINE_CUT_MARKER}`);
  });
});
