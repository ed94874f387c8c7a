// Large results of foreign tools are saved to the workspace (.tool-results/, secrets redacted,
// hidden from the tree) and the model gets a head/tail preview naming the file and how to read
// more; the package's own tools and small results are left alone; the option can turn it off.
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { tool, type StructuredToolInterface } from "@langchain/core/tools";
import { Command, MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { z } from "zod";
import { createWorkbench, type Workbench, type WorkbenchOptions } from "../src/workbench.js";
import { isWorkspaceTreeMessage } from "../middleware/treeMessage.js";

let root = "";
const opened: Workbench[] = [];
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-evict-"));
});
after(async () => {
  await Promise.all(opened.map((w) => w.close()));
  await rm(root, { recursive: true, force: true });
});

const SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
/** ~250k characters (≈62k tokens): a line per record, a secret in the middle, a marker at each end. */
const BIG = ["FIRST-RECORD", ...Array.from({ length: 5000 }, (_, i) => `record ${i}: ${"x".repeat(40)}`), `token=${SECRET}`, "after the secret", "LAST-RECORD"].join("\n");
const text = (m: BaseMessage) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content));
const call = (name: string, args: Record<string, unknown>, id: string) => new AIMessage({ content: "", tool_calls: [{ name, args, id, type: "tool_call" }] });

function make(options: WorkbenchOptions = {}): Workbench {
  const wb = createWorkbench({ rootDir: path.join(root, `wb${opened.length}`), webTools: false, basicTools: false, ...options });
  opened.push(wb);
  return wb;
}

const bigTool = tool(async () => BIG, { name: "mcp_dump", description: "returns a lot", schema: z.object({}) });
const commandTool = tool(
  async (_input, config) => new Command({ update: { messages: [new ToolMessage({ content: BIG, tool_call_id: String((config as { toolCall?: { id?: string } }).toolCall?.id ?? "") })] } }),
  { name: "mcp_command", description: "returns a Command", schema: z.object({}) },
);
const smallTool = tool(async () => "small answer", { name: "mcp_small", description: "small", schema: z.object({}) });

async function run(wb: Workbench, thread: string, steps: AIMessage[], tools: StructuredToolInterface[] = [bigTool, commandTool, smallTool]) {
  const model = fakeModel();
  for (const s of steps) model.respond(s);
  model.respond(new AIMessage("done"));
  const agent = createAgent({ model, tools: [...wb.tools, ...tools], middleware: wb.middleware, checkpointer: new MemorySaver() });
  const out = await agent.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: thread } });
  const results = (out.messages as BaseMessage[]).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
  return { model, results };
}

test("a foreign tool's 250k-character result is saved (redacted) and previewed; read_file reads it back; the tree hides the folder", async () => {
  const wb = make();
  const { model, results } = await run(wb, "t1", [call("mcp_dump", {}, "call/1"), call("read_file", { path: ".tool-results/mcp_dump-call_1.txt", offset: 5000, limit: 3 }, "r1")]);
  const preview = results[0]!;
  assert.ok(text(preview).length < 6_000, `the model got a preview (${text(preview).length} chars)`);
  assert.match(text(preview), /\.tool-results\/mcp_dump-call_1\.txt/);
  assert.match(text(preview), /read_file\(path=.*offset=N, limit=M\)/);
  assert.match(text(preview), /search_files/);
  assert.match(text(preview), /FIRST-RECORD/);
  assert.match(text(preview), /LAST-RECORD/, text(preview).slice(-400));
  assert.ok(!text(preview).includes(SECRET), "no secret in the preview");
  const saved = await readFile(path.join(root, "wb0", "t1", ".tool-results", "mcp_dump-call_1.txt"), "utf8");
  assert.equal(saved.split("\n").length, BIG.split("\n").length, "the whole result was saved");
  assert.ok(!saved.includes(SECRET), "the secret was redacted in the saved file");
  assert.ok(saved.includes("record 4999"));
  // The model reads more with read_file offset/limit.
  assert.match(text(results[1]!), /record 4998/);
  // The tree never lists the folder (no change message for a saved result).
  const lastCall = model.calls.at(-1)!.messages as BaseMessage[];
  assert.ok(lastCall.filter(isWorkspaceTreeMessage).every((m) => !text(m).includes(".tool-results")), "the tree hides .tool-results");
});

test("a Command carrying a large ToolMessage is evicted too; small results and the package's own tools are left alone", async () => {
  const wb = make();
  const dir = path.join(root, "wb1", "t2");
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "big.txt"), BIG);
  const { results } = await run(wb, "t2", [call("mcp_command", {}, "c1"), call("mcp_small", {}, "s1"), call("read_file", { path: "big.txt", limit: 2000 }, "r1")]);
  assert.match(text(results[0]!), /\.tool-results\/mcp_command-c1\.txt/);
  assert.equal(text(results[1]!), "small answer");
  assert.ok(!/tool-results/.test(text(results[2]!)), "read_file answers are bounded by their own window");
  assert.deepEqual(await readdir(path.join(dir, ".tool-results")), ["mcp_command-c1.txt"]);
});

test("evictLargeResults: a custom threshold, and false sends results whole; bad options throw naming the field", async () => {
  const off = make({ fileManager: { evictLargeResults: false } });
  const whole = await run(off, "t3", [call("mcp_dump", {}, "d1")]);
  assert.equal(text(whole.results[0]!).length, BIG.length);
  const low = make({ fileManager: { evictLargeResults: { thresholdTokens: 100, headChars: 50, tailChars: 0 } } });
  const lowRun = await run(low, "t4", [call("mcp_small", {}, "s1"), call("mcp_dump", {}, "d2")], [bigTool, smallTool, tool(async () => "y".repeat(500), { name: "mcp_500", description: "500 chars", schema: z.object({}) })]);
  assert.equal(text(lowRun.results[0]!), "small answer");
  assert.match(text(lowRun.results[1]!), /over the 100-token limit/);
  assert.throws(() => make({ fileManager: { evictLargeResults: { thresholdTokens: 5 } } }), /thresholdTokens/);
  assert.throws(() => make({ fileManager: { evictLargeResults: { treshold: 1 } as never } }), /treshold/);
});
