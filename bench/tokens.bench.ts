/**
 * Tokens a scripted 30-call file session sends to the model, with a prefix-cache model of what
 * providers bill at full price: for each call, the tokens after the longest message prefix it
 * shares with the previous call. A call whose request does not extend the previous one (an
 * earlier message edited or removed) is a prefix break. Three set-ups run the same script on
 * the same starting workspace with a real `createAgent` and a scripted model:
 * - the FileManager in append mode (the default);
 * - the FileManager in replace mode (the previous default: the old tree is removed);
 * - the anchor: a seed-style middleware that walks the workspace for the newest mtime before
 *   every call and appends the whole tree whenever it grew (content edits included).
 * Tokens are counted with js-tiktoken's `o200k_base`.
 */
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { tool } from "@langchain/core/tools";
import { MemorySaver } from "@langchain/langgraph";
import { getEncoding } from "js-tiktoken";
import { createAgent, createMiddleware } from "langchain";
import { z } from "zod";
import { createFileManagerMiddleware } from "../middleware/fileManager.js";
import { renderDirectoryTree } from "../src/tree.js";
import { workspaceFromConfig } from "../src/context/thread.js";
import { createFileTools } from "../tools/fileTools.js";
import { fmt, seedStyleNewestMtime } from "./fixtures.js";

type Call = { name: string; args: Record<string, unknown> };

const FILES_PER_DIR = 40;

const encoder = getEncoding("o200k_base");
const tokenCache = new Map<string, number>();
function tokens(text: string): number {
  let n = tokenCache.get(text);
  if (n === undefined) {
    n = encoder.encode(text).length;
    tokenCache.set(text, n);
  }
  return n;
}

/** A message as it reaches the provider (role, name, text, tool calls). */
function wire(m: BaseMessage): string {
  const ai = m as { tool_calls?: { name: string; args: unknown; id?: string }[]; tool_call_id?: string };
  const content = typeof m.content === "string" ? m.content : JSON.stringify(m.content);
  const calls = ai.tool_calls?.length ? JSON.stringify(ai.tool_calls.map((c) => [c.id, c.name, c.args])) : "";
  return `${m.getType()}|${m.name ?? ""}|${ai.tool_call_id ?? ""}|${content}|${calls}`;
}

export interface PrefixCacheFigures {
  calls: number;
  total: number;
  uncached: number;
  breaks: number;
  /** Uncached tokens of the calls that followed a prefix break beyond what they added. */
  rebilled: number;
}

/** The prefix-cache model over the requests a model received, in order. */
export function prefixCacheFigures(requests: BaseMessage[][]): PrefixCacheFigures {
  let prev: string[] = [];
  const out: PrefixCacheFigures = { calls: requests.length, total: 0, uncached: 0, breaks: 0, rebilled: 0 };
  for (const request of requests) {
    const msgs = request.map(wire);
    let shared = 0;
    while (shared < msgs.length && shared < prev.length && msgs[shared] === prev[shared]) shared++;
    const all = msgs.reduce((n, m) => n + tokens(m), 0);
    const after = msgs.slice(shared).reduce((n, m) => n + tokens(m), 0);
    out.total += all;
    out.uncached += after;
    if (shared < prev.length) {
      out.breaks++;
      // Tokens sent again although the previous request already had them (cached, had it been a prefix).
      const before = new Set(prev);
      out.rebilled += msgs.slice(shared).reduce((n, m) => n + (before.has(m) ? tokens(m) : 0), 0);
    }
    prev = msgs;
  }
  return out;
}

/** A small repository: 6 directories of 40 files, a README and a package.json (242 files). */
async function seedProject(dir: string): Promise<void> {
  const dirs = ["src/api", "src/core", "src/ui", "tests", "docs", "scripts"];
  for (const d of dirs) {
    await mkdir(path.join(dir, d), { recursive: true });
    for (let i = 0; i < FILES_PER_DIR; i++) {
      await writeFile(path.join(dir, d, `${path.basename(d)}-part-${String(i).padStart(2, "0")}.ts`), `export const v${i} = ${i};\n// ${d} part ${i}\n`);
    }
  }
  await writeFile(path.join(dir, "README.md"), "# Project\n\nA sample project.\n");
  await writeFile(path.join(dir, "package.json"), '{ "name": "sample", "version": "1.0.0" }\n');
}

/** 29 tool steps and a final answer: reads, creates, edits, deletes, renames, searches. */
function script(): Call[][] {
  const read = (p: string): Call => ({ name: "read_file", args: { path: p } });
  const write = (p: string, content: string): Call => ({ name: "write_file", args: { path: p, content } });
  const edit = (p: string, from: string, to: string): Call => ({ name: "patch", args: { path: p, old_string: from, new_string: to } });
  const del = (p: string): Call => ({ name: "delete_path", args: { path: p } });
  const mv = (from: string, to: string): Call => ({ name: "move_path", args: { from, to } });
  const search = (pattern: string): Call => ({ name: "search_files", args: { pattern } });
  return [
    [read("README.md")],
    [read("src/api/api-part-00.ts")],
    [search("export const v3")],
    [read("src/core/core-part-03.ts")],
    [write("src/core/cache.ts", "export const cache = new Map<string, string>();\n")],
    [read("src/core/cache.ts")],
    [edit("src/core/cache.ts", "new Map<string, string>()", "new Map<string, number>()")],
    [write("tests/cache.test.ts", "import { cache } from '../src/core/cache';\n")],
    [read("tests/tests-part-01.ts")],
    [edit("README.md", "A sample project.", "A sample project with a cache.")],
    [mv("src/ui/ui-part-39.ts", "src/ui/legacy-widget.ts")],
    [read("src/ui/legacy-widget.ts")],
    [del("scripts/scripts-part-39.ts")],
    [read("docs/docs-part-00.ts"), read("docs/docs-part-01.ts")],
    [write("docs/cache.md", "# Cache\n\nHow the cache works.\n")],
    [edit("docs/cache.md", "How the cache works.", "How the cache works, and when it is cleared.")],
    [read("src/api/api-part-05.ts")],
    [search("cache")],
    [write("src/api/routes.ts", "export const routes = ['/a', '/b'];\n"), write("src/api/handlers.ts", "export const handlers = {};\n")],
    [read("src/api/routes.ts")],
    [edit("src/api/routes.ts", "'/b'", "'/b', '/c'")],
    [mv("docs/docs-part-39.ts", "docs/archive-notes.ts")],
    [read("package.json")],
    [edit("package.json", '"1.0.0"', '"1.1.0"')],
    [del("tests/tests-part-39.ts")],
    [read("src/core/core-part-07.ts")],
    [write("CHANGELOG.md", "## 1.1.0\n- cache\n- routes\n")],
    [read("CHANGELOG.md")],
    [read("src/core/cache.ts")],
  ];
}

function extraTools(rootDir: string) {
  const resolve = (config: unknown, p: string) => workspaceFromConfig(config, rootDir).resolve(p);
  return [
    tool(async ({ path: p }, config) => {
      await rm(await resolve(config, p), { recursive: true });
      return `deleted ${p}`;
    }, { name: "delete_path", description: "Delete a file or directory", schema: z.object({ path: z.string() }) }),
    tool(async ({ from, to }, config) => {
      await rename(await resolve(config, from), await resolve(config, to));
      return `moved ${from} to ${to}`;
    }, { name: "move_path", description: "Move or rename a file or directory", schema: z.object({ from: z.string(), to: z.string() }) }),
  ];
}

/** The seed's behaviour: newest-mtime walk before each call; on growth, the whole tree appended. */
function seedStyleMiddleware(rootDir: string) {
  let newest = -1;
  return createMiddleware({
    name: "SeedStyleFileManager",
    beforeModel: async (_state, runtime) => {
      const dir = workspaceFromConfig({ configurable: (runtime as { configurable?: unknown }).configurable }, rootDir).dir;
      const now = await seedStyleNewestMtime(dir);
      if (now <= newest) return undefined;
      newest = now;
      const tree = await renderDirectoryTree(dir, { maxEntries: Infinity, maxChars: Infinity });
      return { messages: [new HumanMessage({ content: `The workspace changed. Current tree:\n${tree}`, name: "workspace_tree" })] };
    },
  });
}

async function session(kind: "append" | "replace" | "seed", root: string): Promise<BaseMessage[][]> {
  const thread = `tokens-${kind}`;
  await seedProject(path.join(root, thread));
  const model = fakeModel();
  let n = 0;
  for (const step of script()) model.respond(new AIMessage({ content: "", tool_calls: step.map((c) => ({ ...c, id: `call_${++n}` })) }));
  model.respond(new AIMessage("Done: cache, routes and docs are in place."));
  const fm = kind === "seed" ? undefined : createFileManagerMiddleware({ rootDir: root, tree: { mode: kind } });
  try {
    const agent = createAgent({
      model,
      tools: [...createFileTools({ rootDir: root }), ...extraTools(root)],
      middleware: fm ? [fm] : [seedStyleMiddleware(root)],
      checkpointer: new MemorySaver(),
    });
    await agent.invoke({ messages: [new HumanMessage("Add a cache module with tests and docs, tidy up, bump the version.")] }, { configurable: { thread_id: thread }, recursionLimit: 200 });
  } finally {
    await fm?.close();
  }
  return model.calls.map((c) => c.messages as BaseMessage[]);
}

export async function run(_opts: { quick: boolean }): Promise<string> {
  const root = path.join(os.tmpdir(), `wb-bench-tokens-${process.pid}`);
  await rm(root, { recursive: true, force: true });
  try {
    const append = prefixCacheFigures(await session("append", root));
    const replace = prefixCacheFigures(await session("replace", root));
    const seed = prefixCacheFigures(await session("seed", root));
    const row = (name: string, f: PrefixCacheFigures) =>
      `| ${name} | ${f.calls} | ${f.total.toLocaleString("en-US")} | ${f.uncached.toLocaleString("en-US")} | ${f.breaks} | ${f.rebilled.toLocaleString("en-US")} | ${fmt(seed.total / f.total)}× |`;
    const ok = (cond: boolean) => (cond ? "✅" : "❌");
    return [
      "## Tokens per session and the prefix cache",
      "",
      "A scripted 30-call file session (29 tool steps: reads, creates, edits, deletes, renames, searches,",
      "one step with two parallel writes) on a 242-file repository (6 directories), through a real `createAgent`.",
      "`total`: tokens of every request summed (o200k_base, messages only). `uncached`: for each call the",
      "tokens after the longest message prefix shared with the previous call (what a provider's prefix",
      "cache bills in full). `breaks`: calls whose request edited or removed an earlier message;",
      "`re-billed`: tokens of messages the previous request already had, sent again uncached after a break.",
      "Anchor: a seed-style middleware (newest-mtime walk, whole tree appended whenever it grew).",
      "",
      "| set-up | calls | total | uncached | breaks | re-billed | anchor ÷ total |",
      "|---|---|---|---|---|---|---|",
      row("FileManager, append mode (default)", append),
      row("FileManager, replace mode", replace),
      row("anchor: seed-style", seed),
      "",
      `Targets: append mode 0 prefix breaks ${ok(append.breaks === 0)} (${append.breaks}); uncached ≤ 0.6× replace mode ` +
        `${ok(append.uncached <= 0.6 * replace.uncached)} (${fmt(append.uncached / replace.uncached)}×); total ≥ 3× fewer than the anchor ` +
        `${ok(seed.total >= 3 * append.total)} (${fmt(seed.total / append.total)}×).`,
    ].join("\n");
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
