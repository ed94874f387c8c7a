/**
 * The one shape of a tool answer. Success: the tool's text. Failure inside an agent run: a
 * ToolMessage with `status: "error"` whose text says how to fix the call — the same whether the
 * FileManager middleware is there or not. Argument errors have one formatter,
 * {@link argumentError}, used by the middleware's guards and by {@link markWorkbenchTool}.
 */
import { ToolMessage } from "@langchain/core/messages";
import { ToolInputParsingException } from "@langchain/core/tools";
import { fileToolProbe } from "../src/context/probes.js";

/** The id of the tool call being answered, from a tool's config / runtime (absent on direct calls). */
export function toolCallIdOf(config: unknown): string | undefined {
  const c = (config ?? {}) as { toolCallId?: unknown; toolCall?: { id?: unknown } };
  const id = c.toolCallId ?? c.toolCall?.id;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/**
 * A tool's answer: `content` on success (or on a direct call without a tool call id); on failure
 * inside a run, a ToolMessage with `status: "error"`, so callers and middleware tell failures
 * apart without parsing.
 */
export function toolAnswer(toolName: string, config: unknown, content: string, isError = false): string | ToolMessage {
  const id = toolCallIdOf(config);
  if (!isError || !id) return content;
  return new ToolMessage({ content, tool_call_id: id, name: toolName, status: "error" });
}

interface ZodLikeIssue {
  path: PropertyKey[];
  message: string;
}
interface ZodLikeSchema {
  safeParse(value: unknown): { success: boolean; error?: { issues: ZodLikeIssue[] } };
  shape?: Record<string, { description?: string }>;
}

/**
 * Checks `args` against the tool's own schema and, when they do not fit, says which field is
 * missing or of the wrong type (with the field's description) and to call again; `undefined`
 * when they fit or the tool has no zod schema.
 */
export function argumentError(tool: unknown, toolName: string, args: unknown): string | undefined {
  const schema = (tool as { schema?: ZodLikeSchema } | undefined)?.schema;
  if (!schema || typeof schema.safeParse !== "function") return undefined;
  const parsed = schema.safeParse(args ?? {});
  if (parsed.success || !parsed.error) return undefined;
  const problems = parsed.error.issues.slice(0, 5).map((issue) => {
    const field = issue.path.map(String).join(".") || "(arguments)";
    const top = String(issue.path[0] ?? "");
    const description = schema.shape?.[top]?.description;
    const given = args && typeof args === "object" ? (args as Record<string, unknown>)[top] : undefined;
    const missing = issue.path.length === 1 && (given === undefined || given === null);
    const what = missing ? `missing required field "${field}"` : `"${field}": ${issue.message}`;
    return description ? `${what} (${description})` : what;
  });
  return `Invalid arguments for ${toolName}: ${problems.join("; ")}. Fix the arguments and call ${toolName} again.`;
}

/**
 * The text of an argument error as the tool itself answers it: file tools answer JSON
 * (`{"error": …}`), the others plain text.
 */
export function argumentErrorContent(tool: unknown, text: string): string {
  return fileToolProbe(tool) ? JSON.stringify({ error: text }) : text;
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
        const name = callable.name ?? "this tool";
        const args = isToolCall(arg) ? arg.args : arg;
        const text = argumentError(callable, name, args) ?? `Invalid arguments for ${name}: ${error.message}. Fix the arguments and call ${name} again.`;
        const id = isToolCall(arg) ? arg.id : toolCallIdOf(rest[0]);
        return toolAnswer(name, id ? { toolCallId: id } : undefined, argumentErrorContent(callable, text), true);
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

/** True for tools marked with {@link markWorkbenchTool}. */
export function isWorkbenchTool(tool: unknown): boolean {
  if (!tool || typeof tool !== "object") return false;
  const metadata = (tool as { metadata?: Record<string, unknown> }).metadata;
  return metadata?.[WORKBENCH_TOOL_METADATA_KEY] === true;
}
