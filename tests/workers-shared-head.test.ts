// Several processes serving one thread in turn (workers on one root; issue 25 item 4): the
// snapshot store's head may be moved by another process between two uses. A store that kept its
// own reading took the newer checkpoint's snapshot for a rewind and restored it, deleting files
// created since by anyone else — so they were missing from the next turn's first model call.
// Two store instances (or two workbenches) on one directory stand for two processes here;
// tests/multi-worker-freshness.test.ts runs the same with real worker processes on Postgres.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { isCredentialPath } from "../src/guards/credentials.js";
import { SnapshotStore } from "../src/snapshots/index.js";
import { createWorkbench } from "../src/workbench.js";

const policy = { ignoreNames: [".git", "node_modules"], excludePath: (rel: string) => isCredentialPath(rel) };
const lots = { maxSnapshots: 1000, maxAgeMs: 1e12, maxBytes: 1e12 };
const run = promisify(execFile);

let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-sharedhead-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function twoStores(name: string) {
  const dir = path.join(tmp, name, "ws");
  const storeDir = path.join(tmp, name, "store");
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "a.md"), "a\n");
  return { dir, a: new SnapshotStore(dir, storeDir, policy, lots), b: new SnapshotStore(dir, storeDir, policy, lots) };
}

test("a head another process moved is read again", async () => {
  const { dir, a, b } = await twoStores("head");
  const first = await a.snapshot();
  assert.equal((await b.headInfo())?.id, first);
  await writeFile(path.join(dir, "x.md"), "x\n");
  const second = await a.snapshot({ paths: [path.join(dir, "x.md")] });
  assert.notEqual(second, first);
  assert.equal((await b.headInfo())?.id, second, "the other store sees the head this one wrote");
  // And its own writes do not make it re-read needlessly: the head it wrote is the head it holds.
  assert.equal((await a.headInfo())?.id, second);
});

test("a snapshot after another process moved the head builds on that head's files", async () => {
  const { dir, a, b } = await twoStores("working");
  await b.snapshot();
  await writeFile(path.join(dir, "x.md"), "x\n");
  const moved = await a.snapshot({ paths: [path.join(dir, "x.md")] });
  await writeFile(path.join(dir, "y.md"), "y\n");
  await b.snapshot({ paths: [path.join(dir, "y.md")] });
  const { files } = await b.current();
  assert.deepEqual([...files.keys()].sort(), ["a.md", "x.md", "y.md"], "x.md, recorded by the other store, is kept");
  const head = (await b.headInfo())?.id;
  const info = (await b.list()).find((s) => s.id === head);
  assert.equal(info?.parent, moved, "the new snapshot follows the moved head");
});

test("two workbenches serving one thread in turn keep a file created between turns, and show it at the first model call", async () => {
  const root = path.join(tmp, "agents");
  const saver = new MemorySaver();
  const firstCalls: string[] = [];
  const textOf = (m: BaseMessage) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content));
  const make = () => {
    let model = fakeModel();
    for (let i = 0; i < 50; i++) {
      model = model.respond((messages: BaseMessage[]) => {
        let at = messages.length - 1;
        while (at >= 0 && !(HumanMessage.isInstance(messages[at]!) && /^TURN /.test(textOf(messages[at]!)))) at--;
        const turn = Number(/^TURN (\d+)/.exec(textOf(messages[at]!))![1]);
        const step = messages.slice(at + 1).filter((m) => AIMessage.isInstance(m)).length;
        if (step > 0) return new AIMessage(`done ${turn}`);
        firstCalls[turn] = messages.filter((m) => !AIMessage.isInstance(m) && !ToolMessage.isInstance(m)).map(textOf).join("\n");
        const call = turn === 1 ? { name: "write_file", args: { path: "written.md", content: "w\n" } } : { name: "read_file", args: { path: "notes.md" } };
        return new AIMessage({ content: "", tool_calls: [{ ...call, id: `call-${turn}`, type: "tool_call" as const }] });
      });
    }
    const wb = createWorkbench({ rootDir: root, webTools: false, basicTools: false });
    return { wb, agent: createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer: saver }) };
  };
  const workers = [make(), make()];
  try {
    const dir = path.join(root, "shared");
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "notes.md"), "notes\n");
    const config = { configurable: { thread_id: "shared" } };
    // Turn 0 on worker 0, turn 1 (a write: a new snapshot) on worker 1, turn 2 back on worker 0.
    for (const [turn, worker] of [0, 1, 0].entries()) {
      if (turn === 2) await run("sh", ["-c", 'printf "e\\n" > "$1/elsewhere.md"', "sh", dir], { timeout: 30_000 });
      await workers[worker]!.agent.invoke({ messages: [new HumanMessage(`TURN ${turn}`)] }, config);
    }
    assert.ok(await stat(path.join(dir, "elsewhere.md")).then(() => true, () => false), "the file another process created is still there");
    assert.ok(await stat(path.join(dir, "written.md")).then(() => true, () => false), "the other worker's write is still there");
    assert.match(firstCalls[2] ?? "", /elsewhere\.md/, `turn 2's first model call names the new file; it saw: ${firstCalls[2]}`);
  } finally {
    await Promise.all(workers.map((w) => w.wb.close()));
  }
});
