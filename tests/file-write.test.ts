import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { createAgent } from "langchain";
import { createFileTools } from "../tools/fileTools.js";
import { resolveFileToolOptions, type FileToolOptions } from "../tools/fileToolSupport.js";
import { createWriteFileTool, looksLikeReadFileDisplay, writeFileCore } from "../tools/writeFile.js";
import { isAtomicTempName } from "../src/environment/tempFiles.js";

let root: string;
let ws: string;
const cfg = { configurable: { thread_id: "t1" } };

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-write-"));
  ws = path.join(root, "t1");
  await mkdir(ws, { recursive: true });
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function write(args: Record<string, unknown>, options: FileToolOptions = {}): Promise<Record<string, any>> {
  const { payload } = await writeFileCore(args as never, cfg, resolveFileToolOptions({ rootDir: root, ...options }));
  return payload;
}

describe("write_file basics", () => {
  it("creates parents, reports bytes and created dirs (agent-relative)", async () => {
    const r = await write({ path: "deep/er/note.md", content: "héllo\n" });
    assert.deepEqual(r, { path: "deep/er/note.md", bytes_written: 7, dirs_created: ["deep", "deep/er"], created: true });
    assert.equal(await readFile(path.join(ws, "deep/er/note.md"), "utf8"), "héllo\n");
  });
  it("overwrites atomically, keeping the file mode and leaving no temp file", async () => {
    const p = path.join(ws, "run.sh");
    await writeFile(p, "old");
    await chmod(p, 0o755);
    const r = await write({ path: "run.sh", content: "#!/bin/sh\necho hi\n" });
    assert.equal(r.created, false);
    assert.equal((await stat(p)).mode & 0o777, 0o755);
    assert.deepEqual((await readdir(ws)).filter(isAtomicTempName), []);
  });
  it("keeps CRLF line endings and the BOM of an existing file", async () => {
    await writeFile(path.join(ws, "win.txt"), "\uFEFFa\r\nb\r\n");
    const r = await write({ path: "win.txt", content: "x\ny\nz\n" });
    assert.match(r.line_endings, /CRLF/);
    assert.equal(r.bom, "kept from the existing file");
    assert.equal(await readFile(path.join(ws, "win.txt"), "utf8"), "\uFEFFx\r\ny\r\nz\r\n");
    await write({ path: "unix.txt", content: "a\nb\n" });
    await write({ path: "unix.txt", content: "c\nd\n" });
    assert.equal(await readFile(path.join(ws, "unix.txt"), "utf8"), "c\nd\n");
  });
  it("names a missing or ill-typed field", async () => {
    assert.match((await write({ content: "x" })).error, /Missing "path"/);
    assert.match((await write({ path: "a.txt" })).error, /Missing "content"/);
    assert.match((await write({ path: "a.txt", content: 42 })).error, /"content" must be a string/);
    assert.match((await write({ path: ["a"], content: "x" })).error, /"path" must be a string/);
  });
  it("refuses directories, escapes and system paths in confined mode", async () => {
    await mkdir(path.join(ws, "adir"), { recursive: true });
    assert.match((await write({ path: "adir", content: "x" })).error, /is a directory/);
    assert.match((await write({ path: "../escape.txt", content: "x" })).error, /climbs out/);
    assert.match((await write({ path: "/etc/cron.d/x", content: "x" })).error, /system path outside/);
    await assert.rejects(stat(path.join(root, "escape.txt")));
  });
});

describe("write_file content guards", () => {
  it("refuses read_file display text (N| gutters) but not pipe-separated data", async () => {
    const display = "1|import os\n2|print(os.getcwd())\n3|";
    assert.ok(looksLikeReadFileDisplay(display));
    assert.match((await write({ path: "x.py", content: display })).error, /"N\|" line numbers/);
    assert.ok(!looksLikeReadFileDisplay("a|b|c\n1|2|x\n"));
    assert.ok(!looksLikeReadFileDisplay("7|seven"));
    assert.equal((await write({ path: "table.psv", content: "id|name\n1|ann\n5|bob\n" })).bytes_written, 20);
  });
  it("refuses content holding redaction markers (the real secret would be lost)", async () => {
    await writeFile(path.join(ws, "config.env.txt"), "TOKEN=real-value\n");
    const r = await write({ path: "config.env.txt", content: "TOKEN=«redacted»\nDEBUG=1\n" });
    assert.match(r.error, /«redacted…» marker/);
    assert.equal(await readFile(path.join(ws, "config.env.txt"), "utf8"), "TOKEN=real-value\n");
    assert.match((await write({ path: "k.txt", content: "key: «redacted:sk-…»" })).error, /marker/);
  });
});

describe("write_file open mode (confine: false)", () => {
  let home: string;
  before(async () => {
    home = path.join(root, "home");
    await mkdir(path.join(home, ".ssh"), { recursive: true });
    await mkdir(path.join(home, "projects"), { recursive: true });
  });
  const open = () => ({ confine: false, homeDir: home });
  it("writes outside the workspace", async () => {
    const r = await write({ path: path.join(home, "projects", "a.txt"), content: "ok" }, open());
    assert.equal(r.bytes_written, 2);
  });
  it("refuses the write-deny list by raw path (~ and absolute)", async () => {
    assert.match((await write({ path: "~/.ssh/authorized_keys", content: "ssh-ed25519 AAA" }, open())).error, /protected location "~\/.ssh\/"/);
    assert.match((await write({ path: path.join(home, ".npmrc"), content: "x" }, open())).error, /~\/.npmrc/);
    assert.match((await write({ path: "/etc/passwd", content: "x" }, open())).error, /protected/);
    assert.match((await write({ path: "/var/run/docker.sock", content: "x" }, open())).error, /protected/);
  });
  it("refuses by real path: a workspace symlink into ~/.ssh cannot smuggle a write", async () => {
    await symlink(path.join(home, ".ssh"), path.join(ws, "innocent"));
    const r = await write({ path: "innocent/authorized_keys", content: "ssh-ed25519 AAA" }, open());
    assert.match(r.error, /protected location/);
    await assert.rejects(stat(path.join(home, ".ssh", "authorized_keys")));
  });
});

describe("write_file concurrency and crashes", () => {
  it("parallel write_file and patch calls in one AIMessage: each patch lands, writes never interleave", { timeout: 20_000 }, async () => {
    const lines = Array.from({ length: 8 }, (_, i) => `value${i} = ${i}`);
    await writeFile(path.join(ws, "shared.txt"), lines.join("\n") + "\n");
    const patches = lines.map((l, i) => ({ name: "patch", args: { path: "shared.txt", old_string: l, new_string: `value${i} = changed` }, id: `p${i}` }));
    const writes = Array.from({ length: 4 }, (_, i) => ({ name: "write_file", args: { path: "w.txt", content: `writer ${i}\n`.repeat(20_000) }, id: `w${i}` }));
    const model = fakeModel().respondWithTools([...patches, ...writes]).respond(new AIMessage("done"));
    const agent = createAgent({ model, tools: createFileTools({ rootDir: root }) });
    const out = await agent.invoke({ messages: [new HumanMessage("edit")] }, cfg);
    const toolMessages = out.messages.filter((m) => ToolMessage.isInstance(m)) as ToolMessage[];
    assert.equal(toolMessages.length, 12);
    for (const m of toolMessages) assert.notEqual(m.status, "error", String(m.content));
    const final = await readFile(path.join(ws, "shared.txt"), "utf8");
    assert.equal(final, lines.map((_, i) => `value${i} = changed`).join("\n") + "\n", "without the path lock, parallel read-modify-writes lose edits");
    const w = await readFile(path.join(ws, "w.txt"), "utf8");
    assert.ok([0, 1, 2, 3].some((i) => w === `writer ${i}\n`.repeat(20_000)), "the file is one writer's content, whole");
    assert.equal(out.messages.at(-1)?.content, "done");
  });

  it("a writer killed with SIGKILL mid-write leaves the old or the new content, never a partial file", { timeout: 30_000 }, async () => {
    const here = path.dirname(fileURLToPath(import.meta.url));
    const target = path.join(ws, "precious.txt");
    const oldContent = "old content\n".repeat(1000);
    await writeFile(target, oldContent);
    const childScript = path.join(root, "child-writer.mts");
    await writeFile(
      childScript,
      `import { createWriteFileTool } from ${JSON.stringify(path.join(here, "../tools/writeFile.ts"))};
const t = createWriteFileTool({ rootDir: ${JSON.stringify(root)} });
process.stdout.write("ready\\n");
for (;;) await t.invoke({ path: "precious.txt", content: "N".repeat(64 * 1024 * 1024) }, { configurable: { thread_id: "t1" } });
`,
    );
    const child = spawn(process.execPath, ["--import", "tsx", childScript], { cwd: path.join(here, ".."), stdio: ["ignore", "pipe", "inherit"] });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("child did not start")), 20_000);
        child.stdout.on("data", (d: Buffer) => {
          if (d.toString().includes("ready")) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.on("exit", () => reject(new Error("child exited early")));
      });
      // Kill while a temp file is being written (bounded wait for it to appear).
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline && !(await readdir(ws)).some(isAtomicTempName)) {
        await new Promise((r) => setTimeout(r, 2));
      }
    } finally {
      child.kill("SIGKILL");
      await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(undefined) : child.once("exit", r)));
    }
    const after = await readFile(target, "utf8");
    assert.ok(after === oldContent || after === "N".repeat(64 * 1024 * 1024), `partial file of ${after.length} chars`);
  });
});

describe("write_file tool object", () => {
  it("validates its options when built", () => {
    assert.throws(() => createWriteFileTool({ maxReadChars: 0 }), /maxReadChars must be a positive integer/);
    assert.throws(() => createWriteFileTool({ confine: "no" as never }), /confine must be a boolean/);
    assert.throws(() => createWriteFileTool({ fileOps: {} as never }), /fileOps must implement FileOperations \(missing: stat/);
    assert.throws(() => createWriteFileTool({ homeDir: "relative/home" }), /homeDir must be an absolute path/);
    assert.throws(() => createFileTools({ rootDir: "" }), /rootDir must be a non-empty string/);
  });
  it("has a schema a model can act on", () => {
    const t = createWriteFileTool({ rootDir: root });
    assert.equal(t.name, "write_file");
    assert.match(t.description, /never read_file's "N\|" gutters/);
  });
});
