// WorkbenchBackend against deepagents 1.14's BackendProtocol: overwrite, empty listings, limit 0,
// empty-file edits, recursive delete, base64 binaries, symlinks, binary-aware grep, uploads and
// downloads — through createDeepAgent where the model sees the result.
import assert from "node:assert/strict";
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createDeepAgent, createSummarizationMiddleware } from "deepagents";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { createFileManagerMiddleware, type FileManagerMiddleware } from "../middleware/fileManager.js";

let root = "";
const managers: FileManagerMiddleware[] = [];
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-da-contract-"));
});
after(async () => {
  await Promise.all(managers.map((m) => m.close()));
  await rm(root, { recursive: true, force: true });
});

interface Call {
  name: string;
  args: Record<string, unknown>;
}

async function runTools(backend: WorkbenchBackend, threadId: string, calls: Call[], middleware: FileManagerMiddleware[] = []): Promise<ToolMessage[]> {
  const model = fakeModel()
    .respond(new AIMessage({ content: "", tool_calls: calls.map((c, i) => ({ name: c.name, args: c.args, id: `call_${i}`, type: "tool_call" as const })) }))
    .respond(new AIMessage("done"));
  const agent = createDeepAgent({ model, backend, middleware, checkpointer: new MemorySaver() });
  const out = await agent.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: threadId } });
  const tools = (out.messages as BaseMessage[]).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
  return calls.map((_, i) => tools.find((m) => m.tool_call_id === `call_${i}`)!);
}

function text(m: ToolMessage | undefined): string {
  assert.ok(m, "tool message present");
  return typeof m.content === "string" ? m.content : JSON.stringify(m.content);
}

async function seed(thread: string, files: Record<string, string | Buffer>): Promise<string> {
  const dir = path.join(root, thread);
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  await mkdir(dir, { recursive: true });
  return dir;
}

test("write_file overwrites; a file changed since it was read gets the staleness warning (model-visible with the FileManager)", async () => {
  const dir = await seed("t-over", { "a.txt": "one\n" });
  const backend = new WorkbenchBackend({ rootDir: root });
  const fm = createFileManagerMiddleware({ rootDir: root, tracker: { kind: "polling" } });
  managers.push(fm);
  const [read, first] = await runTools(backend, "t-over", [
    { name: "read_file", args: { file_path: "/a.txt" } },
    { name: "write_file", args: { file_path: "/b.txt", content: "new\n" } },
  ]);
  assert.match(text(read), /one/);
  assert.match(text(first), /Successfully wrote to '\/b\.txt'/);
  // Someone else edits a.txt after the agent read it.
  await writeFile(path.join(dir, "a.txt"), "theirs\n");
  await utimes(path.join(dir, "a.txt"), new Date(), new Date(Date.now() + 5_000));
  const [stale, fresh] = await runTools(
    backend,
    "t-over",
    [
      { name: "write_file", args: { file_path: "/a.txt", content: "mine\n" } },
      { name: "write_file", args: { file_path: "/b.txt", content: "newer\n" } },
    ],
    [fm],
  );
  assert.match(text(stale), /Successfully wrote to '\/a\.txt'/);
  assert.match(text(stale), /"\/a\.txt" changed after you last read it/);
  assert.doesNotMatch(text(fresh), /changed after/, "the backend's own last write is not a reason for a warning");
  assert.equal(await readFile(path.join(dir, "a.txt"), "utf8"), "mine\n");
  assert.equal(await readFile(path.join(dir, "b.txt"), "utf8"), "newer\n");

  // Without the FileManager the warning still travels in the result's metadata.
  await utimes(path.join(dir, "a.txt"), new Date(), new Date(Date.now() + 10_000));
  const direct = await backend.forThread("t-over").write("/a.txt", "again\n");
  assert.match(String(direct.metadata?.workbench_warning), /changed after you last read it/);
  const dirWrite = await backend.forThread("t-over").write("/", "x");
  assert.match(dirWrite.error ?? "", /workspace directory itself/);
});

test("ls of a missing directory is empty; read with limit 0 is an empty window; edit fills an empty file", async () => {
  const dir = await seed("t-small", { "empty.txt": "", "lines.txt": "a\nb\n" });
  const backend = new WorkbenchBackend({ rootDir: root });
  const [ls, edit, editFull] = await runTools(backend, "t-small", [
    { name: "ls", args: { path: "/no/such/dir" } },
    { name: "edit_file", args: { file_path: "/empty.txt", old_string: "", new_string: "hello\n" } },
    { name: "edit_file", args: { file_path: "/lines.txt", old_string: "", new_string: "x" } },
  ]);
  assert.doesNotMatch(text(ls), /error|not found/i);
  assert.match(text(edit), /Successfully replaced 0 occurrence/);
  assert.equal(await readFile(path.join(dir, "empty.txt"), "utf8"), "hello\n");
  assert.match(text(editFull), /old_string is empty but the file has content/);
  const pinned = backend.forThread("t-small");
  assert.deepEqual(await pinned.ls("/no/such/dir"), { files: [] });
  const zero = await pinned.read("/lines.txt", 0, 0);
  assert.equal(zero.error, undefined);
  assert.equal(zero.content, "");
});

test("write_file of a binary type stores the decoded base64 bytes; non-base64 content is refused", async () => {
  const dir = await seed("t-b64", {});
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x01, 0xfe]);
  const backend = new WorkbenchBackend({ rootDir: root });
  const [ok, bad, txt] = await runTools(backend, "t-b64", [
    { name: "write_file", args: { file_path: "/img/logo.png", content: png.toString("base64") } },
    { name: "write_file", args: { file_path: "/doc.pdf", content: "not base64 at all!" } },
    { name: "write_file", args: { file_path: "/plain.txt", content: png.toString("base64") } },
  ]);
  assert.match(text(ok), /Successfully wrote/);
  assert.deepEqual(await readFile(path.join(dir, "img", "logo.png")), png);
  assert.match(text(bad), /binary file type: content must be its bytes in base64/);
  assert.match(text(txt), /Successfully wrote/);
  assert.equal(await readFile(path.join(dir, "plain.txt"), "utf8"), png.toString("base64"), "text types are stored as given");
});

test("glob lists in-workspace symlinks to files (never escaping ones); edit through a symlink edits the target and keeps the link", async () => {
  const dir = await seed("t-links", { "real/target.md": "old text\n", "docs/a.md": "a\n" });
  await symlink("../real/target.md", path.join(dir, "docs", "link.md"));
  await symlink("/etc/hostname", path.join(dir, "docs", "out.md"));
  await symlink("../real", path.join(dir, "docs", "dirlink.md"));
  const backend = new WorkbenchBackend({ rootDir: root });
  const [glob, edit] = await runTools(backend, "t-links", [
    { name: "glob", args: { pattern: "docs/*.md" } },
    { name: "edit_file", args: { file_path: "/docs/link.md", old_string: "old", new_string: "new" } },
  ]);
  assert.deepEqual(text(glob).split("\n").sort(), ["/docs/a.md", "/docs/link.md"]);
  assert.match(text(edit), /Successfully replaced 1 occurrence/);
  assert.equal(await readFile(path.join(dir, "real", "target.md"), "utf8"), "new text\n");
  assert.ok((await lstat(path.join(dir, "docs", "link.md"))).isSymbolicLink(), "the link stays a link");
  assert.equal(await readlink(path.join(dir, "docs", "link.md")), "../real/target.md");
});

test("grep skips binary files by extension and by content, even without a NUL byte", async () => {
  await seed("t-grep", {
    "notes.txt": "needle here\n",
    "logo.png": "\x89PNG needle\n",
    "weird.txt": Buffer.concat([Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(" needle\n")]),
  });
  const backend = new WorkbenchBackend({ rootDir: root });
  const [grep] = await runTools(backend, "t-grep", [{ name: "grep", args: { pattern: "needle" } }]);
  assert.match(text(grep), /\/notes\.txt/);
  assert.doesNotMatch(text(grep), /logo\.png|weird\.txt/);
});

test("delete removes a directory recursively; a directory holding a credential file is refused whole", async () => {
  const dir = await seed("t-del", { "build/a.js": "a", "build/sub/b.js": "b", "conf/.env": "KEY=1\n", "conf/app.json": "{}" });
  await symlink("/etc", path.join(dir, "build", "etc-link"));
  const backend = new WorkbenchBackend({ rootDir: root });
  const [del, refused, rootDel] = await runTools(backend, "t-del", [
    { name: "delete", args: { file_path: "/build" } },
    { name: "delete", args: { file_path: "/conf" } },
    { name: "delete", args: { file_path: "/" } },
  ]);
  assert.doesNotMatch(text(del), /error/i, text(del));
  await assert.rejects(stat(path.join(dir, "build")), "build is gone");
  assert.ok((await stat("/etc/hostname")).isFile(), "the symlink's target is untouched");
  assert.match(text(refused), /'\/conf' was not deleted: it holds protected credential files \(\/conf\/\.env\)/);
  assert.equal(await readFile(path.join(dir, "conf", "app.json"), "utf8"), "{}");
  assert.match(text(rootDel), /'\/' was not deleted: it holds protected credential files \(\/conf\/\.env\)/, "clearing the root follows the same rule");
  assert.equal(await readFile(path.join(dir, "conf", ".env"), "utf8"), "KEY=1\n");
  assert.ok(!text(refused).includes(root), "no host path");
});

test("uploadFiles / downloadFiles: deepagents' result shapes and error codes, confined and capped", async () => {
  const dir = await seed("t-xfer", { ".env": "SECRET=1\n", "sub/x.txt": "x" });
  const backend = new WorkbenchBackend({ rootDir: root, threadId: "t-xfer", maxTransferBytes: 1024 });
  const bytes = new Uint8Array([0, 1, 2, 250]);
  const up = await backend.uploadFiles([
    ["/in/data.bin", bytes],
    ["/.env", new Uint8Array([1])],
    ["../escape.bin", bytes],
    ["/sub", bytes],
    ["/big.bin", new Uint8Array(2048)],
  ]);
  assert.deepEqual(up, [
    { path: "/in/data.bin", error: null },
    { path: "/.env", error: "permission_denied" },
    { path: "../escape.bin", error: "invalid_path" },
    { path: "/sub", error: "is_directory" },
    { path: "/big.bin", error: "permission_denied" },
  ]);
  assert.deepEqual(new Uint8Array(await readFile(path.join(dir, "in", "data.bin"))), bytes);
  await assert.rejects(stat(path.join(root, "escape.bin")));
  const down = await backend.downloadFiles(["/in/data.bin", "/.env", "/missing.txt", "/sub", "/etc/passwd"]);
  assert.deepEqual(
    down.map((d) => [d.path, d.error]),
    [
      ["/in/data.bin", null],
      ["/.env", "permission_denied"],
      ["/missing.txt", "file_not_found"],
      ["/sub", "is_directory"],
      ["/etc/passwd", "invalid_path"],
    ],
  );
  assert.deepEqual(down[0]!.content, bytes);
  assert.equal(down[1]!.content, null);
});

test("summarisation offloads history twice through the backend and both sections are kept", async () => {
  await seed("t-sum", {});
  const backend = new WorkbenchBackend({ rootDir: root });
  let summaries = 0;
  let step = 0;
  const model = fakeModel();
  for (let i = 0; i < 40; i++) {
    model.respond((messages: BaseMessage[]) => {
      const first = messages[0];
      const prompt = first && typeof first.content === "string" ? first.content : "";
      if (prompt.includes("conversation summarizer")) return new AIMessage(`summary ${++summaries}`);
      step++;
      if (step > 8) return new AIMessage("done");
      return new AIMessage({ content: "", tool_calls: [{ name: "write_file", args: { file_path: `/n${step}.txt`, content: `note ${step}\n` }, id: `w${step}`, type: "tool_call" }] });
    });
  }
  const summarization = createSummarizationMiddleware({ model, backend, trigger: { type: "messages", value: 6 }, keep: { type: "messages", value: 2 } });
  const agent = createDeepAgent({ model, backend, middleware: [summarization], checkpointer: new MemorySaver() });
  await agent.invoke({ messages: [new HumanMessage("write notes")] }, { configurable: { thread_id: "t-sum" } });
  assert.ok(summaries >= 2, `summarised ${summaries} times`);
  const historyDir = path.join(root, "t-sum", "conversation_history");
  const [file] = (await import("node:fs/promises").then((fs) => fs.readdir(historyDir))).filter((n) => n.endsWith(".md"));
  assert.ok(file, "a history file was written");
  const history = await readFile(path.join(historyDir, file), "utf8");
  assert.equal(history.match(/^## Summarized at /gm)?.length, summaries, history);
  assert.match(history, /n1\.txt/);
});

test("over shell file operations (SSH/Docker path) glob lists links to files, not links to directories or out of the workspace", async () => {
  const dir = await seed("t-links-shell", { "real/target.md": "t\n", "docs/a.md": "a\n" });
  await symlink("../real/target.md", path.join(dir, "docs", "link.md"));
  await symlink("/etc/hostname", path.join(dir, "docs", "out.md"));
  await symlink("../real", path.join(dir, "docs", "dirlink.md"));
  const { ShellFileOperations } = await import("../src/environment/shellFileOperations.js");
  const { LocalShellEnvironment } = await import("../src/environment/localEnvironment.js");
  const backend = new WorkbenchBackend({ rootDir: root, threadId: "t-links-shell", fileOps: new ShellFileOperations(new LocalShellEnvironment()) });
  const glob = await backend.glob("docs/*.md");
  assert.deepEqual(glob.files?.map((f) => f.path).sort(), ["/docs/a.md", "/docs/link.md"]);
});
