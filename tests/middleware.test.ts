import assert from "node:assert/strict";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { createFileManagerMiddleware, isWorkspaceTreeMessage } from "../middleware/index.js";
import { createBasicTools } from "../tools/index.js";
import { fileManagerPool, makeAgent, openAiHistoryProblems, tempRoot, text, treeMessages, workspaceTools } from "./helpers/agentHarness.js";

let root: string;
let cleanup: () => Promise<void>;
const managers = fileManagerPool(() => root, {});
const fileManager = managers.make;

/** The messages the model saw at call `i`. */
function seen(model: { calls: { messages: BaseMessage[] }[] }, i: number): BaseMessage[] {
  return model.calls[i]!.messages;
}

function lastTree(messages: BaseMessage[]): string {
  return text(treeMessages(messages).at(-1));
}

const run = (agent: any, thread: string, prompt = "go") =>
  agent.invoke({ messages: [new HumanMessage(prompt)] }, { configurable: { thread_id: thread } }) as Promise<{ messages: BaseMessage[] }>;

before(async () => {
  ({ root, cleanup } = await tempRoot());
});

after(async () => {
  await managers.closeAll();
  await cleanup();
});

describe("tree injection", () => {
  it("shows the tree on the first call of a non-empty workspace and not again while unchanged", async () => {
    await mkdir(path.join(root, "first", "src"), { recursive: true });
    await writeFile(path.join(root, "first", "src", "main.ts"), "x");
    const { agent, model } = await makeAgent({
      script: [[{ name: "get_current_time", args: {}, id: "c1" }], [{ name: "get_current_time", args: {}, id: "c2" }], "done"],
      tools: createBasicTools({ rootDir: root }),
      middleware: [fileManager()],
    });
    const out = await run(agent, "first");
    assert.equal(treeMessages(seen(model, 0)).length, 1, "first call sees the tree");
    assert.match(lastTree(seen(model, 0)), /src\/\n.*main\.ts/s);
    const firstId = treeMessages(seen(model, 0))[0]!.id;
    for (const i of [1, 2]) {
      const trees = treeMessages(seen(model, i));
      assert.equal(trees.length, 1);
      assert.equal(trees[0]!.id, firstId, `call ${i} got no new tree`);
    }
    assert.equal(treeMessages(out.messages).length, 1);
  });

  it("does not show the tree of an empty workspace, nor on the first call with injectOnFirstCall: false", async () => {
    const { agent, model } = await makeAgent({ script: ["hi"], tools: [], middleware: [fileManager()] });
    await run(agent, "empty");
    assert.equal(treeMessages(seen(model, 0)).length, 0);

    await mkdir(path.join(root, "quiet"), { recursive: true });
    await writeFile(path.join(root, "quiet", "a.txt"), "x");
    const quiet = await makeAgent({ script: ["hi"], tools: [], middleware: [fileManager({ injectOnFirstCall: false })] });
    await run(quiet.agent, "quiet");
    assert.equal(treeMessages(seen(quiet.model, 0)).length, 0);
  });

  it("replace mode: re-sends the tree at the very next model call after a tool creates, deletes or renames (no waiting)", async () => {
    await mkdir(path.join(root, "moves"), { recursive: true });
    await writeFile(path.join(root, "moves", "keep.txt"), "x");
    await writeFile(path.join(root, "moves", "old.txt"), "x");
    const { agent, model } = await makeAgent({
      script: [
        [{ name: "create_file", args: { path: "new.txt" }, id: "c1" }],
        [{ name: "delete_file", args: { path: "keep.txt" }, id: "c2" }],
        [{ name: "rename_file", args: { from: "old.txt", to: "renamed.txt" }, id: "c3" }],
        "done",
      ],
      tools: workspaceTools(root),
      middleware: [fileManager({ tree: { mode: "replace" } })],
    });
    const out = await run(agent, "moves");
    assert.match(lastTree(seen(model, 1)), /new\.txt/, "create seen at the next call");
    assert.doesNotMatch(lastTree(seen(model, 2)), /keep\.txt/, "delete seen at the next call");
    const afterRename = lastTree(seen(model, 3));
    assert.match(afterRename, /renamed\.txt/);
    assert.doesNotMatch(afterRename, /old\.txt/, "rename seen at the next call");
    assert.equal(treeMessages(out.messages).length, 1, "keepOnlyLatestTree leaves one tree");
    assert.deepEqual(openAiHistoryProblems(out.messages), []);
    for (const call of model.calls) assert.deepEqual(openAiHistoryProblems(call.messages), []);
    // The tree message follows the tool result it reflects, as a user message.
    const last = out.messages.findIndex(isWorkspaceTreeMessage);
    assert.equal(out.messages[last]!.getType(), "human");
    assert.equal(out.messages[last - 1]!.getType(), "tool");
  });

  it("does not re-send the tree after a content-only edit", async () => {
    await mkdir(path.join(root, "edit"), { recursive: true });
    await writeFile(path.join(root, "edit", "notes.md"), "a\n");
    const { agent, model } = await makeAgent({
      script: [[{ name: "append_file", args: { path: "notes.md", text: "b\n" }, id: "c1" }], "done"],
      tools: workspaceTools(root),
      middleware: [fileManager()],
    });
    await run(agent, "edit");
    const ids = model.calls.map((c) => treeMessages(c.messages).map((m) => m.id).join());
    assert.equal(ids[0], ids[1], "same single tree message before and after the edit");
  });

  it("replace mode keeps every tree with keepOnlyLatestTree: false", async () => {
    const { agent } = await makeAgent({
      script: [[{ name: "create_file", args: { path: "a" }, id: "c1" }], [{ name: "create_file", args: { path: "b" }, id: "c2" }], "done"],
      tools: workspaceTools(root),
      middleware: [fileManager({ tree: { mode: "replace" }, keepOnlyLatestTree: false })],
    });
    const out = await run(agent, "keep-all");
    assert.equal(treeMessages(out.messages).length, 2);
  });

  it("sees a change made outside the agent between two turns", async () => {
    const checkpointer = new MemorySaver();
    // A tracker that has not reported the change yet (a poller that never polls on its own) must
    // not hide it: each run checks the tree at its first model call.
    const fm = fileManager({ tracker: { kind: "polling", pollIntervalMs: 3_600_000 } });
    const { agent, model } = await makeAgent({ script: ["one", "two"], tools: [], middleware: [fm], checkpointer });
    await mkdir(path.join(root, "ext"), { recursive: true });
    await writeFile(path.join(root, "ext", "a.txt"), "x");
    await fm.hooks.trackerOf("ext")!.start();
    await run(agent, "ext");
    await writeFile(path.join(root, "ext", "outside.txt"), "x");
    const out = await run(agent, "ext");
    assert.match(lastTree(seen(model, 1)), /outside\.txt/);
    // Append mode: the new listing is added after the first one, which stays.
    assert.equal(treeMessages(out.messages).length, 2);
  });

  it("keeps two threads in two directories with no cross-talk", async () => {
    const checkpointer = new MemorySaver();
    const { agent, model } = await makeAgent({
      script: [
        [{ name: "create_file", args: { path: "only-in-t1.txt" }, id: "a1" }],
        "t1 done",
        [{ name: "create_file", args: { path: "only-in-t2.txt" }, id: "b1" }],
        "t2 done",
      ],
      tools: workspaceTools(root),
      middleware: [fileManager()],
      checkpointer,
    });
    await run(agent, "iso-1");
    const t2 = await run(agent, "iso-2");
    assert.deepEqual(await readdir(path.join(root, "iso-1")), ["only-in-t1.txt"]);
    assert.deepEqual(await readdir(path.join(root, "iso-2")), ["only-in-t2.txt"]);
    assert.doesNotMatch(lastTree(seen(model, 3)), /only-in-t1/);
    assert.equal(t2.messages.filter((m) => text(m).includes("only-in-t1")).length, 0);
    const state1 = await agent.graph.getState({ configurable: { thread_id: "iso-1" } });
    const state2 = await agent.graph.getState({ configurable: { thread_id: "iso-2" } });
    assert.notEqual(state1.values._fileManager._treeFingerprint, state2.values._fileManager._treeFingerprint);
  });

  it("restores a tree that was removed from history (e.g. by summarisation)", async () => {
    const fm = fileManager();
    const hooks = fm.hooks;
    await mkdir(path.join(root, "gone"), { recursive: true });
    await writeFile(path.join(root, "gone", "a.txt"), "x");
    const runtime = { configurable: { thread_id: "gone" } };
    const first = (await hooks.beforeModel({ messages: [new HumanMessage("hi")] }, runtime))!;
    assert.equal(first.messages?.length, 1);
    const state = { messages: [new HumanMessage("summary of earlier talk")], _treeFingerprint: first._treeFingerprint, _treeMessageId: first._treeMessageId, _treeDirty: false };
    const again = await hooks.beforeModel(state, runtime);
    assert.equal(again?.messages?.filter(isWorkspaceTreeMessage).length, 1, "tree re-sent although unchanged");
  });
});

describe("state", () => {
  it("records startWorkTime and fileUpdateTime and hides private keys from the output", async () => {
    const t0 = Date.now();
    const { agent } = await makeAgent({ script: [[{ name: "create_file", args: { path: "f" }, id: "c1" }], "done"], tools: workspaceTools(root), middleware: [fileManager()] });
    const out = (await run(agent, "stateful")) as any;
    assert.ok(out.startWorkTime >= t0);
    assert.ok(out.fileUpdateTime >= t0 - 5_000, "fileUpdateTime reflects the created file");
    assert.equal(out._fileManager, undefined, "the private channel is not in the output");
    const state = await agent.graph.getState({ configurable: { thread_id: "stateful" } });
    assert.equal(typeof state.values._fileManager._treeFingerprint, "string", "private keys are checkpointed");
    assert.equal(state.values._fileManager._treeDirty, false);
    assert.equal(state.values._treeFingerprint, undefined, "the private fields share one channel");
  });

  it("a step whose check finds no change writes no state (langchain would write every message back)", async () => {
    // Any hook update makes langchain's middleware node return the whole state, so every message
    // is written (and serialised) again. Content-only edits mark the tree dirty; the check that
    // follows finds nothing new and must answer undefined, not a state update.
    const writes: number[] = [];
    class RecordingSaver extends MemorySaver {
      override async putWrites(config: Parameters<MemorySaver["putWrites"]>[0], pending: Parameters<MemorySaver["putWrites"]>[1], taskId: string) {
        for (const [channel, value] of pending) if (channel === "messages" && Array.isArray(value)) writes.push(value.length);
        return super.putWrites(config, pending, taskId);
      }
    }
    const fm = fileManager({ timeTravel: false });
    await mkdir(path.join(root, "echo"), { recursive: true });
    await writeFile(path.join(root, "echo", "notes.txt"), "v0\n");
    await fm.hooks.trackerOf("echo")!.start();
    const edits = Array.from({ length: 6 }, (_, i) => [{ name: "create_file", args: { path: "notes.txt", text: `v${i + 1}\n` }, id: `e${i}` }]);
    const { agent } = await makeAgent({ script: [...edits, "done"], tools: workspaceTools(root), middleware: [fm], checkpointer: new RecordingSaver() });
    const out = await run(agent, "echo");
    assert.equal(treeMessages(out.messages).length, 1, "one tree: the edits changed no structure");
    assert.ok(out.messages.length >= 14, `the run went through every edit (${out.messages.length} messages)`);
    assert.deepEqual(writes.filter((n) => n > 2), [], `a hook wrote the whole history back: messages writes of sizes ${writes.join(", ")}`);
  });

  it("answers from the cache without looking at the disk while the tracker reports no change", async () => {
    // A polling tracker that never polls on its own: only the dirty flag can reveal this change.
    const fm = fileManager({ tracker: { kind: "polling", pollIntervalMs: 3_600_000 } });
    await mkdir(path.join(root, "cached"), { recursive: true });
    await writeFile(path.join(root, "cached", "a.txt"), "x");
    const runtime = { configurable: { thread_id: "cached" } };
    await fm.hooks.beforeAgent({}, runtime);
    await fm.hooks.trackerOf("cached")!.start();
    const primed = await fm.hooks.beforeModel({ messages: [new HumanMessage("hi")], _treeDirty: true }, runtime);
    const state = { messages: [new HumanMessage("hi"), ...(primed?.messages ?? [])], ...primed };
    await writeFile(path.join(root, "cached", "sneaky.txt"), "x");
    assert.equal(await fm.hooks.beforeModel(state, runtime), undefined, "steady state answers without a walk");
    const dirty = await fm.hooks.beforeModel({ ...state, _treeDirty: true }, runtime);
    assert.match(text(dirty?.messages?.at(-1)), /sneaky\.txt/, "the dirty flag forces the check");
  });
});

describe("robustness", () => {
  it("never lets a hook failure end the run and reports it to onError", async () => {
    const blocker = path.join(root, "not-a-dir");
    const errors: string[] = [];
    const fm = createFileManagerMiddleware({ rootDir: blocker, onError: (e, ctx) => errors.push(`${ctx.hook}: ${e.message}`) });
    managers.track(fm);
    // Broken after the build-time check: a file appears where the root should be.
    await writeFile(blocker, "a file where the root should be");
    const { agent } = await makeAgent({ script: ["still answered"], tools: [], middleware: [fm] });
    const out = await run(agent, "t");
    assert.equal(text(out.messages.at(-1)), "still answered");
    assert.ok(errors.some((e) => e.startsWith("beforeAgent")), errors.join("\n"));
    assert.ok(errors.some((e) => e.startsWith("beforeModel")), errors.join("\n"));
  });

  it("rejects invalid options with a clear message", () => {
    assert.throws(() => createFileManagerMiddleware({ rootDir: "" }), /rootDir/);
    assert.throws(() => createFileManagerMiddleware({ tree: { maxEntries: -1 } }), /maxEntries/);
    assert.throws(() => createFileManagerMiddleware({ tracker: { kind: "inotify" as never } }), /kind/);
    assert.throws(() => createFileManagerMiddleware({ pathArgs: "path" as never }), /pathArgs/);
  });
});
