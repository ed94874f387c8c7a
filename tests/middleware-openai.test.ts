/**
 * The history the FileManager produces must be accepted by OpenAI's chat completions API: a
 * loopback server that validates requests the way OpenAI does (tool messages answer the open
 * tool calls of the preceding assistant message, nothing else in between) drives a real
 * `ChatOpenAI` agent through file changes and tree injections.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, it } from "node:test";
import { HumanMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { createAgent } from "langchain";
import { createFileManagerMiddleware, type FileManagerMiddleware } from "../middleware/index.js";
import { createBasicTools } from "../tools/index.js";
import { tempRoot, workspaceTools } from "./helpers/agentHarness.js";
import { chatCompletionBody, type ChatReply } from "./helpers/fakeOpenAI.js";

type WireMessage = { role: string; content?: unknown; tool_calls?: { id: string }[]; tool_call_id?: string; name?: string };

/** OpenAI's ordering rule for tool messages; returns the first violation. */
function openAiViolation(messages: WireMessage[]): string | undefined {
  let open = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m.role === "tool") {
      if (!m.tool_call_id || !open.has(m.tool_call_id)) return `messages[${i}]: role 'tool' must answer a preceding 'tool_calls' entry`;
      open.delete(m.tool_call_id);
      continue;
    }
    if (open.size > 0) return `messages[${i}]: an assistant message with 'tool_calls' must be followed by tool messages answering each id`;
    open = new Set((m.role === "assistant" ? (m.tool_calls ?? []) : []).map((c) => c.id));
  }
  return undefined;
}

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

let server: Server;
let baseURL: string;
const requests: WireMessage[][] = [];
let root: string;
let cleanup: () => Promise<void>;
let fm: FileManagerMiddleware | undefined;

async function body(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

before(async () => {
  ({ root, cleanup } = await tempRoot("wb-openai-"));
  server = createServer(async (req, res) => {
    const send = (status: number, payload: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(payload));
    };
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) return send(404, { error: { message: `unexpected ${req.method} ${req.url}` } });
    const payload = await body(req);
    requests.push(payload.messages);
    const violation = openAiViolation(payload.messages);
    if (violation) return send(400, { error: { message: `Invalid parameter: ${violation}`, type: "invalid_request_error" } });
    const reply = replies[Math.min(requests.length - 1, replies.length - 1)]!;
    send(200, chatCompletionBody(reply, requests.length, payload.model));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

after(async () => {
  await fm?.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
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
