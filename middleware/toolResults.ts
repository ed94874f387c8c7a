import { BaseMessage, ToolMessage, type MessageContent } from "@langchain/core/messages";
import { Command, isCommand, isGraphBubbleUp } from "@langchain/langgraph";
import { rewriteContent, rewriteJsonStrings } from "../src/rewrite/values.js";
import { describeThrown, errorToolMessage } from "../tools/toolResult.js";

/** What a tool call yields inside `wrapToolCall`. */
export type ToolCallResult = ToolMessage | Command;

/** Applies `fn` to the text of a message content: the string itself, or every text block. */
export function mapContentText(content: MessageContent, fn: (text: string) => string): MessageContent {
  if (typeof content === "string") return fn(content);
  if (!Array.isArray(content)) return content;
  let changed = false;
  const blocks = content.map((block) => {
    if (block && typeof block === "object" && (block as { type?: unknown }).type === "text" && typeof (block as { text?: unknown }).text === "string") {
      const text = (block as unknown as { text: string }).text;
      const next = fn(text);
      if (next !== text) {
        changed = true;
        return { ...block, text: next };
      }
    }
    return block;
  });
  return changed ? (blocks as MessageContent) : content;
}

/**
 * A copy of `message` whose content text went through `fn`; the same object when nothing
 * changed. Copies rather than mutates: checkpoints serialise a message from its constructor
 * fields (`lc_kwargs`), so an in-place edit of `content` would not be persisted.
 */
export function mapMessageText<T>(message: T, fn: (text: string) => string): T {
  return mapMessage(message, (content) => mapContentText(content, fn));
}

/**
 * A copy of `message` with `fn` applied to every string it shows: content of any block type
 * (binary payloads excepted) and a ToolMessage's JSON `artifact`. Same object when unchanged.
 */
export function mapMessageStrings<T>(message: T, fn: (text: string) => string): T {
  return mapMessage(
    message,
    (content) => rewriteContent(content, fn),
    (artifact) => rewriteJsonStrings(artifact, fn),
  );
}

function mapMessage<T>(message: T, mapContent: (c: MessageContent) => MessageContent, mapArtifact?: (a: unknown) => unknown): T {
  if (message instanceof BaseMessage) {
    const content = mapContent(message.content);
    const oldArtifact = (message as { artifact?: unknown }).artifact;
    const artifact = mapArtifact && oldArtifact !== undefined ? mapArtifact(oldArtifact) : oldArtifact;
    if (content === message.content && artifact === oldArtifact) return message;
    const Ctor = message.constructor as new (fields: Record<string, unknown>) => T;
    const fields: Record<string, unknown> = { ...(message.lc_kwargs as Record<string, unknown>), content, id: message.id };
    if (artifact !== oldArtifact) fields.artifact = artifact;
    return new Ctor(fields);
  }
  if (message && typeof message === "object" && "content" in message) {
    const m = message as { content: MessageContent; artifact?: unknown };
    const content = mapContent(m.content);
    const artifact = mapArtifact && m.artifact !== undefined ? mapArtifact(m.artifact) : m.artifact;
    if (content === m.content && artifact === m.artifact) return message;
    return (artifact === m.artifact ? { ...message, content } : { ...message, content, artifact }) as T;
  }
  return message;
}

/**
 * Applies `fn` to the text of a tool result: a ToolMessage's content, or the messages in a
 * Command's update (object or tuple-list form). Commands aimed at a parent graph are left alone.
 */
export function mapToolResultText(result: ToolCallResult, fn: (text: string) => string): ToolCallResult {
  return mapToolResultMessages(result, (m) => mapMessageText(m, fn));
}

/**
 * Applies `fn` to every string a tool result shows the model: content blocks of any type and
 * the `artifact` of its messages (see {@link mapMessageStrings}); plumbing as {@link mapToolResultText}.
 */
export function mapToolResultStrings(result: ToolCallResult, fn: (text: string) => string): ToolCallResult {
  return mapToolResultMessages(result, (m) => mapMessageStrings(m, fn));
}

function mapToolResultMessages(result: ToolCallResult, mapOne: <M>(message: M) => M): ToolCallResult {
  if (ToolMessage.isInstance(result)) return mapOne(result);
  if (!isCommand(result) || result.graph === Command.PARENT || result.update === undefined) return result;
  const mapMessages = (value: unknown) => {
    if (!Array.isArray(value)) return mapOne(value);
    const mapped = value.map((m) => mapOne(m));
    return mapped.every((m, i) => m === value[i]) ? value : mapped;
  };
  let update: Command["update"];
  if (Array.isArray(result.update)) {
    update = result.update.map(([key, value]) => (key === "messages" ? [key, mapMessages(value)] : [key, value])) as Command["update"];
  } else {
    const u = result.update as Record<string, unknown>;
    if (!("messages" in u)) return result;
    update = { ...u, messages: mapMessages(u.messages) };
  }
  return copyCommand(result, update);
}

/**
 * Adds state keys to a tool result: a ToolMessage becomes
 * `Command({ update: { messages: [msg], ...fields } })`; a Command gets the keys merged into its
 * update. Parent-graph Commands are returned unchanged (the keys are not theirs).
 */
export function withStateUpdate(result: ToolCallResult, fields: Record<string, unknown>): ToolCallResult {
  if (ToolMessage.isInstance(result)) return new Command({ update: { messages: [result], ...fields } });
  if (!isCommand(result) || result.graph === Command.PARENT) return result;
  let update: Command["update"];
  if (result.update === undefined) update = { ...fields };
  else if (Array.isArray(result.update)) update = [...result.update, ...Object.entries(fields)] as Command["update"];
  else update = { ...(result.update as Record<string, unknown>), ...fields };
  return copyCommand(result, update);
}

export function copyCommand(command: Command, update: Command["update"]): Command {
  return new Command({
    update,
    goto: command.goto,
    graph: command.graph,
    resume: command.resume,
  } as ConstructorParameters<typeof Command>[0]);
}

/**
 * Whether a thrown value is LangGraph control flow (an interrupt for human approval…) that must
 * propagate. Safe for any thrown value: `throw null` made LangGraph's own check throw a TypeError.
 */
export function isControlFlow(error: unknown): boolean {
  return typeof error === "object" && error !== null && isGraphBubbleUp(error);
}

/**
 * The error ToolMessage a wrapper returns instead of throwing: the run continues and the model
 * reads what went wrong and how to fix the call, in the one error shape of the package
 * (`errorToolMessage` in tools/toolResult.ts). `rewrite` maps system paths in the message.
 */
export function toolErrorMessage(
  toolCall: { id?: string; name: string },
  error: unknown,
  rewrite: (text: string) => string = (t) => t,
): ToolMessage {
  let detail = describeThrown(error).trim();
  while (detail.endsWith(".")) detail = detail.slice(0, -1); // one full stop before the hint
  const hint = /not allowed|outside the workspace|climbs out/i.test(detail)
    ? "Use a path inside the workspace, relative to its root."
    : "Check the arguments against the tool's schema and try again, or use another tool.";
  return errorToolMessage(toolCall, rewrite(`${toolCall.name} failed: ${detail}. ${hint}`));
}
