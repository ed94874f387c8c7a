// WorkbenchBackend driven by deepagents' own tools through a real createDeepAgent run.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, symlink, truncate, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createDeepAgent } from "deepagents";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";

const SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
let root = "";

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-da-backend-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Call {
  name: string;
  args: Record<string, unknown>;
}

/** Runs one deepagents turn that makes `calls` in parallel, returns the tool messages by call index. */
async function runTools(backend: unknown, threadId: string, calls: Call[]): Promise<ToolMessage[]> {
  const model = fakeModel()
    .respondWithTools(calls.map((c, i) => ({ name: c.name, args: c.args, id: `call_${i}` })))
    .respond(new AIMessage("done"));
  const agent = createDeepAgent({ model, backend: backend as WorkbenchBackend, checkpointer: new MemorySaver() });
  const out = await agent.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: threadId } });
  const tools = (out.messages as BaseMessage[]).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
  assert.equal(tools.length, calls.length);
  return calls.map((_, i) => tools.find((m) => m.tool_call_id === `call_${i}`)!);
}

function text(m: ToolMessage): string {
  return typeof m.content === "string" ? m.content : JSON.stringify(m.content);
}

function assertNoHostPath(messages: ToolMessage[]): void {
  for (const m of messages) {
    assert.ok(!text(m).includes(root), `host path leaked in ${m.name}: ${text(m)}`);
    assert.ok(!text(m).includes(os.tmpdir() + path.sep), `tmp path leaked in ${m.name}: ${text(m)}`);
  }
}

test("deepagents' ls/read_file/glob/grep see workspace paths; guards refuse .env, /etc/passwd, devices, binaries", async () => {
  const dir = path.join(root, "t1");
  await mkdir(path.join(dir, "docs"), { recursive: true });
  await writeFile(path.join(dir, ".env"), `OPENAI_API_KEY=${SECRET}\n`);
  await writeFile(path.join(dir, "notes.md"), `# Notes\napi token: ${SECRET}\nplain line\n`);
  await writeFile(path.join(dir, "docs", "guide.md"), "guide\n");
  await writeFile(path.join(dir, "data.txt"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0xff, 0xfe]));
  await symlink("/etc", path.join(dir, "etc-link"));

  const backend = new WorkbenchBackend({ rootDir: root });
  const [ls, env, passwd, environ, grep, glob, notes, binary, missing, viaLink] = await runTools(backend, "t1", [
    { name: "ls", args: { path: "/" } },
    { name: "read_file", args: { file_path: "/.env" } },
    { name: "read_file", args: { file_path: "/etc/passwd" } },
    { name: "read_file", args: { file_path: "/proc/self/environ" } },
    { name: "grep", args: { pattern: "token" } },
    { name: "glob", args: { pattern: "**/*.md" } },
    { name: "read_file", args: { file_path: "/notes.md" } },
    { name: "read_file", args: { file_path: "/data.txt" } },
    { name: "read_file", args: { file_path: "/nots.md" } },
    { name: "read_file", args: { file_path: "/etc-link/passwd" } },
  ]);
  const all = [ls, env, passwd, environ, grep, glob, notes, binary, missing, viaLink].map((m) => m!);
  assertNoHostPath(all);

  assert.match(text(ls!), /\/notes\.md/);
  assert.match(text(ls!), /\/docs\/ \(directory\)/);
  assert.match(text(env!), /protected file.*\.env\.example/s);
  assert.ok(!text(env!).includes(SECRET));
  assert.match(text(passwd!), /not allowed: it is a system path outside the workspace/);
  assert.match(text(environ!), /environment or memory/);
  assert.match(text(grep!), /\/notes\.md/);
  assert.match(text(grep!), /«redacted/);
  assert.ok(!text(grep!).includes(SECRET), "grep must redact the secret");
  assert.equal(text(glob!).split("\n").sort().join("\n"), "/docs/guide.md\n/notes.md");
  assert.match(text(notes!), /plain line/);
  assert.ok(!text(notes!).includes(SECRET), "read_file must redact the secret");
  assert.match(text(binary!), /binary file \(its content is not UTF-8 text/);
  assert.match(text(missing!), /'\/nots\.md' not found\. Similar: \/notes\.md/);
  assert.match(text(viaLink!), /symlink that leads outside the workspace/);
});

test("write_file and edit_file land in the thread directory; redaction markers and credential files are refused", async () => {
  const backend = new WorkbenchBackend({ rootDir: root });
  const [write, edit, marker, cred, escape] = await runTools(backend, "t-write", [
    { name: "write_file", args: { file_path: "/src/app.ts", content: "export const a = 1;\n" } },
    { name: "ls", args: { path: "/" } },
    { name: "write_file", args: { file_path: "/config.txt", content: "KEY=«redacted:sk-…»\n" } },
    { name: "write_file", args: { file_path: "/.env", content: "A=1\n" } },
    { name: "write_file", args: { file_path: "../outside.txt", content: "x" } },
  ]);
  assertNoHostPath([write!, edit!, marker!, cred!, escape!]);
  assert.match(text(write!), /Successfully wrote to '\/src\/app\.ts'/);
  assert.equal(await readFile(path.join(root, "t-write", "src", "app.ts"), "utf8"), "export const a = 1;\n");
  // The message write_file gives (src/guards/writeContent.ts).
  assert.match(text(marker!), /contains a «redacted…» marker from a masked read/);
  assert.match(text(cred!), /protected file/);
  assert.match(text(escape!), /climbs out of the workspace/);

  const [edited] = await runTools(backend, "t-write", [
    { name: "edit_file", args: { file_path: "/src/app.ts", old_string: "a = 1", new_string: "a = 2" } },
  ]);
  assert.match(text(edited!), /Successfully replaced 1 occurrence/);
  assert.equal(await readFile(path.join(root, "t-write", "src", "app.ts"), "utf8"), "export const a = 2;\n");
});

test("one backend instance serves each thread from its own directory (configurable.thread_id)", async () => {
  const backend = new WorkbenchBackend({ rootDir: root });
  await runTools(backend, "alpha", [{ name: "write_file", args: { file_path: "/mine.txt", content: "alpha\n" } }]);
  const [lsBeta] = await runTools(backend, "beta", [{ name: "ls", args: { path: "/" } }]);
  assert.doesNotMatch(text(lsBeta!), /mine\.txt/);
  assert.equal(await readFile(path.join(root, "alpha", "mine.txt"), "utf8"), "alpha\n");

  // The factory form binds the thread from the runtime deepagents passes in.
  const [lsAlpha] = await runTools(WorkbenchBackend.factory({ rootDir: root }), "alpha", [{ name: "ls", args: { path: "/" } }]);
  assert.match(text(lsAlpha!), /\/mine\.txt/);
});

test("read pagination follows deepagents' 0-based offset and reports the next offset", async () => {
  const dir = path.join(root, "t-page");
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "long.txt"), Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join("\n") + "\n");
  const backend = new WorkbenchBackend({ rootDir: root, threadId: "t-page" });
  const page = await backend.read("/long.txt", 10, 5);
  assert.equal(page.content, "line 11\nline 12\nline 13\nline 14\nline 15");
  assert.deepEqual([page.startLine, page.endLine, page.totalLines, page.nextOffset], [11, 15, 30, 15]);
  const past = await backend.read("/long.txt", 99, 5);
  assert.match(past.error ?? "", /past the end .*30 lines/);

  // A window at the top of a huge file does not stream the rest of it to count lines.
  const huge = path.join(dir, "huge.log");
  await writeFile(huge, Array.from({ length: 1_000 }, (_, i) => `entry ${i + 1}`).join("\n") + "\n");
  await truncate(huge, 64 * 1024 * 1024);
  const top = await backend.read("/huge.log", 0, 3);
  assert.equal(top.content, "entry 1\nentry 2\nentry 3");
  assert.equal(top.totalLines, undefined);
  assert.equal(top.nextOffset, 3);
});

test("over shell file operations (the SSH/Docker path) glob and grep walk through the FileOperations contract", async () => {
  const dir = path.join(root, "t-shell");
  await mkdir(path.join(dir, "lib"), { recursive: true });
  await writeFile(path.join(dir, "lib", "a.ts"), `const key = "${SECRET}";\nexport const needle = 1;\n`);
  await writeFile(path.join(dir, ".env"), "needle=1\n");
  await writeFile(path.join(dir, "b.md"), "no match\n");
  const fileOps = new ShellFileOperations(new LocalShellEnvironment());
  assert.notEqual(fileOps.kind, "local");
  const backend = new WorkbenchBackend({ rootDir: root, threadId: "t-shell", fileOps });
  const glob = await backend.glob("**/*.ts");
  assert.deepEqual(glob.files?.map((f) => f.path), ["/lib/a.ts"]);
  const grep = await backend.grep("needle", "/");
  assert.deepEqual(grep.matches, [{ path: "/lib/a.ts", line: 2, text: "export const needle = 1;" }]);
  const secret = await backend.grep("key", "/lib");
  assert.ok(!JSON.stringify(secret).includes(SECRET), "redacted over the shell backend too");
  // Credential files are never searched, and nothing in the answer says whether they matched.
  const onlyEnv = await backend.grep("needle=1", "/");
  assert.deepEqual(onlyEnv, await backend.grep("needle=9", "/"));
  assert.deepEqual(onlyEnv.matches, []);

  // The local path (search engine) gives the same answers.
  const local = new WorkbenchBackend({ rootDir: root, threadId: "t-shell" });
  assert.deepEqual((await local.grep("needle", "/")).matches, grep.matches);
  assert.deepEqual((await local.glob("**/*.ts")).files?.map((f) => f.path), ["/lib/a.ts"]);
  assert.deepEqual(await local.grep("needle=1", "/"), await local.grep("needle=9", "/"));
  assert.ok(!JSON.stringify(await local.grep("key", "/lib")).includes(SECRET));
});
