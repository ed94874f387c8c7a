/**
 * Tool-result images on models that take images only from the user (issue 25 item 3): the pure
 * transform (deterministic, append-only, state untouched), the model decision, the option's
 * checks, and a real `createAgent` + `ChatOpenAI` against a loopback server that enforces OpenAI
 * Chat Completions' rules (tool messages answer open tool calls; image parts only in `user`).
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { createAgent } from "langchain";
import { createFileManagerMiddleware, type FileManagerMiddleware } from "../middleware/fileManager.js";
import { hoistToolImages, modelNeedsImageHoist, MOVED_IMAGE_NOTE, TOOL_IMAGES_NAME } from "../middleware/hoistImages.js";
import { resultSignature, unseenAmong } from "../middleware/receivedResults.js";
import { createBasicTools, createFileTools } from "../tools/index.js";
import { tempRoot, workspaceTools } from "./helpers/agentHarness.js";
import { startOpenAiRulesServer, type ChatReply, type WireMessage } from "./helpers/fakeOpenAI.js";

// A real 1×1 PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");
const IMAGE = { type: "image", mimeType: "image/png", data: PNG.toString("base64") };

const ai = (id: string, calls: { id: string; name: string }[]) => new AIMessage({ content: "", id, tool_calls: calls.map((c) => ({ ...c, args: {}, type: "tool_call" as const })) });
const toolImage = (id: string, name = "read_file") => new ToolMessage({ content: [{ type: "text", text: `{"path":"${id}.png"}` }, IMAGE] as never, tool_call_id: id, name, id: `tm-${id}` });
const toolText = (id: string) => new ToolMessage({ content: "12:00 UTC", tool_call_id: id, name: "get_current_time", id: `tm-${id}` });

/** A history growing step by step: image reads, parallel calls, text-only tools, user turns. */
const history: BaseMessage[] = [
  new HumanMessage({ content: "look at the shots", id: "h1" }),
  ai("a1", [{ id: "c1", name: "read_file" }]),
  toolImage("c1"),
  new HumanMessage({ content: "<workspace_changes/>", id: "tree1", name: "workspace_tree" }),
  ai("a2", [{ id: "c2", name: "read_file" }, { id: "c3", name: "get_current_time" }, { id: "c4", name: "mcp_screenshot" }]),
  toolImage("c2"),
  toolText("c3"),
  toolImage("c4", "mcp_screenshot"),
  ai("a3", [{ id: "c5", name: "get_current_time" }]),
  toolText("c5"),
  new HumanMessage({ content: "and again", id: "h2" }),
  ai("a4", [{ id: "c6", name: "read_file" }]),
  toolImage("c6"),
];
const wire = (messages: readonly BaseMessage[]) => JSON.stringify(messages.map((m) => ({ type: m.getType(), content: m.content, name: m.name, id: m.id, tool_call_id: (m as ToolMessage).tool_call_id })));
const images = (m: BaseMessage) => (Array.isArray(m.content) ? m.content.filter((b) => (b as { type?: string }).type === "image") : []);

describe("hoistToolImages (pure)", () => {
  it("moves each image after its step's tool results, naming the call, and leaves a note in the ToolMessage", () => {
    const out = hoistToolImages(history);
    assert.equal(out.length, history.length + 3, "one user message per step that returned images");
    for (const m of out) if (ToolMessage.isInstance(m)) assert.equal(images(m).length, 0, "no image left in a tool message");
    const moved = out.filter((m) => HumanMessage.isInstance(m) && m.name === TOOL_IMAGES_NAME);
    assert.deepEqual(moved.map((m) => out.indexOf(m)), [3, 9, 15]);
    // The parallel step: one user message after all three tool results, naming both image calls.
    const parallel = moved[1]!;
    assert.ok(ToolMessage.isInstance(out[8]!) && AIMessage.isInstance(out[10]!), "after the last tool result, before the next message");
    const text = (parallel.content as { type: string; text?: string }[]).filter((b) => b.type === "text").map((b) => b.text).join("\n");
    assert.match(text, /tool call c2 \(read_file\)/);
    assert.match(text, /tool call c4 \(mcp_screenshot\)/);
    assert.doesNotMatch(text, /c3/, "the text-only result is not named");
    assert.deepEqual(images(parallel), [IMAGE, IMAGE]);
    const note = out[2] as ToolMessage;
    assert.deepEqual(note.content, [{ type: "text", text: '{"path":"c1.png"}' }, { type: "text", text: MOVED_IMAGE_NOTE }]);
    assert.equal(note.tool_call_id, "c1");
    assert.equal(note.id, "tm-c1");
  });

  it("is deterministic and append-only: every longer history's request starts with the shorter one's", () => {
    assert.equal(wire(hoistToolImages(history)), wire(hoistToolImages(history)));
    // Model calls happen after a step's tool results are all in: cut the history there.
    const cuts = history.flatMap((m, i) => (ToolMessage.isInstance(m) && !ToolMessage.isInstance(history[i + 1] ?? new HumanMessage("")) ? [i + 1] : []));
    cuts.push(history.length);
    let previous: readonly BaseMessage[] = [];
    for (const cut of cuts) {
      const request = hoistToolImages(history.slice(0, cut));
      assert.equal(wire(request.slice(0, previous.length)), wire(previous), `the request at ${cut} extends the previous one`);
      previous = request;
    }
  });

  it("leaves the history alone: same array without images, input messages never mutated", () => {
    const plain = [history[0]!, ai("x", [{ id: "t", name: "get_current_time" }]), toolText("t")];
    assert.equal(hoistToolImages(plain), plain);
    const before = wire(history);
    hoistToolImages(history);
    assert.equal(wire(history), before);
    assert.equal(images(history[2]!).length, 1);
  });

  it("recognises OpenAI-style image parts too, and keeps blocks it does not know", () => {
    const odd = new ToolMessage({
      content: [
        { type: "image_url", image_url: { url: "data:image/png;base64,AA==" } },
        { type: "custom", x: 1 },
        { type: "image", source: { type: "base64", media_type: "image/gif", data: "R0lG" } },
        { type: "image", source_type: "url", url: "https://example.com/a.png" },
      ] as never,
      tool_call_id: "o1",
    });
    const out = hoistToolImages([ai("a", [{ id: "o1", name: "mcp" }]), odd]);
    assert.deepEqual((out[1] as ToolMessage).content, [{ type: "text", text: MOVED_IMAGE_NOTE }, { type: "custom", x: 1 }, { type: "text", text: MOVED_IMAGE_NOTE }, { type: "text", text: MOVED_IMAGE_NOTE }]);
    assert.equal(out.length, 3);
    assert.deepEqual((out[2]!.content as unknown[]).slice(1), [
      { type: "image", url: "data:image/png;base64,AA==" },
      { type: "image", mimeType: "image/gif", data: "R0lG" },
      { type: "image", url: "https://example.com/a.png" },
    ], "moved in LangChain's standard form");
  });
});

describe("read dedup after a move", () => {
  it("a result whose images were moved counts as received whole (a re-read may answer unchanged)", () => {
    const out = hoistToolImages(history);
    const original = history.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === "c1") as ToolMessage;
    const ids = new Map([["c1", resultSignature(original.content)]]);
    assert.deepEqual(unseenAmong(ids, history, out), [], "moved, not lost");
    const cleared = out.map((m) => (ToolMessage.isInstance(m) && m.tool_call_id === "c1" ? new ToolMessage({ content: "[cleared]", tool_call_id: "c1" }) : m));
    assert.deepEqual(unseenAmong(ids, history, cleared), ["c1"], "a cleared result is still unseen");
  });
});

describe("which models get images moved (auto)", () => {
  const openai = (fields: Record<string, unknown> = {}) => new ChatOpenAI({ model: "gpt-4o-mini", apiKey: "sk-test-not-a-key", ...fields });
  it("OpenAI Chat Completions: yes, even bound to tools (its profile claims imageToolMessage)", () => {
    assert.equal(openai().profile.imageToolMessage, true, "the profile describes the Responses API");
    assert.equal(modelNeedsImageHoist(openai()), true);
    assert.equal(modelNeedsImageHoist(openai().bindTools([])), true);
    assert.equal(modelNeedsImageHoist(openai().withConfig({ tags: ["x"] })), true);
  });
  it("OpenAI Responses API, unknown and test models: no; a profile saying imageToolMessage:false: yes", () => {
    assert.equal(modelNeedsImageHoist(openai({ useResponsesApi: true })), false);
    assert.equal(modelNeedsImageHoist(fakeModel()), false);
    assert.equal(modelNeedsImageHoist(undefined), false);
    assert.equal(modelNeedsImageHoist({ _llmType: () => "other", profile: { imageToolMessage: false } }), true);
    assert.equal(modelNeedsImageHoist({ _llmType: () => "anthropic", profile: { imageToolMessage: true } }), false);
    const throwing = { get profile(): never { throw new Error("boom"); } };
    assert.equal(modelNeedsImageHoist(throwing), false);
  });
  it("the option is strict", () => {
    assert.throws(() => createFileManagerMiddleware({ imagesInToolResults: "hoist" as never }), /imagesInToolResults must be "auto", "inline" or "user-message"/);
  });
});

describe("createAgent + ChatOpenAI against OpenAI's rules", () => {
  const replies: ChatReply[] = [
    {
      tool_calls: [
        { id: "call_img", type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: "shot.png" }) } },
        { id: "call_time", type: "function", function: { name: "get_current_time", arguments: JSON.stringify({ timezone: "UTC" }) } },
      ],
    },
    { tool_calls: [{ id: "call_new", type: "function", function: { name: "create_file", arguments: JSON.stringify({ path: "notes.md" }) } }] },
    { content: "A single pixel." },
  ];
  let openai: Awaited<ReturnType<typeof startOpenAiRulesServer>>;
  let baseURL: string;
  let requests: WireMessage[][] = [];
  let root: string;
  let cleanup: () => Promise<void>;
  const managers: FileManagerMiddleware[] = [];

  before(async () => {
    ({ root, cleanup } = await tempRoot("wb-images-"));
    openai = await startOpenAiRulesServer(() => replies);
    baseURL = openai.baseURL;
  });

  after(async () => {
    await Promise.all(managers.map((m) => m.close()));
    await openai.close();
    await cleanup();
  });

  async function run(thread: string, options: Parameters<typeof createFileManagerMiddleware>[0] = {}) {
    openai.requests.length = 0;
    requests = openai.requests;
    await mkdir(path.join(root, thread), { recursive: true });
    await writeFile(path.join(root, thread, "shot.png"), PNG);
    const fm = createFileManagerMiddleware({ rootDir: root, ...options });
    managers.push(fm);
    const model = new ChatOpenAI({ model: "gpt-4o-mini", apiKey: "sk-test-not-a-key", maxRetries: 0, timeout: 30_000, configuration: { baseURL } });
    const agent = createAgent({
      model,
      tools: [...createFileTools({ rootDir: root }), ...createBasicTools({ rootDir: root }), ...workspaceTools(root)],
      middleware: [fm],
      checkpointer: new MemorySaver(),
    });
    return agent.invoke({ messages: [new HumanMessage("what is in shot.png?")] }, { configurable: { thread_id: thread } });
  }

  it("auto: the image goes in a user message after the tool results, the server accepts every request, and requests only grow", async () => {
    const out = await run("auto");
    assert.equal(out.messages.at(-1)?.content, "A single pixel.");
    assert.equal(requests.length, 3, "every request was accepted");
    const second = requests[1]!;
    const toolAt = second.findIndex((m) => m.role === "tool" && m.tool_call_id === "call_img");
    const tool = second[toolAt]!;
    assert.ok(Array.isArray(tool.content) && JSON.stringify(tool.content).includes(MOVED_IMAGE_NOTE), "the tool message keeps a note");
    // The v1 wire path drops `name`; the text names the tool call.
    const isMoved = (m: WireMessage) => m.role === "user" && JSON.stringify(m.content).includes("returned by tool call");
    const movedAt = second.findIndex(isMoved);
    assert.ok(movedAt > toolAt, "the user message follows the tool message");
    assert.ok(second.slice(toolAt, movedAt).every((m) => m.role === "tool"), "right after that step's tool results");
    const moved = second[movedAt]!.content as { type: string; text?: string; image_url?: { url: string } }[];
    assert.match(moved[0]!.text ?? "", /tool call call_img \(read_file\)/);
    assert.equal(moved[1]!.image_url?.url, `data:image/png;base64,${PNG.toString("base64")}`);
    for (let i = 1; i < requests.length; i++) {
      assert.equal(JSON.stringify(requests[i]!.slice(0, requests[i - 1]!.length)), JSON.stringify(requests[i - 1]), `request ${i} extends request ${i - 1} byte for byte`);
    }
    // State keeps what the tool returned.
    const stored = out.messages.find((m: BaseMessage) => ToolMessage.isInstance(m) && m.tool_call_id === "call_img")!;
    assert.deepEqual(images(stored), [IMAGE]);
    assert.ok(!out.messages.some((m: BaseMessage) => m.name === TOOL_IMAGES_NAME), "the moved images live in the request only");
  });

  it('"inline": the image stays in the tool message (and OpenAI\'s rule rejects it)', async () => {
    await assert.rejects(run("inline", { imagesInToolResults: "inline" }), /Image URLs are only allowed for messages with role 'user'/);
    assert.equal(requests.length, 2);
    const tool = requests[1]!.find((m) => m.role === "tool" && m.tool_call_id === "call_img")!;
    assert.ok(JSON.stringify(tool.content).includes(PNG.toString("base64")), "the image is in the tool message");
    assert.ok(!JSON.stringify(requests[1]).includes("returned by tool call"));
  });

  it('"user-message" with file guards off still moves images (the wrapper does not depend on them)', async () => {
    const out = await run("forced", { imagesInToolResults: "user-message", fileGuards: false });
    assert.equal(out.messages.at(-1)?.content, "A single pixel.");
    assert.ok(requests[1]!.some((m) => m.role === "user" && JSON.stringify(m.content).includes("returned by tool call call_img")));
  });
});

describe("with a test model and the option forced", () => {
  it('"user-message" moves images for any model, in the request only', async () => {
    const { root, cleanup } = await tempRoot("wb-images-fake-");
    await mkdir(path.join(root, "t"), { recursive: true });
    await writeFile(path.join(root, "t", "shot.png"), PNG);
    const fm = createFileManagerMiddleware({ rootDir: root, imagesInToolResults: "user-message" });
    try {
      const model = fakeModel()
        .respond(new AIMessage({ content: "", tool_calls: [{ name: "read_file", args: { path: "shot.png" }, id: "r1", type: "tool_call" }] }))
        .respond(new AIMessage("done"));
      const agent = createAgent({ model, tools: createFileTools({ rootDir: root }), middleware: [fm], checkpointer: new MemorySaver() });
      await agent.invoke({ messages: [new HumanMessage("look")] }, { configurable: { thread_id: "t" } });
      const seen = model.calls[1]!.messages as BaseMessage[];
      const tool = seen.find((m) => ToolMessage.isInstance(m))!;
      assert.equal(images(tool).length, 0);
      const moved = seen[seen.indexOf(tool) + 1]!;
      assert.equal(moved.name, TOOL_IMAGES_NAME);
      assert.deepEqual(images(moved), [IMAGE]);
    } finally {
      await fm.close();
      await cleanup();
    }
  });
});
