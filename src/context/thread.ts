import { Workspace, resolveRootDir } from "../workspace.js";

/**
 * The parts of a LangChain config (or a `ToolRuntime`, which is a config with a nested `config`)
 * that carry the thread id. Loose on purpose: tools are called by `ToolNode`, by users directly
 * (`tool.invoke(args, { configurable })`) and by other frameworks.
 */
export interface ThreadConfigLike {
  configurable?: { thread_id?: unknown } & Record<string, unknown>;
  config?: { configurable?: { thread_id?: unknown } & Record<string, unknown> };
}

/** The `configurable.thread_id` of a config or tool runtime, if any (numbers are stringified). */
export function threadIdFromConfig(config: unknown): string | undefined {
  if (!config || typeof config !== "object") return undefined;
  const c = config as ThreadConfigLike;
  const id = c.configurable?.thread_id ?? c.config?.configurable?.thread_id;
  if (id === undefined || id === null || id === "") return undefined;
  return typeof id === "string" ? id : String(id);
}

/**
 * The thread Workspace a tool call belongs to, from its config: `configurable.thread_id`
 * (missing → `"default"`) under `rootDir` (else `WORKBENCH_ROOT`, else `./agent_files`).
 * Lets tools work with or without the FileManager middleware. Pure: no I/O (call
 * `ws.ensure()` or `ws.resolve()` before touching the directory).
 */
export function workspaceFromConfig(config: unknown, rootDir?: string): Workspace {
  return Workspace.forThread(resolveRootDir(rootDir), threadIdFromConfig(config));
}
