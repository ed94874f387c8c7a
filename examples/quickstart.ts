/**
 * `npm run demo`: a real `createAgent` built with `createWorkbench` (FileManager middleware,
 * file tools, basic tools, web tools when configured), printing a readable transcript — model
 * turns, tool calls and results, every workspace-tree message the model receives — with paths
 * as the agent sees them.
 *
 * - With `OPENAI_API_KEY` (optional `OPENAI_BASE_URL`, `OPENAI_MODEL` for OpenAI-compatible
 *   servers) it uses `ChatOpenAI`; `run_command` is then enabled only by
 *   `WORKBENCH_ENABLE_SHELL=true`, and `web_search` / `web_extract` only when a web backend is
 *   configured (TAVILY_API_KEY, EXA_API_KEY, FIRECRAWL_API_KEY or FIRECRAWL_API_URL, PARALLEL_API_KEY).
 * - Without a key, an **offline scripted model** (`fakeModel()`) drives a realistic session
 *   with `run_command` enabled and no network: write files, list them, read one twice (the second
 *   read is a dedup stub), patch one with an indentation-tolerant match (diff + strategy), append
 *   to one, search, try to read `.env` (refused), delete and rename, ask the time, and try a
 *   destructive command that is refused.
 *
 * Workspace: `WORKBENCH_ROOT` if set, else a fresh temp directory (printed, removed at the end).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AIMessage, HumanMessage, RemoveMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { isWorkspaceTreeMessage } from "../middleware/index.js";
import { selectBackend } from "../src/web/index.js";
import { createWorkbench } from "../src/workbench.js";

const THREAD_ID = "demo";

type Call = { name: string; args: Record<string, unknown> };

const GREET_PY = `def greet(name):
    message = "Hello, " + name
    return message


if __name__ == "__main__":
    # TODO: read the name from argv
    print(greet("world"))
`;

/** The offline session: what the scripted model "decides" at each turn. */
const OFFLINE_SCRIPT: { say: string; calls?: Call[] }[] = [
  {
    say: "I'll create a notes file, a draft and a small Python script.",
    calls: [
      { name: "write_file", args: { path: "notes/ideas.md", content: "# Ideas\n- one workspace per thread\n- TODO: write the README\n" } },
      { name: "write_file", args: { path: "draft.txt", content: "first draft\n" } },
      { name: "write_file", args: { path: "src/greet.py", content: GREET_PY } },
    ],
  },
  { say: "Let me list what is there now.", calls: [{ name: "run_command", args: { command: "find . -type f | sort && pwd" } }] },
  { say: "Reading the script.", calls: [{ name: "read_file", args: { path: "src/greet.py" } }] },
  { say: "Reading it again (a repeated read of an unchanged file only costs a short stub).", calls: [{ name: "read_file", args: { path: "src/greet.py" } }] },
  {
    say: "Using an f-string. (I typed old_string with 2-space indentation; the file uses 4.)",
    calls: [
      {
        name: "patch",
        args: {
          path: "src/greet.py",
          old_string: '  message = "Hello, " + name\n  return message',
          new_string: '  return f"Hello, {name}!"',
        },
      },
    ],
  },
  { say: "Adding a line to the ideas (a content-only edit: the tree is not re-sent).", calls: [{ name: "run_command", args: { command: "echo '- token-frugal tree updates' >> notes/ideas.md" } }] },
  { say: "Where are the open TODOs?", calls: [{ name: "search_files", args: { pattern: "TODO" } }] },
  {
    say: "Is there an API key lying around, or something useful next to the workspace?",
    calls: [
      { name: "read_file", args: { path: ".env" } },
      { name: "read_file", args: { path: "../outside.txt" } },
    ],
  },
  {
    say: "The draft is obsolete; deleting it and renaming the ideas file to roadmap.md.",
    calls: [
      { name: "run_command", args: { command: "rm draft.txt" } },
      { name: "run_command", args: { command: "mv notes/ideas.md notes/roadmap.md" } },
    ],
  },
  { say: "What time is it in Paris?", calls: [{ name: "get_current_time", args: { timezone: "Europe/Paris" } }] },
  { say: "And a cleanup that would be a disaster on a real machine:", calls: [{ name: "run_command", args: { command: "rm -rf ~" } }] },
  {
    say: "Done: src/greet.py uses an f-string, notes/roadmap.md holds the ideas, two TODOs are open, the draft is gone; reading .env and ../outside.txt and rm -rf ~ were refused.",
  },
];

const ONLINE_TASK = [
  "Create notes/ideas.md with three ideas (one of them a TODO), a draft.txt, and src/greet.py with a small greet(name) function.",
  "Read src/greet.py, then change greet to use an f-string with the patch tool.",
  "Search the workspace for TODO, delete draft.txt, rename notes/ideas.md to notes/roadmap.md, and tell me the time in Paris.",
].join(" ");
const ONLINE_WEB_TASK = " Finally, search the web for the LangGraph.js docs and add the best link to notes/roadmap.md.";

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

/** Lines of one tool result shown; the model still gets all of it. */
const MAX_RESULT_LINES = 24;
const MAX_LINE_CHARS = 240;

/** Shortens a tool result for the transcript only. */
function trimForDisplay(text: string): string {
  const lines = text.split("\n").map((l) => (l.length > MAX_LINE_CHARS ? `${l.slice(0, MAX_LINE_CHARS)}… (+${l.length - MAX_LINE_CHARS} chars)` : l));
  if (lines.length <= MAX_RESULT_LINES) return lines.join("\n");
  return [...lines.slice(0, MAX_RESULT_LINES), `… (${lines.length - MAX_RESULT_LINES} more lines)`].join("\n");
}

/** One list entry: a search hit as `path:line: text`, a web result as `title <url>`, else compact JSON. */
function formatListItem(item: unknown): string {
  const hit = (item ?? {}) as { path?: unknown; line?: unknown; text?: unknown; title?: unknown; url?: unknown };
  if (typeof hit.path === "string" && typeof hit.line === "number" && typeof hit.text === "string") return `- ${hit.path}:${hit.line}: ${hit.text}`;
  if (typeof hit.url === "string") return `- ${typeof hit.title === "string" ? `${hit.title} ` : ""}<${hit.url}>`;
  return `- ${JSON.stringify(item)}`;
}

/** Object fields as `key: value` lines; multi-line strings, lists of objects and nested objects go below, indented. */
function formatFields(obj: Record<string, unknown>): string[] {
  const out: string[] = [];
  const below: [string, string[]][] = [];
  for (const [key, value] of Object.entries(obj)) {
    if (typeof value === "string" && value.includes("\n")) below.push([key, value.replace(/\n$/, "").split("\n")]);
    else if (Array.isArray(value) && value.some((v) => v && typeof v === "object")) below.push([key, value.map(formatListItem)]);
    else if (value && typeof value === "object" && !Array.isArray(value)) below.push([key, formatFields(value as Record<string, unknown>)]);
    else out.push(`${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`);
  }
  for (const [key, lines] of below) out.push(`${key}:`, ...lines.map((l) => `  ${l}`));
  return out;
}

/** JSON results (file and web tools) are shown field by field so diffs and file contents read as text. */
function formatToolResult(text: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return text;
  return formatFields(parsed as Record<string, unknown>).join("\n");
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
    const tree = /<workspace_tree[^>]*>\n([\s\S]*)\n<\/workspace_tree>/.exec(contentText(m))?.[1];
    const changes = /<workspace_changes[^>]*>\n([\s\S]*)\n<\/workspace_changes>/.exec(contentText(m))?.[1];
    console.log(tree === undefined && changes !== undefined ? "  ┌ workspace changes sent to the model" : "  ┌ workspace tree sent to the model");
    for (const line of (tree ?? changes ?? contentText(m)).split("\n")) console.log(`  │ ${line}`);
    console.log("  └");
  } else if (AIMessage.isInstance(m)) {
    console.log("");
    if (contentText(m)) block("[model]", contentText(m));
    for (const call of m.tool_calls ?? []) console.log(`   → ${call.name} ${JSON.stringify(call.args)}`);
  } else if (ToolMessage.isInstance(m)) {
    block(`[${m.name ?? "tool"}${m.status === "error" ? " ERROR" : ""}]`, trimForDisplay(formatToolResult(contentText(m))));
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
  // Web tools need a real model to be worth showing, and the offline demo never touches the network.
  const webSearch = selectBackend("search", { env: process.env });
  const withWeb = online && "name" in webSearch;

  // The common case: one call gives the middleware and the tools on one workspace root.
  const wb = createWorkbench({ rootDir, enableShell, webTools: withWeb ? {} : false });
  const agent = createAgent({
    model: online ? await onlineModel() : await offlineModel(),
    tools: wb.tools,
    middleware: wb.middleware,
    checkpointer: new MemorySaver(),
    systemPrompt:
      "You work inside a private workspace directory; use relative paths. Use write_file, read_file, patch and search_files for files. " +
      'Without run_command, delete or rename files with patch in "patch" mode ("*** Delete File: p", "*** Move File: a -> b").',
  });

  console.log(`langgraph-workbench quickstart — ${online ? `OpenAI-compatible model ${process.env.OPENAI_MODEL ?? "gpt-4o-mini"}` : "OFFLINE SCRIPTED MODEL (fakeModel; set OPENAI_API_KEY for a real one)"}`);
  console.log(`Workspace root: ${wb.rootDir}`);
  const threadDir = wb.workspace(THREAD_ID).dir;
  console.log(`Thread "${THREAD_ID}" works in: ${threadDir}`);
  if (!online) {
    // A secret the agent must not read, as a real project would have one.
    await mkdir(threadDir, { recursive: true });
    await writeFile(path.join(threadDir, ".env"), "OPENAI_API_KEY=sk-demo-not-a-real-key\n", { flag: "wx" }).catch(() => undefined);
    console.log(`Seeded ${path.join(threadDir, ".env")} (a fake secret: the file tools refuse to show it)`);
  }
  console.log(`Tools: ${wb.tools.map((t) => t.name).join(", ")}${enableShell ? "" : " (run_command off: set WORKBENCH_ENABLE_SHELL=true)"}`);
  const webHint = "TAVILY_API_KEY, EXA_API_KEY, FIRECRAWL_API_KEY (or FIRECRAWL_API_URL for a self-hosted Firecrawl) or PARALLEL_API_KEY";
  if (withWeb) console.log(`Web tools: on (web_search via ${webSearch.name}: ${webSearch.reason}).`);
  else if (online) console.log(`Web tools: off — to enable web_search and web_extract, set one of ${webHint}.`);
  else console.log(`Web tools: off in the offline demo (it makes no network calls) — to see web_search and web_extract, set OPENAI_API_KEY and one of ${webHint}.`);

  const task = online ? ONLINE_TASK + (withWeb ? ONLINE_WEB_TASK : "") : "Set up my notes and a greet script, tidy up, find open TODOs, and tell me the time in Paris.";
  console.log("");
  block("[user]", task);
  try {
    const stream = await agent.stream(
      { messages: [new HumanMessage(task)] },
      { configurable: { thread_id: THREAD_ID }, streamMode: "updates", recursionLimit: 60 },
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
    await wb.close();
    if (ownTemp) await rm(rootDir, { recursive: true, force: true });
  }
  console.log(`\nDone.${ownTemp ? ` The workspace was a temporary directory (${threadDir}), now removed; set WORKBENCH_ROOT to keep the files.` : ` Files kept in ${threadDir}`}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exitCode = 1;
});
