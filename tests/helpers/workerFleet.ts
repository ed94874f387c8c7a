/**
 * A fleet of agent worker processes (tests/fixtures/pg-worker.ts) on one Postgres checkpointer
 * and one shared workspace root, and the load driver used by tests/multi-worker.test.ts and
 * bench/workers.bench.ts: many threads, each turn routed to a random worker, with another
 * worker changing the thread's files between turns the way a background job would.
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { seededRandom } from "./seededRandom.js";

const WORKER = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "pg-worker.ts");

export type WorkerRequest =
  | { kind: "turn"; thread: string; turn: number }
  | { kind: "touch"; thread: string; file: string; content: string }
  | { kind: "forget"; thread: string; toolCallIds: string[] }
  | { kind: "state"; thread: string }
  | { kind: "exit" };

export interface TurnReport {
  worker: number;
  toolResults: { id: string; name?: string; status?: string; content: string }[];
  /** Text of the non-AI, non-tool messages (system, tree/change notices) at the turn's first model call. */
  firstCallNotices: string;
  /** Thread ids other than this one found in any message a model call of this turn received. */
  foreign: string[];
  state: { startWorkTime?: number; fileUpdateTime?: number; toolLoop?: { count: number } | null; messageCount: number };
  /** ms from the start of the turn to each model call, and to the end of the turn. */
  marks: number[];
}

export interface StoredMessage {
  type: string;
  text: string;
  toolCalls: string[];
  toolCallId?: string;
}

/** Tool calls of each model step of a turn; the step after the last one answers with text. */
export function scriptFor(thread: string, turn: number): { name: string; args: Record<string, unknown> }[][] {
  switch (turn) {
    case 0:
      return [[{ name: "read_file", args: { path: "notes.md" } }, { name: "read_file", args: { path: "target.md" } }]];
    case 1:
      return [[{ name: "read_file", args: { path: "notes.md" } }, { name: "write_file", args: { path: "target.md", content: `target rewritten by ${thread}\n` } }]];
    case 2:
    case 3:
      return [[{ name: "read_file", args: { path: "loop.md" } }], [{ name: "read_file", args: { path: "loop.md" } }]];
    default:
      return [[{ name: "read_file", args: { path: "notes.md" } }, { name: "write_file", args: { path: `done-${turn}.md`, content: `done by ${thread} turn ${turn}\n` } }]];
  }
}

export const toolCallId = (thread: string, turn: number, step: number, j: number) => `${thread}-t${turn}-s${step}-${j}`;
export const turnText = (thread: string, turn: number) => `TURN ${turn} OF ${thread}`;
export const TURN_PATTERN = /^TURN (\d+) OF (\S+)$/;
/** Matches every thread id the driver makes (`lt-<run>-<nnn>`). */
export const THREAD_ID_PATTERN = /lt-\d+-\d{3}/g;
export const threadId = (run: number, i: number) => `lt-${run}-${String(i).padStart(3, "0")}`;
export const oobFile = (thread: string) => `oob-${thread}.md`;

export interface Fleet {
  readonly size: number;
  request<T = unknown>(worker: number, req: WorkerRequest): Promise<T>;
  /** Asks every worker to exit (checkpointer and workbench closed), then kills stragglers. */
  close(): Promise<void>;
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/** Forks `size` workers and waits until each has built its agent. */
export async function startFleet(options: { size: number; url: string; rootDir: string }): Promise<Fleet> {
  const children: ChildProcess[] = [];
  const pending = new Map<number, Pending>();
  let nextId = 0;
  const failAll = (err: Error) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  const ready: Promise<void>[] = [];
  for (let i = 0; i < options.size; i++) {
    const child = fork(WORKER, [options.url, options.rootDir, String(i)], {
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: { ...process.env, WORKBENCH_ENABLE_SHELL: "false" },
    });
    children.push(child);
    ready.push(
      new Promise<void>((resolve, reject) => {
        child.once("exit", (code, signal) => reject(new Error(`worker ${i} exited before it was ready (${code ?? signal})`)));
        child.on("message", (msg: { ready?: boolean; id?: number; ok?: boolean; data?: unknown; error?: string }) => {
          if (msg.ready) return resolve();
          const p = pending.get(msg.id!);
          if (!p) return;
          pending.delete(msg.id!);
          if (msg.ok) p.resolve(msg.data);
          else p.reject(new Error(`worker ${i}: ${msg.error}`));
        });
      }),
    );
    child.on("exit", (code, signal) => {
      if (code !== 0 || signal) failAll(new Error(`worker ${i} exited (${code ?? signal})`));
    });
  }
  const fleet: Fleet = {
    size: options.size,
    request<T>(worker: number, req: WorkerRequest): Promise<T> {
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        children[worker]!.send({ ...req, id });
      });
    },
    async close() {
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
              child.once("exit", () => {
                clearTimeout(timer);
                resolve();
              });
              if (child.connected) child.send({ kind: "exit", id: -1 });
              else child.kill("SIGKILL");
            }),
        ),
      );
    },
  };
  try {
    await Promise.all(ready);
  } catch (error) {
    for (const c of children) c.kill("SIGKILL");
    throw error;
  }
  return fleet;
}

/** The files every thread starts with. */
export async function seedThread(rootDir: string, thread: string): Promise<void> {
  const dir = path.join(rootDir, thread);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "notes.md"), `notes of ${thread}\n`);
  await writeFile(path.join(dir, "target.md"), `target of ${thread}\n`);
  await writeFile(path.join(dir, "loop.md"), `loop file of ${thread}\n`);
}

export interface ThreadRecord {
  thread: string;
  /** Worker of each turn. */
  route: number[];
  /** Worker that changed the files between turn 0 and 1 (another worker than turn 1's, when there is one). */
  touchedBy: number;
  turns: TurnReport[];
}

export interface LoadResult {
  threads: ThreadRecord[];
  wallMs: number;
  turnCount: number;
  /** Per turn: ms from start to end. */
  turnLatencies: number[];
  /** Per model step: ms between consecutive model calls of a turn (tool + middleware + checkpoint writes). */
  stepLatencies: number[];
}

/**
 * Runs `threads` threads of `turns` turns (≥ 5: the script's checks need them), at most
 * `concurrency` threads in flight, each turn on a random worker. Between turn 0 and 1 another
 * worker rewrites target.md and creates `oob-<thread>.md`; before turn 4 a worker removes turn
 * 0's reads from the conversation (as summarisation would).
 */
export async function driveLoad(options: {
  fleet: Fleet;
  rootDir: string;
  run: number;
  threads: number;
  turns: number;
  concurrency: number;
  seed: number;
  /** Runs right before each turn is sent (after the driver's own changes), e.g. a change by another process. */
  beforeTurn?: (rec: ThreadRecord, turn: number) => Promise<void>;
}): Promise<LoadResult> {
  const { fleet, rootDir, run, turns } = options;
  const random = seededRandom(options.seed);
  const pick = (except?: number) => {
    if (fleet.size === 1 || except === undefined) return Math.floor(random() * fleet.size);
    const w = Math.floor(random() * (fleet.size - 1));
    return w >= except ? w + 1 : w;
  };
  const records: ThreadRecord[] = [];
  for (let i = 0; i < options.threads; i++) {
    const thread = threadId(run, i);
    await seedThread(rootDir, thread);
    const route = Array.from({ length: turns }, () => pick());
    records.push({ thread, route, touchedBy: pick(route[1]), turns: [] });
  }
  const turnLatencies: number[] = [];
  const stepLatencies: number[] = [];
  const started = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < records.length) {
      const rec = records[next++]!;
      for (let turn = 0; turn < turns; turn++) {
        if (turn === 1) {
          await fleet.request(rec.touchedBy, { kind: "touch", thread: rec.thread, file: "target.md", content: `target changed by a worker for ${rec.thread}\n` });
          await fleet.request(rec.touchedBy, { kind: "touch", thread: rec.thread, file: oobFile(rec.thread), content: "made elsewhere\n" });
        }
        if (turn === 4) {
          await fleet.request(pick(rec.route[4]), { kind: "forget", thread: rec.thread, toolCallIds: [toolCallId(rec.thread, 0, 0, 0), toolCallId(rec.thread, 0, 0, 1)] });
        }
        await options.beforeTurn?.(rec, turn);
        const report = await fleet.request<TurnReport>(rec.route[turn]!, { kind: "turn", thread: rec.thread, turn });
        rec.turns.push(report);
        turnLatencies.push(report.marks.at(-1)!);
        for (let k = 1; k < report.marks.length; k++) stepLatencies.push(report.marks[k]! - report.marks[k - 1]!);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, records.length) }, lane));
  return { threads: records, wallMs: performance.now() - started, turnCount: records.length * turns, turnLatencies, stepLatencies };
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
