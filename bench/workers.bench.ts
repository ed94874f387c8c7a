/**
 * Scale-out: agent turns per second with 1, 2 and 3 worker processes sharing one Postgres
 * checkpointer (a throwaway cluster on 127.0.0.1, tests/helpers/postgres.ts) and one workspace
 * root, each turn routed to a random worker — the workload of tests/multi-worker.test.ts
 * (tests/helpers/workerFleet.ts: reads, a stale write, a file made by another worker, loop
 * detection, a forgotten read; a scripted model, so the figures are the workbench, LangGraph and
 * Postgres, not an LLM). Anchor: 1 worker, measured in the same run.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { postgresUnavailable, startPostgres } from "../tests/helpers/postgres.js";
import { driveLoad, percentile, startFleet } from "../tests/helpers/workerFleet.js";
import { fmt } from "./fixtures.js";

const SIZES = [1, 2, 3];

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const threads = quick ? 12 : 40;
  const turns = 5;
  const concurrency = 12;
  const head = [
    "## Workers on Postgres (scale-out)",
    "",
    `${threads} threads × ${turns} turns per row, ${concurrency} threads in flight, every turn sent to a random worker`,
    "process (`createWorkbench` + `createAgent` + `PostgresSaver`, scripted model, one shared root, Postgres 15",
    "on 127.0.0.1 with fsync off). A *step* is one model call plus what ran since the previous one (tools,",
    "middleware, checkpoint writes); a turn has 2–3. Anchor: 1 worker in the same run.",
    "",
  ];
  const skip = await postgresUnavailable().catch((e: Error) => e.message);
  if (skip) return [...head, `Not measured: ${skip}`].join("\n");
  const server = await startPostgres();
  const root = await mkdtemp(path.join(os.tmpdir(), "wb-bench-workers-"));
  const rows: string[] = [];
  try {
    const saver = PostgresSaver.fromConnString(server.url);
    await saver.setup();
    await saver.end();
    let anchor = 0;
    for (const size of SIZES) {
      const fleet = await startFleet({ size, url: server.url, rootDir: root });
      try {
        // Warm-up: every worker's first turns pay for module and connection set-up.
        await driveLoad({ fleet, rootDir: root, run: 100 + size, threads: 2 * size, turns, concurrency, seed: size });
        const load = await driveLoad({ fleet, rootDir: root, run: size, threads, turns, concurrency, seed: 7 });
        const perSecond = load.turnCount / (load.wallMs / 1000);
        if (size === 1) anchor = perSecond;
        rows.push(
          `| ${size} | ${load.turnCount} | ${fmt(load.wallMs / 1000)} s | ${fmt(perSecond)} | ${fmt(perSecond / anchor)}× | ` +
            `${fmt(percentile(load.stepLatencies, 50))} ms | ${fmt(percentile(load.stepLatencies, 95))} ms | ${fmt(percentile(load.turnLatencies, 95))} ms |`,
        );
      } finally {
        await fleet.close();
      }
    }
  } finally {
    await server.stop();
    await rm(root, { recursive: true, force: true });
  }
  return [
    ...head,
    "| workers | turns | wall | turns/s | vs 1 worker | step p50 | step p95 | turn p95 |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows,
    "",
    `This machine has ${os.cpus().length} cores shared with other work: past the core count, more workers add`,
    "no throughput, only queueing; the point of several workers is that any of them can take any thread's",
    "next turn with the same result (tests/multi-worker.test.ts), so capacity grows with machines.",
  ].join("\n");
}
