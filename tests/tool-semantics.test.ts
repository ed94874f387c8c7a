// Semantics that hostile or sloppy tools and models hit: non-Error throws, mixed path arrays,
// loop detection as documented. Real createAgent + fakeModel + the FileManager middleware.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { fileManagerPool, makeAgent, tempRoot, text } from "./helpers/agentHarness.js";

let root: string;
let cleanup: () => Promise<void>;
const managers = fileManagerPool(() => root, { onError: () => undefined, tracker: { kind: "polling" } });
const fileManager = managers.make;

const run = (agent: any, thread: string) =>
  agent.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: thread } }) as Promise<{ messages: BaseMessage[] }>;
const toolMessages = (messages: BaseMessage[]) => messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));

before(async () => {
  ({ root, cleanup } = await tempRoot("wb-sem-"));
});

after(async () => {
  await managers.closeAll();
  await cleanup();
});

describe("non-Error throws", () => {
  const thrown: Array<[string, unknown]> = [
    ["null", null],
    ["undefined", undefined],
    ["a string", "quota exceeded"],
    ["a plain object", { code: 42, message: "object failure" }],
    ["a number", 7],
  ];
  for (const [label, value] of thrown) {
    it(`a tool that throws ${label} becomes an error ToolMessage and the run finishes`, async () => {
      const bad = tool(
        () => {
          throw value;
        },
        { name: "bad", description: "throws", schema: z.object({}) },
      );
      const { agent } = await makeAgent({ script: [[{ name: "bad", args: {}, id: "x1" }], "recovered"], tools: [bad], middleware: [fileManager()] });
      const out = await run(agent, `throw-${label.replace(/\W/g, "")}`);
      const [msg] = toolMessages(out.messages);
      assert.equal(msg!.status, "error");
      assert.equal(msg!.tool_call_id, "x1");
      // One error shape (tools/toolResult.ts): {"error": "<tool> failed: <detail>. <hint>"}.
      assert.match((JSON.parse(text(msg)) as { error: string }).error, /^bad failed: /);
      if (typeof value === "string") assert.match(text(msg), /quota exceeded/);
      if (label === "a plain object") assert.match(text(msg), /object failure/);
      assert.equal(text(out.messages.at(-1)), "recovered");
    });
  }
});

describe("pathArgs", () => {
  const seen: unknown[] = [];
  const multi = tool(
    (input: { paths: unknown[] }) => {
      seen.push(input.paths);
      return `got ${input.paths.length}`;
    },
    { name: "multi", description: "takes paths", schema: z.object({ paths: z.array(z.any()) }) },
  );

  it("maps every string of an array and refuses an array with a non-string entry (the tool never runs)", async () => {
    seen.length = 0;
    const { agent } = await makeAgent({
      script: [[{ name: "multi", args: { paths: ["/outside/x", 0] }, id: "m1" }], [{ name: "multi", args: { paths: ["a.txt", "sub/b.txt"] }, id: "m2" }], "ok"],
      tools: [multi],
      middleware: [fileManager({ pathArgs: ["paths"] })],
    });
    const out = await run(agent, "patharrays");
    const [mixed, strings] = toolMessages(out.messages);
    assert.equal(mixed!.status, "error");
    assert.match((JSON.parse(text(mixed)) as { error: string }).error, /"paths" must be a list of path strings; entry 1 is number/);
    assert.equal(seen.length, 1, "the tool ran only for the all-string call");
    const mapped = seen[0] as string[];
    assert.ok(mapped.every((p) => p.startsWith(root)), "every entry mapped into the workspace");
    assert.notEqual(strings!.status, "error");
  });

  it("refuses an array whose string entry leaves the workspace", async () => {
    seen.length = 0;
    const { agent } = await makeAgent({
      script: [[{ name: "multi", args: { paths: ["ok.txt", "../../etc/passwd"] }, id: "m3" }], "ok"],
      tools: [multi],
      middleware: [fileManager({ pathArgs: ["paths"] })],
    });
    const [msg] = toolMessages((await run(agent, "patharrays-escape")).messages);
    assert.equal(msg!.status, "error");
    assert.equal(seen.length, 0);
  });
});
