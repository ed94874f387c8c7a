// Multimodal reads: images as image content blocks and PDF text, through our read_file (alone,
// inside createAgent with the workbench) and through WorkbenchBackend under createDeepAgent.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createDeepAgent } from "deepagents";
import { createAgent } from "langchain";
import { createFileManagerMiddleware } from "../middleware/fileManager.js";
import { isWorkspaceTreeMessage } from "../middleware/treeMessage.js";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { LIMITS } from "../src/guards/limits.js";
import { PdfExtractor } from "../src/media/pdf.js";
import { sniffMedia } from "../src/guards/sniffMedia.js";
import { createWorkbench } from "../src/workbench.js";
import type { FileToolOptions } from "../tools/fileToolSupport.js";
import { createReadFileTool } from "../tools/readFile.js";
import { minimalPdf } from "./helpers/pdf.js";

// A real 1×1 PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from("JFIF\0"), Buffer.alloc(32, 7)]);
const GIF = Buffer.concat([Buffer.from("GIF89a"), Buffer.from([1, 0, 1, 0, 0x80, 0, 0]), Buffer.alloc(16)]);
const WEBP = Buffer.concat([Buffer.from("RIFF"), Buffer.from([30, 0, 0, 0]), Buffer.from("WEBPVP8 "), Buffer.alloc(18, 1)]);
const PDF = minimalPdf([["Alpha page one", "second line of one"], ["Bravo page two"], ["Charlie page three (last)"]]);

let root: string;
let ws: string;
const cfg = { configurable: { thread_id: "t1" } };

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-media-"));
  ws = path.join(root, "t1");
  await mkdir(ws, { recursive: true });
  await writeFile(path.join(ws, "shot.png"), PNG);
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

type Block = Record<string, any>;

async function readRaw(args: Record<string, unknown>, options: FileToolOptions = {}): Promise<unknown> {
  const t = createReadFileTool({ rootDir: root, ...options });
  return t.invoke(args as never, cfg);
}

async function readJson(args: Record<string, unknown>, options: FileToolOptions = {}): Promise<Record<string, any>> {
  const out = await readRaw(args, options);
  if (Array.isArray(out)) return JSON.parse((out[0] as Block).text);
  return JSON.parse(typeof out === "string" ? out : String((out as ToolMessage).content));
}

function imageOf(content: unknown): Block | undefined {
  return Array.isArray(content) ? (content as Block[]).find((b) => b?.type === "image") : undefined;
}

describe("media sniffing (magic bytes)", () => {
  it("knows PNG, JPEG, GIF, WebP and PDF by content, and nothing else", () => {
    assert.deepEqual(sniffMedia(PNG), { kind: "image", mimeType: "image/png" });
    assert.deepEqual(sniffMedia(JPEG), { kind: "image", mimeType: "image/jpeg" });
    assert.deepEqual(sniffMedia(GIF), { kind: "image", mimeType: "image/gif" });
    assert.deepEqual(sniffMedia(WEBP), { kind: "image", mimeType: "image/webp" });
    assert.deepEqual(sniffMedia(PDF), { kind: "pdf", mimeType: "application/pdf" });
    assert.deepEqual(sniffMedia(Buffer.concat([Buffer.from("junk before\n"), PDF])), { kind: "pdf", mimeType: "application/pdf" }, "header within the first 1 KiB");
    assert.equal(sniffMedia(Buffer.from("RIFF\0\0\0\0WAVEfmt ")), undefined, "RIFF that is not WebP");
    assert.equal(sniffMedia(Buffer.from([0x89, 0x50, 0x4e, 0x47])), undefined, "a truncated PNG signature");
    assert.equal(sniffMedia(Buffer.from("hello")), undefined);
    assert.equal(sniffMedia(Buffer.alloc(0)), undefined);
  });
});

describe("read_file: images", () => {
  it("a PNG comes back as a JSON text block plus a standard image block with the exact bytes", async () => {
    const out = await readRaw({ path: "shot.png" });
    assert.ok(Array.isArray(out), "content blocks, not a string");
    const [meta, image] = out as Block[];
    assert.equal(meta!.type, "text");
    const parsed = JSON.parse(meta!.text);
    assert.equal(parsed.path, "shot.png");
    assert.equal(parsed.mime_type, "image/png");
    assert.equal(parsed.file_size, PNG.length);
    assert.deepEqual(image, { type: "image", mimeType: "image/png", data: PNG.toString("base64") });
  });
  it("JPEG, GIF and WebP too, and the type comes from the bytes, not the name", async () => {
    await writeFile(path.join(ws, "a.jpg"), JPEG);
    await writeFile(path.join(ws, "b.gif"), GIF);
    await writeFile(path.join(ws, "c.webp"), WEBP);
    await writeFile(path.join(ws, "really-a-png.txt"), PNG);
    await writeFile(path.join(ws, "named.gif"), PNG);
    for (const [name, mime] of [["a.jpg", "image/jpeg"], ["b.gif", "image/gif"], ["c.webp", "image/webp"], ["really-a-png.txt", "image/png"], ["named.gif", "image/png"]]) {
      const block = imageOf(await readRaw({ path: name }));
      assert.equal(block?.mimeType, mime, `${name} is ${mime}`);
    }
  });
  it("an image name with other content, and other image formats, are refused with guidance", async () => {
    await writeFile(path.join(ws, "fake.png"), "just text, not a PNG\n");
    assert.match((await readJson({ path: "fake.png" })).error, /image in a format read_file cannot show.*Convert it to PNG/);
    await writeFile(path.join(ws, "pic.bmp"), Buffer.concat([Buffer.from("BM"), Buffer.alloc(60)]));
    assert.match((await readJson({ path: "pic.bmp" })).error, /cannot show/);
    await writeFile(path.join(ws, "empty.png"), "");
    assert.match((await readJson({ path: "empty.png" })).error, /cannot show/, "an empty file with an image name is refused by its name");
    await writeFile(path.join(ws, "prog.bin"), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, 0, 0]));
    assert.match((await readJson({ path: "prog.bin" })).error, /binary file/);
  });
  it("an image over the size cap is refused with what to do; the cap is an option", async () => {
    const big = Buffer.concat([PNG, Buffer.alloc(3000, 1)]);
    await writeFile(path.join(ws, "big.png"), big);
    const r = await readJson({ path: "big.png" }, { maxImageBytes: 2048 });
    assert.match(r.error, /is too large to read: an image of 3 KB, over the 2 KB limit for images.*smaller copy/);
    assert.ok(imageOf(await readRaw({ path: "big.png" })), "fits the default cap");
    assert.equal(LIMITS.imageMaxBytes, 5 * 1024 * 1024);
    assert.throws(() => createReadFileTool({ rootDir: root, maxImageBytes: 0 }), /maxImageBytes/);
  });
  it("readImages: false refuses images with guidance (for providers without images in tool results)", async () => {
    assert.match((await readJson({ path: "shot.png" }, { readImages: false })).error, /showing images to the model is turned off/);
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t1", readImages: false });
    assert.match((await backend.read("/shot.png")).error ?? "", /turned off/);
    await writeFile(path.join(ws, "off.pdf"), PDF);
    assert.equal((await readJson({ path: "off.pdf" }, { readImages: false })).total_pages, 3, "PDF text is unaffected");
    assert.throws(() => createReadFileTool({ rootDir: root, readImages: "no" as never }), /readImages must be a boolean/);
  });
  it("a credential file is refused even when it holds an image; a symlink to an image inside is read", async () => {
    await writeFile(path.join(ws, ".env"), PNG);
    assert.match((await readJson({ path: ".env" })).error, /protected credential file/);
    await symlink("shot.png", path.join(ws, "link.png"));
    assert.equal(imageOf(await readRaw({ path: "link.png" }))?.data, PNG.toString("base64"));
  });
  it("goes through the thread's FileOperations (a shell backend returns the same bytes)", async () => {
    const fileOps = new ShellFileOperations(new LocalShellEnvironment());
    const block = imageOf(await readRaw({ path: "shot.png" }, { fileOps }));
    assert.equal(block?.data, PNG.toString("base64"));
    await writeFile(path.join(ws, "shell.pdf"), PDF);
    const pdf = await readJson({ path: "shell.pdf", offset: 2, limit: 1 }, { fileOps });
    assert.match(pdf.content, /^--- page 2 of 3 ---\nBravo page two$/);
  });
});

describe("read_file: PDF", () => {
  before(async () => {
    await writeFile(path.join(ws, "doc.pdf"), PDF);
  });
  it("returns the text of all pages (up to the page window) with page headers", async () => {
    const r = await readJson({ path: "doc.pdf" });
    assert.equal(r.mime_type, "application/pdf");
    assert.equal(r.total_pages, 3);
    assert.equal(r.pages, "1-3");
    assert.equal(r.truncated, false);
    assert.match(r.content, /^--- page 1 of 3 ---\nAlpha page one\nsecond line of one\n\n--- page 2 of 3 ---\nBravo page two\n\n--- page 3 of 3 ---\nCharlie page three \(last\)$/);
  });
  it("offset and limit count pages; the hint says where to continue", async () => {
    const r = await readJson({ path: "doc.pdf", offset: 2, limit: 1 });
    assert.equal(r.pages, "2-2");
    assert.match(r.content, /page 2 of 3/);
    assert.doesNotMatch(r.content, /Alpha|Charlie/);
    assert.equal(r.truncated, true);
    assert.match(r.hint, /offset=3 to continue reading \(showing pages 2-2 of 3/);
    const past = await readJson({ path: "doc.pdf", offset: 9 });
    assert.equal(past.content, "");
    assert.match(past.hint, /past the last page \(3 pages\)/);
  });
  it("at most pdfPagesPerRead pages per call, and a character cap at a page boundary", async () => {
    const many = minimalPdf(Array.from({ length: LIMITS.pdfPagesPerRead + 5 }, (_, i) => [`Page number ${i + 1} ${"x".repeat(40)}`]));
    await writeFile(path.join(ws, "many.pdf"), many);
    const r = await readJson({ path: "many.pdf", limit: 100 });
    assert.equal(r.pages, `1-${LIMITS.pdfPagesPerRead}`);
    assert.match(r.hint, /capped at 20 pages/);
    const small = await readJson({ path: "many.pdf" }, { maxReadChars: 200 });
    assert.ok(small.content.length <= 200, "within maxReadChars");
    assert.match(small.pages, /^1-[12]$/);
    assert.match(small.hint, /Use offset=\d+ to continue/);
  });
  it("secrets in PDF text are masked", async () => {
    const token = `ghp_${"A1b2C3d4E5".repeat(3)}abcdef`;
    await writeFile(path.join(ws, "secret.pdf"), minimalPdf([[`token ${token}`]]));
    const r = await readJson({ path: "secret.pdf" });
    assert.ok(!r.content.includes(token), "token masked");
    assert.match(r.content, /redacted/);
  });
  it("a damaged PDF and an over-size PDF are refused with guidance", async () => {
    await writeFile(path.join(ws, "broken.pdf"), "%PDF-1.4\nthis is not really a pdf\n");
    assert.match((await readJson({ path: "broken.pdf" })).error, /could not be read as a PDF/);
    const huge = Buffer.concat([Buffer.from("%PDF-1.4\n"), Buffer.alloc(LIMITS.pdfMaxBytes, 0x20)]);
    await writeFile(path.join(ws, "huge.pdf"), huge);
    assert.match((await readJson({ path: "huge.pdf" })).error, /over the 32 MB limit for text extraction/);
    await rm(path.join(ws, "huge.pdf"));
  });
});

describe("a vision-style run: read_file of a PNG reaches the model as an image block", () => {
  it("createAgent + the workbench (FileManager middleware, path rewriting)", async () => {
    const wb = createWorkbench({ rootDir: root, webTools: false });
    const model = fakeModel()
      .respond(new AIMessage({ content: "", tool_calls: [{ name: "read_file", args: { path: "shot.png" }, id: "img1", type: "tool_call" }] }))
      .respond(new AIMessage("a single pixel"));
    const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer: new MemorySaver() });
    await agent.invoke({ messages: [new HumanMessage("what is in shot.png?")] }, cfg);
    const seen = model.calls[1]!.messages as BaseMessage[];
    const toolMsg = seen.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "img1");
    assert.ok(toolMsg, "the tool result reached the model");
    assert.equal(toolMsg.status, "success");
    assert.deepEqual(imageOf(toolMsg.content), { type: "image", mimeType: "image/png", data: PNG.toString("base64") }, "image block intact (base64 not rewritten)");
    assert.match(JSON.stringify(seen.filter(isWorkspaceTreeMessage).map((m) => m.content)), /shot\.png/, "the tree is still shown");
    const meta = (toolMsg.content as Block[])[0]!;
    assert.equal(JSON.parse(meta.text).path, "shot.png");
    assert.ok(!JSON.stringify(seen.map((m) => m.content)).includes(root), "no host path reaches the model");
    await wb.close();
  });
  it("createDeepAgent with WorkbenchBackend and the FileManager: deepagents' read_file hands the model an image block, and PDF text", async () => {
    const backend = new WorkbenchBackend({ rootDir: root });
    const fileManager = createFileManagerMiddleware({ rootDir: root, tracker: { kind: "polling" } });
    const model = fakeModel()
      .respond(
        new AIMessage({
          content: "",
          tool_calls: [
            { name: "read_file", args: { file_path: "/shot.png" }, id: "img", type: "tool_call" },
            { name: "read_file", args: { file_path: "/doc.pdf" }, id: "pdf", type: "tool_call" },
          ],
        }),
      )
      .respond(new AIMessage("seen"));
    const agent = createDeepAgent({ model, backend, middleware: [fileManager], checkpointer: new MemorySaver() });
    await agent.invoke({ messages: [new HumanMessage("look")] }, cfg);
    await fileManager.close();
    const seen = model.calls[1]!.messages as BaseMessage[];
    const tree = seen.filter(isWorkspaceTreeMessage);
    assert.equal(tree.length, 1, "one live tree message next to the image block");
    assert.match(JSON.stringify(tree[0]!.content), /shot\.png/);
    assert.ok(!JSON.stringify(seen.map((m) => m.content)).includes(root), "no host path reaches the model");
    const byId = (id: string) => seen.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === id)!;
    const img = imageOf(byId("img").content);
    assert.equal(img?.mimeType, "image/png");
    assert.equal(img?.data, PNG.toString("base64"));
    const pdfText = JSON.stringify(byId("pdf").content);
    assert.match(pdfText, /Alpha page one/);
    assert.match(pdfText, /Charlie page three/);
  });
});

describe("WorkbenchBackend: read and readRaw of media", () => {
  const backend = () => new WorkbenchBackend({ rootDir: root, threadId: "t1" });
  it("read returns image bytes with their MIME type; readRaw too", async () => {
    const r = await backend().read("/shot.png");
    assert.equal(r.error, undefined);
    assert.equal(r.mimeType, "image/png");
    assert.ok(r.content instanceof Uint8Array);
    assert.deepEqual(Buffer.from(r.content as Uint8Array), PNG);
    const raw = await backend().readRaw("/shot.png");
    assert.equal(raw.data && "mimeType" in raw.data ? raw.data.mimeType : undefined, "image/png");
    assert.deepEqual(Buffer.from(raw.data!.content as Uint8Array), PNG);
  });
  it("the image cap and other binaries are refused", async () => {
    const small = new WorkbenchBackend({ rootDir: root, threadId: "t1", maxImageBytes: 16 });
    assert.match((await small.read("/shot.png")).error ?? "", /over the .* limit for images/);
    assert.match((await backend().read("/prog.bin")).error ?? "", /binary file/);
    assert.match((await backend().read("/fake.png")).error ?? "", /cannot show/);
  });
  it("a PDF reads as text lines, windowed by offset/limit like any text file", async () => {
    const all = await backend().read("/doc.pdf");
    assert.equal(all.mimeType, "text/plain");
    assert.match(String(all.content), /^--- page 1 of 3 ---\nAlpha page one/);
    const lines = String(all.content).split("\n");
    assert.equal(all.totalLines, lines.length);
    const window = await backend().read("/doc.pdf", 4, 2);
    assert.equal(window.content, lines.slice(4, 6).join("\n"));
    assert.equal(window.nextOffset, 6);
    assert.match((await backend().read("/doc.pdf", 500, 5)).error ?? "", /past the end/);
    const raw = await backend().readRaw("/doc.pdf");
    assert.equal(raw.data && "mimeType" in raw.data ? raw.data.mimeType : undefined, "application/pdf");
  });
  it("edit of an image is refused as not text", async () => {
    const r = await backend().edit("/shot.png", "PNG", "JPG");
    assert.match(r.error ?? "", /is an image, not a text file/);
  });
});

describe("PDF extraction runs in a worker with a deadline", () => {
  it("a document past the deadline is stopped with guidance; the next extraction gets a fresh worker", async () => {
    const extractor = new PdfExtractor();
    try {
      await assert.rejects(extractor.extract(PDF, { first: 1, count: 3 }, 1), /took longer than 0 s to extract and was stopped/);
      const again = await extractor.extract(PDF, { first: 2, count: 1 });
      assert.deepEqual(again, { totalPages: 3, pages: [{ page: 2, text: "Bravo page two" }] });
      await assert.rejects(extractor.extract(Buffer.from("%PDF-1.4 nothing"), { first: 1, count: 1 }), /could not be read as a PDF/);
    } finally {
      await extractor.close();
    }
  });
});
