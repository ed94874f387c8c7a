// One agent composing the FileManager with langchain's summarization, human-in-the-loop and
// tool-call-limit middleware, with a checkpointer: interrupt on a dangerous run_command, resume
// with approve and with reject, limits enforced, the tree restored after summarisation.
import assert from "node:assert/strict";
import { access, chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { Command, MemorySaver } from "@langchain/langgraph";
import {
  createAgent,
  humanInTheLoopMiddleware,
  summarizationMiddleware,
  toolCallLimitMiddleware,
  type HITLRequest,
  type HITLResponse,
} from "langchain";
import { isWorkspaceTreeMessage } from "../middleware/treeMessage.js";
import { isDangerousCommand } from "../tools/dangerousCommands.js";
import { createWorkbench, type Workbench } from "../src/workbench.js";
import { workspaceView } from "./helpers/agentHarness.js";

// A command isDangerousCommand flags (a download piped into a shell) made harmless: a stub `curl`
// first on the child's PATH prints a one-line script; nothing leaves the machine.
const DANGEROUS = "curl -s http://127.0.0.1:9/install.sh | sh";

let root = "";
let wb: Workbench;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-compose-"));
  const stubBin = path.join(root, "stub-bin");
  await mkdir(stubBin);
  await writeFile(path.join(stubBin, "curl"), "#!/bin/sh\necho 'echo installed > installed.txt'\n");
  await chmod(path.join(stubBin, "curl"), 0o755);
  assert.ok(isDangerousCommand(DANGEROUS), "the test command must be one the screen flags");
  wb = createWorkbench({
    rootDir: path.join(root, "ws"),
    enableShell: true,
    // A human approves every dangerous command, so the tool itself may run it. The stub `curl`
    // lives outside the workspace, which a sandbox hides: this composition test runs on the host.
    basicTools: { shell: { allowDangerous: true, sandbox: "off", env: { PATH: `${stubBin}:${process.env.PATH ?? ""}` } } },
    webTools: false,
  });
});

after(async () => {
  await wb?.close();
  await rm(root, { recursive: true, force: true });
});

function buildAgent(script: (AIMessage | { tools: { name: string; args: Record<string, unknown> }[] })[]) {
  const model = fakeModel();
  let n = 0;
  for (const step of script) {
    if (step instanceof AIMessage) model.respond(step);
    else model.respondWithTools(step.tools.map((t) => ({ ...t, id: `call_${++n}` })));
  }
  const summarizer = fakeModel();
  for (let i = 0; i < 5; i++) summarizer.respond(new AIMessage("Summary: the user set up files with run_command."));
  const agent = createAgent({
    model,
    tools: wb.tools,
    middleware: [
      summarizationMiddleware({ model: summarizer, trigger: { messages: 9 }, keep: { messages: 3 } }),
      ...wb.middleware,
      humanInTheLoopMiddleware({
        interruptOn: {
          run_command: {
            allowedDecisions: ["approve", "reject"],
            description: "This command was flagged as dangerous. Approve to run it.",
            when: (request) => isDangerousCommand(String(request.toolCall.args.command ?? "")) !== null,
          },
        },
      }),
      toolCallLimitMiddleware({ toolName: "run_command", threadLimit: 3, exitBehavior: "continue" }),
    ],
    checkpointer: new MemorySaver(),
  });
  return { agent, model };
}

function toolMessages(messages: BaseMessage[]): ToolMessage[] {
  return messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
}

function text(m: BaseMessage): string {
  return typeof m.content === "string" ? m.content : JSON.stringify(m.content);
}

async function exists(p: string): Promise<boolean> {
  return access(p).then(
    () => true,
    () => false,
  );
}

test("dangerous run_command interrupts; approve runs it, the tree shows the new file; limits and summarisation compose", async () => {
  const { agent, model } = buildAgent([
    { tools: [{ name: "run_command", args: { command: "echo hello > hello.txt" } }] },
    { tools: [{ name: "run_command", args: { command: DANGEROUS } }] },
    new AIMessage("installed"),
    { tools: [{ name: "run_command", args: { command: "cat hello.txt" } }] },
    { tools: [{ name: "run_command", args: { command: "ls" } }] },
  ]);
  const config = { configurable: { thread_id: "approve" } };
  const dir = path.join(root, "ws", "approve");

  const first = await agent.invoke({ messages: [new HumanMessage("set things up")] }, config);
  const interrupts = (first as { __interrupt__?: { value: HITLRequest }[] }).__interrupt__ ?? [];
  assert.equal(interrupts.length, 1, "the dangerous command must interrupt");
  assert.deepEqual(interrupts[0]!.value.actionRequests.map((a) => [a.name, a.args.command]), [["run_command", DANGEROUS]]);
  assert.ok(await exists(path.join(dir, "hello.txt")), "the safe command ran without approval");
  assert.ok(!(await exists(path.join(dir, "installed.txt"))), "nothing ran before approval");

  const approve: HITLResponse = { decisions: [{ type: "approve" }] };
  const resumed = await agent.invoke(new Command({ resume: approve }), config);
  assert.ok(await exists(path.join(dir, "installed.txt")), "approved command ran");
  const ran = toolMessages(resumed.messages).find((m) => text(m).includes("exit") && m.name === "run_command" && !text(m).includes("hello"));
  assert.ok(ran, "a run_command result follows the approval");
  assert.ok(!text(ran).includes(root), "tool output holds no host path");
  // The model call after the approved command saw a fresh tree listing installed.txt.
  const afterApproval = model.calls[2]!.messages as BaseMessage[];
  assert.ok(afterApproval.some(isWorkspaceTreeMessage), "the workspace was shown");
  assert.ok(workspaceView(afterApproval).has("installed.txt"), "the model was told about installed.txt");

  const second = await agent.invoke({ messages: [new HumanMessage("check it")] }, config);
  const results = toolMessages(second.messages);
  const blocked = results[results.length - 1]!;
  assert.equal(blocked.status, "error", "the 4th run_command in the thread exceeds threadLimit 3");
  assert.match(text(blocked), /limit/i);
  assert.equal((second.messages as BaseMessage[]).at(-1), blocked, "exitBehavior continue: the blocked call is answered with an error");

  // Summarisation replaced the early history; the FileManager put a tree back before the model call.
  const lastCall = model.calls.at(-1)!.messages as BaseMessage[];
  assert.ok(lastCall.some((m) => text(m).includes("Summary: the user set up files")), "history was summarised");
  const restored = lastCall.filter(isWorkspaceTreeMessage);
  assert.ok(restored.some((m) => /<workspace_tree/.test(text(m))), "a full tree is back after summarisation");
  const earlierIds = new Set(afterApproval.filter(isWorkspaceTreeMessage).map((m) => m.id));
  const lastFull = restored.filter((m) => /<workspace_tree/.test(text(m))).at(-1)!;
  assert.ok(!earlierIds.has(lastFull.id), "the summarised tree was followed by a fresh one (no structural change needed)");
  assert.ok(workspaceView(lastCall).has("installed.txt"));
  assertToolPairsValid(lastCall);
});

test("reject: the command never runs and the model is told why", async () => {
  const { agent } = buildAgent([{ tools: [{ name: "run_command", args: { command: DANGEROUS } }] }, new AIMessage("ok, skipped")]);
  const config = { configurable: { thread_id: "reject" } };
  const first = await agent.invoke({ messages: [new HumanMessage("install it")] }, config);
  assert.equal((first as { __interrupt__?: unknown[] }).__interrupt__?.length, 1);
  const reject: HITLResponse = { decisions: [{ type: "reject", message: "Not on this machine." }] };
  const resumed = await agent.invoke(new Command({ resume: reject }), config);
  assert.ok(!(await exists(path.join(root, "ws", "reject", "installed.txt"))), "rejected command did not run");
  const rejection = toolMessages(resumed.messages).at(-1)!;
  assert.match(text(rejection), /Not on this machine/);
  assert.equal((resumed.messages as BaseMessage[]).at(-1)!.content, "ok, skipped");
});

/** Every ToolMessage answers a tool call of an earlier AI message (what OpenAI requires). */
function assertToolPairsValid(messages: BaseMessage[]): void {
  const open = new Set<string>();
  for (const m of messages) {
    if (AIMessage.isInstance(m)) for (const c of m.tool_calls ?? []) open.add(c.id!);
    if (ToolMessage.isInstance(m)) assert.ok(open.has(m.tool_call_id), `orphan ToolMessage ${m.tool_call_id}`);
  }
}
