/**
 * The history the FileManager produces must be accepted by OpenAI's chat completions API: a
 * loopback server that validates requests the way OpenAI does (tool messages answer the open
 * tool calls of the preceding assistant message, nothing else in between) drives a real
 * `ChatOpenAI` agent through file changes and tree injections.
 */
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { HumanMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { createAgent } from "langchain";
import { createFileManagerMiddleware, type FileManagerMiddleware } from "../middleware/index.js";
import { createBasicTools } from "../tools/index.js";
import { tempRoot, workspaceTools } from "./helpers/agentHarness.js";
import { openAiViolation, startOpenAiRulesServer, type ChatReply, type WireMessage } from "./helpers/fakeOpenAI.js";

const replies: ChatReply[] = [
  { tool_calls: [{ id: "call_a", type: "function", function: { name: "create_file", arguments: JSON.stringify({ path: "plan.md" }) } }] },
  {
    tool_calls: [
      { id: "call_b", type: "function", function: { name: "create_file", arguments: JSON.stringify({ path: "notes.md" }) } },
      { id: "call_c", type: "function", function: { name: "get_current_time", arguments: JSON.stringify({ timezone: "UTC" }) } },
    ],
  },
  { tool_calls: [{ id: "call_d", type: "function", function: { name: "delete_file", arguments: JSON.stringify({ path: "plan.md" }) } }] },
  { content: "All done." },
];

let openai: Awaited<ReturnType<typeof startOpenAiRulesServer>>;
let baseURL: string;
let requests: WireMessage[][];
let root: string;
let cleanup: () => Promise<void>;
let fm: FileManagerMiddleware | undefined;

before(async () => {
  ({ root, cleanup } = await tempRoot("wb-openai-"));
  openai = await startOpenAiRulesServer(() => replies);
  ({ baseURL, requests } = openai);
});

after(async () => {
  await fm?.close();
  await openai.close();
  await cleanup();
});

it("sends OpenAI a valid history: tree updates as user messages after the tool results", async () => {
  fm = createFileManagerMiddleware({ rootDir: root });
  const model = new ChatOpenAI({ model: "gpt-4o-mini", apiKey: "sk-test-not-a-key", maxRetries: 0, timeout: 30_000, configuration: { baseURL } });
  const agent = createAgent({
    model,
    tools: [...workspaceTools(root), ...createBasicTools({ rootDir: root })],
    middleware: [fm],
    checkpointer: new MemorySaver(),
  });
  const out = await agent.invoke({ messages: [new HumanMessage("plan, then tidy up")] }, { configurable: { thread_id: "openai" } });
  assert.equal(out.messages.at(-1)?.content, "All done.");
  assert.equal(requests.length, 4, "every request was accepted");
  const treeTurns = requests.map((msgs) => msgs.filter((m) => m.role === "user" && m.name === "workspace_tree"));
  assert.deepEqual(treeTurns.map((t) => t.length), [0, 1, 2, 3], "one workspace update per change, appended");
  for (let i = 1; i < requests.length; i++) {
    const prev = JSON.stringify(requests[i - 1]);
    assert.ok(JSON.stringify(requests[i]!.slice(0, requests[i - 1]!.length)) === prev, `request ${i} extends request ${i - 1} byte for byte`);
  }
  const lastUpdate = String(treeTurns[3]!.at(-1)!.content);
  assert.match(lastUpdate, /notes\.md|<workspace_changes/);
  assert.ok(/- plan\.md/.test(lastUpdate) || (/<workspace_tree/.test(lastUpdate) && !/plan\.md/.test(lastUpdate)), "the delete is visible to the next request");
  assert.ok(requests.every((msgs) => !msgs.some((m) => m.role === "tool" && m.tool_call_id?.startsWith("workspace"))), "no invented tool_call_id");
});

it("the validator rejects injecting the tree as a tool message with an invented id", () => {
  const seedStyle = [
    { role: "user", content: "go" },
    { role: "assistant", tool_calls: [{ id: "call_1" }] },
    { role: "tool", tool_call_id: "call_1", content: "ok" },
    { role: "tool", tool_call_id: "tree_update_1", content: ".\n`-- a.txt" },
  ];
  assert.match(openAiViolation(seedStyle) ?? "", /must answer a preceding/);
});
