// deepagents 1.14's own FilesystemBackend tests where WorkbenchBackend used to differ (issue 25.5),
// ported: clearing the virtual root, binaries as Uint8Array from read/readRaw (whole, offset and
// limit ignored), audio/video/file blocks through deepagents' read_file, and the error for a
// binary over the read size limit. The deliberate differences are asserted as such.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createDeepAgent } from "deepagents";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { LIMITS } from "../src/guards/limits.js";
import { sniffAudioVideo } from "../src/guards/sniffMedia.js";
import { minimalPdf } from "./helpers/pdf.js";

let root = "";
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-da-protocol-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function seed(thread: string, files: Record<string, string | Buffer>): Promise<string> {
  const dir = path.join(root, thread);
  await mkdir(dir, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  return dir;
}

const PNG_HEADER = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const MP3 = Buffer.concat([Buffer.from("ID3"), Buffer.from([4, 0, 0, 0, 0, 0, 0]), Buffer.alloc(64, 0x55)]);
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from("ftypisom"), Buffer.alloc(64, 1)]);
const PDF = minimalPdf([["Alpha page one"], ["Bravo page two"]]);

type Block = Record<string, unknown>;

async function readThroughDeepAgent(backend: WorkbenchBackend, thread: string, files: string[]): Promise<Map<string, ToolMessage>> {
  const model = fakeModel()
    .respond(new AIMessage({ content: "", tool_calls: files.map((f, i) => ({ name: "read_file", args: { file_path: f }, id: `r${i}`, type: "tool_call" as const })) }))
    .respond(new AIMessage("done"));
  const agent = createDeepAgent({ model, backend, checkpointer: new MemorySaver() });
  const out = await agent.invoke({ messages: [new HumanMessage("read")] }, { configurable: { thread_id: thread } });
  const tools = (out.messages as BaseMessage[]).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
  return new Map(files.map((f, i) => [f, tools.find((m) => m.tool_call_id === `r${i}`)!]));
}

function blocks(m: ToolMessage | undefined): Block[] {
  assert.ok(m, "tool message present");
  return Array.isArray(m.content) ? (m.content as Block[]) : [{ type: "text", text: String(m.content) }];
}

describe("delete", () => {
  it('"/" clears the virtual root\'s contents without deleting the root (deepagents\' rule)', async () => {
    const dir = await seed("t-clear", { "root.txt": "root", "nested/child.txt": "child", "nested/deep/x.md": "x" });
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t-clear" });
    const result = await backend.delete("/");
    assert.equal(result.error, undefined);
    assert.equal(result.path, "/");
    assert.ok((await stat(dir)).isDirectory(), "the root stays");
    assert.deepEqual(await readdir(dir), []);
    // Nothing to clear is not an error either.
    assert.equal((await backend.delete("/")).error, undefined);
    const fresh = new WorkbenchBackend({ rootDir: root, threadId: "t-never-used" });
    assert.equal((await fresh.delete("/")).error, undefined);
  });
  it('"/" through deepagents\' delete tool', async () => {
    const dir = await seed("t-clear-tool", { "a.txt": "a", "b/c.txt": "c" });
    const model = fakeModel()
      .respond(new AIMessage({ content: "", tool_calls: [{ name: "delete", args: { file_path: "/" }, id: "d", type: "tool_call" }] }))
      .respond(new AIMessage("done"));
    const agent = createDeepAgent({ model, backend: new WorkbenchBackend({ rootDir: root }), checkpointer: new MemorySaver() });
    const out = await agent.invoke({ messages: [new HumanMessage("clean")] }, { configurable: { thread_id: "t-clear-tool" } });
    const msg = (out.messages as BaseMessage[]).find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "d")!;
    assert.doesNotMatch(String(msg.content), /error/i, String(msg.content));
    assert.deepEqual(await readdir(dir), []);
  });
});

describe("binary reads", () => {
  it("read returns a PNG (even a bare 8-byte signature) as a Uint8Array, and round-trips through write", async () => {
    await seed("t-bin", { "image.png": PNG_HEADER });
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t-bin" });
    const r = await backend.read("/image.png");
    assert.equal(r.error, undefined);
    assert.ok(r.content instanceof Uint8Array);
    assert.deepEqual(r.content, new Uint8Array(PNG_HEADER));
    assert.equal((await backend.write("/copy.png", PNG_HEADER.toString("base64"))).error, undefined);
    assert.deepEqual((await backend.read("/copy.png")).content, new Uint8Array(PNG_HEADER));
  });
  it("readRaw returns any binary as a Uint8Array with deepagents' MIME type (a truncated PNG signature, an archive)", async () => {
    const zip = Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 0xff, 0xfe, 0, 1]);
    await seed("t-raw", { "image.png": PNG_HEADER.subarray(0, 4), "a.zip": zip, "t.txt": "line1\nline2" });
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t-raw" });
    const png = await backend.readRaw("/image.png");
    assert.equal(png.error, undefined);
    assert.ok(png.data!.content instanceof Uint8Array);
    assert.deepEqual(png.data!.content, new Uint8Array(PNG_HEADER.subarray(0, 4)));
    assert.equal("mimeType" in png.data! ? png.data.mimeType : undefined, "image/png");
    const archive = await backend.readRaw("/a.zip");
    assert.deepEqual(archive.data!.content, new Uint8Array(zip));
    assert.equal("mimeType" in archive.data! ? archive.data.mimeType : undefined, "application/octet-stream");
    assert.equal((await backend.readRaw("/t.txt")).data!.content, "line1\nline2");
    // The guards still apply to raw reads.
    await writeFile(path.join(root, "t-raw", ".env"), PNG_HEADER);
    assert.match((await backend.readRaw("/.env")).error ?? "", /protected credential file/);
  });
  it("offset and limit do not paginate binaries: audio, video and a PDF as a file come back whole", async () => {
    await seed("t-page", { "clip.mp3": MP3, "movie.mp4": MP4, "doc.pdf": PDF });
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t-page" });
    for (const [name, bytes, mime] of [["clip.mp3", MP3, "audio/mpeg"], ["movie.mp4", MP4, "video/mp4"]] as const) {
      const r = await backend.read(`/${name}`, 0, 1);
      assert.equal(r.error, undefined, name);
      assert.equal(r.mimeType, mime);
      assert.deepEqual(r.content, new Uint8Array(bytes));
    }
    const asFile = new WorkbenchBackend({ rootDir: root, threadId: "t-page", pdfAs: "file" });
    const pdf = await asFile.read("/doc.pdf", 0, 1);
    assert.equal(pdf.mimeType, "application/pdf");
    assert.deepEqual(pdf.content, new Uint8Array(PDF));
    // Default: the PDF's text, windowed by lines (a deliberate difference: redacted, paged, any model).
    const text = await backend.read("/doc.pdf", 0, 1);
    assert.equal(text.mimeType, "text/plain");
    assert.equal(text.content, "--- page 1 of 2 ---");
    assert.throws(() => new WorkbenchBackend({ rootDir: root, pdfAs: "pdf" as never }), /pdfAs must be "text" or "file"/);
    assert.throws(() => new WorkbenchBackend({ rootDir: root, readAudioVideo: "yes" as never }), /readAudioVideo must be a boolean/);
  });
  it("deliberate: a name alone does not make a binary readable (2,000 bytes of 0xAB named data.pdf); readRaw still returns them", async () => {
    const junk = Buffer.alloc(2000, 0xab);
    await seed("t-junk", { "data.pdf": junk });
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t-junk", pdfAs: "file" });
    assert.match((await backend.read("/data.pdf", 0, 1)).error ?? "", /binary file/);
    assert.deepEqual((await backend.readRaw("/data.pdf")).data!.content, new Uint8Array(junk));
  });
  it("readAudioVideo: false refuses audio and video", async () => {
    await seed("t-noav", { "clip.mp3": MP3 });
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t-noav", readAudioVideo: false });
    assert.match((await backend.read("/clip.mp3")).error ?? "", /binary file/);
  });
});

describe("content blocks through deepagents' read_file", () => {
  it("audio, video and (with pdfAs: \"file\") a PDF become audio/video/file blocks with the exact bytes", async () => {
    await seed("t-blocks", { "clip.mp3": MP3, "movie.mp4": MP4, "doc.pdf": PDF, "shot.png": PNG_HEADER });
    const byFile = await readThroughDeepAgent(new WorkbenchBackend({ rootDir: root, pdfAs: "file" }), "t-blocks", ["/clip.mp3", "/movie.mp4", "/doc.pdf", "/shot.png"]);
    assert.deepEqual(blocks(byFile.get("/clip.mp3")), [{ type: "audio", mimeType: "audio/mpeg", data: MP3.toString("base64") }]);
    assert.deepEqual(blocks(byFile.get("/movie.mp4")), [{ type: "video", mimeType: "video/mp4", data: MP4.toString("base64") }]);
    assert.deepEqual(blocks(byFile.get("/doc.pdf")), [{ type: "file", mimeType: "application/pdf", data: PDF.toString("base64") }]);
    assert.deepEqual(blocks(byFile.get("/shot.png")), [{ type: "image", mimeType: "image/png", data: PNG_HEADER.toString("base64") }]);
    // The default keeps the PDF as text.
    const byText = await readThroughDeepAgent(new WorkbenchBackend({ rootDir: root }), "t-blocks", ["/doc.pdf"]);
    assert.match(JSON.stringify(blocks(byText.get("/doc.pdf"))), /Alpha page one/);
  });
  it("a binary over the read size limit is refused with deepagents' wording, before it is loaded", async () => {
    const big = Buffer.concat([MP3, Buffer.alloc(LIMITS.binaryReadMaxBytes, 0x55)]);
    await seed("t-big", { "long.mp3": big, "big.png": Buffer.concat([PNG_HEADER, Buffer.alloc(LIMITS.imageMaxBytes, 1)]) });
    const byFile = await readThroughDeepAgent(new WorkbenchBackend({ rootDir: root }), "t-big", ["/long.mp3", "/big.png"]);
    const audio = JSON.stringify(blocks(byFile.get("/long.mp3")));
    assert.match(audio, /file too large to read \(10 MB exceeds the 10 MB limit for binary files\)/);
    assert.ok(!audio.includes(root), "no host path");
    assert.match(JSON.stringify(blocks(byFile.get("/big.png"))), /too large to read: an image of 5 MB, over the 5 MB limit/);
    assert.match((await new WorkbenchBackend({ rootDir: root, threadId: "t-big" }).readRaw("/long.mp3")).error ?? "", /file too large to read/);
  });
});

describe("audio and video sniffing (magic bytes)", () => {
  it("knows deepagents' audio and video containers by content, and not text or images", () => {
    const cases: [Buffer, string][] = [
      [MP3, "audio/mpeg"],
      [Buffer.from([0xff, 0xfb, 0x90, 0x00]), "audio/mpeg"],
      [Buffer.from([0xff, 0xf1, 0x50, 0x80]), "audio/aac"],
      [Buffer.from("RIFF\0\0\0\0WAVEfmt "), "audio/wav"],
      [Buffer.from("RIFF\0\0\0\0AVI LIST"), "video/x-msvideo"],
      [Buffer.from("FORM\0\0\0\0AIFFCOMM"), "audio/aiff"],
      [Buffer.from("OggS\0\x02"), "audio/ogg"],
      [Buffer.from("fLaC\0\0\0\x22"), "audio/flac"],
      [MP4, "video/mp4"],
      [Buffer.concat([Buffer.from([0, 0, 0, 0x14]), Buffer.from("ftypqt  ")]), "video/quicktime"],
      [Buffer.concat([Buffer.from([0, 0, 0, 0x14]), Buffer.from("ftyp3gp5")]), "video/3gpp"],
      [Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f]), "video/webm"],
      [Buffer.from("FLV\x01\x05"), "video/x-flv"],
      [Buffer.from([0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11, 0xa6]), "video/x-ms-wmv"],
      [Buffer.from([0, 0, 1, 0xba, 0x44]), "video/mpeg"],
    ];
    for (const [head, mime] of cases) assert.equal(sniffAudioVideo(head)?.mimeType, mime, mime);
    for (const other of [Buffer.from("hello"), PNG_HEADER, PDF, Buffer.alloc(0), Buffer.from("RIFF\0\0\0\0WEBPVP8 ")]) assert.equal(sniffAudioVideo(other), undefined);
  });
});
