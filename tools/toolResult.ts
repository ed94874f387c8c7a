/**
 * The one shape of a tool answer. Success: the tool's own text. Failure: one builder,
 * {@link toolError}, for every tool of the package and every middleware wrapper that answers for
 * a tool — a ToolMessage with `status: "error"` (inside a run) whose content is the JSON object
 * `{"error": "<what happened>. <how to fix the call>", ...details}` (details such as `path` or
 * `backend` beside it), the same whether the FileManager middleware is there or not. JSON because
 * most of the package's tools answer JSON already; one shape lets a model, a client or a
 * middleware read any failure the same way. Argument errors have one formatter,
 * {@link argumentError}, used by the middleware's guards and by {@link markWorkbenchTool}.
 */
import { ToolMessage } from "@langchain/core/messages";
import { ToolInputParsingException } from "@langchain/core/tools";

/** The id of the tool call being answered, from a tool's config / runtime (absent on direct calls). */
export function toolCallIdOf(config: unknown): string | undefined {
  const c = (config ?? {}) as { toolCallId?: unknown; toolCall?: { id?: unknown } };
  const id = c.toolCallId ?? c.toolCall?.id;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/**
 * A tool's answer: `content` on success (or on a direct call without a tool call id); on failure
 * inside a run, a ToolMessage with `status: "error"`, so callers and middleware tell failures
 * apart without parsing. Failures are best built with {@link toolError}, which also gives
 * `content` the one error shape.
 */
export function toolAnswer(toolName: string, config: unknown, content: string, isError = false): string | ToolMessage {
  const id = toolCallIdOf(config);
  if (!isError || !id) return content;
  return new ToolMessage({ content, tool_call_id: id, name: toolName, status: "error" });
}

/**
 * The content of every failed tool call: `{"error": message, ...details}` as JSON, `error`
 * first. `message` says what happened and how to fix the call; a `details.error` is ignored.
 */
export function toolErrorContent(message: string, details: Record<string, unknown> = {}): string {
  const { error: _ignored, ...rest } = details;
  return JSON.stringify({ error: message, ...rest });
}

/**
 * The failure answer of a tool: inside a run (the config carries the tool call id) a ToolMessage
 * with `status: "error"` and {@link toolErrorContent}; on a direct call without an id, that
 * content alone. `artifact` (for `content_and_artifact` tools) rides on the ToolMessage.
 *
 * @example
 * ```ts
 * return toolError("get_current_time", config, `unknown time zone "${zone}". Use an IANA zone name such as "UTC"`);
 * ```
 */
export function toolError(
  toolName: string,
  config: unknown,
  message: string,
  details?: Record<string, unknown>,
  artifact?: unknown,
): string | ToolMessage {
  const id = toolCallIdOf(config);
  return id ? errorToolMessage({ id, name: toolName }, message, details, artifact) : toolErrorContent(message, details);
}

/**
 * {@link toolError} as a ToolMessage always: for wrappers (`wrapToolCall`) that answer a tool
 * call themselves instead of letting an exception end the run.
 */
export function errorToolMessage(
  toolCall: { id?: string | undefined; name: string },
  message: string,
  details?: Record<string, unknown>,
  artifact?: unknown,
): ToolMessage {
  return new ToolMessage({
    content: toolErrorContent(message, details),
    tool_call_id: toolCall.id ?? "",
    name: toolCall.name,
    status: "error",
    ...(artifact === undefined ? {} : { artifact }),
  });
}

/**
 * The message of any thrown value: an Error's message, a string, JSON of an object, else its
 * type. Never throws (a getter or a cyclic object is described, not followed into a crash).
 */
export function describeThrown(error: unknown): string {
  try {
    if (error instanceof Error) return error.message;
    if (typeof error === "string") return error;
    if (error === null || error === undefined) return `it threw ${String(error)} instead of an Error`;
    if (typeof error === "object") {
      const message = (error as { message?: unknown }).message;
      if (typeof message === "string") return message;
      return (JSON.stringify(error) ?? Object.prototype.toString.call(error)).slice(0, 500);
    }
    return String(error);
  } catch {
    return Object.prototype.toString.call(error);
  }
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
        return toolError(name, id ? { toolCallId: id } : undefined, text);
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
