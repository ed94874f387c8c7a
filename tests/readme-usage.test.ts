// Usage the README promises: your own tools next to `wb.tools` (this file is type-checked by
// `npm test`, so the documented pattern must compile), and the recursion-limit rule of thumb.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent, tool } from "langchain";
import { z } from "zod";
import { createWorkbench, type Workbench } from "../src/workbench.js";
import { tempRoot } from "./helpers/agentHarness.js";

let root: { root: string; cleanup: () => Promise<void> };
let wb: Workbench;
before(async () => {
  root = await tempRoot("wb-readme-");
  wb = createWorkbench({ rootDir: root.root, webTools: false });
});
after(async () => {
  await wb.close();
  await root.cleanup();
});

const echo = tool(async ({ text }) => `echo: ${text}`, {
  name: "echo",
  description: "Repeats the text.",
  schema: z.object({ text: z.string().describe("What to repeat.") }),
});

function agentWith(toolTurns: number) {
  let model = fakeModel();
  for (let i = 0; i < toolTurns; i++) {
    model = model.respond(new AIMessage({ content: "", tool_calls: [{ id: `e${i}`, name: "echo", args: { text: String(i) } }] }));
  }
  model = model.respond(new AIMessage("done"));
  const tools = [...wb.tools, echo];
  return createAgent({ model, tools, middleware: wb.middleware, checkpointer: new MemorySaver() });
}

test("a custom tool next to wb.tools runs, and the FileManager still wraps it", async () => {
  const agent = agentWith(1);
  const out = await agent.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: "custom" } });
  const reply = out.messages.find((m) => ToolMessage.isInstance(m) && m.name === "echo");
  assert.ok(reply, "the echo tool answered");
  assert.equal(String(reply.content), "echo: 0");
  assert.equal(typeof out.startWorkTime, "number", "the FileManager's beforeAgent ran");
});

test("recursion limit: 12 tool turns exceed the default 25 and fit in 3 × turns + 5", async () => {
  await assert.rejects(
    agentWith(12).invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: "limit-default" } }),
    (error: unknown) => /recursion/i.test(String((error as Error)?.name) + String((error as Error)?.message)),
    "the default recursion limit stops a 12-turn run (the README says so)",
  );
  const out = await agentWith(12).invoke(
    { messages: [new HumanMessage("go")] },
    { configurable: { thread_id: "limit-rule" }, recursionLimit: 3 * 12 + 5 },
  );
  assert.equal(String(out.messages.at(-1)?.content), "done", "the documented rule of thumb lets the run finish");
});
