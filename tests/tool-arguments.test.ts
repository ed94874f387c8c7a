/**
 * Wrong argument types never end a run, even without the FileManager and with another
 * middleware that defines wrapToolCall (where LangChain lets tool exceptions escape).
 */
import assert from "node:assert/strict";
import test from "node:test";
import { ToolMessage } from "@langchain/core/messages";
import { createAgent, createMiddleware } from "langchain";
import { createBasicTools } from "../tools/basicTools.js";
import { createFileTools } from "../tools/fileTools.js";
import { createWebTools } from "../tools/webTools.js";
import { scriptedModel, tempRoot } from "./helpers/agentHarness.js";

const passThrough = createMiddleware({ name: "PassThrough", wrapToolCall: (request, handler) => handler(request) });

test("schema failures become error ToolMessages that name the field and the fix; the run continues", async () => {
  const { root, cleanup } = await tempRoot("wb-args-");
  try {
    const tools = [...createBasicTools({ rootDir: root }), ...createFileTools({ rootDir: root }), ...createWebTools({ env: { TAVILY_API_KEY: "tvly-unused" } })];
    const model = await scriptedModel([
      [
        { name: "read_file", args: { path: 42, offset: "first" }, id: "c1" },
        { name: "write_file", args: { path: "a.txt" }, id: "c2" },
        { name: "search_files", args: { pattern: ["x"] }, id: "c3" },
        { name: "patch", args: { mode: "sideways" }, id: "c4" },
        { name: "get_current_time", args: { timezone: 7 }, id: "c5" },
        { name: "web_search", args: { query: 3 }, id: "c6" },
        { name: "web_extract", args: { urls: "not-a-list" }, id: "c7" },
      ],
      "done",
    ]);
    const agent = createAgent({ model, tools, middleware: [passThrough] });
    const result = await agent.invoke({ messages: [{ role: "user", content: "go" }] }, { configurable: { thread_id: "args" } });
    const toolMessages = result.messages.filter((m) => ToolMessage.isInstance(m)) as ToolMessage[];
    assert.equal(toolMessages.length, 7);
    for (const m of toolMessages) {
      assert.equal(m.status, "error", `${m.name} should answer with an error`);
      const text = String(m.content);
      assert.match(text, new RegExp(`Invalid arguments for ${m.name}`));
      assert.match(text, /Fix the arguments and call .* again/);
    }
    const read = String(toolMessages.find((m) => m.tool_call_id === "c1")!.content);
    assert.match(read, /path/);
    assert.match(read, /offset/);
    assert.equal(String(result.messages.at(-1)!.content), "done");
  } finally {
    await cleanup();
  }
});

test("direct invocation with a tool call returns an error ToolMessage instead of throwing", async () => {
  const readFile = createFileTools({ rootDir: "/nonexistent-root-for-test" })[0] as unknown as { invoke(input: unknown): Promise<unknown> };
  const out = await readFile.invoke({ type: "tool_call", id: "x1", name: "read_file", args: { path: 1 } });
  assert.ok(ToolMessage.isInstance(out));
  assert.equal(out.status, "error");
  assert.equal(out.tool_call_id, "x1");
  const plain = await readFile.invoke({ path: 1 });
  assert.match(String(plain), /Invalid arguments for read_file/);
});
