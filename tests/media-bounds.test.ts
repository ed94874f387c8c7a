// Hostile media on the host side: a PDF flate bomb is extracted in a child process under the
// kernel's memory cap (the read fails with a clear error ToolMessage, the agent's process stays
// small and keeps reading PDFs), and the media route never opens a FIFO, socket or directory.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { mkdir, mkdtemp, open, rm, symlink, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { LIMITS, pdfMemoryMessage } from "../src/guards/limits.js";
import { PdfExtractor } from "../src/media/pdf.js";
import { openForRead } from "../src/media/read.js";
import { createReadFileTool } from "../tools/readFile.js";
import { flateBombPdf } from "./helpers/pdfBomb.js";
import { minimalPdf } from "./helpers/pdf.js";

const run = promisify(execFile);
const MiB = 1024 * 1024;
const PDF = minimalPdf([["Alpha page one"], ["Bravo page two"]]);

let root: string;
let ws: string;
const cfg = { configurable: { thread_id: "t1" } };

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-media-bounds-"));
  ws = path.join(root, "t1");
  await mkdir(ws, { recursive: true });
  await writeFile(path.join(ws, "doc.pdf"), PDF);
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

function toolMessages(messages: BaseMessage[]): Map<string, ToolMessage> {
  return new Map(messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m)).map((m) => [m.tool_call_id, m]));
}

describe("a PDF flate bomb", () => {
  it("fails that one read with an error ToolMessage naming the memory cap; the agent's process stays small; the next PDF reads", { timeout: 180_000 }, async () => {
    // 1 GiB of spaces in a ~1 MB file: PDF.js inflated it to a 2.2 GB peak inside this process before.
    const bomb = await flateBombPdf(1024 * MiB);
    assert.ok(bomb.length < 1.5 * MiB, `the bomb is small (${bomb.length} bytes)`);
    await writeFile(path.join(ws, "bomb.pdf"), bomb);
    const rssBefore = process.memoryUsage().rss;
    const model = fakeModel()
      .respond(new AIMessage({ content: "", tool_calls: [{ name: "read_file", args: { path: "bomb.pdf" }, id: "bomb", type: "tool_call" }] }))
      .respond(new AIMessage({ content: "", tool_calls: [{ name: "read_file", args: { path: "doc.pdf" }, id: "doc", type: "tool_call" }] }))
      .respond(new AIMessage("done"));
    const agent = createAgent({ model, tools: [createReadFileTool({ rootDir: root })], checkpointer: new MemorySaver() });
    const out = await agent.invoke({ messages: [new HumanMessage("read them")] }, cfg);
    const peakGrowth = process.resourceUsage().maxRSS * 1024 - rssBefore;
    const byId = toolMessages(out.messages as BaseMessage[]);

    const failed = byId.get("bomb")!;
    assert.equal(failed.status, "error");
    const error = JSON.parse(String(failed.content)).error as string;
    assert.equal(error, `"bomb.pdf" ${pdfMemoryMessage()}`);
    assert.match(error, /more than the 512 MiB of memory allowed for a PDF/);
    assert.ok(!error.includes(root), "no host path");
    assert.ok(peakGrowth < 300 * MiB, `this process grew by at most 300 MiB (grew ${Math.round(peakGrowth / MiB)} MiB)`);

    const next = byId.get("doc")!;
    assert.notEqual(next.status, "error");
    assert.match(JSON.parse(String(next.content)).content, /Alpha page one[\s\S]*Bravo page two/);
  });

  it("the cap is the extractor's; over it the process is replaced and the next extraction works", { timeout: 120_000 }, async () => {
    const extractor = new PdfExtractor({ memoryBytes: 128 * MiB });
    try {
      const first = await extractor.extract(PDF, { first: 1, count: 1 });
      assert.deepEqual(first, { totalPages: 2, pages: [{ page: 1, text: "Alpha page one" }] });
      const pid = extractor.pid;
      assert.ok(pid, "a warm process is kept between reads");
      await extractor.extract(PDF, { first: 2, count: 1 });
      assert.equal(extractor.pid, pid, "and reused");
      await assert.rejects(extractor.extract(await flateBombPdf(512 * MiB), { first: 1, count: 1 }), (err: Error) => err.message === pdfMemoryMessage(128 * MiB));
      assert.equal(extractor.pid, undefined, "the process that hit the cap is gone");
      assert.deepEqual(await extractor.extract(PDF, { first: 2, count: 1 }), { totalPages: 2, pages: [{ page: 2, text: "Bravo page two" }] });
      assert.notEqual(extractor.pid, pid);
    } finally {
      await extractor.close();
    }
    assert.equal(LIMITS.pdfMemoryBytes, 512 * MiB);
    assert.throws(() => new PdfExtractor({ memoryBytes: 1024 }), /at least 64 MiB/);
  });

  it("the extraction process gets none of the agent's environment", { timeout: 60_000 }, async () => {
    const extractor = new PdfExtractor();
    process.env.WB_SECRET_FOR_TEST = "do-not-leak";
    try {
      await extractor.extract(PDF, { first: 1, count: 1 });
      const pid = extractor.pid!;
      // The child is `node` after the wrapper's exec: only node's IPC variables and the shell's PWD.
      const { stdout } = await run("cat", [`/proc/${pid}/environ`]);
      const names = stdout.split("\0").filter(Boolean).map((kv) => kv.slice(0, kv.indexOf("=")));
      assert.deepEqual(names.filter((n) => !n.startsWith("NODE_CHANNEL_") && n !== "PWD"), []);
      assert.ok(!stdout.includes("do-not-leak"));
      assert.ok(stdout.includes("PWD=/\0"), "it runs in /, not in a workspace");
      const { stdout: limits } = await run("cat", [`/proc/${pid}/limits`]);
      const data = limits.split("\n").find((l) => l.startsWith("Max data size"))!;
      assert.match(data, new RegExp(`\\s${LIMITS.pdfMemoryBytes}\\s`), "RLIMIT_DATA is set on the extraction process");
    } finally {
      delete process.env.WB_SECRET_FOR_TEST;
      await extractor.close();
    }
  });
});

describe("the media route opens only the regular file that was listed", () => {
  const ops = new LocalFileOperations();
  const target = (name: string) => ({ systemPath: path.join(ws, name), shown: name, names: [path.join(ws, name)] });

  it("a FIFO named x.pdf, with a writer holding it open and PDF bytes waiting, is refused without reading it", { timeout: 30_000 }, async () => {
    const fifo = path.join(ws, "x.pdf");
    await run("mkfifo", [fifo]);
    // O_RDWR on a FIFO never blocks (Linux): the writer end stays open with a PDF queued in it.
    const writer = await open(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    try {
      await writer.write(PDF.subarray(0, 4096));
      // As if it were swapped in after the caller's stat: openForRead checks for itself.
      const opened = await openForRead(ops, target("x.pdf"), PDF.length, undefined, LIMITS.imageMaxBytes);
      assert.deepEqual(opened, { kind: "refused", reason: '"x.pdf" is not a regular file (a FIFO, socket or device); reading it could block forever, so it is never opened.' });
      // The tools say so too, and nothing hangs.
      const tool = createReadFileTool({ rootDir: root });
      assert.match(JSON.parse(String(await tool.invoke({ path: "x.pdf" } as never, cfg))).error, /not a regular file/);
      const backend = new WorkbenchBackend({ rootDir: root, threadId: "t1" });
      assert.match((await backend.read("/x.pdf")).error ?? "", /not a regular file/);
      assert.match((await backend.readRaw("/x.pdf")).error ?? "", /not a regular file/);
    } finally {
      await writer.close();
      await rm(fifo, { force: true });
    }
  });

  it("a symlink to a FIFO, a socket and a directory named like a PDF are refused", { timeout: 30_000 }, async () => {
    const fifo = path.join(ws, "pipe");
    await run("mkfifo", [fifo]);
    await symlink("pipe", path.join(ws, "link.pdf"));
    const server = net.createServer();
    const sock = path.join(ws, "s.pdf");
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    await mkdir(path.join(ws, "dir.pdf"));
    try {
      for (const name of ["link.pdf", "s.pdf"]) {
        const opened = await openForRead(ops, target(name), 100, undefined, LIMITS.imageMaxBytes);
        assert.equal(opened.kind, "refused", name);
        assert.match((opened as { reason: string }).reason, /not a regular file/, name);
      }
      const dir = await openForRead(ops, target("dir.pdf"), 100, undefined, LIMITS.imageMaxBytes);
      assert.match((dir as { reason: string }).reason, /is a directory/);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(fifo, { force: true });
      await rm(path.join(ws, "link.pdf"), { force: true });
      await rm(path.join(ws, "dir.pdf"), { recursive: true, force: true });
    }
  });

  it("a regular PDF and a symlink to one inside the workspace still read", async () => {
    await symlink("doc.pdf", path.join(ws, "alias.pdf"));
    for (const name of ["doc.pdf", "alias.pdf"]) {
      const opened = await openForRead(ops, target(name), PDF.length, undefined, LIMITS.imageMaxBytes);
      assert.equal(opened.kind, "pdf", name);
      assert.deepEqual((opened as { bytes: Buffer }).bytes, PDF);
    }
  });
});
