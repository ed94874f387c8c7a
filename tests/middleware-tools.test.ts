import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { Command, MemorySaver } from "@langchain/langgraph";
import { humanInTheLoopMiddleware, summarizationMiddleware, toolCallLimitMiddleware } from "langchain";
import { z } from "zod";
import { type ToolCallStep } from "../middleware/index.js";
import { createBasicTools, markWorkbenchTool } from "../tools/index.js";
import { createFileTools } from "../tools/fileTools.js";
import { fileManagerPool, makeAgent, openAiHistoryProblems, scriptedModel, tempRoot, text, treeMessages, workspaceTools, workspaceView } from "./helpers/agentHarness.js";

let root: string;
let cleanup: () => Promise<void>;
const managers = fileManagerPool(() => root, { onError: () => undefined });
const fileManager = managers.make;

const run = (agent: any, thread: string, prompt = "go") =>
  agent.invoke({ messages: [new HumanMessage(prompt)] }, { configurable: { thread_id: thread } }) as Promise<{ messages: BaseMessage[] }>;

const toolMessages = (messages: BaseMessage[]) => messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));

before(async () => {
  ({ root, cleanup } = await tempRoot("wb-mwt-"));
});

after(async () => {
  await managers.closeAll();
  await cleanup();
});

describe("tool errors", () => {
  it("turns a throwing tool into an error ToolMessage with rewritten paths, and the run finishes", async () => {
    const dir = path.join(root, "boom");
    const boom = tool(
      () => {
        throw new Error(`disk full while writing ${dir}/out/data.bin`);
      },
      { name: "boom", description: "fails", schema: z.object({}) },
    );
    const { agent } = await makeAgent({ script: [[{ name: "boom", args: {}, id: "b1" }], "recovered"], tools: [boom], middleware: [fileManager()] });
    const out = await run(agent, "boom");
    const [msg] = toolMessages(out.messages);
    assert.equal(msg!.status, "error");
    assert.equal(msg!.tool_call_id, "b1", "answers the real tool call");
    assert.match(text(msg), /disk full while writing out\/data\.bin/);
    assert.doesNotMatch(text(msg), new RegExp(root.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
    assert.equal(text(out.messages.at(-1)), "recovered");
    assert.deepEqual(openAiHistoryProblems(out.messages), []);
  });

  it("answers invalid tool arguments with an error ToolMessage instead of ending the run", async () => {
    const { agent } = await makeAgent({
      script: [[{ name: "create_file", args: { nope: 1 }, id: "v1" }], "ok"],
      tools: workspaceTools(root),
      middleware: [fileManager()],
    });
    const out = await run(agent, "invalid-args");
    assert.equal(toolMessages(out.messages)[0]!.status, "error");
    assert.equal(text(out.messages.at(-1)), "ok");
  });

  it("lets human-in-the-loop interrupts through (approval of run_command)", async () => {
    const checkpointer = new MemorySaver();
    const { agent } = await makeAgent({
      script: [[{ name: "run_command", args: { command: "echo approved > ok.txt" }, id: "r1" }], "done"],
      tools: createBasicTools({ rootDir: root, enableShell: true, shell: { allowDangerous: true } }),
      middleware: [humanInTheLoopMiddleware({ interruptOn: { run_command: { allowedDecisions: ["approve", "reject"] } } }), fileManager()],
      checkpointer,
    });
    const config = { configurable: { thread_id: "hitl" } };
    const paused = await agent.invoke({ messages: [new HumanMessage("go")] }, config);
    assert.ok((paused as any).__interrupt__?.length, "run paused for approval");
    assert.deepEqual(await readdir(path.join(root, "hitl")), []);
    const resumed = await agent.invoke(new Command({ resume: { decisions: [{ type: "approve" }] } }), config);
    assert.equal((await readFile(path.join(root, "hitl", "ok.txt"), "utf8")).trim(), "approved");
    assert.equal(text(resumed.messages.at(-1)), "done");
  });
});

describe("path arguments of foreign tools", () => {
  const received: string[] = [];
  const foreign = tool(
    ({ file_path }) => {
      received.push(file_path);
      return `read ${file_path}`;
    },
    { name: "foreign_read", description: "a tool from elsewhere", schema: z.object({ file_path: z.string() }) },
  );

  it("maps agent paths to system paths inside the workspace and rewrites them back in the result", async () => {
    const { agent } = await makeAgent({
      script: [[{ name: "foreign_read", args: { file_path: "docs/a.md" }, id: "f1" }], "ok"],
      tools: [foreign],
      middleware: [fileManager({ pathArgs: ["file_path"] })],
    });
    const out = await run(agent, "mapped");
    assert.equal(received.at(-1), path.join(root, "mapped", "docs", "a.md"));
    assert.equal(text(toolMessages(out.messages)[0]), "read docs/a.md");
  });

  it("refuses ../ and outside paths with an error ToolMessage and never calls the tool", async () => {
    const before = received.length;
    const { agent } = await makeAgent({
      script: [[{ name: "foreign_read", args: { file_path: "../other-thread/secret" }, id: "f2" }, { name: "foreign_read", args: { file_path: "/etc/passwd" }, id: "f3" }], "ok"],
      tools: [foreign],
      middleware: [fileManager({ pathArgs: ["file_path"] })],
    });
    const out = await run(agent, "refused");
    assert.equal(received.length, before);
    const msgs = toolMessages(out.messages);
    assert.equal(msgs.length, 2);
    for (const m of msgs) {
      assert.equal(m.status, "error");
      assert.match(text(m), /not allowed/);
      assert.doesNotMatch(text(m), new RegExp(root.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
    }
  });

  it("leaves the package's own tools alone", async () => {
    const seenArgs: unknown[] = [];
    const own = markWorkbenchTool(
      tool(({ path: p }) => (seenArgs.push(p), "ok"), { name: "own_tool", description: "ours", schema: z.object({ path: z.string() }) }),
    );
    const { agent } = await makeAgent({ script: [[{ name: "own_tool", args: { path: "a.txt" }, id: "o1" }], "ok"], tools: [own], middleware: [fileManager({ pathArgs: ["path"] })] });
    await run(agent, "own");
    assert.deepEqual(seenArgs, ["a.txt"]);
  });
});

describe("path rewriting", () => {
  it("rewrites string results, text blocks and messages inside Command updates", async () => {
    const dir = path.join(root, "rw");
    const plain = tool(() => `wrote ${dir}/a.txt`, { name: "plain", description: "x", schema: z.object({}) });
    const blocks = tool(
      (_input, config) =>
        new ToolMessage({
          content: [{ type: "text", text: `see ${dir}/b.txt` }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }],
          tool_call_id: config.toolCall?.id ?? "",
          name: "blocks",
        }),
      { name: "blocks", description: "x", schema: z.object({}) },
    );
    const command = tool(
      (_input, config) =>
        new Command({ update: { messages: [new ToolMessage({ content: `moved to ${dir}/c.txt`, tool_call_id: config.toolCall?.id ?? "", name: "command" })] } }),
      { name: "command", description: "x", schema: z.object({}) },
    );
    const { agent } = await makeAgent({
      script: [[{ name: "plain", args: {}, id: "p" }], [{ name: "blocks", args: {}, id: "b" }], [{ name: "command", args: {}, id: "c" }], "ok"],
      tools: [plain, blocks, command],
      middleware: [fileManager()],
    });
    const out = await run(agent, "rw");
    const msgs = toolMessages(out.messages);
    assert.equal(text(msgs[0]), "wrote a.txt");
    const content = msgs[1]!.content as any[];
    assert.equal(content[0].text, "see b.txt");
    assert.equal(content[1].type, "image_url", "non-text blocks untouched");
    assert.equal(text(msgs[2]), "moved to c.txt");
    // The rewritten text is what the checkpoint holds, not only the live object.
    const state = await agent.graph.getState({ configurable: { thread_id: "rw" } });
    assert.ok(state.values.messages.every((m: BaseMessage) => !text(m).includes(dir)));
  });

  it("leaves results untouched with rewritePaths: false", async () => {
    const dir = path.join(root, "raw");
    const plain = tool(() => `at ${dir}/x`, { name: "plain", description: "x", schema: z.object({}) });
    const { agent } = await makeAgent({ script: [[{ name: "plain", args: {}, id: "p" }], "ok"], tools: [plain], middleware: [fileManager({ rewritePaths: false })] });
    const out = await run(agent, "raw");
    assert.equal(text(toolMessages(out.messages)[0]), `at ${dir}/x`);
  });
});

describe("composition", () => {
  it("runs parallel workspace-changing tool calls without InvalidUpdateError and shows both changes", async () => {
    const { agent, model } = await makeAgent({
      script: [
        [
          { name: "create_file", args: { path: "one.txt" }, id: "p1" },
          { name: "create_file", args: { path: "two.txt" }, id: "p2" },
          { name: "get_current_time", args: {}, id: "p3" },
        ],
        "done",
      ],
      tools: [...workspaceTools(root), ...createBasicTools({ rootDir: root })],
      middleware: [fileManager()],
    });
    const out = await run(agent, "parallel");
    assert.equal(toolMessages(out.messages).length, 3);
    const tree = text(treeMessages(model.calls[1]!.messages).at(-1));
    assert.match(tree, /one\.txt/);
    assert.match(tree, /two\.txt/);
    assert.deepEqual(openAiHistoryProblems(out.messages), []);
  });

  it("works with an extra tool-call step (the guard extension point)", async () => {
    const calls: string[] = [];
    const audit: ToolCallStep = async (ctx, next) => {
      calls.push(`${ctx.request.toolCall.name}:${ctx.readOnly ? "ro" : "rw"}:${ctx.workspace.threadId}`);
      return next(ctx);
    };
    const { agent } = await makeAgent({
      script: [[{ name: "get_current_time", args: {}, id: "s1" }, { name: "create_file", args: { path: "s.txt" }, id: "s2" }], "ok"],
      tools: [...workspaceTools(root), ...createBasicTools({ rootDir: root })],
      middleware: [fileManager({ toolCallSteps: [audit] })],
    });
    await run(agent, "steps");
    assert.deepEqual(calls.sort(), ["create_file:rw:steps", "get_current_time:ro:steps"]);
  });

  it("runs the file guards inside its pipeline (read dedup), and leaves them out with fileGuards: false", async () => {
    const script = [[{ name: "read_file", args: { path: "notes.md" }, id: "r1" }], [{ name: "read_file", args: { path: "notes.md" }, id: "r2" }], "ok"];
    const reads = async (thread: string, options: Parameters<typeof fileManager>[0]) => {
      const { agent } = await makeAgent({ script: [[{ name: "write_file", args: { path: "notes.md", content: "hello\n" }, id: "w1" }], ...script], tools: createFileTools({ rootDir: root }), middleware: [fileManager(options)] });
      return toolMessages((await run(agent, thread)).messages).slice(1).map((m) => text(m));
    };
    const [, guarded] = await reads("guards-on", {});
    assert.match(guarded!, /unchanged/, "second identical read answered by the dedup stub");
    const [, plain] = await reads("guards-off", { fileGuards: false });
    assert.match(plain!, /hello/, "without guards the file is read again");
  });

  it("composes with summarizationMiddleware and toolCallLimitMiddleware in one agent", async () => {
    const summarizer = await scriptedModel(["Summary: the user asked for files; two were created."]);
    const checkpointer = new MemorySaver();
    const fm = fileManager();
    const { agent, model } = await makeAgent({
      script: [
        [{ name: "create_file", args: { path: "a.txt" }, id: "s1" }],
        [{ name: "create_file", args: { path: "b.txt" }, id: "s2" }],
        [{ name: "create_file", args: { path: "c.txt" }, id: "s3" }],
        [{ name: "create_file", args: { path: "d.txt" }, id: "s4" }],
        "done",
      ],
      tools: workspaceTools(root),
      middleware: [
        summarizationMiddleware({ model: summarizer as any, trigger: { messages: 8 }, keep: { messages: 3 } }),
        fm,
        toolCallLimitMiddleware({ runLimit: 3 }),
      ],
      checkpointer,
    });
    const out = await run(agent, "composed");
    // The limiter blocked the 4th call and ended the run without an exception.
    const msgs = toolMessages(out.messages);
    assert.ok(msgs.some((m) => m.status === "error" && /limit/i.test(text(m))), "4th call blocked, run ended normally");
    assert.deepEqual((await readdir(path.join(root, "composed"))).sort(), ["a.txt", "b.txt", "c.txt"]);
    // Summarisation happened, and every model call still saw a full tree and knew the files.
    assert.ok(summarizer.calls.length >= 1, "summariser ran");
    for (const call of model.calls.slice(1)) {
      assert.ok(treeMessages(call.messages).some((m) => /<workspace_tree/.test(text(m))), "a full tree in every call");
      assert.deepEqual(openAiHistoryProblems(call.messages), []);
    }
    assert.ok(workspaceView(model.calls.at(-1)!.messages).has("c.txt"), "the last call knows c.txt");
    assert.deepEqual(openAiHistoryProblems(out.messages), []);
  });
});

describe("tool result helpers", () => {
  const upper = (t: string) => t.toUpperCase();

  it("maps text in tuple-form Command updates and merges state keys into Commands", async () => {
    const { mapToolResultText, withStateUpdate } = await import("../middleware/toolResults.js");
    const msg = new ToolMessage({ content: "abc", tool_call_id: "x" });
    const tuple = new Command({ update: [["messages", [msg]], ["other", 1]] });
    const mapped = mapToolResultText(tuple, upper) as Command;
    const entries = mapped.update as [string, unknown][];
    assert.equal(text((entries[0]![1] as BaseMessage[])[0]), "ABC");
    assert.deepEqual(entries[1], ["other", 1]);
    assert.equal(text(msg), "abc", "the original message is not mutated");

    const merged = withStateUpdate(new Command({ update: { messages: [msg], a: 1 } }), { _treeDirty: true }) as Command;
    assert.deepEqual(Object.keys(merged.update as object).sort(), ["_treeDirty", "a", "messages"]);
    const wrapped = withStateUpdate(msg, { _treeDirty: true }) as Command;
    assert.deepEqual((wrapped.update as { messages: unknown[] }).messages, [msg]);
  });

  it("leaves parent-graph Commands and unchanged content alone", async () => {
    const { mapContentText, mapToolResultText, withStateUpdate } = await import("../middleware/toolResults.js");
    const parent = new Command({ graph: Command.PARENT, update: { messages: [new ToolMessage({ content: "abc", tool_call_id: "x" })] } });
    assert.equal(mapToolResultText(parent, upper), parent);
    assert.equal(withStateUpdate(parent, { _treeDirty: true }), parent);
    const blocks = [{ type: "text" as const, text: "ABC" }];
    assert.equal(mapContentText(blocks, upper), blocks, "same array when nothing changed");
  });
});
