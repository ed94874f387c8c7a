// createDeepAgent({ middleware: [fileManager], backend }): the tree is injected, and deepagents'
// own ls/glob/grep/read_file outputs and errors reach the model with workspace paths — both with
// deepagents' FilesystemBackend (which leaks host paths on its own) and with WorkbenchBackend.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createDeepAgent, FilesystemBackend, type BackendRuntime } from "deepagents";
import { createFileManagerMiddleware, type FileManagerMiddleware } from "../middleware/fileManager.js";
import { isWorkspaceTreeMessage } from "../middleware/treeMessage.js";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { workspaceFromConfig } from "../src/context/thread.js";
import { workspaceView } from "./helpers/agentHarness.js";

let root = "";
const managers: FileManagerMiddleware[] = [];

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-da-fm-"));
});
after(async () => {
  await Promise.all(managers.map((m) => m.close()));
  await rm(root, { recursive: true, force: true });
});

function fileManager(pathArgs: string[] = []): FileManagerMiddleware {
  const fm = createFileManagerMiddleware({ rootDir: root, pathArgs, tracker: { kind: "polling" } });
  managers.push(fm);
  return fm;
}

async function seed(thread: string): Promise<string> {
  const dir = path.join(root, thread);
  await mkdir(path.join(dir, "src"), { recursive: true });
  await writeFile(path.join(dir, "README.md"), "# Project\nTODO: write docs\n");
  await writeFile(path.join(dir, "src", "main.ts"), "// TODO: implement\nexport {};\n");
  return dir;
}

const CALLS = [
  { name: "ls", args: { path: "/" }, id: "c_ls" },
  { name: "glob", args: { pattern: "**/*.ts", path: "/" }, id: "c_glob" },
  { name: "grep", args: { pattern: "TODO", path: "/" }, id: "c_grep" },
  { name: "read_file", args: { file_path: "/src/main.ts" }, id: "c_read" },
  { name: "read_file", args: { file_path: "/src/missing.ts" }, id: "c_missing" },
];

function text(m: BaseMessage): string {
  return typeof m.content === "string" ? m.content : JSON.stringify(m.content);
}

async function runDeepAgent(thread: string, middleware: FileManagerMiddleware, backend: unknown) {
  const model = fakeModel()
    .respondWithTools(CALLS)
    .respondWithTools([{ name: "write_file", args: { file_path: "/src/new.ts", content: "export const x = 1;\n" }, id: "c_write" }])
    .respond(new AIMessage("done"));
  const agent = createDeepAgent({ model, middleware: [middleware], backend: backend as WorkbenchBackend, checkpointer: new MemorySaver() });
  const out = await agent.invoke({ messages: [new HumanMessage("look around")] }, { configurable: { thread_id: thread } });
  const tools = (out.messages as BaseMessage[]).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
  const byId = (id: string) => tools.find((m) => m.tool_call_id === id)!;
  return { model, tools, byId };
}

function assertTreeFlow(model: ReturnType<typeof fakeModel>): void {
  const first = (model.calls[0]!.messages as BaseMessage[]).filter(isWorkspaceTreeMessage);
  assert.equal(first.length, 1, "the tree is injected on the first model call");
  assert.match(text(first[0]!), /README\.md/);
  assert.match(text(first[0]!), /main\.ts/);
  const last = model.calls.at(-1)!.messages as BaseMessage[];
  assert.ok(workspaceView(last).has("src/new.ts"), "deepagents' write_file created a file: the model was told");
  const firstTree = first[0]!;
  assert.equal(last.filter(isWorkspaceTreeMessage)[0]!.content, firstTree.content, "the first tree is left as it was (append mode)");
}

test("deepagents' FilesystemBackend (leaks host paths on its own) behind the FileManager: only workspace paths reach the model", async () => {
  const dir = await seed("fs-backend");
  // deepagents' own backend, rooted per thread; non-virtual mode reports absolute host paths.
  const backend = (runtime: BackendRuntime) => new FilesystemBackend({ rootDir: workspaceFromConfig(runtime, root).dir });
  const { model, tools, byId } = await runDeepAgent("fs-backend", fileManager(["path", "file_path"]), backend);

  // Proof that the raw backend leaks: the same ls without the middleware shows the host path.
  const raw = await new FilesystemBackend({ rootDir: dir }).ls(dir);
  assert.ok(JSON.stringify(raw).includes(dir), "precondition: FilesystemBackend reports host paths");

  for (const m of tools) assert.ok(!text(m).includes(root), `host path reached the model in ${m.name}: ${text(m)}`);
  assert.match(text(byId("c_ls")), /README\.md/);
  assert.match(text(byId("c_glob")), /src\/main\.ts/);
  assert.match(text(byId("c_grep")), /README\.md/);
  assert.match(text(byId("c_read")), /implement/);
  assert.match(text(byId("c_missing")), /missing\.ts/);
  assertTreeFlow(model);
});

test("WorkbenchBackend behind the FileManager: tree injected, guarded tools, workspace paths", async () => {
  await seed("wb-backend");
  const { model, tools, byId } = await runDeepAgent("wb-backend", fileManager(), new WorkbenchBackend({ rootDir: root }));
  for (const m of tools) assert.ok(!text(m).includes(root), `host path reached the model in ${m.name}: ${text(m)}`);
  assert.match(text(byId("c_ls")), /\/README\.md/);
  assert.equal(text(byId("c_glob")), "/src/main.ts");
  assert.match(text(byId("c_grep")), /\/README\.md/);
  assert.match(text(byId("c_missing")), /'\/src\/missing\.ts' not found/);
  assertTreeFlow(model);
});
