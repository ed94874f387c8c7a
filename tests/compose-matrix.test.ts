// Compatibility matrix: every built-in middleware shipped in the installed `langchain` package ×
// both orders with wb.middleware ("wb first": [...wb.middleware, builtin]; "wb last": [builtin,
// ...wb.middleware]). One scripted run per cell (real createAgent, fakeModel, MemorySaver) checks
// the package's guarantees — tree shown on change, dedup that follows what the model received,
// loop detection, path rewriting, error ToolMessages, time travel — and that the built-in did its job.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { tool } from "@langchain/core/tools";
import { Command, MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import {
  anthropicPromptCachingMiddleware,
  ClearToolUsesEdit,
  contextEditingMiddleware,
  createAgent,
  createMiddleware,
  dynamicSystemPromptMiddleware,
  humanInTheLoopMiddleware,
  llmToolSelectorMiddleware,
  modelCallLimitMiddleware,
  modelFallbackMiddleware,
  modelRetryMiddleware,
  openAIModerationMiddleware,
  piiMiddleware,
  summarizationMiddleware,
  todoListMiddleware,
  toolCallLimitMiddleware,
  toolEmulatorMiddleware,
  toolErrorMiddleware,
  toolRetryMiddleware,
} from "langchain";
import { z } from "zod";
import { snapshotIdOf } from "../middleware/timeTravel.js";
import { createWorkbench, type Workbench } from "../src/workbench.js";
import { resultSpy, workspaceView } from "./helpers/agentHarness.js";

let root = "";
let wb: Workbench;
let moderation: Server;
let moderationUrl = "";
let moderationCalls = 0;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-matrix-"));
  wb = createWorkbench({ rootDir: root, webTools: false, basicTools: false });
  // OpenAI's moderation endpoint on loopback: nothing is flagged.
  moderation = createServer((req, res) => {
    moderationCalls++;
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: "modr-1", model: "omni-moderation-latest", results: [{ flagged: false, categories: {}, category_scores: {} }] }));
    });
  });
  await new Promise<void>((resolve) => moderation.listen(0, "127.0.0.1", resolve));
  moderationUrl = `http://127.0.0.1:${(moderation.address() as { port: number }).port}/v1`;
});
after(async () => {
  await wb.close();
  await new Promise((resolve) => moderation.close(resolve));
  await rm(root, { recursive: true, force: true });
});

const NOTE = "alpha line, mail bob@example.com\n".repeat(30);
const text = (m: BaseMessage) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content));
const call = (name: string, args: Record<string, unknown>, id: string) => new AIMessage({ content: "", tool_calls: [{ name, args, id, type: "tool_call" }] });

/** Foreign tools: one answers with the thread's system path (rewriting), one throws, one fails once. */
function foreignTools() {
  const flaky = new Map<string, number>();
  return [
    tool(async (_input, config) => `the files are in ${path.join(root, String(config.configurable?.thread_id))}/notes.txt`, {
      name: "where_am_i",
      description: "where the files are",
      schema: z.object({}),
    }),
    tool(async () => {
      throw new Error("exploded on purpose");
    }, { name: "explode", description: "always fails", schema: z.object({}) }),
    tool(async (_input, config) => {
      const thread = String(config.configurable?.thread_id);
      const n = (flaky.get(thread) ?? 0) + 1;
      flaky.set(thread, n);
      if (n === 1) throw new Error("transient failure");
      return "flaky ok";
    }, { name: "flaky", description: "fails once", schema: z.object({}) }),
  ];
}

/** Innermost model wrapper: the request each built-in left (tools, settings). */
function requestSpy(seen: { tools: string[]; modelSettings?: unknown }[]) {
  return createMiddleware({
    name: "RequestSpy",
    wrapModelCall: (request, handler) => {
      seen.push({ tools: (request.tools ?? []).map((t) => (t as { name: string }).name), modelSettings: request.modelSettings });
      return handler(request);
    },
  });
}

interface Cell {
  /** The built-in and, optionally, a model to use instead of the scripted one. */
  make: (ctx: CellContext) => unknown;
  /** Extra script steps before the final answer (and their tools). */
  extra?: AIMessage[];
  /** A built-in that edits what the model sees: dedup is checked by the oracle only. */
  edits?: boolean;
  /** Make the scripted model fail once at this step (0-based). */
  failAt?: number;
  /** The built-in's own job, checked after the run. */
  job: (r: CellRun) => void | Promise<void>;
}

interface CellContext {
  fallback: ReturnType<typeof fakeModel>;
  issued: Map<string, BaseMessage[]>;
}

interface CellRun {
  order: string;
  thread: string;
  results: ToolMessage[];
  requests: { tools: string[]; modelSettings?: unknown }[];
  issued: Map<string, BaseMessage[]>;
  values: Record<string, unknown>;
  fallback: ReturnType<typeof fakeModel>;
  agent: { invoke: (input: unknown, config: unknown) => Promise<unknown> };
  config: { configurable: { thread_id: string }; recursionLimit: number };
  interrupts: number;
}

const byId = (r: CellRun, id: string) => r.results.filter((m) => m.tool_call_id === id).at(-1);

const CELLS: Record<string, Cell> = {
  summarization: {
    make: () => {
      const summarizer = fakeModel();
      for (let i = 0; i < 8; i++) summarizer.respond(new AIMessage("Summary: the agent wrote and read notes.txt."));
      return summarizationMiddleware({ model: summarizer, trigger: { messages: 8 }, keep: { messages: 4 } });
    },
    edits: true,
    job: (r) => {
      const seen = [...r.issued.values()].some((ms) => ms.some((m) => text(m).includes("Summary: the agent wrote")));
      assert.ok(seen, "a model call got the summary");
    },
  },
  humanInTheLoop: {
    make: () => humanInTheLoopMiddleware({ interruptOn: { write_file: { allowedDecisions: ["approve", "reject"] } } }),
    job: (r) => assert.equal(r.interrupts, 1, "write_file waited for approval"),
  },
  toolCallLimit: {
    make: () => toolCallLimitMiddleware({ toolName: "where_am_i", runLimit: 1, exitBehavior: "continue" }),
    extra: [call("where_am_i", {}, "w2")],
    job: (r) => {
      // The refusal is added by the built-in's afterModel hook (the tool never runs): read it from state.
      const over = (r.values.messages as BaseMessage[]).find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "w2");
      assert.ok(over && !text(over).includes("the files are in"), `the 2nd where_am_i did not run: ${over && text(over)}`);
      assert.match(text(over), /limit/i);
    },
  },
  modelCallLimit: {
    make: () => modelCallLimitMiddleware({ threadLimit: 8, exitBehavior: "end" }),
    job: async (r) => {
      const again = (await r.agent.invoke({ messages: [new HumanMessage("more")] }, r.config)) as { messages: BaseMessage[] };
      assert.match(text(again.messages.at(-1)!), /limit/i, "the 9th model call of the thread was refused");
    },
  },
  toolRetry: {
    make: () => toolRetryMiddleware({ tools: ["flaky"], maxRetries: 2, initialDelayMs: 1, jitter: false }),
    extra: [call("flaky", {}, "f1")],
    job: (r) => {
      const f = byId(r, "f1")!;
      // Known order effect: outside wb.middleware the FileManager already turned the exception into an error ToolMessage.
      if (r.order === "wb first") assert.equal(text(f), "flaky ok");
      else assert.equal(f.status, "error");
    },
  },
  modelRetry: {
    make: () => modelRetryMiddleware({ maxRetries: 2, initialDelayMs: 1, jitter: false }),
    failAt: 2,
    job: (r) => assert.ok(byId(r, "r2"), "the failed model call was retried and the run went on"),
  },
  modelFallback: {
    make: ({ fallback, issued }) => {
      fallback.respond((messages: BaseMessage[]) => {
        issued.set("r2", messages);
        return call("read_file", { path: "notes.txt" }, "r2");
      });
      return modelFallbackMiddleware(fallback);
    },
    failAt: 2,
    job: (r) => assert.equal(r.fallback.calls.length, 1, "the fallback model answered once"),
  },
  llmToolSelector: {
    make: () => llmToolSelectorMiddleware({ model: fakeModel().structuredResponse({ tools: ["read_file", "write_file"] }), maxTools: 2, alwaysInclude: ["where_am_i", "explode"] }),
    job: (r) => {
      for (const req of r.requests) assert.ok(!req.tools.includes("patch") && !req.tools.includes("search_files"), `tools were selected: ${req.tools.join(",")}`);
    },
  },
  pii: {
    make: () => piiMiddleware("email", { strategy: "redact", applyToToolResults: true }),
    job: (r) => {
      const late = [...r.issued.values()].at(-1)!;
      const reads = late.filter((m) => ToolMessage.isInstance(m) && m.name === "read_file");
      assert.ok(reads.length > 0 && reads.every((m) => !text(m).includes("bob@example.com")), "emails in tool results were redacted before the model");
    },
  },
  todoList: {
    make: () => todoListMiddleware(),
    extra: [call("write_todos", { todos: [{ content: "check notes", status: "in_progress" }] }, "t1")],
    job: (r) => assert.deepEqual((r.values.todos as { content: string }[]).map((t) => t.content), ["check notes"]),
  },
  toolEmulator: {
    make: () => toolEmulatorMiddleware({ tools: ["flaky"], model: fakeModel().respond(new AIMessage("EMULATED flaky result")) }),
    extra: [call("flaky", {}, "f1")],
    job: (r) => assert.match(text(byId(r, "f1")!), /EMULATED/),
  },
  contextEditing: {
    make: () => contextEditingMiddleware({ edits: [new ClearToolUsesEdit({ trigger: { tokens: 50 }, keep: { messages: 1 } })] }),
    edits: true,
    job: (r) => {
      const cleared = [...r.issued.values()].some((ms) => ms.some((m) => ToolMessage.isInstance(m) && text(m) === "[cleared]"));
      assert.ok(cleared, "old tool results reached the model as [cleared]");
    },
  },
  dynamicSystemPrompt: {
    make: () => dynamicSystemPromptMiddleware(() => "You are the matrix agent."),
    job: (r) => {
      for (const ms of r.issued.values()) assert.ok(SystemMessage.isInstance(ms[0]) && text(ms[0]).includes("matrix agent"));
    },
  },
  anthropicPromptCaching: {
    make: () => anthropicPromptCachingMiddleware({ unsupportedModelBehavior: "raise", minMessagesToCache: 1 }),
    job: (r) => assert.ok(r.requests.every((q) => JSON.stringify(q.modelSettings ?? {}).includes("ephemeral")), "cache_control was set on every request"),
  },
  openAIModeration: {
    make: () =>
      openAIModerationMiddleware({
        model: new ChatOpenAI({ model: "gpt-4o-mini", apiKey: "sk-test", maxRetries: 0, configuration: { baseURL: moderationUrl } }),
        checkToolResults: true,
      }),
    job: () => assert.ok(moderationCalls > 0, "the moderation endpoint was asked"),
  },
  toolError: {
    make: () => toolErrorMiddleware({ onError: (error) => `TOOL ERROR HANDLER: ${(error as Error).message}` }),
    // Inside wb.middleware (wb first) its handler answers; outside, the FileManager already caught the exception.
    job: (r) => assert.equal(/TOOL ERROR HANDLER/.test(text(byId(r, "x1")!)), r.order === "wb first"),
  },
};

/** The shared script: write, four identical reads, a foreign tool with a system path, a throwing tool, the cell's extras, done. */
function script(extra: AIMessage[]): AIMessage[] {
  return [
    call("write_file", { path: "notes.txt", content: NOTE }, "w1"),
    ...["r1", "r2", "r3", "r4"].map((id) => call("read_file", { path: "notes.txt" }, id)),
    call("where_am_i", {}, "p1"),
    call("explode", {}, "x1"),
    ...extra,
    new AIMessage("done"),
  ];
}

async function runCell(name: string, cell: Cell, order: "wb first" | "wb last"): Promise<CellRun> {
  const thread = `${name}-${order.replace(" ", "-")}`;
  const issued = new Map<string, BaseMessage[]>();
  const fallback = fakeModel();
  const model = fakeModel();
  if (name === "anthropicPromptCaching") (model as unknown as { getName: () => string }).getName = () => "ChatAnthropic";
  script(cell.extra ?? []).forEach((step, i) => {
    if (i === cell.failAt) model.respond(new Error("provider hiccup"));
    if (i === cell.failAt && name === "modelFallback") return; // the fallback answers this step
    model.respond((messages: BaseMessage[]) => {
      for (const c of step.tool_calls ?? []) issued.set(c.id!, messages);
      issued.set(`call-${i}`, messages);
      return step;
    });
  });
  const builtin = cell.make({ fallback, issued });
  const results: ToolMessage[] = [];
  const requests: CellRun["requests"] = [];
  const middleware = [resultSpy(results).middleware, ...(order === "wb first" ? [...wb.middleware, builtin] : [builtin, ...wb.middleware]), requestSpy(requests)];
  // The built-ins vary per cell: the agent is typed by what this test uses of it.
  const agent = createAgent({ model, tools: [...wb.tools, ...foreignTools()], middleware: middleware as never, checkpointer: new MemorySaver() }) as unknown as {
    invoke: (input: unknown, config: unknown) => Promise<unknown>;
    graph: { getState: (config: unknown) => Promise<{ values: unknown }> };
  };
  const config = { configurable: { thread_id: thread }, recursionLimit: 100 };
  let out = (await agent.invoke({ messages: [new HumanMessage("write notes, read them, check where they are")] }, config)) as Record<string, unknown>;
  let interrupts = 0;
  while ((out.__interrupt__ as unknown[] | undefined)?.length) {
    interrupts++;
    out = (await agent.invoke(new Command({ resume: { decisions: [{ type: "approve" }] } }), config)) as Record<string, unknown>;
  }
  const values = (await agent.graph.getState(config)).values as Record<string, unknown>;
  return { order, thread, results, requests, issued, values, fallback, agent, config, interrupts };
}

/** The package's guarantees, whatever the built-in. */
async function assertGuarantees(r: CellRun, cell: Cell): Promise<void> {
  // Tree shown on change: the model call after write_file knew of notes.txt.
  const afterWrite = r.issued.get("r1")!;
  assert.ok(workspaceView(afterWrite).has("notes.txt"), "the tree showed the written file");
  // Dedup follows what the model received: a stub only when the model's request held the
  // result it points at intact; a real read whenever it did not.
  const reads = ["r1", "r2", "r3", "r4"].map((id) => byId(r, id)!);
  let lastReal: string | undefined;
  for (const m of reads) {
    const isStub = /"dedup":true/.test(text(m));
    const blocked = m.status === "error" && /Blocked/.test(text(m));
    const request = r.issued.get(m.tool_call_id) ?? [];
    const had = lastReal && request.find((x) => ToolMessage.isInstance(x) && x.tool_call_id === lastReal);
    const intact = Boolean(had && /alpha line/.test(text(had)));
    if (isStub) assert.ok(intact, `${m.tool_call_id}: a stub although the model's request lacked ${lastReal}`);
    else if (!blocked) {
      assert.match(text(m), /alpha line|REDACTED/, `${m.tool_call_id} is a real read`);
      lastReal = m.tool_call_id;
    }
    if (!intact) assert.ok(!blocked && !isStub, `${m.tool_call_id}: the model had no copy, so the file must be read for real`);
  }
  if (!cell.edits) {
    // Nothing edits the model's view: r2, r3 are stubs (r3 with the loop warning), r4 is blocked.
    assert.deepEqual(reads.map((m) => (/"dedup":true/.test(text(m)) ? "stub" : m.status === "error" ? "blocked" : "read")), ["read", "stub", "stub", "blocked"]);
    assert.match(text(reads[2]!), /same arguments 3 times/);
  }
  // Path rewriting: the foreign tool's system path reached the model as a workspace path.
  const where = byId(r, "p1")!;
  assert.ok(!text(where).includes(root), `no system path: ${text(where)}`);
  assert.match(text(where), /notes\.txt/);
  // A throwing tool is an error ToolMessage; the run went on to its final answer.
  const boom = byId(r, "x1")!;
  assert.equal(boom.status, "error");
  assert.match(text(boom), /exploded on purpose/);
  // Time travel: the checkpoint names a recorded snapshot of the workspace.
  const id = snapshotIdOf(r.values);
  assert.ok(id, "the checkpoint names a workspace snapshot");
  assert.ok((await wb.snapshots(r.thread)).some((s) => s.id === id), "that snapshot is recorded");
}

for (const [name, cell] of Object.entries(CELLS)) {
  for (const order of ["wb first", "wb last"] as const) {
    test(`${name} × ${order}`, async () => {
      const r = await runCell(name, cell, order);
      await assertGuarantees(r, cell);
      await cell.job(r);
    });
  }
}
