import { ToolMessage } from "@langchain/core/messages";
import { ToolInputParsingException } from "@langchain/core/tools";
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

/** Metadata key that marks tools made by this package (they resolve and confine paths themselves). */
export const WORKBENCH_TOOL_METADATA_KEY = "workbench";

type CallableTool = {
  name?: string;
  metadata?: Record<string, unknown>;
  schema?: unknown;
  call?: (arg: unknown, ...rest: unknown[]) => Promise<unknown>;
};

/**
 * Marks `tool` as made by this package: the FileManager middleware then leaves its path
 * arguments alone (`pathArgs` is for foreign tools). Also makes argument-schema failures answer
 * instead of throw: LangChain throws `ToolInputParsingException` before the tool runs, and once
 * any middleware defines `wrapToolCall` such a throw ends the whole run. Returns the same tool.
 */
export function markWorkbenchTool<T extends { metadata?: Record<string, unknown> }>(tool: T): T {
  tool.metadata = { ...tool.metadata, [WORKBENCH_TOOL_METADATA_KEY]: true };
  const callable = tool as T & CallableTool;
  const call = callable.call;
  if (typeof call === "function" && !(call as { workbenchGuarded?: boolean }).workbenchGuarded) {
    const guarded = async function (this: unknown, arg: unknown, ...rest: unknown[]) {
      try {
        return await call.call(callable, arg, ...rest);
      } catch (error) {
        if (!(error instanceof ToolInputParsingException)) throw error;
        const content = describeArgumentError(callable, error);
        const id = isToolCall(arg) ? arg.id : toolCallIdOf(rest[0]);
        return id ? new ToolMessage({ content, tool_call_id: id, name: callable.name, status: "error" }) : content;
      }
    };
    (guarded as { workbenchGuarded?: boolean }).workbenchGuarded = true;
    callable.call = guarded;
  }
  return tool;
}

function isToolCall(arg: unknown): arg is { id: string; args: unknown } {
  return Boolean(arg && typeof arg === "object" && (arg as { type?: string }).type === "tool_call" && typeof (arg as { id?: unknown }).id === "string");
}

function toolCallIdOf(config: unknown): string | undefined {
  const id = (config as { toolCall?: { id?: unknown } } | undefined)?.toolCall?.id;
  return typeof id === "string" ? id : undefined;
}

/** An error text naming what was wrong and what each argument should be, so the model can retry. */
export function describeArgumentError(tool: { name?: string; schema?: unknown }, error: Error): string {
  const name = tool.name ?? "this tool";
  const details = error.message.replace(/^Received tool input did not match expected schema\s*/, "").trim();
  const shape = (tool.schema as { shape?: Record<string, { description?: string; isOptional?: () => boolean }> } | undefined)?.shape;
  const expected = shape
    ? Object.entries(shape)
        .map(([key, field]) => `- ${key}${field.isOptional?.() ? " (optional)" : ""}: ${field.description ?? "see the tool schema"}`)
        .join("\n")
    : "";
  return [
    `Error: invalid arguments for ${name}.`,
    details,
    expected && `Arguments ${name} takes:\n${expected}`,
    `Fix the arguments and call ${name} again.`,
  ]
    .filter(Boolean)
    .join("\n");
}

/** True for tools marked with {@link markWorkbenchTool}. */
export function isWorkbenchTool(tool: unknown): boolean {
  if (!tool || typeof tool !== "object") return false;
  const metadata = (tool as { metadata?: Record<string, unknown> }).metadata;
  return metadata?.[WORKBENCH_TOOL_METADATA_KEY] === true;
}
