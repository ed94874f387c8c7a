/**
 * A whole agent step (model call + one tool call) through a real `createAgent`, with the
 * FileManager against a no-op middleware that has the same three hooks: the difference is what
 * the FileManager costs per step. Used by middleware.bench.ts.
 */
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent, createMiddleware, type AgentMiddleware } from "langchain";
import { createFileManagerMiddleware } from "../middleware/fileManager.js";
import { createBasicTools } from "../tools/basic.js";
import { median } from "./fixtures.js";

const noopMiddleware = () =>
  createMiddleware({
    name: "NoOpThreeHooks",
    beforeAgent: () => undefined,
    beforeModel: () => undefined,
    wrapToolCall: (request, handler) => handler(request),
  });

/**
 * CPU time (ms, user + system of this process) of one fresh session: on a shared machine wall
 * time mostly measures the other processes.
 */
async function session(middleware: AgentMiddleware, tools: ReturnType<typeof createBasicTools>, thread: string, steps: number): Promise<number> {
  const model = fakeModel();
  for (let i = 0; i < steps; i++) model.respond(new AIMessage({ content: "", tool_calls: [{ name: "get_current_time", args: {}, id: `c${i}` }] }));
  model.respond(new AIMessage("done"));
  // A fresh checkpointer per session: every session starts from the same empty history.
  const agent = createAgent({ model, tools, middleware: [middleware], checkpointer: new MemorySaver() });
  const c0 = process.cpuUsage();
  await agent.invoke({ messages: [new HumanMessage("tick")] }, { configurable: { thread_id: thread }, recursionLimit: 4 * steps + 10 });
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

/**
 * Median per-step ms with the FileManager and with the no-op middleware. Each round runs a
 * short and a long session (alternating the set-ups) and divides the difference by the extra
 * steps, so per-run costs (beforeAgent, the first tree check of a run) cancel and what is left
 * is the steady step. `thread` names the workspace directory under `rootDir`.
 */
export async function stepOverhead(rootDir: string, thread: string, opts: { rounds: number; short: number; long: number }) {
  const fm = createFileManagerMiddleware({ rootDir, onError: (e) => process.stderr.write(`step bench: ${e.message}\n`) });
  const noop = noopMiddleware();
  const tools = createBasicTools({ rootDir });
  const perStep = async (mw: AgentMiddleware) => {
    const short = await session(mw, tools, thread, opts.short);
    const long = await session(mw, tools, thread, opts.long);
    return (long - short) / (opts.long - opts.short);
  };
  const ours: number[] = [];
  const floor: number[] = [];
  try {
    await fm.hooks.trackerOf(thread)?.start();
    await perStep(fm);
    await perStep(noop);
    for (let r = 0; r < opts.rounds; r++) {
      ours.push(await perStep(fm));
      floor.push(await perStep(noop));
    }
  } finally {
    await fm.close();
  }
  const diffs = ours.map((o, i) => o - floor[i]!).sort((a, b) => a - b);
  return { ours: median([...ours]), floor: median([...floor]), above: median([...diffs]), min: diffs[0]!, max: diffs.at(-1)!, rounds: opts.rounds };
}
