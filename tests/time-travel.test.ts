// Time travel: a thread writes, patches and deletes files over several turns; forking from any
// earlier checkpoint (real createAgent, MemorySaver and SQLite checkpointers) brings the
// workspace back byte for byte; the latest state stays restorable; credential files and ignored
// folders never enter the store and survive restores; a HITL rejection leaves no trace on disk.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { fakeModel } from "@langchain/core/testing";
import { Command, MemorySaver, type BaseCheckpointSaver, type StateSnapshot } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { createAgent, humanInTheLoopMiddleware } from "langchain";
import { snapshotIdOf } from "../middleware/timeTravel.js";
import { isPendingSnapshotId, SNAPSHOT_DIR_NAME, SnapshotStore } from "../src/snapshots/index.js";
import { createWorkbench, type Workbench } from "../src/workbench.js";
import { collectText, contents } from "./helpers/files.js";
import { threadDir } from "./helpers/threadDir.js";

let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-tt-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const call = (name: string, args: Record<string, unknown>, id: string) => ({ name, args, id, type: "tool_call" as const });
const toolTurn = (...calls: ReturnType<typeof call>[]) => new AIMessage({ content: "", tool_calls: calls });

/** The agent surface these tests use (the middleware list is built at run time). */
interface TestAgent {
  invoke(input: unknown, config?: RunnableConfig): Promise<{ messages: BaseMessage[]; __interrupt__?: unknown[] }>;
  getState(config: RunnableConfig): Promise<StateSnapshot>;
  getStateHistory(config: RunnableConfig): AsyncIterableIterator<StateSnapshot>;
  updateState(config: RunnableConfig, values: unknown): Promise<RunnableConfig>;
}

function agentWith(wb: Workbench, checkpointer: BaseCheckpointSaver, replies: AIMessage[], extra: unknown[] = []): TestAgent {
  let model = fakeModel();
  for (const r of replies) model = model.respond(r);
  return createAgent({ model, tools: wb.tools, middleware: [...wb.middleware, ...(extra as never[])], checkpointer }) as unknown as TestAgent;
}

function workbench(root: string): Workbench {
  return createWorkbench({ rootDir: root, enableShell: true, basicTools: { shell: { sandbox: "off" } }, webTools: false, fileManager: { onError: () => undefined, ...(process.env.TT_OFF ? { timeTravel: { restore: "off" as const } } : {}) } });
}

/** A thread `t-<label>` under `<tmp>/<label>` whose workspace holds `files` small sources in src/. */
async function seededThread(label: string, files: number) {
  const root = path.join(tmp, label);
  const threadId = `t-${label}`;
  const dir = path.join(root, threadId);
  await mkdir(path.join(dir, "src"), { recursive: true });
  for (let i = 0; i < files; i++) await writeFile(path.join(dir, "src", `f${i}.ts`), `export const x${i} = ${i};\n`);
  return { root, threadId, dir, config: { configurable: { thread_id: threadId } } };
}

/** Records the options of every `SnapshotStore.snapshot` call until `stop()`. */
function spySnapshots() {
  const calls: { paths?: readonly string[]; reason?: string }[] = [];
  const original = SnapshotStore.prototype.snapshot;
  SnapshotStore.prototype.snapshot = function (this: SnapshotStore, options = {}) {
    calls.push(options);
    return original.call(this, options);
  };
  return { calls, stop: () => void (SnapshotStore.prototype.snapshot = original) };
}

/** Counts the ToolMessages of a state: identifies how far the scripted thread had got. */
const toolCount = (values: { messages?: { getType(): string }[] }) => (values.messages ?? []).filter((m) => m.getType() === "tool").length;

async function scenario(label: string, makeSaver: () => BaseCheckpointSaver | Promise<BaseCheckpointSaver>) {
  const root = path.join(tmp, label);
  const threadId = `t-${label}`;
  const dir = path.join(root, threadId);
  await mkdir(path.join(dir, "node_modules", "pkg"), { recursive: true });
  await writeFile(path.join(dir, "node_modules", "pkg", "index.js"), "module.exports = 1;\n");
  await writeFile(path.join(dir, ".env"), "API_KEY=sk-live-secret-value-1234567890\n");
  await writeFile(path.join(dir, "seed.txt"), "seeded before the first run\n");
  const wb = workbench(root);
  const saver = await makeSaver();
  const config = { configurable: { thread_id: threadId } };
  const skip = ["node_modules", ".env"];
  try {
    // toolCount → the workspace at that point (each turn has one tool step).
    const expected = new Map<number, Record<string, string>>();
    expected.set(0, await contents(dir, skip));
    const turns: { tools: AIMessage; count: number }[] = [
      { tools: toolTurn(call("write_file", { path: "a.txt", content: "one\n" }, "c1"), call("write_file", { path: "docs/b.md", content: "B1\n" }, "c2")), count: 2 },
      { tools: toolTurn(call("patch", { mode: "replace", path: "a.txt", old_string: "one", new_string: "two" }, "c3")), count: 3 },
      { tools: toolTurn(call("patch", { mode: "patch", patch: "*** Begin Patch\n*** Delete File: docs/b.md\n*** End Patch" }, "c4"), call("run_command", { command: "printf 'extra\\n' > c.txt && rm seed.txt" }, "c5")), count: 5 },
      { tools: toolTurn(call("write_file", { path: "a.txt", content: "four\n" }, "c6")), count: 6 },
    ];
    for (const [i, turn] of turns.entries()) {
      const agent = agentWith(wb, saver, [turn.tools, new AIMessage(`done ${i + 1}`)]);
      const out = await agent.invoke({ messages: [new HumanMessage(`turn ${i + 1}`)] }, config);
      for (const m of out.messages) if (m.getType() === "tool") assert.notEqual((m as { status?: string }).status, "error", `tool failed: ${String(m.content)}`);
      expected.set(turn.count, await contents(dir, skip));
    }
    assert.equal(expected.get(6)!["a.txt"], Buffer.from("four\n").toString("base64"), "the last turn wrote a.txt");
    assert.ok(!("seed.txt" in expected.get(6)!), "run_command deleted seed.txt");

    // The store holds no credential file and no ignored folder.
    const storeText = await collectText(path.join(root, SNAPSHOT_DIR_NAME));
    assert.ok(!storeText.includes("sk-live-secret-value"), "the .env content never reaches the store");
    assert.ok(!storeText.includes("module.exports = 1"), "node_modules is not snapshotted");

    const latest = snapshotIdOf((await agentWith(wb, saver, []).getState(config)).values);
    assert.ok(latest, "the latest checkpoint names a snapshot");
    const latestContent = await contents(dir, skip);

    // Fork from every earlier checkpoint of the main line.
    const history = [];
    for await (const s of agentWith(wb, saver, []).getStateHistory(config)) history.push(s);
    const mainLine = history.filter((s) => snapshotIdOf(s.values) !== undefined || toolCount(s.values as never) === 0);
    let forks = 0;
    for (const s of mainLine) {
      const count = toolCount(s.values as never);
      const want = expected.get(count);
      assert.ok(want, `a checkpoint with ${count} tool messages matches a known workspace`);
      const next = s.next ?? [];
      const forkConfig = s.config;
      if (next.length === 0 || next.includes("tools") || next.includes("__start__")) {
        // A new user turn from this checkpoint: beforeAgent restores.
        await agentWith(wb, saver, [new AIMessage("forked")]).invoke({ messages: [new HumanMessage("fork")] }, forkConfig);
      } else if (next.includes("model_request")) {
        // Resume right before a model call: beforeModel restores.
        await agentWith(wb, saver, [new AIMessage("forked")]).invoke(null, forkConfig);
      } else continue;
      forks++; if (process.env.TT_DEBUG) console.log("fork", count, next.join(","));
      assert.deepEqual(await contents(dir, skip), want, `fork from checkpoint ${s.config.configurable?.checkpoint_id} (${count} tool results, next ${next.join(",")}) restores its files`);
      assert.equal(await readFile(path.join(dir, ".env"), "utf8"), "API_KEY=sk-live-secret-value-1234567890\n", ".env survives the restore untouched");
      assert.equal(await readFile(path.join(dir, "node_modules", "pkg", "index.js"), "utf8"), "module.exports = 1;\n", "node_modules survives the restore");
    }
    assert.ok(forks >= 6, `forked from ${forks} checkpoints`);

    // updateState fork: replace the first turn's answer; the new branch's run sees turn 1's files.
    const afterTurn1 = history.find((s) => toolCount(s.values as never) === 2 && (s.next ?? []).length === 0);
    assert.ok(afterTurn1, "found the end of turn 1");
    const branch = await agentWith(wb, saver, []).updateState(afterTurn1.config, { messages: [new AIMessage("edited answer")] });
    await agentWith(wb, saver, [new AIMessage("on the branch")]).invoke({ messages: [new HumanMessage("continue")] }, branch);
    assert.deepEqual(await contents(dir, skip), expected.get(2), "a branch made with updateState runs on turn 1's files");

    // The latest state is still restorable, and listed.
    const listed = await wb.snapshots(threadId);
    assert.ok(listed.some((x) => x.id === latest), "the latest snapshot is listed");
    await wb.restore(threadId, latest!);
    assert.deepEqual(await contents(dir, skip), latestContent, "the latest workspace comes back byte for byte");

    // An explicit restore sticks: the next run keeps these files rather than its checkpoint's.
    await agentWith(wb, saver, [new AIMessage("kept")]).invoke({ messages: [new HumanMessage("after restore")] }, { configurable: { thread_id: threadId } });
    assert.deepEqual(await contents(dir, skip), latestContent, "the run after an explicit restore keeps the restored files");

    // What did the run change? Turn 2 patched a.txt.
    const s1 = snapshotIdOf(history.find((s) => toolCount(s.values as never) === 2)!.values)!;
    const s2 = snapshotIdOf(history.find((s) => toolCount(s.values as never) === 3)!.values)!;
    const diff = await wb.changes(threadId, { from: s1, to: s2 });
    assert.deepEqual(diff.files.map((f) => [f.path, f.change]), [["a.txt", "modified"]], JSON.stringify(diff.files));
    assert.match(diff.diff, /-one\n\+two/, diff.diff);
  } finally {
    await wb.close();
  }
}

describe("time travel", () => {
  test("forks from every checkpoint restore the workspace (MemorySaver)", () => scenario("memory", () => new MemorySaver()));

  test("forks from every checkpoint restore the workspace (SQLite checkpointer)", () =>
    scenario("sqlite", () => SqliteSaver.fromConnString(path.join(tmp, "checkpoints.sqlite"))));

  test("run starts re-read only what the tracker listed: no stat pass after a write; a hand edit between runs is still named", async () => {
    const { root, threadId, dir, config } = await seededThread("drift", 40);
    const wb = workbench(root);
    const saver = new MemorySaver();
    const { calls, stop } = spySnapshots();
    const tracker = () => wb.fileManager.hooks.trackerOf(threadId);
    /** Waits (bounded) until the watcher has delivered a structural change. */
    const delivered = async (before: number) => {
      for (let i = 0; i < 250 && (tracker()?.generation ?? 0) <= before; i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok((tracker()?.generation ?? 0) > before, "the watcher reported the change");
    };
    try {
      await agentWith(wb, saver, [toolTurn(call("write_file", { path: "a.txt", content: "one\n" }, "w1")), new AIMessage("written")]).invoke({ messages: [new HumanMessage("write")] }, config);
      // The watcher starts with the first run; on a loaded machine it may go live just after it.
      for (let i = 0; i < 500 && !tracker()?.live; i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(tracker()?.live, "a live watcher serves the thread");
      await delivered(0);
      calls.length = 0;
      await agentWith(wb, saver, [new AIMessage("nothing to do")]).invoke({ messages: [new HumanMessage("next")] }, config);
      assert.deepEqual(calls.filter((c) => c.paths === undefined), [], "the run after a write stats no file the tracker did not list");
      const afterWrite = snapshotIdOf((await agentWith(wb, saver, []).getState(config)).values)!;

      const g = tracker()!.generation;
      await writeFile(path.join(dir, "hand.txt"), "edited by hand\n");
      await delivered(g);
      calls.length = 0;
      await agentWith(wb, saver, [new AIMessage("seen")]).invoke({ messages: [new HumanMessage("again")] }, config);
      assert.ok(calls.length > 0 && calls.every((c) => c.paths !== undefined), `only listed paths are re-read (${JSON.stringify(calls)})`);
      const afterHand = snapshotIdOf((await agentWith(wb, saver, []).getState(config)).values)!;
      const diff = await wb.changes(threadId, { from: afterWrite, to: afterHand });
      assert.deepEqual(diff.files.map((f) => [f.path, f.change]), [["hand.txt", "added"]], "the hand edit is in the run's snapshot");
    } finally {
      stop();
      await wb.close();
    }
  });

  test("the first run does not wait for the baseline: its writes name pending snapshots; the baseline still holds what the files were before them", async () => {
    const root = path.join(tmp, "background");
    const threadId = "t-background";
    const dir = path.join(root, threadId);
    await mkdir(path.join(dir, "src"), { recursive: true });
    for (let i = 0; i < 200; i++) await writeFile(path.join(dir, "src", `f${i}.ts`), `export const v${i} = ${i};\n`);
    await writeFile(path.join(dir, "seed.txt"), "seed before the first run\n");
    const before = await contents(dir);
    const wb = workbench(root);
    const saver = new MemorySaver();
    const config = { configurable: { thread_id: threadId } };
    // A slow baseline (as on a 100k-file workspace): it only starts reading after the run wrote.
    let baselineDone = 0;
    const original = SnapshotStore.prototype.snapshot;
    SnapshotStore.prototype.snapshot = function (this: SnapshotStore, options = {}) {
      if (options.reason !== "baseline") return original.call(this, options);
      return new Promise<void>((r) => setTimeout(r, 600)).then(() => original.call(this, options)).finally(() => (baselineDone = Date.now()));
    };
    try {
      await agentWith(wb, saver, [
        toolTurn(call("write_file", { path: "seed.txt", content: "overwritten in the first run\n" }, "b1"), call("write_file", { path: "new/dir/n.txt", content: "new\n" }, "b2")),
        toolTurn(call("patch", { mode: "replace", path: "src/f3.ts", old_string: "= 3", new_string: "= 33" }, "b3")),
        new AIMessage("done"),
      ]).invoke({ messages: [new HumanMessage("first run")] }, config);
      const returned = Date.now();
      const afterRun = await contents(dir);
      const named = snapshotIdOf((await agentWith(wb, saver, []).getState(config)).values)!;
      assert.ok(isPendingSnapshotId(named), `the run's checkpoint names a pending snapshot (${named})`);
      assert.ok(baselineDone === 0 || baselineDone > returned - 5, "the run returned before the baseline was committed");

      const listed = await wb.snapshots(threadId); // waits for the baseline and the queued snapshots
      assert.ok(baselineDone > 0, "the baseline was committed");
      assert.ok(listed.some((x) => x.reason === "baseline"), "the baseline is listed");
      const history = [];
      for await (const st of agentWith(wb, saver, []).getStateHistory(config)) history.push(st);
      const first = history.at(-1)!;
      await agentWith(wb, saver, [new AIMessage("from the start")]).invoke({ messages: [new HumanMessage("again")] }, first.config);
      assert.deepEqual(await contents(dir), before, "a fork to the first checkpoint restores the files as they were before the run, byte for byte");
      const end = history.find((st) => (st.next ?? []).length === 0 && (st.values as { messages?: unknown[] }).messages?.length)!;
      await agentWith(wb, saver, [new AIMessage("back to the end")]).invoke({ messages: [new HumanMessage("end")] }, end.config);
      assert.deepEqual(await contents(dir), afterRun, "a fork to the end of the first run brings its writes back (the pending id resolved)");
      const diff = await wb.changes(threadId, { from: named });
      assert.ok(Array.isArray(diff.files), "changes() takes a pending id");
    } finally {
      SnapshotStore.prototype.snapshot = original;
      await wb.close();
    }
  });

  test("a command during the baseline does not wait for it: the baseline names what the command changed before it was read, and a fork past the command says so", async () => {
    const { root, threadId, dir, config } = await seededThread("command-in-baseline", 30);
    await writeFile(path.join(dir, "keep.txt"), "untouched\n");
    const before = await contents(dir);
    const reports: string[] = [];
    const wb = createWorkbench({ rootDir: root, enableShell: true, basicTools: { shell: { sandbox: "off" } }, webTools: false, fileManager: { onError: (e) => void reports.push(e.message) } });
    const saver = new MemorySaver();
    // The baseline starts reading only once the command has run: had the command waited for the
    // baseline, both would wait (5 s) and the baseline would then see nothing change under it.
    let baselineDone = 0;
    const original = SnapshotStore.prototype.snapshot;
    SnapshotStore.prototype.snapshot = function (this: SnapshotStore, options = {}) {
      if (options.reason !== "baseline") return original.call(this, options);
      const made = async () => {
        for (let i = 0; i < 250 && !(await readFile(path.join(dir, "made.txt")).catch(() => undefined)); i++) await new Promise((r) => setTimeout(r, 20));
      };
      return made().then(() => original.call(this, options)).finally(() => (baselineDone = Date.now()));
    };
    try {
      const command = "printf 'made\\n' > made.txt && printf 'edit\\n' >> src/f1.ts && rm src/f2.ts";
      await agentWith(wb, saver, [toolTurn(call("run_command", { command }, "k1")), new AIMessage("ran")]).invoke({ messages: [new HumanMessage("run")] }, config);
      const returned = Date.now();
      assert.ok(baselineDone === 0 || baselineDone > returned - 5, "the command's run returned before the baseline was committed");
      const afterCommand = await contents(dir);
      const named = snapshotIdOf((await agentWith(wb, saver, []).getState(config)).values)!;
      assert.ok(isPendingSnapshotId(named), `the command's checkpoint names a pending snapshot (${named})`);

      const listed = await wb.snapshots(threadId);
      const baseline = listed.find((x) => x.reason === "baseline")!;
      const marked = new Set(baseline.changedWhileTaken ?? []);
      // Directories end in "/" (an entry was added or removed there; the root is "./").
      for (const p of ["made.txt", "src/f1.ts", "src/", "./"]) assert.ok(marked.has(p), `the baseline names ${p} as changed while it was taken (${[...marked].join(", ")})`);
      for (const p of ["keep.txt", "src/f3.ts", "src/f1.ts/"]) assert.ok(!marked.has(p), `${p} was not changed by the command`);
      assert.equal(listed.find((x) => x.id !== baseline.id && x.reason !== "baseline")?.changedWhileTaken, undefined, "the snapshot after the command is exact");

      // A write after the command waits for the look: the step between them stays exact.
      await agentWith(wb, saver, [toolTurn(call("write_file", { path: "keep.txt", content: "rewritten\n" }, "k2")), new AIMessage("wrote")]).invoke({ messages: [new HumanMessage("write")] }, config);
      const history = [];
      for await (const st of agentWith(wb, saver, []).getStateHistory(config)) history.push(st);
      const endOfCommand = history.find((st) => toolCount(st.values as never) === 1 && (st.next ?? []).length === 0)!;
      await agentWith(wb, saver, [new AIMessage("back")]).invoke({ messages: [new HumanMessage("back")] }, endOfCommand.config);
      assert.deepEqual(await contents(dir), afterCommand, "a fork to the end of the command's run is exact");

      // Forward to the write, then back to before the command: the restore says what it may have missed.
      const endOfWrite = history.find((st) => toolCount(st.values as never) === 2 && (st.next ?? []).length === 0)!;
      await agentWith(wb, saver, [new AIMessage("forward")]).invoke({ messages: [new HumanMessage("forward")] }, endOfWrite.config);
      assert.equal(await readFile(path.join(dir, "keep.txt"), "utf8"), "rewritten\n");
      reports.length = 0;
      await agentWith(wb, saver, [new AIMessage("start")]).invoke({ messages: [new HumanMessage("start")] }, history.at(-1)!.config);
      const now = await contents(dir);
      for (const p of Object.keys(before).filter((p) => !p.startsWith("src/f1.") && !p.startsWith("src/f2."))) assert.equal(now[p], before[p], `${p} is as before the command`);
      assert.ok(reports.some((m) => m.includes("taken while a command ran") && m.includes("made.txt")), `the fork says which paths it may not have brought back (${reports.join(" | ")})`);
    } finally {
      SnapshotStore.prototype.snapshot = original;
      await wb.close();
    }
  });

  test("after run_command only what the watcher listed (once settled) is re-read; a fork still undoes the command", async () => {
    const { root, threadId, dir, config } = await seededThread("settle", 40);
    const wb = workbench(root);
    const saver = new MemorySaver();
    const { calls, stop } = spySnapshots();
    const tracker = () => wb.fileManager.hooks.trackerOf(threadId);
    try {
      await agentWith(wb, saver, [new AIMessage("hello")]).invoke({ messages: [new HumanMessage("start")] }, config);
      await wb.snapshots(threadId); // the baseline is in
      for (let i = 0; i < 500 && !tracker()?.live; i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(tracker()?.live, "a live watcher serves the thread");
      const before = await contents(dir);
      // Several rounds: the command's events must be in before the snapshot reads, every time.
      for (let round = 0; round < 3; round++) {
        calls.length = 0;
        // Directories made in one step and written inside in the next: parcel may never watch them.
        const nested = `mkdir -p deep/r${round}/x/y && printf 'made ${round}\\n' > deep/r${round}/x/y/f.txt${round > 0 ? ` && printf 'edited\\n' >> deep/r${round - 1}/x/y/f.txt` : ""}`;
        const command = `printf 'round ${round}\\n' > cmd${round}.txt && rm src/f${round}.ts && printf more >> src/f${round + 10}.ts && ${nested}`;
        const out = await agentWith(wb, saver, [toolTurn(call("run_command", { command }, `r${round}`)), new AIMessage("ran")]).invoke({ messages: [new HumanMessage(`run ${round}`)] }, config);
        assert.notEqual((out.messages.at(-2) as { status?: string }).status, "error");
        assert.deepEqual(calls.filter((c) => c.paths === undefined), [], `no stat pass after the command (${JSON.stringify(calls)})`);
      }
      const after = await contents(dir);
      const latest = snapshotIdOf((await agentWith(wb, saver, []).getState(config)).values)!;
      const diff = await wb.changes(threadId, { from: latest });
      assert.deepEqual(diff.files, [], "the last snapshot holds every change the commands made");
      const history = [];
      for await (const st of agentWith(wb, saver, []).getStateHistory(config)) history.push(st);
      const beforeCommands = history.find((st) => toolCount(st.values as never) === 0 && (st.next ?? []).length === 0)!;
      await agentWith(wb, saver, [new AIMessage("back")]).invoke({ messages: [new HumanMessage("back")] }, beforeCommands.config);
      assert.deepEqual(await contents(dir), before, "a fork to before the commands brings every file back");
      const end = history.find((st) => toolCount(st.values as never) === 3 && (st.next ?? []).length === 0)!;
      await agentWith(wb, saver, [new AIMessage("forward")]).invoke({ messages: [new HumanMessage("forward")] }, end.config);
      assert.deepEqual(await contents(dir), after, "and a fork to the end brings the commands' changes back");
    } finally {
      stop();
      await wb.close();
    }
  });

  test("a restart: the run start's full look names the hand edits made while no process ran; a fork restores them and the run's write both ways", async () => {
    const root = path.join(tmp, "restart");
    const threadId = "t-restart";
    const dir = path.join(root, threadId);
    await mkdir(path.join(dir, "src"), { recursive: true });
    for (let i = 0; i < 100; i++) await writeFile(path.join(dir, "src", `f${i}.ts`), `export const v${i} = ${i};\n`);
    await writeFile(path.join(dir, "w.txt"), "original\n");
    const saver = new MemorySaver();
    const config = { configurable: { thread_id: threadId } };
    const first = workbench(root);
    try {
      await agentWith(first, saver, [toolTurn(call("write_file", { path: "a.txt", content: "one\n" }, "a1")), new AIMessage("written")]).invoke({ messages: [new HumanMessage("write")] }, config);
    } finally {
      await first.close();
    }
    // While no process runs: hand edits the next process cannot have been told about.
    await writeFile(path.join(dir, "hand.txt"), "edited by hand\n");
    await writeFile(path.join(dir, "src", "f7.ts"), "export const v7 = 77;\n");
    const beforeRun = await contents(dir);
    const wb = workbench(root);
    try {
      const n1 = (await agentWith(wb, saver, []).getState(config)).values.messages.length as number;
      await agentWith(wb, saver, [toolTurn(call("write_file", { path: "w.txt", content: "rewritten\n" }, "w1")), new AIMessage("rewrote")]).invoke({ messages: [new HumanMessage("rewrite")] }, config);
      const afterRun = await contents(dir);
      const history = [];
      for await (const st of agentWith(wb, saver, []).getStateHistory(config)) history.push(st);
      const endOfRun1 = snapshotIdOf(history.find((st) => (st.values as { messages: unknown[] }).messages.length === n1)!.values);
      const runStart = history.filter((st) => (st.values as { messages: unknown[] }).messages.length === n1 + 1).find((st) => snapshotIdOf(st.values) !== endOfRun1)!;
      assert.ok(runStart, "the run start's checkpoint names a snapshot of its own");
      await agentWith(wb, saver, [new AIMessage("from the run start")]).invoke({ messages: [new HumanMessage("back")] }, runStart.config);
      assert.deepEqual(await contents(dir), beforeRun, "the run start's snapshot holds the hand edits and w.txt as it was before the write");
      const end = history.find((st) => toolCount(st.values as never) === 2 && (st.next ?? []).length === 0)!;
      await agentWith(wb, saver, [new AIMessage("forward")]).invoke({ messages: [new HumanMessage("forward")] }, end.config);
      assert.deepEqual(await contents(dir), afterRun, "a fork to the end of the run brings the write back");
    } finally {
      await wb.close();
    }
  });

  test("per-path restore: one file the agent broke comes back; hand edits and other files stay; the next run keeps them", async () => {
    const { root, threadId, dir } = await threadDir(tmp, "paths");
    const wb = workbench(root);
    const saver = new MemorySaver();
    const config = { configurable: { thread_id: threadId } };
    try {
      await agentWith(wb, saver, [
        toolTurn(call("write_file", { path: "a.txt", content: "good\n" }, "p1"), call("write_file", { path: "b.txt", content: "b1\n" }, "p2"), call("write_file", { path: "docs/x.md", content: "x1\n" }, "p3")),
        new AIMessage("written"),
      ]).invoke({ messages: [new HumanMessage("write")] }, config);
      const good = snapshotIdOf((await agentWith(wb, saver, []).getState(config)).values)!;
      await agentWith(wb, saver, [
        toolTurn(call("write_file", { path: "a.txt", content: "broken\n" }, "p4"), call("write_file", { path: "c.txt", content: "new\n" }, "p5"), call("write_file", { path: "docs/x.md", content: "x2\n" }, "p6")),
        new AIMessage("changed"),
      ]).invoke({ messages: [new HumanMessage("change")] }, config);
      await writeFile(path.join(dir, "b.txt"), "edited by hand\n");

      const { files } = await wb.changes(threadId, { from: good, paths: ["a.txt"] });
      assert.deepEqual(files.map((f) => [f.path, f.change]), [["a.txt", "modified"]], "changes() per path lists only that path");
      const result = await wb.restore(threadId, good, { paths: ["a.txt", "c.txt", "docs"] });
      assert.equal(await readFile(path.join(dir, "a.txt"), "utf8"), "good\n", "the broken file is back");
      assert.equal(await readFile(path.join(dir, "docs", "x.md"), "utf8"), "x1\n", "a directory path brings back its files");
      await assert.rejects(readFile(path.join(dir, "c.txt")), "a path the snapshot does not have is removed");
      assert.equal(await readFile(path.join(dir, "b.txt"), "utf8"), "edited by hand\n", "the hand edit stays");
      assert.notEqual(result.restored, good, "the mix is a snapshot of its own");
      assert.deepEqual((await wb.changes(threadId, { from: result.previous, to: result.restored })).files.map((f) => [f.path, f.change]), [
        ["a.txt", "modified"],
        ["c.txt", "deleted"],
        ["docs/x.md", "modified"],
      ]);
      await agentWith(wb, saver, [new AIMessage("next")]).invoke({ messages: [new HumanMessage("next")] }, config);
      assert.equal(await readFile(path.join(dir, "b.txt"), "utf8"), "edited by hand\n", "the next run keeps the files");
      assert.equal(await readFile(path.join(dir, "a.txt"), "utf8"), "good\n");
      await assert.rejects(wb.restore(threadId, good, { paths: ["../outside"] }), /workspace-relative/);
    } finally {
      await wb.close();
    }
  });

  test('restore "ask": a fork interrupts with the two snapshots; the app chooses restore or keep', async () => {
    const root = path.join(tmp, "ask");
    const wb = createWorkbench({ rootDir: root, webTools: false, fileManager: { timeTravel: { restore: "ask" }, onError: () => undefined } });
    const saver = new MemorySaver();
    const threadId = "ask";
    const dir = path.join(root, threadId);
    const config = { configurable: { thread_id: threadId } };
    try {
      for (const v of ["v1", "v2"]) {
        await agentWith(wb, saver, [toolTurn(call("write_file", { path: "a.txt", content: `${v}\n` }, `w-${v}`)), new AIMessage(v)]).invoke({ messages: [new HumanMessage(v)] }, config);
      }
      const history = [];
      for await (const s of agentWith(wb, saver, []).getStateHistory(config)) history.push(s);
      const endOfFirst = history.find((s) => toolCount(s.values as never) === 1 && (s.next ?? []).length === 0)!;
      const want = snapshotIdOf(endOfFirst.values)!;

      const forkA = agentWith(wb, saver, [new AIMessage("restored")]);
      const paused = await forkA.invoke({ messages: [new HumanMessage("fork")] }, endOfFirst.config);
      const request = (paused.__interrupt__?.[0] as { value?: Record<string, unknown> } | undefined)?.value;
      assert.equal(request?.type, "workspace_restore", JSON.stringify(paused.__interrupt__));
      assert.equal(request?.checkpointSnapshot, want);
      assert.equal(await readFile(path.join(dir, "a.txt"), "utf8"), "v2\n", "nothing restored before the app decides");
      const latestFork = (await agentWith(wb, saver, []).getState(config)).config;
      await forkA.invoke(new Command({ resume: "restore" }), latestFork);
      assert.equal(await readFile(path.join(dir, "a.txt"), "utf8"), "v1\n", "restore chosen: the checkpoint's files");

      // Keep: fork from the end of turn 2 (v2) while the files are v1; the run adopts v1.
      const endOfSecond = history.find((s) => toolCount(s.values as never) === 2 && (s.next ?? []).length === 0)!;
      const forkB = agentWith(wb, saver, [new AIMessage("kept")]);
      await forkB.invoke({ messages: [new HumanMessage("fork 2")] }, endOfSecond.config);
      await forkB.invoke(new Command({ resume: "keep" }), (await agentWith(wb, saver, []).getState(config)).config);
      assert.equal(await readFile(path.join(dir, "a.txt"), "utf8"), "v1\n", "keep chosen: the files stay");
      const after = await agentWith(wb, saver, []).getState(config);
      assert.notEqual(snapshotIdOf(after.values), snapshotIdOf(endOfSecond.values), "the branch now names the kept workspace");
    } finally {
      await wb.close();
    }
  });

  test("a thread whose checkpoints were lost (new checkpointer, same thread_id) keeps its files; a fork to its first checkpoint still restores", async () => {
    const root = path.join(tmp, "lost");
    const threadId = "lost";
    const dir = path.join(root, threadId);
    const config = { configurable: { thread_id: threadId } };
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "seed.txt"), "before the first run\n");
    const first = new MemorySaver();
    let wb = workbench(root);
    try {
      for (const [i, content] of ["one\n", "two\n"].entries()) {
        await agentWith(wb, first, [toolTurn(call("write_file", { path: "notes.md", content }, `w${i}`)), new AIMessage("written")]).invoke({ messages: [new HumanMessage(`write ${i}`)] }, config);
      }
      assert.equal((await contents(dir))["notes.md"], Buffer.from("two\n").toString("base64"));
    } finally {
      await wb.close();
    }
    // A restart with an in-memory checkpointer: the thread's history is gone, its files are not
    // (and were edited by hand meanwhile: the new history must name what is on disk).
    await writeFile(path.join(dir, "by-hand.txt"), "edited outside the agent\n");
    const onDisk = await contents(dir);
    wb = workbench(root);
    try {
      const second = new MemorySaver();
      for (const reply of ["fresh history", "still here"]) {
        await agentWith(wb, second, [new AIMessage(reply)]).invoke({ messages: [new HumanMessage(reply)] }, config);
        assert.deepEqual(await contents(dir), onDisk, `a run on a new checkpoint history (${reply}) leaves the files as they are`);
      }
      const named = snapshotIdOf((await agentWith(wb, second, []).getState(config)).values);
      assert.ok(named, "the new history names a snapshot");
      const sinceNamed = await wb.changes(threadId, { from: named! });
      assert.deepEqual(sinceNamed.files, [], "the named snapshot is the files on disk, hand edit included");

      // Addressed to the old history's very first checkpoint (before any snapshot was named): the baseline comes back.
      const history = [];
      for await (const s of agentWith(wb, first, []).getStateHistory(config)) history.push(s);
      const start = history.at(-1)!;
      assert.equal(snapshotIdOf(start.values), undefined, "the first checkpoint names no snapshot");
      await agentWith(wb, first, [new AIMessage("from the start")]).invoke({ messages: [new HumanMessage("again")] }, start.config);
      assert.deepEqual(Object.keys(await contents(dir)).sort(), ["seed.txt"], "a fork to the first checkpoint restores the baseline");
    } finally {
      await wb.close();
    }
  });

  test("HITL: a run the human rejects is rewound, conversation and files", async () => {
    const root = path.join(tmp, "hitl");
    const wb = workbench(root);
    const saver = new MemorySaver();
    const threadId = "hitl";
    const dir = path.join(root, threadId);
    const config = { configurable: { thread_id: threadId } };
    const hitl = humanInTheLoopMiddleware({ interruptOn: { patch: { allowedDecisions: ["approve", "reject"] } } });
    try {
      await agentWith(wb, saver, [toolTurn(call("write_file", { path: "report.md", content: "# Report v1\n" }, "h1")), new AIMessage("written")], [hitl]).invoke(
        { messages: [new HumanMessage("write the report")] },
        config,
      );
      const before = await contents(dir);
      const beforeRun = await agentWith(wb, saver, []).getState(config);

      // The next run writes a new file, then wants to patch the report: the human is asked.
      const agent = agentWith(
        wb,
        saver,
        [
          toolTurn(call("write_file", { path: "draft.md", content: "scratch\n" }, "h2")),
          toolTurn(call("patch", { mode: "replace", path: "report.md", old_string: "v1", new_string: "v2 (rewritten)" }, "h3")),
          new AIMessage("done"),
        ],
        [hitl],
      );
      const paused = await agent.invoke({ messages: [new HumanMessage("rewrite it")] }, config);
      assert.ok((paused as { __interrupt__?: unknown[] }).__interrupt__?.length, "the patch waits for review");
      // The app shows what the run changed so far.
      const review = await wb.changes(threadId, { from: snapshotIdOf(beforeRun.values)! });
      assert.deepEqual(review.files.map((f) => f.path), ["draft.md"], JSON.stringify(review.files));
      assert.match(review.diff, /\+scratch/);

      // Reject: the conversation goes back to before the run; the files follow.
      await agent.invoke(new Command({ resume: { decisions: [{ type: "reject", message: "no" }] } }), config);
      await agentWith(wb, saver, [new AIMessage("starting over")]).invoke({ messages: [new HumanMessage("try again")] }, beforeRun.config);
      assert.deepEqual(await contents(dir), before, "no trace of the rejected run on disk");
    } finally {
      await wb.close();
    }
  });
});
