// createWorkbench: one root for every part, groups switchable, options validated, close() idempotent.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { createWorkbench, type WorkbenchOptions } from "../src/workbench.js";

let root = "";
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-create-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

test("default parts: FileManager plus file, basic and web tools; shell only when enabled", async () => {
  const wb = createWorkbench({ rootDir: root, webTools: { env: { TAVILY_API_KEY: "tvly-unused" } } });
  const names = wb.tools.map((t) => t.name);
  for (const n of ["read_file", "write_file", "patch", "get_current_time", "web_search", "web_extract"]) assert.ok(names.includes(n), `missing ${n}`);
  assert.ok(!names.includes("run_command"), "no shell unless asked");
  assert.equal(wb.middleware.length, 1);
  assert.equal(wb.middleware[0], wb.fileManager);
  assert.equal(wb.fileManager.name, "FileManagerMiddleware");
  assert.equal(wb.workspace("t1").dir, path.join(root, "t1"));
  await wb.close();
  await wb.close();

  const shell = createWorkbench({ rootDir: root, enableShell: true, fileTools: false, webTools: false });
  assert.deepEqual(shell.tools.map((t) => t.name).sort(), ["get_current_time", "run_command"]);
  await shell.close();
});

test("every part uses the same root: a write through the tools lands where the middleware looks", async () => {
  const wb = createWorkbench({ rootDir: path.join(root, "shared"), webTools: false });
  const model = fakeModel()
    .respondWithTools([{ name: "write_file", args: { path: "a/b.txt", content: "hi\n" }, id: "w" }])
    .respond(new AIMessage("ok"));
  const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer: new MemorySaver() });
  await agent.invoke({ messages: [new HumanMessage("write")] }, { configurable: { thread_id: "same" } });
  assert.equal(await readFile(path.join(root, "shared", "same", "a", "b.txt"), "utf8"), "hi\n");
  const lastCall = model.calls.at(-1)!.messages.map((m) => String(m.content)).join("\n");
  assert.match(lastCall, /b\.txt/, "the FileManager showed the file the tool wrote");
  await wb.close();
});

test("bad options fail at creation with a message naming the field", () => {
  assert.throws(() => createWorkbench({ rootDir: "" }), /rootDir/);
  assert.throws(() => createWorkbench({ webTool: false } as unknown as WorkbenchOptions), /webTool/);
  assert.throws(() => createWorkbench({ enableShell: "yes" } as unknown as WorkbenchOptions), /enableShell/);
});

test("fileOps reaches every part: tools write and the tree lists through the given file operations", async () => {
  const fileOps = new ShellFileOperations(new LocalShellEnvironment());
  const used = new Set<string>();
  // Observe which parts go through the given backend (it stays a real ShellFileOperations).
  const observed = new Proxy(fileOps, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        used.add(String(prop));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const wb = createWorkbench({ rootDir: path.join(root, "remote"), fileOps: observed, webTools: false });
  const model = fakeModel()
    .respondWithTools([{ name: "write_file", args: { path: "r.txt", content: "remote\n" }, id: "w" }])
    .respond(new AIMessage("ok"));
  const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer: new MemorySaver() });
  await agent.invoke({ messages: [new HumanMessage("write")] }, { configurable: { thread_id: "r" } });
  await wb.close();
  assert.equal(await readFile(path.join(root, "remote", "r", "r.txt"), "utf8"), "remote\n");
  assert.ok(used.has("writeAtomic"), "write_file used the given fileOps");
  assert.ok(used.has("readdir"), "the tree listed through the given fileOps");
  assert.match(model.calls.at(-1)!.messages.map((m) => String(m.content)).join("\n"), /r\.txt/);
});
