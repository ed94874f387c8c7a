/**
 * Time travel per turn: wall time of `agent.invoke` for a real `createAgent` (scripted
 * `fakeModel`, `MemorySaver`) on a copy of the 100,000-file workspace (quick: 10,000), three
 * set-ups in the same run: (A) the workbench's tools with no middleware (the anchor), (B) the
 * default workbench middleware (time travel on), (C) the same with `fileManager: { timeTravel:
 * false }`. Each set-up gets its own copy of the workspace (`cp -r` into `<root>/<threadId>`) and
 * its own thread, and runs the same script: a first turn (read_file, then write_file, then an
 * answer: three model calls in one turn), a turn with no tool call, a `run_command` turn
 * (`touch x.txt`), a fork from the end of the first turn (x.txt differs), and a restart.
 *
 * Processes: the session (turns 1–4) runs in a fresh child process of this file, which samples
 * its RSS every 50 ms; it then closes the workbench and writes the MemorySaver's stored
 * checkpoints to a file. The restart is another fresh process: it loads those checkpoints into a
 * new MemorySaver, builds a new workbench on the same root and runs one no-tool turn on the same
 * thread. Each process first runs the same script once, unmeasured, on a 10-file workspace
 * elsewhere (module loading and JIT warm-up stay out of the figures; what a workspace of this
 * size costs stays in).
 */
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver, type StateSnapshot } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { execFile } from "node:child_process";
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { SNAPSHOT_DIR_NAME } from "../src/snapshots/index.js";
import { createWorkbench, type Workbench } from "../src/workbench.js";
import { benchWorkspace, exists, fmt, median } from "./fixtures.js";

const execFile$ = promisify(execFile);

type Setup = "anchor" | "default" | "off";
const SETUPS: readonly Setup[] = ["anchor", "default", "off"];
const LABEL: Record<Setup, string> = { anchor: "no middleware", default: "default (time travel on)", off: "timeTravel: false" };

/** The file the first turn reads (present in every generated workspace). */
const READ_PATH = "pkg00/mod00/file000.txt";
/** Stop starting repetitions once the section has run this long (full mode). */
const BUDGET_MS = 17 * 60_000;

/** The agent surface used here (the middleware list is built at run time). */
interface BenchAgent {
  invoke(input: unknown, config?: RunnableConfig): Promise<{ messages: BaseMessage[] }>;
  getStateHistory(config: RunnableConfig): AsyncIterableIterator<StateSnapshot>;
}

const call = (name: string, args: Record<string, unknown>, id: string) => ({ name, args, id, type: "tool_call" as const });
const toolTurn = (...calls: ReturnType<typeof call>[]) => new AIMessage({ content: "", tool_calls: calls });

function workbenchFor(setup: Setup, root: string, errors: string[]): Workbench {
  return createWorkbench({
    rootDir: root,
    enableShell: true,
    basicTools: { shell: { sandbox: "off" } },
    webTools: false,
    fileManager: {
      onError: (e: unknown) => {
        const msg = e instanceof Error ? e.message : String(e);
        errors.push(msg);
        process.stderr.write(`timeTravel bench (${setup}): ${msg}\n`);
      },
      ...(setup === "off" ? { timeTravel: false as const } : {}),
    },
  });
}

function agentOf(setup: Setup, wb: Workbench, saver: MemorySaver, replies: AIMessage[]): BenchAgent {
  let model = fakeModel();
  for (const r of replies) model = model.respond(r);
  return createAgent({ model, tools: wb.tools, middleware: setup === "anchor" ? [] : wb.middleware, checkpointer: saver }) as unknown as BenchAgent;
}

/** Wall ms of one `invoke`; throws when a tool reported an error. */
async function timedTurn(agent: BenchAgent, input: unknown, config: RunnableConfig): Promise<number> {
  const t0 = performance.now();
  const out = await agent.invoke(input, config);
  const ms = performance.now() - t0;
  for (const m of out.messages) {
    if (m.getType() === "tool" && (m as { status?: string }).status === "error") throw new Error(`tool failed: ${String(m.content).slice(0, 300)}`);
  }
  return ms;
}

const toolCount = (values: { messages?: { getType(): string }[] }) => (values.messages ?? []).filter((m) => m.getType() === "tool").length;

interface ScriptTimes {
  firstTurn: number;
  afterWrite: number;
  runCommand: number;
  fork: number;
  /** x.txt (made by turn 3) is gone after the fork: the files were restored. */
  forkRestored: boolean;
  /** Default set-up: the first snapshot names x.txt as changed while it was taken (the command ran before it read the root). */
  forkNamed?: boolean;
  /** Turn 5: another `run_command` turn, the first snapshot long in. */
  laterCommand: number;
  /** Unmeasured wait before the fork for the first snapshot (default set-up; ~0 for the others). */
  forkWaitMs: number;
  /** Default set-up: ms from the start of turn 1 until the first snapshot (the baseline) was committed. */
  baselineMs?: number;
}

/** Turns 1–4 of the script on `threadId` (its workspace is `<root>/<threadId>`). */
async function script(setup: Setup, wb: Workbench, saver: MemorySaver, threadId: string): Promise<ScriptTimes> {
  const config = { configurable: { thread_id: threadId } };
  const dir = path.join(wb.rootDir, threadId);
  const start = performance.now();
  let baseline: Promise<number | undefined> = Promise.resolve(undefined);
  const firstTurn = await timedTurn(
    agentOf(setup, wb, saver, [
      toolTurn(call("read_file", { path: READ_PATH }, "c1")),
      toolTurn(call("write_file", { path: "notes/plan.md", content: "# Plan\n\n- read the module\n- write this note\n" }, "c2")),
      new AIMessage("Read the file and wrote notes/plan.md."),
    ]),
    { messages: [new HumanMessage("Read pkg00/mod00/file000.txt, then write a plan to notes/plan.md.")] },
    config,
  );
  // The app's snapshot list waits for the background baseline: when it answers, the baseline is in.
  if (setup === "default") baseline = wb.snapshots(threadId).then(() => performance.now() - start);
  const afterWrite = await timedTurn(agentOf(setup, wb, saver, [new AIMessage("The plan has two steps.")]), { messages: [new HumanMessage("How many steps?")] }, config);
  const runCommand = await timedTurn(
    agentOf(setup, wb, saver, [toolTurn(call("run_command", { command: "touch x.txt" }, "c3")), new AIMessage("Created x.txt.")]),
    { messages: [new HumanMessage("Create x.txt.")] },
    config,
  );
  // A fork needs the whole first snapshot (it restores from it): as an app would (its user takes
  // longer than this to pick a checkpoint), the script lets the baseline finish first, unmeasured.
  const waitFrom = performance.now();
  await baseline;
  const forkWaitMs = performance.now() - waitFrom;
  const history: StateSnapshot[] = [];
  for await (const s of agentOf(setup, wb, saver, []).getStateHistory(config)) history.push(s);
  // The end of turn 1: both tool results in, nothing left to run (x.txt did not exist yet).
  const endOfTurn1 = history.find((s) => toolCount(s.values as never) === 2 && (s.next ?? []).length === 0);
  if (!endOfTurn1) throw new Error("timeTravel bench: found no checkpoint at the end of turn 1");
  const fork = await timedTurn(agentOf(setup, wb, saver, [new AIMessage("Forked from turn 1.")]), { messages: [new HumanMessage("Start over from the plan.")] }, endOfTurn1.config);
  const forkRestored = !(await exists(path.join(dir, "x.txt")));
  const forkNamed = setup === "default" ? (await wb.snapshots(threadId)).some((x) => x.reason === "baseline" && (x.changedWhileTaken ?? []).includes("x.txt")) : undefined;
  const laterCommand = await timedTurn(
    agentOf(setup, wb, saver, [toolTurn(call("run_command", { command: "touch y.txt" }, "c5")), new AIMessage("Created y.txt.")]),
    { messages: [new HumanMessage("Create y.txt.")] },
    config,
  );
  const baselineMs = await baseline;
  return { firstTurn, afterWrite, runCommand, fork, forkRestored, ...(forkNamed !== undefined ? { forkNamed } : {}), laterCommand, forkWaitMs, ...(baselineMs !== undefined ? { baselineMs } : {}) };
}

/** A 10-file workspace `<root>/<threadId>` for the unmeasured warm-up. */
async function warmWorkspace(root: string, threadId: string): Promise<void> {
  const dir = path.join(root, threadId, "pkg00", "mod00");
  await mkdir(dir, { recursive: true });
  for (let i = 0; i < 10; i++) await writeFile(path.join(dir, `file${String(i).padStart(3, "0")}.txt`), `file ${i}\n`);
}

/** The warm-up: the whole script once on a tiny workspace with the same set-up, then a restart-style turn. */
async function warmUp(setup: Setup, warmRoot: string): Promise<void> {
  const threadId = "warm";
  await warmWorkspace(warmRoot, threadId);
  const errors: string[] = [];
  const saver = new MemorySaver();
  const wb = workbenchFor(setup, warmRoot, errors);
  try {
    await script(setup, wb, saver, threadId);
  } finally {
    await wb.close();
  }
  const wb2 = workbenchFor(setup, warmRoot, errors);
  try {
    await timedTurn(agentOf(setup, wb2, saver, [new AIMessage("Back.")]), { messages: [new HumanMessage("Still there?")] }, { configurable: { thread_id: threadId } });
  } finally {
    await wb2.close();
  }
  await rm(warmRoot, { recursive: true, force: true });
}

/** Peak RSS of this process, sampled every 50 ms (plus on demand). */
function rssSampler() {
  const start = process.memoryUsage().rss;
  let peak = start;
  const sample = () => {
    const rss = process.memoryUsage().rss;
    if (rss > peak) peak = rss;
  };
  const timer = setInterval(sample, 50);
  timer.unref();
  return {
    start,
    stop: () => {
      sample();
      clearInterval(timer);
      // The kernel's high-water mark, as a check on the sampling (KiB on Linux).
      return { peak, maxRss: process.resourceUsage().maxRSS * 1024 };
    },
  };
}

// MemorySaver keeps bytes in plain nested objects (`storage`, `writes`): JSON with base64 bytes.
const toJson = (value: unknown) => JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? { __b64: Buffer.from(v).toString("base64") } : v));
const fromJson = (text: string): unknown =>
  JSON.parse(text, (_k, v: unknown) =>
    v !== null && typeof v === "object" && typeof (v as { __b64?: unknown }).__b64 === "string" ? new Uint8Array(Buffer.from((v as { __b64: string }).__b64, "base64")) : v,
  );

interface ChildArgs {
  setup: Setup;
  root: string;
  threadId: string;
  saverFile: string;
  warmRoot: string;
}

interface SessionResult extends ScriptTimes {
  closeMs: number;
  rssStart: number;
  rssPeak: number;
  maxRss: number;
  errors: string[];
}

interface RestartResult {
  buildMs: number;
  turn: number;
  /** The next no-tool turn, 2 s after the restart's (a user's pause): no full look again. */
  nextTurn: number;
  rssStart: number;
  rssPeak: number;
  maxRss: number;
  errors: string[];
}

/** The session child: warm-up, turns 1–4, close, checkpoints to `saverFile`. */
async function sessionChild(args: ChildArgs): Promise<SessionResult> {
  const rss = rssSampler();
  await warmUp(args.setup, args.warmRoot);
  const errors: string[] = [];
  const saver = new MemorySaver();
  const wb = workbenchFor(args.setup, args.root, errors);
  let times: ScriptTimes;
  let closeMs: number;
  try {
    times = await script(args.setup, wb, saver, args.threadId);
  } finally {
    const t0 = performance.now();
    await wb.close();
    closeMs = performance.now() - t0;
  }
  const { peak, maxRss } = rss.stop();
  await writeFile(args.saverFile, toJson({ storage: saver.storage, writes: saver.writes }));
  return { ...times, closeMs, rssStart: rss.start, rssPeak: peak, maxRss, errors };
}

/** The pause before the turn after the restart's (a user reading the answer; the background check for a mark runs in it). */
const NEXT_TURN_PAUSE_MS = 2_000;

/** The restart child: warm-up, then a new workbench on the same root and one no-tool turn with the stored checkpoints. */
async function restartChild(args: ChildArgs): Promise<RestartResult> {
  const rss = rssSampler();
  await warmUp(args.setup, args.warmRoot);
  const saver = new MemorySaver();
  const stored = fromJson(await readFile(args.saverFile, "utf8")) as { storage: MemorySaver["storage"]; writes: MemorySaver["writes"] };
  saver.storage = stored.storage;
  saver.writes = stored.writes;
  const errors: string[] = [];
  const t0 = performance.now();
  const wb = workbenchFor(args.setup, args.root, errors);
  const agent = agentOf(args.setup, wb, saver, [new AIMessage("Still here.")]);
  const buildMs = performance.now() - t0;
  let turn: number;
  let nextTurn: number;
  try {
    turn = await timedTurn(agent, { messages: [new HumanMessage("Are you still there?")] }, { configurable: { thread_id: args.threadId } });
    await new Promise((r) => setTimeout(r, NEXT_TURN_PAUSE_MS));
    const next = agentOf(args.setup, wb, saver, [new AIMessage("Yes, still here.")]);
    nextTurn = await timedTurn(next, { messages: [new HumanMessage("Good.")] }, { configurable: { thread_id: args.threadId } });
  } finally {
    await wb.close();
  }
  const { peak, maxRss } = rss.stop();
  return { buildMs, turn, nextTurn, rssStart: rss.start, rssPeak: peak, maxRss, errors };
}

const SESSION_FLAG = "--time-travel-session=";
const RESTART_FLAG = "--time-travel-restart=";
const RESULT_MARK = "TT_RESULT ";

/** Runs this file in a fresh Node process with `flag`; its result comes back on a marked stdout line. */
function inChild<T>(flag: string, args: ChildArgs): Promise<T> {
  const argv = [...process.execArgv, fileURLToPath(import.meta.url), flag + JSON.stringify(args)];
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, argv, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => {
      if (error) return reject(error);
      const line = stdout
        .split("\n")
        .reverse()
        .find((l) => l.startsWith(RESULT_MARK));
      if (!line) return reject(new Error(`timeTravel bench child (${args.setup}) printed no result`));
      resolve(JSON.parse(line.slice(RESULT_MARK.length)) as T);
    });
    child.stderr?.pipe(process.stderr);
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const sessionArg = process.argv.find((a) => a.startsWith(SESSION_FLAG));
  const restartArg = process.argv.find((a) => a.startsWith(RESTART_FLAG));
  if (sessionArg || restartArg) {
    const result = sessionArg
      ? await sessionChild(JSON.parse(sessionArg.slice(SESSION_FLAG.length)) as ChildArgs)
      : await restartChild(JSON.parse(restartArg!.slice(RESTART_FLAG.length)) as ChildArgs);
    // Watcher threads may keep the loop alive: the figures are complete, so exit.
    process.stdout.write(`\n${RESULT_MARK}${JSON.stringify(result)}\n`, () => process.exit(0));
  }
}

/** Bytes of the files under `dir` (apparent size and allocated blocks) and how many there are; undefined when it does not exist. */
async function storeSize(dir: string): Promise<{ bytes: number; allocated: number; files: number } | undefined> {
  if (!(await exists(dir))) return undefined;
  const total = { bytes: 0, allocated: 0, files: 0 };
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const s = await lstat(p);
      total.allocated += s.blocks * 512;
      if (e.isDirectory()) await walk(p);
      else {
        total.bytes += s.size;
        total.files++;
      }
    }
  };
  await walk(dir);
  return total;
}

interface Rep {
  session: SessionResult;
  restart: RestartResult;
  store: Awaited<ReturnType<typeof storeSize>>;
  copyMs: number;
}

const mib = (bytes: number) => `${fmt(bytes / 1024 / 1024)} MiB`;
const msOf = (v: number) => (v >= 1000 ? `${fmt(v / 1000)} s` : `${fmt(v)} ms`);

/** `median (min–max)` of `values`, formatted; just the value when there is one. */
function spread(values: number[], unit: (v: number) => string): string {
  if (values.length === 0) return "—";
  const sorted = [...values].sort((a, b) => a - b);
  const m = median([...sorted]);
  return sorted.length === 1 ? unit(m) : `${unit(m)} (${unit(sorted[0]!)}–${unit(sorted.at(-1)!)})`;
}

/**
 * Default − anchor against a target: ✅ when even the worst pairing (slowest default − fastest
 * anchor) is within it, ❌ when even the best pairing exceeds it, otherwise not resolved.
 */
function verdict(ours: number[], anchor: number[], target: number, unit: (v: number) => string): { diff: string; mark: string } {
  const diff = median([...ours]) - median([...anchor]);
  const worst = Math.max(...ours) - Math.min(...anchor);
  const best = Math.min(...ours) - Math.max(...anchor);
  const mark = worst <= target ? `✅ ≤ +${unit(target)}` : best > target ? `❌ > +${unit(target)}` : `not resolved (+${unit(target)} within the spread)`;
  return { diff: `${diff >= 0 ? "+" : "−"}${unit(Math.abs(diff))}`, mark };
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const files = quick ? 10_000 : 100_000;
  const reps = quick ? 1 : 3;
  const cpu = os.cpus();
  const machine = `${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, ${fmt(os.totalmem() / 1024 ** 3)} GiB RAM, Node ${process.version}`;
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" / ");
  const fixture = await benchWorkspace(files);
  const tmp = await mkdtemp(path.join(os.tmpdir(), "wb-bench-tt-"));
  const results: Record<Setup, Rep[]> = { anchor: [], default: [], off: [] };
  const t0 = performance.now();
  let stopped = "";
  try {
    for (let r = 0; r < reps; r++) {
      const elapsed = performance.now() - t0;
      if (!quick && r > 0 && elapsed + elapsed / r > BUDGET_MS) {
        stopped = `Stopped after ${r} repetition${r === 1 ? "" : "s"} of ${reps}: another would have taken the section past ${BUDGET_MS / 60_000} minutes (${fmt(elapsed / 60_000)} min so far).`;
        break;
      }
      // Each repetition starts with another set-up, so none always runs first.
      const order = SETUPS.map((_, i) => SETUPS[(i + r) % SETUPS.length]!);
      for (const setup of order) {
        const threadId = `tt-${setup}-r${r}`;
        const root = path.join(tmp, `${setup}-r${r}`);
        await mkdir(root, { recursive: true });
        const c0 = performance.now();
        await execFile$("cp", ["-r", fixture, path.join(root, threadId)]);
        const copyMs = performance.now() - c0;
        const args: ChildArgs = { setup, root, threadId, saverFile: path.join(tmp, `${setup}-r${r}.saver.json`), warmRoot: path.join(tmp, `warm-${setup}-r${r}`) };
        process.stderr.write(`timeTravel bench: ${files} files, rep ${r + 1}/${reps}, ${setup} …\n`);
        const session = await inChild<SessionResult>(SESSION_FLAG, args);
        const restart = await inChild<RestartResult>(RESTART_FLAG, args);
        const store = await storeSize(path.join(root, SNAPSHOT_DIR_NAME));
        results[setup].push({ session, restart, store, copyMs });
        process.stderr.write(
          `timeTravel bench: ${setup}: first ${msOf(session.firstTurn)}, after write ${msOf(session.afterWrite)}, run_command ${msOf(session.runCommand)}, ` +
            `fork ${msOf(session.fork)}, later run_command ${msOf(session.laterCommand)}, restart ${msOf(restart.turn)}, next ${msOf(restart.nextTurn)}, peak RSS ${mib(session.rssPeak)}` +
            `${session.baselineMs !== undefined ? `, baseline in after ${msOf(session.baselineMs)}` : ""}\n`,
        );
        await rm(root, { recursive: true, force: true });
        await rm(args.saverFile, { force: true });
      }
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  const totalMin = (performance.now() - t0) / 60_000;

  const col = (setup: Setup, pick: (rep: Rep) => number) => results[setup].map(pick);
  type Row = { label: string; pick: (rep: Rep) => number; unit: (v: number) => string; target?: number };
  const rows: Row[] = [
    { label: "first turn (read_file → write_file → answer)", pick: (x) => x.session.firstTurn, unit: msOf, target: 1000 },
    { label: "next turn after a write (no tool call)", pick: (x) => x.session.afterWrite, unit: msOf, target: 50 },
    { label: "run_command turn (`touch x.txt`; the first snapshot is still being taken)", pick: (x) => x.session.runCommand, unit: msOf, target: 300 },
    { label: "fork to the end of turn 1 (one file differs)", pick: (x) => x.session.fork, unit: msOf, target: 300 },
    { label: "run_command turn after the fork (`touch y.txt`; the first snapshot is in)", pick: (x) => x.session.laterCommand, unit: msOf, target: 300 },
    { label: "restart (fresh process, one no-tool turn)", pick: (x) => x.restart.turn, unit: msOf, target: 500 },
    { label: "next turn after the restart (2 s later, no tool call)", pick: (x) => x.restart.nextTurn, unit: msOf, target: 50 },
    { label: "peak RSS (session process)", pick: (x) => x.session.rssPeak, unit: mib, target: 150 * 1024 * 1024 },
    { label: "peak RSS (restart process)", pick: (x) => x.restart.rssPeak, unit: mib },
  ];
  const table = [
    `| ${files.toLocaleString("en-US")} files | ${SETUPS.map((s) => LABEL[s]).join(" | ")} | default − anchor | target (default − anchor) |`,
    "|---|---:|---:|---:|---:|---|",
    ...rows.map((row) => {
      const cells = SETUPS.map((s) => spread(col(s, row.pick), row.unit));
      const v = results.default.length && results.anchor.length ? verdict(col("default", row.pick), col("anchor", row.pick), row.target ?? Infinity, row.unit) : undefined;
      return `| ${row.label} | ${cells.join(" | ")} | ${v?.diff ?? "—"} | ${row.target === undefined ? "" : (v?.mark ?? "—")} |`;
    }),
    `| store on disk (\`${SNAPSHOT_DIR_NAME}\`) | ${SETUPS.map((s) => {
      const stores = results[s].map((x) => x.store);
      if (stores.every((x) => x === undefined)) return "none";
      const present = stores.filter((x): x is NonNullable<typeof x> => x !== undefined);
      return `${spread(present.map((x) => x.bytes), mib)}; ${spread(present.map((x) => x.allocated), mib)} allocated; ${present[0]!.files.toLocaleString("en-US")} files`;
    }).join(" | ")} | | |`,
  ];

  const repsOf = (s: Setup) => results[s].length;
  const forkNote = SETUPS.map((s) => `${LABEL[s]}: ${results[s].map((x) => (x.session.forkRestored ? "restored" : x.session.forkNamed ? "kept, named in the first snapshot's changedWhileTaken" : "kept")).join(", ") || "—"}`).join("; ");
  const errorLines = SETUPS.flatMap((s) => results[s].flatMap((x) => [...x.session.errors, ...x.restart.errors].map((e) => `${LABEL[s]}: ${e}`)));
  const side = (pick: (rep: Rep) => number, unit: (v: number) => string) => SETUPS.map((s) => `${LABEL[s]} ${spread(col(s, pick), unit)}`).join(", ");
  return [
    "## timeTravel",
    "",
    `Per turn (wall time of \`agent.invoke\`): a real \`createAgent\` with a scripted \`fakeModel\` and a \`MemorySaver\`, on a copy`,
    `of the ${files.toLocaleString("en-US")}-file workspace (1,020 directories), three set-ups in the same run: the workbench's tools with`,
    "`middleware: []` (the anchor), the default `createWorkbench({ rootDir, enableShell: true, basicTools: { shell: { sandbox: \"off\" } }, webTools: false })`",
    "middleware (time travel on), and the same with `fileManager: { timeTravel: false }`. Each set-up and repetition gets its own",
    "fresh copy of the workspace (`cp -r` into `<root>/<threadId>`) and its own thread, and runs the same script:",
    "1. **first turn**: three model calls in one turn — `read_file` of one file, then `write_file` of a new file, then an answer;",
    "2. **next turn after a write**: the model answers with no tool call;",
    "3. **run_command turn**: `touch x.txt`, then an answer (at 100k files, while the first snapshot is still being taken);",
    "4. **fork**: once the first snapshot is in (the script waits for it, unmeasured: a fork restores from it), a new user turn",
    "   from the checkpoint at the end of turn 1 (`getStateHistory`, then `invoke` with its `config`); x.txt differs;",
    "   then **another run_command turn** (`touch y.txt`), the first snapshot long committed;",
    "5. **restart**: the session process closes the workbench (`await wb.close()`) and exits; a fresh process loads the stored",
    "   checkpoints into a new `MemorySaver`, builds a new workbench on the same root and runs one no-tool turn on the same thread;",
    "   2 s later (a user's pause) it runs one more no-tool turn.",
    "",
    "The session (1–4) and the restart each run in their own fresh process; each process first runs the same script once,",
    "unmeasured, on a 10-file workspace elsewhere, so module loading and JIT warm-up stay out of the figures. Peak RSS:",
    "`process.memoryUsage().rss` sampled every 50 ms, max, over the whole process (warm-up included).",
    `Figures: median (min–max) over ${repsOf("anchor")}/${repsOf("default")}/${repsOf("off")} repetitions (anchor/default/timeTravel: false);`,
    "repetitions rotate the order of the set-ups. Targets are for default − anchor: ✅ only when the slowest default run minus",
    "the fastest anchor run is within the target, ❌ when even the fastest minus the slowest exceeds it.",
    ...(stopped ? ["", stopped] : []),
    "",
    `- Machine: ${machine}`,
    `- Load average at start (1/5/15 min): ${load}`,
    `- Section wall time: ${fmt(totalMin)} min (workspace copies included: ${side((x) => x.copyMs, msOf)})`,
    "",
    ...table,
    "",
    `- After the fork, x.txt was ${forkNote}. (With time travel on, \`touch x.txt\` ran before the first snapshot had listed the root — it waits up to 3 s for the watcher, ~0.4 s at 100k files, before it reads anything — so that snapshot holds x.txt and names it; a fork past a command in a thread's first seconds is exact only for what the snapshot had read before the command changed it.)`,
    `- The first snapshot (baseline, in the background) was committed ${spread(results.default.flatMap((x) => (x.session.baselineMs !== undefined ? [x.session.baselineMs] : [])), msOf)} after turn 1 began; turn 3's \`run_command\` does not wait for it (the snapshot names, by ctime, what the command changed before it was read); the script then waited ${spread(results.default.map((x) => x.session.forkWaitMs), msOf)} for it before the fork.`,
    `- Restart: building the workbench and agent took ${side((x) => x.restart.buildMs, msOf)}; \`wb.close()\` in the session took ${side((x) => x.session.closeMs, msOf)}.`,
    `- RSS at process start (after imports): ${side((x) => x.session.rssStart, mib)}; kernel high-water mark (\`maxRSS\`) of the session process: ${side((x) => x.session.maxRss, mib)}.`,
    ...(errorLines.length ? [`- FileManager errors reported (${errorLines.length}): ${[...new Set(errorLines)].slice(0, 5).join("; ")}`] : ["- No FileManager errors were reported."]),
  ].join("\n");
}
