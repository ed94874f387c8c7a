// Several worker processes on one real Postgres checkpointer and one shared workspace root, the
// way a LangGraph server runs: 3 workers, 100 threads × 5 turns, every turn on a random worker,
// another worker changing the thread's files between turns. Per thread the FileManager's state
// (read dedup, staleness, tree, loop counter, timestamps) must continue exactly across workers.
// Postgres is started here (tests/helpers/postgres.ts); under CI a missing server is a failure.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { postgresUnavailable, startPostgres, type TestPostgres } from "./helpers/postgres.js";
import {
  driveLoad,
  oobFile,
  scriptFor,
  startFleet,
  toolCallId,
  turnText,
  type Fleet,
  type LoadResult,
  type StoredMessage,
  type ThreadRecord,
} from "./helpers/workerFleet.js";

const WORKERS = 3;
const THREADS = 100;
const TURNS = 5;

const skip = await postgresUnavailable();
if (skip) console.log(`# SKIPPING multi-worker tests: ${skip}`);

let server: TestPostgres | undefined;
let fleet: Fleet | undefined;
let root = "";
let load: LoadResult;

before(async () => {
  if (skip) return;
  root = await mkdtemp(path.join(os.tmpdir(), "wb-workers-"));
  server = await startPostgres();
  // Tables once, before any worker runs (concurrent setup() calls race on the migrations).
  const saver = PostgresSaver.fromConnString(server.url);
  await saver.setup();
  await saver.end();
  fleet = await startFleet({ size: WORKERS, url: server.url, rootDir: root });
  load = await driveLoad({ fleet, rootDir: root, run: 0, threads: THREADS, turns: TURNS, concurrency: 4 * WORKERS, seed: 12 });
  const secs = load.wallMs / 1000;
  console.log(`# ${load.turnCount} turns on ${WORKERS} workers in ${secs.toFixed(1)} s (${(load.turnCount / secs).toFixed(1)} turns/s)`);
});

after(async () => {
  await fleet?.close();
  await server?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

const parse = (content: string) => JSON.parse(content) as Record<string, unknown>;
const isStub = (content: string) => parse(content).dedup === true && parse(content).status === "unchanged";

function resultsOf(rec: ThreadRecord, turn: number) {
  const report = rec.turns[turn]!;
  const byId = new Map(report.toolResults.map((r) => [r.id, r]));
  const at = (step: number, j: number) => {
    const r = byId.get(toolCallId(rec.thread, turn, step, j));
    assert.ok(r, `${rec.thread} turn ${turn}: no result for step ${step} call ${j}`);
    return r;
  };
  return { report, at };
}

test("every turn of every thread ran, on every worker, nothing lost", { skip }, () => {
  assert.equal(load.threads.length, THREADS, "every thread ran");
  const used = new Set<number>();
  for (const rec of load.threads) {
    assert.equal(rec.turns.length, TURNS, `${rec.thread}: every turn answered`);
    for (const [turn, report] of rec.turns.entries()) {
      assert.equal(report.worker, rec.route[turn], `${rec.thread} turn ${turn} ran on the worker it was sent to`);
      used.add(report.worker);
      const expected = scriptFor(rec.thread, turn).flat().length;
      assert.equal(report.toolResults.length, expected, `${rec.thread} turn ${turn}: one result per tool call`);
    }
  }
  assert.equal(used.size, WORKERS, "turns were spread over every worker");
  const moved = load.threads.filter((r) => r.route[0] !== r.route[1]).length;
  assert.ok(moved >= THREADS / 3, `turn 1 ran on another worker than turn 0 for ${moved} threads`);
});

test("read dedup holds across workers only while the earlier read is in the conversation", { skip }, () => {
  for (const rec of load.threads) {
    const t0 = resultsOf(rec, 0);
    assert.match(t0.at(0, 0).content, new RegExp(`notes of ${rec.thread}\\b`), `${rec.thread}: first read is real`);
    // Turn 1 (usually on another worker): same window, unchanged file, earlier result still there → stub.
    const t1 = resultsOf(rec, 1);
    assert.ok(isStub(t1.at(0, 0).content), `${rec.thread}: expected the dedup stub on worker ${rec.route[1]}, got ${t1.at(0, 0).content}`);
    // Before turn 4 a worker removed turn 0's read from the conversation → a real read again.
    const t4 = resultsOf(rec, 4);
    assert.ok(!isStub(t4.at(0, 0).content), `${rec.thread}: read again for real after the earlier result left, got ${t4.at(0, 0).content}`);
    assert.match(t4.at(0, 0).content, new RegExp(`notes of ${rec.thread}\\b`));
  }
});

test("a write after another worker changed the file carries a staleness warning", { skip }, async () => {
  for (const rec of load.threads) {
    assert.notEqual(rec.touchedBy, rec.route[1], "the change came from another worker than the one writing");
    const write = resultsOf(rec, 1).at(0, 1);
    assert.notEqual(write.status, "error", write.content);
    assert.match(String(parse(write.content)._warning ?? ""), /changed after you last read/, `${rec.thread}: ${write.content}`);
    assert.equal(await readFile(path.join(root, rec.thread, "target.md"), "utf8"), `target rewritten by ${rec.thread}\n`);
  }
});

test("the model is told about a file another worker created", { skip }, () => {
  for (const rec of load.threads) {
    const name = oobFile(rec.thread);
    assert.ok(!rec.turns[0]!.firstCallNotices.includes(name), `${rec.thread}: the file did not exist at turn 0`);
    assert.ok(
      rec.turns[1]!.firstCallNotices.includes(name),
      `${rec.thread}: worker ${rec.route[1]} did not tell the model about ${name} (created by worker ${rec.touchedBy}); it saw: ${rec.turns[1]!.firstCallNotices}`,
    );
  }
});

test("loop detection counts identical reads across turns on different workers", { skip }, () => {
  for (const rec of load.threads) {
    const t2 = resultsOf(rec, 2);
    assert.match(t2.at(0, 0).content, /loop file of/, `${rec.thread}: first loop read is real`);
    assert.equal(t2.report.state.toolLoop?.count, 2, `${rec.thread}: two identical reads counted in turn 2`);
    const t3 = resultsOf(rec, 3);
    const third = t3.at(0, 0);
    assert.notEqual(third.status, "error", `${rec.thread}: the 3rd identical call warns: ${third.content}`);
    assert.ok(parse(third.content)._warning, `${rec.thread}: the 3rd identical call carries a warning: ${third.content}`);
    const fourth = t3.at(1, 0);
    assert.equal(fourth.status, "error", `${rec.thread}: the 4th identical call is refused: ${fourth.content}`);
    assert.equal(t3.report.state.toolLoop?.count, 4);
    // Any other tool call restarts the count.
    assert.equal(rec.turns[4]!.state.toolLoop ?? null, null, `${rec.thread}: ${JSON.stringify(rec.turns[4]!.state.toolLoop)}`);
  }
});

test("timestamps move forward across workers and nothing leaks between threads", { skip }, () => {
  for (const rec of load.threads) {
    for (const [turn, report] of rec.turns.entries()) {
      assert.deepEqual(report.foreign, [], `${rec.thread} turn ${turn} saw other threads: ${report.foreign.join(", ")}`);
      assert.ok(typeof report.state.startWorkTime === "number", `${rec.thread}: startWorkTime set`);
      if (turn === 0) continue;
      const prev = rec.turns[turn - 1]!.state;
      assert.ok(report.state.startWorkTime! > prev.startWorkTime!, `${rec.thread} turn ${turn}: startWorkTime moved forward`);
      assert.ok((report.state.fileUpdateTime ?? 0) >= (prev.fileUpdateTime ?? 0), `${rec.thread} turn ${turn}: fileUpdateTime never goes back`);
    }
  }
});

test("the checkpointed conversation holds every turn in order, each call answered", { skip }, async () => {
  for (const [i, rec] of load.threads.entries()) {
    const { messages } = await fleet!.request<{ messages: StoredMessage[] }>(i % WORKERS, { kind: "state", thread: rec.thread });
    const turns = messages.filter((m) => m.type === "human" && /^TURN /.test(m.text)).map((m) => m.text);
    assert.deepEqual(turns, Array.from({ length: TURNS }, (_, t) => turnText(rec.thread, t)), `${rec.thread}: every turn, in order`);
    for (let t = 0; t < TURNS; t++) {
      assert.ok(messages.some((m) => m.type === "ai" && m.text === `done ${rec.thread} turn ${t}`), `${rec.thread}: turn ${t} finished`);
    }
    const answered = new Set(messages.map((m) => m.toolCallId).filter(Boolean));
    for (const m of messages) for (const id of m.toolCalls) assert.ok(answered.has(id), `${rec.thread}: call ${id} has its result`);
    assert.ok(!answered.has(toolCallId(rec.thread, 0, 0, 0)), `${rec.thread}: the forgotten read is gone`);
    assert.equal(await readFile(path.join(root, rec.thread, "done-4.md"), "utf8"), `done by ${rec.thread} turn 4\n`);
  }
});
