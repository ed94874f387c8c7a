/**
 * Shared set-up for the FileManager tests: a temp workspace root, a real `createAgent` with a
 * scripted `fakeModel()`, `MemorySaver`, and small workspace-changing tools that resolve their
 * thread directory the way the package's tools do.
 */
import { appendFile, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent, createMiddleware } from "langchain";
import { z } from "zod";
import { createFileManagerMiddleware, type FileManagerMiddleware } from "../../middleware/fileManager.js";
import { isWorkspaceTreeMessage } from "../../middleware/treeMessage.js";
import { parseTreeListing } from "../../src/treeListing.js";
import { workspaceFromConfig } from "../../src/context/thread.js";

export async function tempRoot(prefix = "wb-mw-"): Promise<{ root: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { root, cleanup: () => rm(root, { recursive: true, force: true }) };
}

/** Tools that change the workspace the way file tools would (not read-only). */
/**
 * FileManagers made for one test file over the root `rootOf()` returns (it is set in `before`),
 * with the file's defaults; `closeAll` (in `after`) closes every one, tracked ones included.
 */
export function fileManagerPool(rootOf: () => string, defaults: Parameters<typeof createFileManagerMiddleware>[0] = {}) {
  const opened: FileManagerMiddleware[] = [];
  const track = (fm: FileManagerMiddleware) => {
    opened.push(fm);
    return fm;
  };
  return {
    make: (options: Parameters<typeof createFileManagerMiddleware>[0] = {}) => track(createFileManagerMiddleware({ rootDir: rootOf(), ...defaults, ...options })),
    track,
    closeAll: async () => {
      await Promise.all(opened.map((m) => m.close()));
    },
  };
}

export function workspaceTools(rootDir: string) {
  const resolve = (config: unknown, p: string) => workspaceFromConfig(config, rootDir).resolve(p);
  return [
    tool(async ({ path: p, text }, config) => {
      await writeFile(await resolve(config, p), text ?? "x\n");
      return `created ${p}`;
    }, { name: "create_file", description: "create a file", schema: z.object({ path: z.string(), text: z.string().optional() }) }),
    tool(async ({ path: p }, config) => {
      await rm(await resolve(config, p), { recursive: true });
      return `deleted ${p}`;
    }, { name: "delete_file", description: "delete a file", schema: z.object({ path: z.string() }) }),
    tool(async ({ from, to }, config) => {
      await rename(await resolve(config, from), await resolve(config, to));
      return `renamed ${from} to ${to}`;
    }, { name: "rename_file", description: "rename a file", schema: z.object({ from: z.string(), to: z.string() }) }),
    tool(async ({ path: p, text }, config) => {
      await appendFile(await resolve(config, p), text);
      return `appended to ${p}`;
    }, { name: "append_file", description: "append text", schema: z.object({ path: z.string(), text: z.string() }) }),
  ];
}

export type ToolCallSpec = { name: string; args: Record<string, unknown>; id: string };

/** A model script: each entry is one model turn (tool calls, or a final text answer). */
export type Script = (ToolCallSpec[] | string)[];

/** Builds `fakeModel()` with the script queued. */
export async function scriptedModel(script: Script) {
  const { fakeModel } = await import("@langchain/core/testing");
  let model = fakeModel();
  for (const turn of script) model = typeof turn === "string" ? model.respond(new AIMessage(turn)) : model.respondWithTools(turn);
  return model;
}

export async function makeAgent(opts: { script: Script; tools: any[]; middleware: any[]; checkpointer?: MemorySaver }) {
  const model = await scriptedModel(opts.script);
  const agent = createAgent({
    model,
    tools: opts.tools,
    middleware: opts.middleware,
    checkpointer: opts.checkpointer ?? new MemorySaver(),
  });
  return { agent, model };
}

export function treeMessages(messages: BaseMessage[]): BaseMessage[] {
  return messages.filter(isWorkspaceTreeMessage);
}

export function text(message: BaseMessage | undefined): string {
  if (!message) return "";
  return typeof message.content === "string" ? message.content : JSON.stringify(message.content);
}

/**
 * What OpenAI's chat API requires of a history: every tool message answers a tool call of an
 * earlier assistant message that has not been answered yet, and no tool message stands alone.
 * Returns the problems found (empty when valid).
 */
export function openAiHistoryProblems(messages: BaseMessage[]): string[] {
  const problems: string[] = [];
  const open = new Set<string>();
  for (const m of messages) {
    if (AIMessage.isInstance(m)) {
      open.clear();
      for (const call of m.tool_calls ?? []) if (call.id) open.add(call.id);
    } else if (ToolMessage.isInstance(m)) {
      if (!open.has(m.tool_call_id)) problems.push(`tool message ${m.tool_call_id} answers no open tool call`);
      open.delete(m.tool_call_id);
    } else if (open.size > 0 && m.getType() !== "human") {
      problems.push(`${m.getType()} message interrupts unanswered tool calls`);
    } else if (open.size > 0 && m.getType() === "human") {
      problems.push("user message before all tool calls were answered");
    }
  }
  return problems;
}

/**
 * What the model knows of the workspace from the messages it got: the entries of the last full
 * tree with every later change message applied (works in append and replace mode).
 */
export function workspaceView(messages: BaseMessage[]): Set<string> {
  const view = new Set<string>();
  for (const m of messages.filter(isWorkspaceTreeMessage)) {
    const body = text(m);
    const tree = /<workspace_tree[^>]*>\n([\s\S]*?)\n<\/workspace_tree>/.exec(body)?.[1];
    if (tree !== undefined) {
      view.clear();
      for (const key of parseTreeListing(tree).entries) view.add(key);
      continue;
    }
    const changes = /<workspace_changes[^>]*>\n([\s\S]*?)\n<\/workspace_changes>/.exec(body)?.[1] ?? "";
    for (const line of changes.split("\n")) {
      const renamed = /^renamed (.+) → (.+)$/.exec(line);
      const drop = (key: string) => [...view].filter((k) => k === key || (key.endsWith("/") && k.startsWith(key)));
      if (renamed) {
        const [, from, to] = renamed as unknown as [string, string, string];
        for (const k of drop(from)) {
          view.delete(k);
          view.add(to + k.slice(from.length));
        }
      } else if (line.startsWith("+ ")) view.add(line.slice(2));
      else if (line.startsWith("− ")) for (const k of drop(line.slice(2))) view.delete(k);
    }
  }
  return view;
}

/**
 * An outermost tool wrapper that records each ToolMessage as it left the tools (langchain 1.5's
 * context editing overwrites entries of the state's own message array in memory, so a run's
 * output may show `[cleared]` where the tools answered).
 */
export function resultSpy(seen: ToolMessage[] = []) {
  const middleware = createMiddleware({
    name: "ResultSpy",
    wrapToolCall: async (request, handler) => {
      const result = await handler(request);
      const update = (result as { update?: { messages?: unknown[] } }).update;
      for (const m of ToolMessage.isInstance(result) ? [result] : (update?.messages ?? [])) if (ToolMessage.isInstance(m)) seen.push(m);
      return result;
    },
  });
  return { middleware, seen };
}
