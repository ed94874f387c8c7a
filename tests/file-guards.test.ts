import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { AIMessage, HumanMessage, RemoveMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent, createMiddleware, summarizationMiddleware, tool } from "langchain";
import { z } from "zod";
import { fileGuardsMiddleware, type FileGuardsOptions } from "../middleware/fileGuards.js";
import { createFileTools } from "../tools/fileTools.js";

let root: string;
let ws: string;
let n = 0;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-guards-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A fresh thread directory per test, so tests never see each other's files. */
async function thread(): Promise<{ id: string; dir: string }> {
  const id = `t${++n}`;
  ws = path.join(root, id);
  await mkdir(ws, { recursive: true });
  return { id, dir: ws };
}

type Call = { name: string; args: Record<string, unknown>; id: string };

/** A tool outside the file tools; it also lets a test change a file "behind the agent's back". */
const sideEffect = tool(
  async ({ file, content }: { file?: string; content?: string }) => {
    if (file) {
      await writeFile(file, content ?? "changed elsewhere\n");
      const later = new Date(Date.now() + 5_000);
      await utimes(file, later, later);
    }
    return "ok";
  },
  { name: "other_tool", description: "test helper", schema: z.object({ file: z.string().optional(), content: z.string().optional() }) },
);

async function runAgent(turns: Call[][], opts: { middleware?: unknown[]; guards?: FileGuardsOptions | false; threadId: string; checkpointer?: MemorySaver } ) {
  let model = fakeModel();
  for (const calls of turns) model = model.respondWithTools(calls);
  model = model.respond(new AIMessage("done"));
  const middleware = [...(opts.guards === false ? [] : [fileGuardsMiddleware(opts.guards ?? {})]), ...(opts.middleware ?? [])] as ReturnType<typeof fileGuardsMiddleware>[];
  const agent = createAgent({ model, tools: [...createFileTools({ rootDir: root }), sideEffect] as unknown as ReturnType<typeof createFileTools>, middleware, checkpointer: opts.checkpointer });
  const out = await agent.invoke({ messages: [new HumanMessage("work")] }, { configurable: { thread_id: opts.threadId } });
  const state = async () => ((await agent.getState({ configurable: { thread_id: opts.threadId } })) as unknown as { values: Record<string, any> }).values;
  return { out, state };
}

/**
 * Two invocations of one agent (the file guards first, then `middleware`) on `threadId` with a
 * checkpointer, so the second sees the first's state: the model makes the `first` tool turns and
 * answers "first done", then the `second` ones and "done"; `between` runs in between. The second's output.
 */
async function invokeTwice(threadId: string, [first, second]: [Call[][], Call[][]], opts: { middleware?: unknown[]; between?: () => Promise<void>; again?: string } = {}) {
  let model = fakeModel();
  for (const calls of first) model = model.respondWithTools(calls);
  model = model.respond(new AIMessage("first done"));
  for (const calls of second) model = model.respondWithTools(calls);
  model = model.respond(new AIMessage("done"));
  const middleware = [fileGuardsMiddleware(), ...(opts.middleware ?? [])] as ReturnType<typeof fileGuardsMiddleware>[];
  const agent = createAgent({ model, tools: createFileTools({ rootDir: root }), middleware, checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: threadId } };
  await agent.invoke({ messages: [new HumanMessage("read it")] }, config);
  await opts.between?.();
  return agent.invoke({ messages: [new HumanMessage(opts.again ?? "read it again")] }, config);
}

function toolResults(messages: BaseMessage[]): Map<string, { status: string | undefined; body: any }> {
  const map = new Map<string, { status: string | undefined; body: any }>();
  for (const m of messages) {
    if (!ToolMessage.isInstance(m)) continue;
    let body: any = m.content;
    try {
      body = JSON.parse(String(m.content));
    } catch {
      /* plain text */
    }
    map.set(m.tool_call_id, { status: m.status, body });
  }
  return map;
}

const read = (id: string, args: Record<string, unknown> = { path: "a.txt" }): Call => ({ name: "read_file", args, id });
/** Reads r1–r3 of a.txt in the first invocation, r4 in the second. */
const threeReadsThenOne = (): [Call[][], Call[][]] => [[[read("r1")], [read("r2")], [read("r3")]], [[read("r4")]]];

describe("read dedup", () => {
  it("2nd identical read of an unchanged file → unchanged stub; 3rd → stub with the loop warning; 4th → blocked", async () => {
    const t = await thread();
    await writeFile(path.join(t.dir, "a.txt"), "hello\n");
    const { out } = await runAgent([[read("r1")], [read("r2")], [read("r3")], [read("r4")]], { threadId: t.id });
    const r = toolResults(out.messages);
    assert.equal(r.get("r1")!.body.content, "1|hello");
    assert.deepEqual({ status: r.get("r2")!.body.status, dedup: r.get("r2")!.body.dedup }, { status: "unchanged", dedup: true });
    assert.match(r.get("r2")!.body.message, /tool call r1/);
    assert.notEqual(r.get("r3")!.status, "error");
    assert.equal(r.get("r3")!.body.status, "unchanged");
    assert.match(r.get("r3")!.body._warning, /same arguments 3 times in a row/);
    assert.equal(r.get("r4")!.status, "error");
    assert.match(r.get("r4")!.body.error, /Blocked: this is call 4 in a row/);
    assert.equal(out.messages.at(-1)!.content, "done");
  });
  it("a second stub for the same window outside a consecutive run is refused", async () => {
    const t = await thread();
    await writeFile(path.join(t.dir, "a.txt"), "hello\n");
    await writeFile(path.join(t.dir, "b.txt"), "bye\n");
    const b = (id: string) => read(id, { path: "b.txt" });
    const { out } = await runAgent([[read("r1")], [b("b1")], [read("r2")], [b("b2")], [read("r3")]], { threadId: t.id });
    const r = toolResults(out.messages);
    assert.equal(r.get("r2")!.body.status, "unchanged");
    assert.equal(r.get("r3")!.status, "error");
    assert.match(r.get("r3")!.body.error, /Blocked: .* already in the conversation \(tool call r1\)/);
  });
  it("a different window, or a changed file, is read for real", async () => {
    const t = await thread();
    const file = path.join(t.dir, "a.txt");
    await writeFile(file, "one\ntwo\n");
    const { out } = await runAgent(
      [[read("r1")], [read("r2", { path: "a.txt", offset: 2 })], [{ name: "other_tool", args: { file, content: "uno\ntwo\n" }, id: "x" }], [read("r3")]],
      { threadId: t.id },
    );
    const r = toolResults(out.messages);
    assert.equal(r.get("r2")!.body.content, "2|two");
    assert.equal(r.get("r3")!.body.content, "1|uno\n2|two");
  });
  it("without the middleware there is no dedup (the tools still work)", async () => {
    const t = await thread();
    await writeFile(path.join(t.dir, "a.txt"), "hello\n");
    const { out } = await runAgent([[read("r1")], [read("r2")]], { threadId: t.id, guards: false });
    assert.equal(toolResults(out.messages).get("r2")!.body.content, "1|hello");
  });
  it("once the earlier result left the conversation (message removed), the file is read again", async () => {
    const t = await thread();
    await writeFile(path.join(t.dir, "a.txt"), "hello\n");
    const dropFirstRead = createMiddleware({
      name: "DropFirstRead",
      beforeModel: (state) => {
        const old = state.messages.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === "r1");
        return old?.id ? { messages: [new RemoveMessage({ id: old.id })] } : undefined;
      },
    });
    const { out } = await runAgent([[read("r1")], [read("r2")]], { threadId: t.id, middleware: [dropFirstRead] });
    const r = toolResults(out.messages);
    assert.ok(!r.has("r1"), "r1 was removed");
    assert.equal(r.get("r2")!.body.content, "1|hello", "a stub would point at a result the model no longer has");
  });
  it("once summarizationMiddleware summarised the earlier result away, the file is read again", async () => {
    const t = await thread();
    await writeFile(path.join(t.dir, "a.txt"), "hello\n");
    const summarizer = summarizationMiddleware({
      model: fakeModel().respond(new AIMessage("Summary: a.txt was read.")),
      trigger: { messages: 6 },
      keep: { messages: 2 },
    });
    const noop = (id: string): Call => ({ name: "other_tool", args: {}, id });
    const { out } = await runAgent([[read("r1")], [noop("n1")], [noop("n2")], [read("r2")]], { threadId: t.id, middleware: [summarizer] });
    const r = toolResults(out.messages);
    assert.ok(!r.has("r1"), "the first read was summarised away");
    assert.equal(r.get("r2")!.body.content, "1|hello");
  });
  it("state persists through the checkpointer across invocations", async () => {
    const t = await thread();
    await writeFile(path.join(t.dir, "a.txt"), "hello\n");
    const out = await invokeTwice(t.id, [[[read("r1")]], [[read("r2")]]]);
    assert.equal(toolResults(out.messages).get("r2")!.body.status, "unchanged");
  });
  it("parallel reads in one AIMessage are all recorded (reducer merge), and the ledger is bounded", async () => {
    const t = await thread();
    for (const f of ["a", "b", "c"]) await writeFile(path.join(t.dir, `${f}.txt`), `${f}\n`);
    const parallel = await runAgent([[read("p1", { path: "a.txt" }), read("p2", { path: "b.txt" }), read("p3", { path: "c.txt" })]], { threadId: t.id, checkpointer: new MemorySaver() });
    const state = await parallel.state();
    assert.equal(Object.keys(state._fileGuards._fileReadLedger).length, 3);
    assert.equal(Object.keys(state._fileGuards._fileReadTimes).length, 3);
    assert.equal(state._fileReadLedger, undefined, "the guards' fields share one channel");

    const t2 = await thread();
    for (const f of ["a", "b", "c"]) await writeFile(path.join(t2.dir, `${f}.txt`), `${f}\n`);
    const small = await runAgent([[read("s1", { path: "a.txt" })], [read("s2", { path: "b.txt" })], [read("s3", { path: "c.txt" })]], {
      threadId: t2.id,
      guards: { maxEntries: 2 },
      checkpointer: new MemorySaver(),
    });
    const s = await small.state();
    const kept = Object.values(s._fileGuards._fileReadLedger).map((e: any) => e.toolCallId).sort();
    assert.deepEqual(kept, ["s2", "s3"], "the oldest entry was evicted");
  });
});

describe("staleness", () => {
  it("write_file after someone else changed the file: warning appended, the write still happens", async () => {
    const t = await thread();
    const file = path.join(t.dir, "a.txt");
    await writeFile(file, "v1\n");
    const { out } = await runAgent(
      [
        [read("r1")],
        [{ name: "other_tool", args: { file, content: "v2 from elsewhere\n" }, id: "x" }],
        [{ name: "write_file", args: { path: "a.txt", content: "v3\n" }, id: "w1" }],
        [{ name: "write_file", args: { path: "a.txt", content: "v4\n" }, id: "w2" }],
      ],
      { threadId: t.id },
    );
    const r = toolResults(out.messages);
    assert.match(r.get("w1")!.body._warning, /"a.txt" changed after you last read it/);
    assert.equal(r.get("w1")!.body.bytes_written, 3);
    assert.equal(r.get("w2")!.body._warning, undefined, "the thread's own write is not staleness");
    assert.equal(await readFile(file, "utf8"), "v4\n");
  });
  it("patch gets the same warning; files never read get none", async () => {
    const t = await thread();
    const file = path.join(t.dir, "a.txt");
    await writeFile(file, "alpha\n");
    await writeFile(path.join(t.dir, "b.txt"), "beta\n");
    const { out } = await runAgent(
      [
        [read("r1")],
        [{ name: "other_tool", args: { file, content: "alpha\ngamma\n" }, id: "x" }],
        [{ name: "patch", args: { path: "a.txt", old_string: "alpha", new_string: "ALPHA" }, id: "p1" }],
        [{ name: "patch", args: { path: "b.txt", old_string: "beta", new_string: "BETA" }, id: "p2" }],
      ],
      { threadId: t.id },
    );
    const r = toolResults(out.messages);
    assert.match(r.get("p1")!.body._warning, /changed after you last read it/);
    assert.equal(r.get("p1")!.body.match_strategy, "exact");
    assert.equal(r.get("p2")!.body._warning, undefined);
    assert.equal(await readFile(file, "utf8"), "ALPHA\ngamma\n");
  });
});

describe("loop detection", () => {
  it("3rd identical consecutive read warns, 4th is blocked", async () => {
    const t = await thread();
    const missing = (id: string) => read(id, { path: "missing.txt" });
    const { out } = await runAgent([[missing("l1")], [missing("l2")], [missing("l3")], [missing("l4")]], { threadId: t.id });
    const r = toolResults(out.messages);
    assert.equal(r.get("l2")!.body._warning, undefined);
    assert.match(r.get("l3")!.body._warning, /same arguments 3 times in a row/);
    assert.match(r.get("l3")!.body.error, /File not found/);
    assert.match(r.get("l4")!.body.error, /Blocked: this is call 4 in a row/);
    assert.equal(out.messages.at(-1)!.content, "done");
  });
  it("any other tool call resets the count", async () => {
    const t = await thread();
    const missing = (id: string) => read(id, { path: "missing.txt" });
    const other = (id: string): Call => ({ name: "other_tool", args: {}, id });
    const { out } = await runAgent([[missing("l1")], [missing("l2")], [other("o1")], [missing("l3")], [missing("l4")]], { threadId: t.id });
    const r = toolResults(out.messages);
    assert.equal(r.get("l3")!.body._warning, undefined);
    assert.equal(r.get("l4")!.body._warning, undefined);
    assert.match(r.get("l4")!.body.error, /File not found/);
  });
  it("a changed file restarts the count (no block after the file changed between runs)", async () => {
    const t = await thread();
    const file = path.join(t.dir, "a.txt");
    await writeFile(file, "v1\n");
    const out = await invokeTwice(t.id, threeReadsThenOne(), {
      between: async () => {
        await writeFile(file, "v2, changed by someone else\n");
        const later = new Date(Date.now() + 5_000);
        await utimes(file, later, later);
      },
    });
    const r = toolResults(out.messages);
    assert.match(r.get("r3")!.body._warning, /3 times in a row/);
    assert.notEqual(r.get("r4")!.status, "error");
    assert.equal(r.get("r4")!.body.content, "1|v2, changed by someone else");
    assert.equal(r.get("r4")!.body._warning, undefined);
  });
  it("a result compacted out of the conversation restarts the count", async () => {
    const t = await thread();
    await writeFile(path.join(t.dir, "a.txt"), "hello\n");
    // Stands in for summarisation: before the second run's first model call, the history is
    // replaced by a summary (every earlier message removed).
    let compacted = false;
    const compact = createMiddleware({
      name: "Compact",
      beforeModel: (state) => {
        if (compacted || !state.messages.some((m) => m.content === "first done")) return undefined;
        compacted = true;
        return { messages: [new RemoveMessage({ id: "__remove_all__" }), new HumanMessage("Summary: a.txt was read three times. Read it again.")] };
      },
    });
    const out = await invokeTwice(t.id, threeReadsThenOne(), { middleware: [compact], again: "again" });
    const r = toolResults(out.messages);
    assert.ok(compacted && !r.has("r3"), "the earlier results are gone");
    assert.equal(r.get("r4")!.body.content, "1|hello", "read for real: the model no longer has the content");
    assert.equal(r.get("r4")!.body._warning, undefined);
  });
});

describe("wrong argument types for every tool (real agent run)", () => {
  const bad: Call[] = [
    { name: "read_file", args: { path: 5 }, id: "b1" },
    { name: "read_file", args: { path: "a.txt", offset: "ten" }, id: "b2" },
    { name: "read_file", args: {}, id: "b3" },
    { name: "write_file", args: { path: "a.txt" }, id: "b4" },
    { name: "write_file", args: { path: "a.txt", content: { text: "x" } }, id: "b5" },
    { name: "patch", args: { path: "a.txt", old_string: "a", new_string: "b", replace_all: "yes" }, id: "b6" },
    { name: "patch", args: { mode: "diff" }, id: "b7" },
    { name: "patch", args: { path: "a.txt", new_string: "b" }, id: "b8" },
    { name: "search_files", args: { pattern: 5 }, id: "b9" },
    { name: "search_files", args: { pattern: "a", limit: "many" }, id: "b10" },
  ];
  for (const withGuards of [true, false]) {
    it(`${withGuards ? "with" : "without"} the guards middleware: error ToolMessages, the run continues`, async () => {
      const t = await thread();
      await writeFile(path.join(t.dir, "a.txt"), "a\n");
      const { out } = await runAgent([bad.slice(0, 4), bad.slice(4)], { threadId: t.id, guards: withGuards ? {} : false });
      const r = toolResults(out.messages);
      assert.equal(r.size, bad.length);
      for (const call of bad) assert.equal(r.get(call.id)!.status, "error", `${call.id}: ${JSON.stringify(r.get(call.id))}`);
      if (withGuards) {
        assert.match(r.get("b4")!.body.error, /missing required field "content"/);
        assert.match(r.get("b1")!.body.error, /"path": .*expected string/);
        assert.match(r.get("b8")!.body.error, /Missing "old_string"/);
        assert.match(r.get("b10")!.body.error, /Invalid arguments for search_files: "limit"/);
      }
      assert.equal(await readFile(path.join(t.dir, "a.txt"), "utf8"), "a\n");
      assert.equal(out.messages.at(-1)!.content, "done");
    });
  }
});

describe("options", () => {
  it("are validated when the middleware is built", () => {
    assert.throws(() => fileGuardsMiddleware({ maxEntries: 0 }), /maxEntries must be a positive integer/);
    assert.throws(() => fileGuardsMiddleware({ loopWarnAt: 4, loopBlockAt: 3 }), /loopWarnAt < loopBlockAt/);
  });
});

describe("inside the FileManager middleware", () => {
  it("the FileManager runs the same guards: dedup stub and staleness warning", async () => {
    const { createFileManagerMiddleware } = await import("../middleware/fileManager.js");
    const t = await thread();
    const file = path.join(t.dir, "a.txt");
    await writeFile(file, "v1\n");
    const fm = createFileManagerMiddleware({ rootDir: root });
    try {
      const { out } = await runAgent(
        [[read("r1")], [read("r2")], [{ name: "other_tool", args: { file }, id: "x" }], [{ name: "write_file", args: { path: "a.txt", content: "v3\n" }, id: "w1" }]],
        { threadId: t.id, guards: false, middleware: [fm] },
      );
      const r = toolResults(out.messages);
      assert.equal(r.get("r2")!.body.status, "unchanged");
      assert.match(r.get("w1")!.body._warning, /changed after you last read it/);
    } finally {
      await fm.close();
    }
  });
});
