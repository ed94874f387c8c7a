// Freshness across workers (issue 25, item 4): a structural change made between turns by another
// process is in the first model call of the next turn, whichever worker serves it. 3 workers on
// a real Postgres checkpointer, 30 threads × 5 turns, every turn on a random worker; right before
// turns 2, 3 and 4 a separate OS process (not a worker: no watcher of ours sees it coming) creates
// a file, and before turn 4 also a new directory with a file in it. The turn is sent only after
// that process has exited, so the change deterministically precedes the run.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { access, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { postgresUnavailable, startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { driveLoad, startFleet, type Fleet, type LoadResult } from "./helpers/workerFleet.js";

const WORKERS = 3;
const THREADS = 30;
const TURNS = 5;
const run = promisify(execFile);

const skip = await postgresUnavailable();
if (skip) console.log(`# SKIPPING multi-worker freshness tests: ${skip}`);

let server: TestPostgres | undefined;
let fleet: Fleet | undefined;
let root = "";
let load: LoadResult;

const freshFile = (turn: number) => `fresh-before-${turn}.md`;
const freshDir = "made-elsewhere";

/** Another process writes the files; resolves once it has exited. */
async function createElsewhere(dir: string, turn: number): Promise<void> {
  const script = turn === 4 ? 'printf "x\\n" > "$1/$2" && mkdir -p "$1/$3" && printf "y\\n" > "$1/$3/inner.md"' : 'printf "x\\n" > "$1/$2"';
  await run("sh", ["-c", script, "sh", dir, freshFile(turn), freshDir], { timeout: 30_000 });
}

before(async () => {
  if (skip) return;
  root = await mkdtemp(path.join(os.tmpdir(), "wb-fresh-"));
  server = await startPostgres();
  const saver = PostgresSaver.fromConnString(server.url);
  await saver.setup();
  await saver.end();
  fleet = await startFleet({ size: WORKERS, url: server.url, rootDir: root });
  load = await driveLoad({
    fleet,
    rootDir: root,
    run: 7,
    threads: THREADS,
    turns: TURNS,
    concurrency: 2 * WORKERS,
    seed: 25,
    beforeTurn: async (rec, turn) => {
      if (turn >= 2) await createElsewhere(path.join(root, rec.thread), turn);
    },
  });
});

after(async () => {
  await fleet?.close();
  await server?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

test("a file another process created between turns is in the next turn's first model call, on any worker", { skip, timeout: 600_000 }, () => {
  const misses: string[] = [];
  for (const rec of load.threads) {
    for (const turn of [2, 3, 4]) {
      const notices = rec.turns[turn]!.firstCallNotices;
      if (!notices.includes(freshFile(turn))) misses.push(`${rec.thread} turn ${turn} (worker ${rec.route[turn]}, previous ${rec.route[turn - 1]})`);
    }
    assert.ok(!rec.turns[1]!.firstCallNotices.includes(freshFile(2)), `${rec.thread}: not shown before it existed`);
  }
  assert.deepEqual(misses, [], `missing from the first model call in ${misses.length} of ${3 * THREADS} turns`);
});

test("a directory another process created between turns is in the next turn's first model call", { skip }, () => {
  const misses = load.threads.filter((rec) => !rec.turns[4]!.firstCallNotices.includes(freshDir)).map((rec) => rec.thread);
  assert.deepEqual(misses, []);
});

test("nothing another process created between turns was undone by a worker", { skip }, async () => {
  const lost: string[] = [];
  for (const rec of load.threads) {
    for (const name of [freshFile(2), freshFile(3), freshFile(4), `${freshDir}/inner.md`]) {
      await access(path.join(root, rec.thread, name)).catch(() => lost.push(`${rec.thread}/${name}`));
    }
  }
  assert.deepEqual(lost, []);
});
