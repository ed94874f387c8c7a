/**
 * `npm run demo`: a real `createAgent` with the FileManager middleware and the basic tools,
 * printing a readable transcript (model turns, tool calls and results, every workspace-tree
 * message the model receives) with paths as the agent sees them.
 *
 * - With `OPENAI_API_KEY` (optional `OPENAI_BASE_URL`, `OPENAI_MODEL` for OpenAI-compatible
 *   servers) it uses `ChatOpenAI`; `run_command` is then enabled only by `WORKBENCH_ENABLE_SHELL=true`.
 * - Without a key, an **offline scripted model** (`fakeModel()`) drives a realistic session
 *   with `run_command` enabled: create files, list them, edit one, delete one, rename one, ask
 *   the time, and try a destructive command that is refused.
 *
 * Workspace: `WORKBENCH_ROOT` if set, else a fresh temp directory (printed, removed at the end).
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AIMessage, HumanMessage, RemoveMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { StructuredTool } from "@langchain/core/tools";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { createFileManagerMiddleware, isWorkspaceTreeMessage } from "../middleware/index.js";
import { createBasicTools } from "../tools/index.js";
import { Workspace } from "../src/workspace.js";

const THREAD_ID = "demo";

type Call = { name: string; args: Record<string, unknown> };

/** The offline session: what the scripted model "decides" at each turn. */
const OFFLINE_SCRIPT: { say: string; calls?: Call[] }[] = [
  {
    say: "I'll create a notes folder with an ideas file, plus a draft.",
    calls: [{ name: "run_command", args: { command: "mkdir -p notes && printf '# Ideas\\n- one workspace per thread\\n' > notes/ideas.md && echo 'first draft' > draft.txt" } }],
  },
  { say: "Let me list what is there now.", calls: [{ name: "run_command", args: { command: "find . -type f | sort && pwd" } }] },
  { say: "Adding a line to the ideas (a content-only edit: the tree is not re-sent).", calls: [{ name: "run_command", args: { command: "echo '- token-frugal tree updates' >> notes/ideas.md" } }] },
  {
    say: "The draft is obsolete; deleting it and renaming the ideas file to roadmap.md.",
    calls: [
      { name: "run_command", args: { command: "rm draft.txt" } },
      { name: "run_command", args: { command: "mv notes/ideas.md notes/roadmap.md" } },
    ],
  },
  { say: "What time is it in Paris?", calls: [{ name: "get_current_time", args: { timezone: "Europe/Paris" } }] },
  { say: "And a cleanup that would be a disaster on a real machine:", calls: [{ name: "run_command", args: { command: "rm -rf ~" } }] },
  { say: "Done: notes/roadmap.md holds the ideas, the draft is gone, and the destructive command was refused." },
];

async function offlineModel(): Promise<BaseChatModel> {
  const { fakeModel } = await import("@langchain/core/testing");
  let model = fakeModel();
  OFFLINE_SCRIPT.forEach((turn, i) => {
    const tool_calls = (turn.calls ?? []).map((c, j) => ({ ...c, id: `call_${i}_${j}`, type: "tool_call" as const }));
    model = model.respond(new AIMessage({ content: turn.say, tool_calls }));
  });
  return model as unknown as BaseChatModel;
}

async function onlineModel(): Promise<BaseChatModel> {
  const { ChatOpenAI } = await import("@langchain/openai");
  return new ChatOpenAI({
    model: process.env.OPENAI_MODEL ?? "gpt-4o-mini",
    ...(process.env.OPENAI_BASE_URL ? { configuration: { baseURL: process.env.OPENAI_BASE_URL } } : {}),
  });
}

/** Prints a multi-line block indented under a label. */
function block(label: string, body: string): void {
  const lines = body.split("\n");
  console.log(`${label} ${lines[0]}`);
  const pad = " ".repeat(label.length + 1);
  for (const line of lines.slice(1)) console.log(pad + line);
}

function contentText(m: BaseMessage): string {
  return typeof m.content === "string" ? m.content : m.content.map((b) => ("text" in b ? String(b.text) : `[${b.type}]`)).join("");
}

function printMessage(m: BaseMessage): void {
  if (RemoveMessage.isInstance(m)) return;
  if (isWorkspaceTreeMessage(m)) {
    const tree = /<workspace_tree[^>]*>\n([\s\S]*)\n<\/workspace_tree>/.exec(contentText(m))?.[1] ?? contentText(m);
    console.log("  ┌ workspace tree sent to the model");
    for (const line of tree.split("\n")) console.log(`  │ ${line}`);
    console.log("  └");
  } else if (AIMessage.isInstance(m)) {
    if (contentText(m)) block("[model]", contentText(m));
    for (const call of m.tool_calls ?? []) console.log(`   → ${call.name} ${JSON.stringify(call.args)}`);
  } else if (ToolMessage.isInstance(m)) {
    block(`[${m.name ?? "tool"}${m.status === "error" ? " ERROR" : ""}]`, contentText(m));
  }
}

/** Collects the messages in one `updates` stream chunk (node outputs may be lists of updates). */
function messagesOf(update: unknown): BaseMessage[] {
  if (Array.isArray(update)) return update.flatMap(messagesOf);
  if (!update || typeof update !== "object") return [];
  const u = update as { messages?: unknown; update?: unknown };
  if (u.update) return messagesOf(u.update);
  return Array.isArray(u.messages) ? (u.messages as BaseMessage[]) : [];
}

async function main(): Promise<void> {
  const online = Boolean(process.env.OPENAI_API_KEY);
  const ownTemp = !process.env.WORKBENCH_ROOT;
  const rootDir = process.env.WORKBENCH_ROOT ?? (await mkdtemp(path.join(os.tmpdir(), "workbench-demo-")));
  const enableShell = online ? process.env.WORKBENCH_ENABLE_SHELL === "true" : true;

  const fileManager = createFileManagerMiddleware({ rootDir });
  const tools: StructuredTool[] = [
    ...createBasicTools({ rootDir, enableShell }),
    // ── More tools go here: the file tools (read_file, write_file, patch, search_files) and the
    // ── web tools (web_search, web_extract) plug in with the same rootDir.
  ];
  const agent = createAgent({
    model: online ? await onlineModel() : await offlineModel(),
    tools,
    middleware: [fileManager],
    checkpointer: new MemorySaver(),
    systemPrompt: "You work inside a private workspace directory. Use relative paths.",
  });

  console.log(`langgraph-workbench quickstart — ${online ? `OpenAI-compatible model ${process.env.OPENAI_MODEL ?? "gpt-4o-mini"}` : "offline scripted model (no OPENAI_API_KEY set)"}`);
  console.log(`Workspace root: ${rootDir}`);
  console.log(`Thread "${THREAD_ID}" works in: ${Workspace.forThread(rootDir, THREAD_ID).dir}`);
  console.log(`Tools: ${tools.map((t) => t.name).join(", ")}${enableShell ? "" : " (run_command off: set WORKBENCH_ENABLE_SHELL=true)"}\n`);

  const task = online
    ? "Create notes/ideas.md with two ideas and a draft.txt, list the files, delete draft.txt, rename notes/ideas.md to notes/roadmap.md, then tell me the time in Paris."
    : "Set up my notes, tidy up, and tell me the time in Paris.";
  block("[user]", task);
  try {
    const stream = await agent.stream(
      { messages: [new HumanMessage(task)] },
      { configurable: { thread_id: THREAD_ID }, streamMode: "updates", recursionLimit: 40 },
    );
    // Middleware nodes report the whole message list in their update: print each message once
    // (tool results by the call they answer: they get their id only when stored).
    const printed = new Set<string>();
    for await (const chunk of stream) {
      for (const update of Object.values(chunk as Record<string, unknown>)) {
        for (const m of messagesOf(update)) {
          const key = ToolMessage.isInstance(m) ? `tool:${m.tool_call_id}` : m.id;
          if (key && printed.has(key)) continue;
          if (key) printed.add(key);
          printMessage(m);
        }
      }
    }
  } finally {
    await fileManager.close();
    if (ownTemp) await rm(rootDir, { recursive: true, force: true });
  }
  console.log(`\nDone.${ownTemp ? " (temporary workspace removed)" : ` Files kept in ${rootDir}`}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exitCode = 1;
});
