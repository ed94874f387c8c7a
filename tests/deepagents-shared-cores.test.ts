// WorkbenchBackend is an adapter over the cores the package's tools use: the same bad input gets
// the same refusal text through the tool and through the backend (read, write, edit, grep,
// execute), remote grep runs on the same search engine as search_files, and the staleness
// memory is the bounded one of src/guards/staleness.ts.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { SeenMtimes } from "../src/guards/staleness.js";
import { createPatchTool } from "../tools/patchTool.js";
import { createReadFileTool } from "../tools/readFile.js";
import { createRunCommandTool } from "../tools/runCommand.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";
import { createWriteFileTool } from "../tools/writeFile.js";

const THREAD = "t-shared";
const config = { configurable: { thread_id: THREAD } };
let root = "";
let dir = "";

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-shared-cores-"));
  dir = path.join(root, THREAD);
  await mkdir(path.join(dir, "src"), { recursive: true });
  await writeFile(path.join(dir, ".env"), "API_TOKEN=not-for-the-model\n");
  await writeFile(path.join(dir, "notes.md"), "alpha\nbeta\n");
  await writeFile(path.join(dir, ".gitignore"), "build/\n");
  await mkdir(path.join(dir, "build"));
  await writeFile(path.join(dir, "build", "out.txt"), "needle in a build file\n");
  await writeFile(path.join(dir, "src", "app.ts"), "const needle = 1;\n");
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A tool's answer as text, whatever its shape (string, ToolMessage, content array). */
async function toolText(tool: { invoke(args: unknown, config?: unknown): Promise<unknown> }, args: Record<string, unknown>): Promise<string> {
  const out = await tool.invoke(args, config);
  if (typeof out === "string") return out;
  const content = (out as { content?: unknown })?.content ?? out;
  return typeof content === "string" ? content : JSON.stringify(content);
}

/** The text after `"<shown>" ` in a refusal that starts with the quoted path. */
function afterQuotedPath(message: string, shown: string): string {
  const head = `"${shown}" `;
  assert.ok(message.startsWith(head), `starts with ${head}: ${message}`);
  return message.slice(head.length);
}

describe("the same refusal through the tool and through WorkbenchBackend", () => {
  const backend = () => new WorkbenchBackend({ rootDir: root, threadId: THREAD });

  it("read: a credential file", async () => {
    const fromBackend = (await backend().read("/.env")).error ?? "";
    const reason = afterQuotedPath(fromBackend, "/.env");
    assert.match(reason, /credential/);
    const fromTool = await toolText(createReadFileTool({ rootDir: root }), { path: ".env" });
    assert.ok(fromTool.includes(JSON.stringify(`".env" ${reason}`).slice(1, -1)), `tool: ${fromTool}\nbackend: ${fromBackend}`);
  });

  it("write: content holding a redaction marker", async () => {
    const content = "KEY=«redacted:sk-…»\n";
    const fromBackend = (await backend().write("/config.txt", content)).error ?? "";
    assert.match(fromBackend, /«redacted…» marker/);
    const fromTool = await toolText(createWriteFileTool({ rootDir: root }), { path: "config.txt", content });
    assert.ok(fromTool.includes(JSON.stringify(fromBackend).slice(1, -1)), `tool: ${fromTool}\nbackend: ${fromBackend}`);
  });

  it("edit: new_string pasted from read_file's display (N| gutters)", async () => {
    const newString = "1|alpha\n2|gamma\n";
    const fromBackend = (await backend().edit("/notes.md", "alpha", newString)).error ?? "";
    assert.match(fromBackend, /^The new_string starts its lines with "N\|" line numbers/);
    const fromTool = await toolText(createPatchTool({ rootDir: root }), { path: "notes.md", old_string: "alpha", new_string: newString });
    assert.ok(fromTool.includes(JSON.stringify(fromBackend).slice(1, -1)), `tool: ${fromTool}\nbackend: ${fromBackend}`);
  });

  it("grep: a credential file as the searched path", async () => {
    const fromBackend = (await backend().grep("API", "/.env")).error ?? "";
    const reason = afterQuotedPath(fromBackend, "/.env");
    const fromTool = await toolText(createSearchFilesTool({ rootDir: root }), { pattern: "API", path: ".env" });
    assert.ok(fromTool.includes(JSON.stringify(`".env" ${reason}`).slice(1, -1)), `tool: ${fromTool}\nbackend: ${fromBackend}`);
  });

  it("execute: an empty command and a dangerous one", async () => {
    const exec = new WorkbenchBackend({ rootDir: root, threadId: THREAD, execute: { sandbox: "off" } });
    const runCommand = createRunCommandTool({ rootDir: root, sandbox: "off" });
    for (const command of ["   ", "rm -rf /"]) {
      const fromBackend = await exec.execute!(command);
      assert.equal(fromBackend.exitCode, null);
      const refusal = fromBackend.output.replace(/^Error: /, "");
      assert.notEqual(refusal, fromBackend.output, `an error: ${fromBackend.output}`);
      const fromTool = await toolText(runCommand, { command });
      assert.ok(fromTool.includes(JSON.stringify(refusal).slice(1, -1)), `tool: ${fromTool}\nbackend: ${fromBackend.output}`);
    }
  });
});

describe("WorkbenchBackend.grep runs on search_files' engine", () => {
  for (const [kind, fileOps] of [
    ["local", () => undefined],
    ["remote (shell over exec)", () => new ShellFileOperations(new LocalShellEnvironment())],
  ] as const) {
    it(`${kind}: the same files match, .gitignore honoured, credential files never searched`, async () => {
      const backend = new WorkbenchBackend({ rootDir: root, threadId: THREAD, fileOps: fileOps() });
      const grep = await backend.grep("needle");
      assert.equal(grep.error, undefined);
      const fromBackend = [...new Set((grep.matches ?? []).map((m) => m.path.slice(1)))].sort();
      const tool = createSearchFilesTool({ rootDir: root, engine: "js", ...(fileOps() ? { fileOps: fileOps() } : {}) });
      const answer = JSON.parse(await toolText(tool, { pattern: "needle", output_mode: "files_only" })) as { files: string[] };
      assert.deepEqual(fromBackend, [...answer.files].sort());
      assert.deepEqual(fromBackend, ["src/app.ts"], "build/ is ignored by .gitignore");
      assert.deepEqual((await backend.grep("API_TOKEN")).matches, []);
    });
  }
});

describe("SeenMtimes (src/guards/staleness.ts)", () => {
  it("warns on a changed mtime only, and forgets the oldest file past its bound", () => {
    const seen = new SeenMtimes(2);
    assert.equal(seen.warning("/a", "/a", 1), undefined, "never seen: no warning");
    seen.remember("/a", 1);
    assert.equal(seen.warning("/a", "/a", 1), undefined);
    assert.match(seen.warning("/a", "/a", 2) ?? "", /"\/a" changed after you last read it/);
    seen.remember("/b", 1);
    seen.remember("/c", 1);
    assert.equal(seen.warning("/a", "/a", 2), undefined, "/a was forgotten");
    assert.match(seen.warning("/b", "/b", 2) ?? "", /changed after/);
  });
});
