/**
 * deepagents + langgraph-workbench: `npx tsx examples/deepagent.ts`
 *
 * deepagents' own file tools (ls, read_file, write_file, edit_file, glob, grep) run on
 * `WorkbenchBackend`, so they inherit the workspace guards (confinement, device paths, binary
 * sniffing, credential files, secret redaction), and the FileManager middleware shows the model
 * the workspace tree. With `OPENAI_API_KEY` (optional `OPENAI_BASE_URL`, `OPENAI_MODEL`) a real
 * model drives it; without, a clearly labelled scripted model does.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { createDeepAgent } from "deepagents";
import { createFileManagerMiddleware } from "../middleware/fileManager.js";
import { isWorkspaceTreeMessage } from "../middleware/treeMessage.js";
import { WorkbenchBackend } from "../src/deepagents/index.js";

const THREAD = "deepagent-demo";

function scriptedModel(): BaseChatModel {
  return fakeModel()
    .respondWithTools([
      { name: "ls", args: { path: "/" }, id: "s1" },
      { name: "grep", args: { pattern: "TODO", path: "/" }, id: "s2" },
    ])
    .respondWithTools([
      { name: "read_file", args: { file_path: "/.env" }, id: "s3" },
      { name: "read_file", args: { file_path: "/etc/passwd" }, id: "s4" },
      { name: "read_file", args: { file_path: "/config.yaml" }, id: "s5" },
    ])
    .respondWithTools([{ name: "write_file", args: { file_path: "/docs/plan.md", content: "# Plan\n- write the docs\n" }, id: "s6" }])
    .respond(new AIMessage("[offline scripted model] Listed the workspace, found the TODO, wrote docs/plan.md."));
}

function chooseModel(): { model: BaseChatModel; label: string } {
  if (!process.env.OPENAI_API_KEY) return { model: scriptedModel(), label: "offline scripted model (set OPENAI_API_KEY for a real one)" };
  const name = process.env.OPENAI_MODEL ?? "gpt-4o-mini";
  const model = new ChatOpenAI({ model: name, ...(process.env.OPENAI_BASE_URL ? { configuration: { baseURL: process.env.OPENAI_BASE_URL } } : {}) });
  return { model, label: `ChatOpenAI ${name}` };
}

function show(m: BaseMessage): string {
  if (AIMessage.isInstance(m) && m.tool_calls?.length) {
    return `[ai] → ${m.tool_calls.map((c) => `${c.name}(${JSON.stringify(c.args)})`).join(", ")}`;
  }
  const body = typeof m.content === "string" ? m.content : JSON.stringify(m.content);
  const who = isWorkspaceTreeMessage(m) ? "tree" : m.getType() === "tool" ? `tool:${m.name}` : m.getType();
  return `[${who}] ${body.slice(0, 400).replace(/\n/g, "\n    ")}`;
}

const rootDir = process.env.WORKBENCH_ROOT ?? (await mkdtemp(path.join(os.tmpdir(), "workbench-deepagent-")));
const dir = path.join(rootDir, THREAD);
await mkdir(dir, { recursive: true });
await writeFile(path.join(dir, "README.md"), "# Demo\nTODO: write a plan in docs/\n");
await writeFile(path.join(dir, "config.yaml"), "service: demo\napi_key: sk-demo-1234567890abcdefghijklmnop\n");
await writeFile(path.join(dir, ".env"), "OPENAI_API_KEY=sk-never-shown-1234567890abcdef\n");

const fileManager = createFileManagerMiddleware({ rootDir });
const { model, label } = chooseModel();
const agent = createDeepAgent({
  model,
  middleware: [fileManager],
  backend: new WorkbenchBackend({ rootDir }),
  checkpointer: new MemorySaver(),
});

console.log(`Model: ${label}\nWorkspace: ${dir}\n`);
try {
  const result = await agent.invoke(
    { messages: [new HumanMessage("Look at the workspace, find open TODOs and write a short plan to docs/plan.md.")] },
    { configurable: { thread_id: THREAD } },
  );
  for (const m of result.messages as BaseMessage[]) console.log(show(m));
} finally {
  await fileManager.close();
  if (!process.env.WORKBENCH_ROOT) await rm(rootDir, { recursive: true, force: true });
}
