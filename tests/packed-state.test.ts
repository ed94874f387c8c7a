// Private fields packed in one graph channel: each field keeps its own reducer through a real
// StateGraph (parallel writes, a first write that deletes, bounded merges), the hooks still
// read and write them flat, and a thread checkpointed with the older one-channel-per-field
// layout runs on without a crash and without rewinding its files.
import assert from "node:assert/strict";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { Command, END, MemorySaver, ReducedValue, START, StateGraph, StateSchema } from "@langchain/langgraph";
import { createAgent, createMiddleware } from "langchain";
import { z } from "zod";
import { createFileManagerMiddleware, createFileManagerStateSchema, FILE_MANAGER_CHANNEL } from "../middleware/fileManager.js";
import { FILE_GUARDS_CHANNEL, fileGuardsMiddleware } from "../middleware/fileGuards.js";
import { PackedFields } from "../middleware/packedState.js";
import { createBasicTools } from "../tools/basicTools.js";
import { isWorkspaceTreeMessage } from "../middleware/treeMessage.js";

let root = "";
before(async () => {
  root = path.join(os.tmpdir(), `wb-packed-${process.pid}`);
  await mkdir(root, { recursive: true });
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Merges records, `null` deleting a key (the shape of the guards' ledger reducer). */
const mergeDroppingNull = (current: Record<string, number> | undefined, next: Record<string, number | null> | undefined) => {
  const out: Record<string, number> = { ...current };
  for (const [k, v] of Object.entries(next ?? {})) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
};

function packedForTest() {
  return new PackedFields("_p", {
    plain: z.string(),
    merged: new ReducedValue(z.record(z.string(), z.number()).default(() => ({})), {
      inputSchema: z.record(z.string(), z.number().nullable()),
      reducer: mergeDroppingNull,
    }),
    newest: new ReducedValue(z.number(), { reducer: (a: number | undefined, b: number) => Math.max(a ?? -Infinity, b) }),
  });
}

describe("packed private fields", () => {
  it("keep each field's reducer through a real graph: parallel writes merge, a first write may delete, plain fields take the last write", async () => {
    const packed = packedForTest();
    const graph = new StateGraph(new StateSchema({ [packed.channel]: packed.field, other: z.number().optional() }))
      // Two nodes in the same superstep, each writing part of the channel; `a` is the channel's
      // very first write and carries a deletion.
      .addNode("a", () => packed.pack({ merged: { x: null, y: 1 }, plain: "a", newest: 5 }) as never)
      .addNode("b", () => packed.pack({ merged: { z: 2 }, newest: 3, other: 7 }) as never)
      .addNode("c", () => packed.pack({ merged: { y: null }, plain: "c" }) as never)
      .addEdge(START, "a")
      .addEdge(START, "b")
      .addEdge(["a", "b"], "c")
      .addEdge("c", END)
      .compile({ checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "t" } };
    const seen: unknown[] = [];
    for await (const values of await graph.stream({}, { ...config, streamMode: "values" })) seen.push((values as Record<string, unknown>)._p);
    assert.deepEqual(seen.at(-2), { merged: { y: 1, z: 2 }, plain: "a", newest: 5 }, "both parallel writes merged, no null kept, the larger `newest`");
    const { values } = await graph.getState(config);
    assert.deepEqual(values._p, { merged: { z: 2 }, plain: "c", newest: 5 });
    assert.equal(values.other, 7, "fields outside the pack are written as they were");
    assert.deepEqual(Object.keys(packed.unpack(values)).sort(), ["_p", "merged", "newest", "other", "plain"]);
  });

  it("pack, unpack and packResult move only the packed keys", () => {
    const packed = packedForTest();
    assert.equal(packed.pack(undefined), undefined);
    const untouched = { other: 1 };
    assert.equal(packed.pack(untouched), untouched, "an update with no packed key is returned as it is");
    assert.deepEqual(packed.pack({ plain: "x", other: 1 }), { other: 1, _p: { plain: "x" } });
    assert.deepEqual(packed.unpack({ _p: { plain: "x" }, other: 1 }), { _p: { plain: "x" }, other: 1, plain: "x" });

    const message = new ToolMessage({ content: "ok", tool_call_id: "c1" });
    assert.equal(packed.packResult(message), message, "a bare ToolMessage has no state update");
    const command = packed.packResult(new Command({ update: { messages: [message], plain: "y" } })) as Command;
    assert.deepEqual(command.update, { messages: [message], _p: { plain: "y" } });
    const tuples = packed.packResult(new Command({ update: [["messages", [message]], ["newest", 9]] })) as Command;
    assert.deepEqual(tuples.update, [["messages", [message]], ["_p", { newest: 9 }]]);
    const parent = new Command({ graph: Command.PARENT, update: { plain: "z" } });
    assert.equal(packed.packResult(parent), parent, "a parent-graph Command is not ours to change");
  });

  it("the FileManager adds four channels to the graph (was ten); the standalone guards one", () => {
    assert.deepEqual(Object.keys(createFileManagerStateSchema().fields).sort(), ["_fileManager", "_workspaceSnapshot", "fileUpdateTime", "startWorkTime"]);
    assert.equal(FILE_MANAGER_CHANNEL, "_fileManager");
    const guards = fileGuardsMiddleware();
    assert.deepEqual(Object.keys((guards.stateSchema as unknown as StateSchema<Record<string, never>>).fields), [FILE_GUARDS_CHANNEL]);
  });

  it("a thread checkpointed with one channel per private field (v0.1 layout) runs on: files kept, the tree shown again once", async () => {
    const thread = "legacy-layout";
    const dir = path.join(root, thread);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "notes.txt"), "written before the upgrade\n");
    const checkpointer = new MemorySaver();
    const config = { configurable: { thread_id: thread } };
    // The older layout, written by a middleware with the old flat schema.
    const legacy = createMiddleware({
      name: "FileManagerMiddleware",
      stateSchema: new StateSchema({
        startWorkTime: z.number().optional(),
        _treeFingerprint: z.string().optional(),
        _treeMessageId: z.string().optional(),
        _fileReadLedger: z.record(z.string(), z.unknown()).optional(),
      }),
      beforeAgent: () => ({ startWorkTime: 1, _treeFingerprint: "0123456789abcdef", _treeMessageId: "gone", _fileReadLedger: { "notes.txt": { seq: 1 } } }),
    });
    const before = createAgent({ model: fakeModel().respond(new AIMessage("old")), tools: [], middleware: [legacy], checkpointer });
    await before.invoke({ messages: [new HumanMessage("before the upgrade")] }, config);

    const fm = createFileManagerMiddleware({ rootDir: root, onError: (e) => assert.fail(`FileManager reported: ${(e as Error).message}`) });
    try {
      const model = fakeModel()
        .respond(new AIMessage({ content: "", tool_calls: [{ name: "get_current_time", args: {}, id: "t1" }] }))
        .respond(new AIMessage("new"));
      const after = createAgent({ model, tools: createBasicTools({ rootDir: root }), middleware: [fm], checkpointer });
      const out = await after.invoke({ messages: [new HumanMessage("after the upgrade")] }, config);
      assert.equal(out.messages.at(-1)?.content, "new");
      assert.equal(out.messages.filter(isWorkspaceTreeMessage).length, 1, "one full tree: the old fingerprint is not read");
      assert.equal(await readFile(path.join(dir, "notes.txt"), "utf8"), "written before the upgrade\n", "no rewind of the files");
      const { values } = await after.getState(config);
      assert.equal(typeof (values as { _fileManager?: { _treeFingerprint?: string } })._fileManager?._treeFingerprint, "string");
    } finally {
      await fm.close();
    }
  });
});
