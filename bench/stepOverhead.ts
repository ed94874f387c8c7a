/**
 * A whole agent step (model call + one tool call) through a real `createAgent`, with the
 * FileManager against a no-op middleware that has the same three hooks: the difference is what
 * the FileManager costs per step. A third set-up, the no-op plus the FileManager's own tree
 * message put in the history once, splits that difference into what the framework spends on the
 * message's bytes and what the FileManager itself adds (hooks, state).
 *
 * The rounds run in several fresh processes, one after another, and the interval comes from the
 * spread of the per-process means: two processes running the same code differed by more than
 * either one's paired interval (JIT and heap layout are per process, and `process.cpuUsage`
 * charges native watcher and GC threads to whichever session runs). Also, in the parent: the CPU
 * of the FileManager's own hook code per steady step (called directly), what one more state
 * channel costs per step, and what one checkpoint serialisation costs with the tree message
 * drawn in box-drawing characters vs ASCII. Used by middleware.bench.ts.
 */
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver, StateSchema } from "@langchain/langgraph";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { createAgent, createMiddleware, type AgentMiddleware } from "langchain";
import { execFile } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { z } from "zod";
import { createFileManagerMiddleware, FILE_MANAGER_CHANNEL } from "../middleware/fileManager.js";
import { renderDirectoryTree, TREE_BRANCH, TREE_LAST, TREE_PIPE } from "../src/tree.js";
import { createBasicTools } from "../tools/basicTools.js";
import { median } from "./fixtures.js";

// A full collection before each session: every session starts from the same heap, which takes
// most of the round-to-round spread out of the CPU figures.
setFlagsFromString("--expose_gc");
const collectGarbage = runInNewContext("gc") as () => void;

const noopMiddleware = () =>
  createMiddleware({
    name: "NoOpThreeHooks",
    beforeAgent: () => undefined,
    beforeModel: () => undefined,
    wrapToolCall: (request, handler) => handler(request),
  });

/**
 * The no-op set-up with `message` in the history (added once, before the first model call, as
 * the FileManager adds its tree): the floor for any middleware that shows the model this text.
 */
const messageFloorMiddleware = (message: BaseMessage) =>
  createMiddleware({
    name: "NoOpWithTreeMessage",
    beforeAgent: (state) =>
      state.messages.some((m) => m.id === message.id)
        ? undefined
        : { messages: [new HumanMessage({ content: message.content, id: message.id, name: message.name, additional_kwargs: message.additional_kwargs })] },
    beforeModel: () => undefined,
    wrapToolCall: (request, handler) => handler(request),
  });

/** The tree message a FileManager session leaves in the history (the first full tree). */
async function treeMessageOf(middleware: AgentMiddleware, tools: ReturnType<typeof createBasicTools>, thread: string): Promise<BaseMessage> {
  const model = fakeModel();
  model.respond(new AIMessage("done"));
  const agent = createAgent({ model, tools, middleware: [middleware], checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: thread } };
  await agent.invoke({ messages: [new HumanMessage("tick")] }, config);
  const { values } = await agent.getState(config);
  const { messages, [FILE_MANAGER_CHANNEL]: own } = values as { messages: BaseMessage[]; _fileManager?: { _treeMessageId?: string } };
  const id = own?._treeMessageId;
  const tree = messages.find((m) => m.id !== undefined && m.id === id);
  if (!tree) throw new Error("step bench: the FileManager session left no tree message");
  return tree;
}

/** Every order of `items` (for 3 set-ups, 6): rounds cycle through them, so no set-up always runs first or last. */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

/** A serializer that counts what the checkpointer serialises (bytes and calls). */
class CountingSerde extends JsonPlusSerializer {
  bytes = 0;
  calls = 0;
  override async dumpsTyped(obj: unknown): Promise<[string, Uint8Array]> {
    const out = (await super.dumpsTyped(obj)) as [string, Uint8Array];
    this.bytes += out[1].length;
    this.calls++;
    return out;
  }
}

/** CPU time (ms, user + system of this process) of one fresh session. */
async function session(middleware: AgentMiddleware, tools: ReturnType<typeof createBasicTools>, thread: string, steps: number, serde?: CountingSerde): Promise<number> {
  const model = fakeModel();
  for (let i = 0; i < steps; i++) model.respond(new AIMessage({ content: "", tool_calls: [{ name: "get_current_time", args: {}, id: `c${i}` }] }));
  model.respond(new AIMessage("done"));
  // A fresh checkpointer per session: every session starts from the same empty history.
  const agent = createAgent({ model, tools, middleware: [middleware], checkpointer: new MemorySaver(serde) });
  collectGarbage();
  const c0 = process.cpuUsage();
  await agent.invoke({ messages: [new HumanMessage("tick")] }, { configurable: { thread_id: thread }, recursionLimit: 4 * steps + 10 });
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

/** Bytes and serialisations per steady step (long − short session, exact: no timing). */
async function serialisedPerStep(mw: AgentMiddleware, tools: ReturnType<typeof createBasicTools>, thread: string, opts: { short: number; long: number }): Promise<{ bytes: number; calls: number }> {
  const count = async (steps: number) => {
    const serde = new CountingSerde();
    await session(mw, tools, thread, steps, serde);
    return serde;
  };
  const short = await count(opts.short);
  const long = await count(opts.long);
  const extra = opts.long - opts.short;
  return { bytes: (long.bytes - short.bytes) / extra, calls: (long.calls - short.calls) / extra };
}

/**
 * Per-step CPU ms of each set-up, one figure per round: a long session minus a short one,
 * divided by the extra steps. One warm-up round first; then rounds cycle through every order of
 * the set-ups, so whatever the first or last session of a round pays (a collection another left
 * due, a cold cache) falls on all of them alike.
 */
async function perStepRounds(
  setups: Record<string, AgentMiddleware>,
  tools: ReturnType<typeof createBasicTools>,
  thread: string,
  opts: { rounds: number; short: number; long: number },
): Promise<Record<string, number[]>> {
  const perStep = async (mw: AgentMiddleware) => {
    const short = await session(mw, tools, thread, opts.short);
    const long = await session(mw, tools, thread, opts.long);
    return (long - short) / (opts.long - opts.short);
  };
  for (const mw of Object.values(setups)) await perStep(mw);
  const per: Record<string, number[]> = {};
  const orders = permutations(Object.entries(setups));
  for (let r = 0; r < opts.rounds; r++) {
    for (const [name, mw] of orders[r % orders.length]!) (per[name] ??= []).push(await perStep(mw));
  }
  return per;
}

/** Mean and 95% confidence half-width of paired differences. */
function pairedMean(diffs: number[]): { mean: number; ci: number } {
  const mean = diffs.reduce((a, b) => a + b, 0) / diffs.length;
  const sd = Math.sqrt(diffs.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, diffs.length - 1));
  return { mean, ci: (1.96 * sd) / Math.sqrt(diffs.length) };
}

/** Two-sided 95% quantiles of Student's t, by degrees of freedom (few processes: a normal quantile would be too narrow). */
const T95 = [Infinity, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131];

/** Mean of per-process means ± 95% CI from their spread (Student's t). */
function acrossProcesses(means: number[]): { mean: number; ci: number; perProcess: number[] } {
  const n = means.length;
  const mean = means.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(means.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, n - 1));
  return { mean, ci: ((T95[n - 1] ?? 1.96) * sd) / Math.sqrt(n), perProcess: means };
}

/** A difference between two set-ups: mean ± CI across processes, each process's mean, the median of all paired rounds. */
export interface Difference {
  mean: number;
  ci: number;
  perProcess: number[];
  median: number;
}

export interface StepOverhead {
  processes: number;
  /** Rounds in all, and per process. */
  rounds: number;
  roundsPerProcess: number;
  /** Per-step CPU ms, medians over all rounds: FileManager, no-op, no-op with the tree message. */
  ours: number;
  floor: number;
  messageFloor: number;
  /** FileManager − no-op, per step. */
  above: Difference;
  /** No-op with the tree message − no-op: what the framework spends on the message's bytes. */
  message: Difference;
  /** FileManager − no-op with the tree message: the FileManager's own hooks and state. */
  own: Difference;
  /** Characters of the tree message. */
  treeChars: number;
  /** µs per serialisation of a checkpoint with the tree (box drawing, ASCII) and without it; bytes the tree adds. */
  serialise: { box: number; ascii: number; none: number; treeBytes: number };
  /** µs of CPU in the FileManager's hooks per steady step (beforeModel + wrapToolCall around a read-only tool). */
  hooksMicros: number;
  /** What one more state channel costs per step (µs, paired mean ± 95% CI), from a no-op with {@link EXTRA_CHANNELS} set channels. */
  perChannel: { mean: number; ci: number; channels: number; rounds: number };
  /** What the checkpointer serialises per steady step, each set-up (exact counts). */
  serialised: { fm: { bytes: number; calls: number }; noop: { bytes: number; calls: number } };
}

type SessionOpts = { rounds: number; short: number; long: number };

/** What one process measured: per-step CPU ms of each set-up, one figure per round. */
interface ProcessRounds {
  per: Record<"fm" | "noop" | "message", number[]>;
  treeChars: number;
}

/**
 * One process's rounds of the three set-ups. Each round runs a short and a long session per
 * set-up and divides the difference by the extra steps, so per-run costs (beforeAgent, the first
 * tree check of a run) cancel and what is left is the steady step.
 */
async function processRounds(rootDir: string, thread: string, opts: SessionOpts): Promise<ProcessRounds> {
  const fm = createFileManagerMiddleware({ rootDir, onError: (e) => process.stderr.write(`step bench: ${e.message}\n`) });
  const tools = createBasicTools({ rootDir });
  try {
    await fm.hooks.trackerOf(thread)?.start();
    const tree = await treeMessageOf(fm as unknown as AgentMiddleware, tools, thread);
    const setups = {
      fm: fm as unknown as AgentMiddleware,
      noop: noopMiddleware() as unknown as AgentMiddleware,
      message: messageFloorMiddleware(tree) as unknown as AgentMiddleware,
    };
    const per = (await perStepRounds(setups, tools, thread, opts)) as ProcessRounds["per"];
    return { per, treeChars: typeof tree.content === "string" ? tree.content.length : JSON.stringify(tree.content).length };
  } finally {
    await fm.close();
  }
}

const CHILD_FLAG = "--step-overhead-child=";

/** Runs {@link processRounds} in a fresh Node process (this file with {@link CHILD_FLAG}); the figures come back as JSON on stdout. */
function roundsInChild(rootDir: string, thread: string, opts: SessionOpts): Promise<ProcessRounds> {
  const args = [...process.execArgv, fileURLToPath(import.meta.url), CHILD_FLAG + JSON.stringify({ rootDir, thread, opts })];
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error) return reject(error);
      try {
        resolve(JSON.parse(stdout) as ProcessRounds);
      } catch (err) {
        reject(new Error(`step bench child printed no figures: ${(err as Error).message}`));
      }
    });
    child.stderr?.pipe(process.stderr);
  });
}

/**
 * The step overhead over `processes` fresh processes run one after another, `rounds` rounds
 * each. `thread` names the workspace directory under `rootDir`.
 */
export async function stepOverhead(rootDir: string, thread: string, opts: SessionOpts & { processes: number }): Promise<StepOverhead> {
  const { processes, ...sessionOpts } = opts;
  const results: ProcessRounds[] = [];
  for (let p = 0; p < processes; p++) results.push(await roundsInChild(rootDir, thread, sessionOpts));
  const all = (name: keyof ProcessRounds["per"]) => results.flatMap((r) => r.per[name]);
  const difference = (a: keyof ProcessRounds["per"], b: keyof ProcessRounds["per"]): Difference => {
    const diffsOf = (r: ProcessRounds) => r.per[a].map((v, i) => v - r.per[b][i]!);
    const means = results.map((r) => pairedMean(diffsOf(r)).mean);
    return { ...acrossProcesses(means), median: median(results.flatMap(diffsOf)) };
  };

  const fm = createFileManagerMiddleware({ rootDir, onError: (e) => process.stderr.write(`step bench: ${e.message}\n`) });
  const tools = createBasicTools({ rootDir });
  try {
    await fm.hooks.trackerOf(thread)?.start();
    const hooksMicros = await hookMicros(fm, tools, thread);
    const perChannel = await channelCost(tools, thread, { ...sessionOpts, rounds: Math.max(3, sessionOpts.rounds) });
    const noop = noopMiddleware() as unknown as AgentMiddleware;
    const serialised = { fm: await serialisedPerStep(fm as unknown as AgentMiddleware, tools, thread, sessionOpts), noop: await serialisedPerStep(noop, tools, thread, sessionOpts) };
    return {
      processes,
      rounds: processes * sessionOpts.rounds,
      roundsPerProcess: sessionOpts.rounds,
      ours: median(all("fm")),
      floor: median(all("noop")),
      messageFloor: median(all("message")),
      above: difference("fm", "noop"),
      message: difference("message", "noop"),
      own: difference("fm", "message"),
      treeChars: results[0]!.treeChars,
      serialise: await serialisation(`${rootDir}/${thread}`),
      hooksMicros,
      perChannel,
      serialised,
    };
  } finally {
    await fm.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const arg = process.argv.find((a) => a.startsWith(CHILD_FLAG));
  if (arg) {
    const { rootDir, thread, opts } = JSON.parse(arg.slice(CHILD_FLAG.length)) as { rootDir: string; thread: string; opts: SessionOpts };
    const figures = await processRounds(rootDir, thread, opts);
    // Watcher threads may keep the loop alive: the figures are complete, so exit.
    process.stdout.write(JSON.stringify(figures), () => process.exit(0));
  }
}

/** Extra channels in the per-channel measurement: enough that their cost stands well above the noise. */
const EXTRA_CHANNELS = 100;

/**
 * What a state channel costs the framework per step, whatever the middleware does with it: the
 * no-op against the no-op with {@link EXTRA_CHANNELS} private channels, each set once when a run
 * starts (as the FileManager's are), paired per round and divided by the channel count.
 */
async function channelCost(tools: ReturnType<typeof createBasicTools>, thread: string, opts: { rounds: number; short: number; long: number }): Promise<StepOverhead["perChannel"]> {
  const names = Array.from({ length: EXTRA_CHANNELS }, (_, i) => `_bench${i}`);
  const withChannels = createMiddleware({
    name: "NoOpWithChannels",
    stateSchema: new StateSchema(Object.fromEntries(names.map((n) => [n, z.string().optional()]))),
    beforeAgent: (state) => ((state as Record<string, unknown>)[names[0]!] === undefined ? Object.fromEntries(names.map((n) => [n, "set"])) : undefined),
    beforeModel: () => undefined,
    wrapToolCall: (request, handler) => handler(request),
  }) as unknown as AgentMiddleware;
  const per = await perStepRounds({ withChannels, noop: noopMiddleware() as unknown as AgentMiddleware }, tools, thread, opts);
  const diffs = per.withChannels!.map((v, i) => ((v - per.noop![i]!) * 1000) / EXTRA_CHANNELS);
  return { ...pairedMean(diffs), channels: EXTRA_CHANNELS, rounds: opts.rounds };
}

/** CPU µs of one steady step's hooks, called directly: beforeModel with nothing changed, wrapToolCall around a read-only tool. */
async function hookMicros(fm: ReturnType<typeof createFileManagerMiddleware>, tools: ReturnType<typeof createBasicTools>, thread: string): Promise<number> {
  const hooks = fm.hooks;
  const runtime = { configurable: { thread_id: thread } };
  const call = { name: "get_current_time", args: {}, id: "c1" };
  let state: Record<string, unknown> = { messages: [new HumanMessage({ content: "tick", id: "h1" }), new AIMessage({ content: "", id: "a1", tool_calls: [call] })] };
  state = { ...state, ...(await hooks.beforeAgent(state as never, runtime as never)) };
  const first = await hooks.beforeModel(state as never, runtime as never);
  state = { ...state, ...first, messages: [...(state.messages as unknown[]), ...(first?.messages ?? [])], _treeDirty: false };
  const tool = tools.find((t) => t.name === "get_current_time")!;
  const request = { toolCall: call, tool, state, runtime };
  const result = new ToolMessage({ content: "2026-11-30T19:00:00+00:00", tool_call_id: "c1", name: "get_current_time" });
  const handler = async () => result;
  const runs = 5_000;
  const times: number[] = [];
  for (let r = 0; r < 5; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < runs; i++) {
      if ((await hooks.beforeModel(state as never, runtime as never)) !== undefined) throw new Error("the steady beforeModel re-checked");
      await hooks.wrapToolCall(request as never, handler);
    }
    const c = process.cpuUsage(c0);
    times.push((c.user + c.system) / runs);
  }
  return median(times);
}

/**
 * One checkpoint's serialisation with the workspace tree in the history, drawn in box-drawing
 * characters vs ASCII, and without a tree message (so the tree's own cost per byte shows).
 */
async function serialisation(dir: string): Promise<StepOverhead["serialise"]> {
  const ascii = await renderDirectoryTree(dir, { rootLabel: "." });
  const box = ascii.replaceAll(TREE_BRANCH, "├── ").replaceAll(TREE_LAST, "└── ").replaceAll(TREE_PIPE, "│   ");
  const serde = new JsonPlusSerializer();
  const checkpoint = (tree: string | undefined) => {
    const messages: BaseMessage[] = [new HumanMessage({ content: "tick", id: "h" })];
    if (tree !== undefined) messages.push(new HumanMessage({ content: tree, id: "tree" }));
    for (let i = 0; i < 20; i++) {
      messages.push(new AIMessage({ content: "", id: `a${i}`, tool_calls: [{ name: "get_current_time", args: {}, id: `c${i}` }] }));
      messages.push(new ToolMessage({ content: "2026-11-30T19:00:00+00:00", tool_call_id: `c${i}`, id: `t${i}` }));
    }
    return { v: 4, id: "x", ts: "t", channel_values: { messages }, channel_versions: {}, versions_seen: {} };
  };
  const cases = { box: checkpoint(box), ascii: checkpoint(ascii), none: checkpoint(undefined) };
  const times: Record<string, number[]> = { box: [], ascii: [], none: [] };
  for (let r = 0; r < 7; r++) {
    for (const [name, cp] of Object.entries(cases)) {
      const runs = 300;
      const c0 = process.cpuUsage();
      for (let i = 0; i < runs; i++) await serde.dumpsTyped(cp);
      const c = process.cpuUsage(c0);
      times[name]!.push((c.user + c.system) / runs);
    }
  }
  const bytes = async (cp: unknown) => ((await serde.dumpsTyped(cp)) as [string, Uint8Array])[1].length;
  return { box: median(times.box!), ascii: median(times.ascii!), none: median(times.none!), treeBytes: (await bytes(cases.ascii)) - (await bytes(cases.none)) };
}
