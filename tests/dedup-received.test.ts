// Read dedup follows what the model received: a result contextEditingMiddleware cleared in the
// model request (state keeps it) is read again for real, in either middleware order; the same
// for a custom wrapModelCall that trims history. The record survives a checkpointer round trip.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { ClearToolUsesEdit, contextEditingMiddleware, createAgent, createMiddleware } from "langchain";
import { recordingModel, resultSignature, unseenAmong } from "../middleware/receivedResults.js";
import { createWorkbench, type Workbench } from "../src/workbench.js";
import { resultSpy } from "./helpers/agentHarness.js";

let root = "";
let wb: Workbench;
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-received-"));
  wb = createWorkbench({ rootDir: root, webTools: false, basicTools: false });
});
after(async () => {
  await wb.close();
  await rm(root, { recursive: true, force: true });
});

const read = (id: string) => new AIMessage({ content: "", tool_calls: [{ name: "read_file", args: { path: "notes.txt" }, id }] });
const text = (m: BaseMessage) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content));
const isStub = (m: ToolMessage) => /"dedup":true/.test(text(m));

async function seed(thread: string): Promise<void> {
  await mkdir(path.join(root, thread), { recursive: true });
  await writeFile(path.join(root, thread, "notes.txt"), "alpha line\n".repeat(40));
}

/** Clears every tool result but the newest once the request is over a few tokens. */
const clearing = () => contextEditingMiddleware({ edits: [new ClearToolUsesEdit({ trigger: { tokens: 50 }, keep: { messages: 1 } })] });

for (const order of ["workbench first", "workbench last"] as const) {
  test(`contextEditing clears the first read_file result (${order}): the re-read returns the file, not an "unchanged" stub`, async () => {
    const thread = `ce-${order.replace(" ", "-")}`;
    await seed(thread);
    const model = fakeModel().respond(read("r1")).respond(read("r2")).respond(read("r3")).respond(read("r4")).respond(new AIMessage("done"));
    const edit = clearing();
    const spy = resultSpy();
    const agent = createAgent({
      model,
      tools: wb.tools,
      middleware: [spy.middleware, ...(order === "workbench first" ? [...wb.middleware, edit] : [edit, ...wb.middleware])],
      checkpointer: new MemorySaver(),
    });
    await agent.invoke({ messages: [new HumanMessage("read notes")] }, { configurable: { thread_id: thread } });
    const results = spy.seen;
    assert.equal(results.length, 4);
    // keep 1: the model's request holds only the newest result intact; r1 is [cleared] from the 3rd call on.
    const third = model.calls[2]!.messages as BaseMessage[];
    assert.ok(third.some((m) => ToolMessage.isInstance(m) && m.tool_call_id === "r1" && /cleared/.test(text(m))), "context editing did its job");
    for (const r of results) assert.notEqual(r.status, "error", `${r.tool_call_id} must not be blocked: ${text(r).slice(0, 200)}`);
    // r2: the model had r1 intact → stub. r3: r1 was cleared in its request → a real read. r4: r3 intact → stub.
    assert.deepEqual(results.map(isStub), [false, true, false, true], results.map((r) => text(r).slice(0, 100)).join("\n"));
    // The oracle: a stub only ever points at a result the model's latest request held intact.
    results.forEach((r, i) => {
      if (!isStub(r)) return assert.match(text(r), /alpha line/);
      const ref = /tool call (\S+?);/.exec(JSON.parse(text(r)).message as string)?.[1];
      const sent = (model.calls[i]!.messages as BaseMessage[]).find((m) => ToolMessage.isInstance(m) && m.tool_call_id === ref);
      assert.ok(sent && /alpha line/.test(text(sent)), `stub ${r.tool_call_id} points at ${ref}, which the model had intact`);
    });
  });
}

test("without context editing the re-read is still a stub, and the 4th identical read is blocked (unchanged guarantees)", async () => {
  const thread = "plain";
  await seed(thread);
  const model = fakeModel().respond(read("p1")).respond(read("p2")).respond(read("p3")).respond(read("p4")).respond(new AIMessage("done"));
  const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer: new MemorySaver() });
  const out = await agent.invoke({ messages: [new HumanMessage("read")] }, { configurable: { thread_id: thread } });
  const results = (out.messages as BaseMessage[]).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
  assert.ok(!isStub(results[0]!));
  assert.ok(isStub(results[1]!) && isStub(results[2]!));
  assert.equal(results[3]!.status, "error");
  assert.match(text(results[3]!), /Blocked/);
});

test("a custom wrapModelCall that drops old tool results: the dropped read is re-read for real; the record is checkpointed", async () => {
  const thread = "trim";
  await seed(thread);
  // Keeps only the last two messages of the request (a crude trimmer the model sees through).
  const trimmer = createMiddleware({
    name: "Trimmer",
    wrapModelCall: (request, handler) => handler({ ...request, messages: request.messages.length > 3 ? [request.messages[0]!, ...request.messages.slice(-1)] : request.messages }),
  });
  const checkpointer = new MemorySaver();
  const model = fakeModel().respond(read("t1")).respond(new AIMessage("ok"));
  const agent = createAgent({ model, tools: wb.tools, middleware: [...wb.middleware, trimmer], checkpointer });
  const config = { configurable: { thread_id: thread } };
  await agent.invoke({ messages: [new HumanMessage("read")] }, config);
  // Second run: a new request; the trimmer drops t1 (the model last saw only "ok" and the new question).
  const model2 = fakeModel().respond(read("t2")).respond(new AIMessage("done"));
  const agent2 = createAgent({ model: model2, tools: wb.tools, middleware: [...wb.middleware, trimmer], checkpointer });
  const out = await agent2.invoke({ messages: [new HumanMessage("again")] }, config);
  const t2 = (out.messages as BaseMessage[]).find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "t2")!;
  assert.ok(!isStub(t2), `t1 was trimmed from the model's view: ${text(t2).slice(0, 120)}`);
  assert.match(text(t2), /alpha line/);
  const snapshot = await agent2.graph.getState(config);
  assert.deepEqual((snapshot.values as Record<string, { _unseenResults?: string[] }>)._fileManager?._unseenResults, [], "t2 reached the model intact");
});

test("recordingModel: same prototype and name; records what the tool-bound model is invoked with", async () => {
  const model = fakeModel().respond(new AIMessage("hi"));
  let got: readonly BaseMessage[] = [];
  const view = recordingModel(model, (m) => void (got = m));
  assert.ok(view instanceof model.constructor);
  assert.equal(view.getName(), model.getName());
  const bound = view.bindTools([]);
  await bound.invoke([new HumanMessage("x")]);
  assert.deepEqual(got.map(text), ["x"]);
  assert.equal(model.calls.length, 1, "the real model answered");
});

test("unseenAmong: a string and one text block of it count as intact; a changed or missing result does not", () => {
  const state = [new ToolMessage({ content: "abc", tool_call_id: "a" }), new ToolMessage({ content: "def", tool_call_id: "b" }), new ToolMessage({ content: "ghi", tool_call_id: "c" })];
  const sent = [new ToolMessage({ content: [{ type: "text", text: "abc" }], tool_call_id: "a" }), new ToolMessage({ content: "[cleared]", tool_call_id: "b" })];
  const ids = new Map<string, string | undefined>([["a", undefined], ["b", undefined], ["c", undefined], ["gone", undefined]]);
  assert.deepEqual(unseenAmong(ids, state, sent), ["b", "c"]);
  // A state copy context editing cleared in place (and marked) does not pass for intact.
  const cleared = [new ToolMessage({ content: "[cleared]", tool_call_id: "a", response_metadata: { context_editing: { cleared: true } } })];
  assert.deepEqual(unseenAmong(new Map([["a", resultSignature("abc")]]), cleared, cleared), ["a"]);
  assert.deepEqual(unseenAmong(new Map([["a", resultSignature("abc")]]), state, sent), []);
});
