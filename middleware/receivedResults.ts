/**
 * What the model actually received, per model call, for the tool results the file guards rely on.
 *
 * LangChain's `contextEditingMiddleware` (and any `wrapModelCall` that trims or rewrites history)
 * changes the model *request* only: `state.messages` keeps the full results. A guard that decides
 * "the model already has this read" from state would then stub a re-read of a file the model saw
 * as `[cleared]`. So each model call records which watched results (the tool calls the read
 * ledger and loop detection point at) reached the model intact, in the private `_unseenResults`
 * field; the guards treat a result listed there as gone.
 *
 * "Intact": the model got the text the tool gave (a signature taken when the tool answered, `sig`
 * on the ledger and loop entries: length and hashes of its head and tail), or the state's copy
 * as a state update left it (a PII redaction) and not marked cleared. State alone is not enough:
 * langchain 1.5's context editing replaces entries of the request's message array, which is the
 * state's own array, so after it ran state shows `[cleared]` too (marked in response_metadata).
 *
 * Where the record is taken: the FileManager's `wrapModelCall` may sit anywhere in the user's
 * middleware array, and only the innermost wrapper sees the final request. Instead of asking
 * users to put it last, the hook hands the next layer a **recording view of `request.model`**: a
 * Proxy that behaves as the model (same prototype, name, provider checks) and whose
 * `bindTools(...)` result records the messages passed to `invoke` — the call langchain's agent
 * node makes after every `wrapModelCall` has run. So the record is what the model got, whatever
 * the order. When the view is bypassed (an inner middleware swapped the model, as
 * `modelFallbackMiddleware` does after a failure — the failed attempt was recorded with the same
 * messages — or the model has no `bindTools`), the request as this hook saw it is used.
 */
import { createHash } from "node:crypto";
import { AIMessage, ToolMessage, type BaseMessage, type MessageContent } from "@langchain/core/messages";
import { Command, isCommand } from "@langchain/langgraph";
import { z } from "zod";
import type { ToolCallResult } from "./toolResults.js";
import { imagesWereMoved } from "./hoistImages.js";

/** The private field: tool call ids whose results the latest model call did not receive intact. */
export const UNSEEN_RESULTS_FIELD = "_unseenResults";

/** Its schema (last write wins: one model call per step). */
export const unseenResultsSchema = z.array(z.string());

/** The slice of state the hook reads and writes. */
export interface ReceivedResultsState {
  messages?: unknown[];
  _unseenResults?: string[] | undefined;
}

/** True unless the latest recorded model call got `toolCallId`'s result cleared, trimmed or rewritten. */
export function receivedIntact(state: ReceivedResultsState, toolCallId: string): boolean {
  return !(state._unseenResults ?? []).includes(toolCallId);
}

/** The request parts used here (langchain's `ModelRequest`). */
export interface ModelRequestView {
  model?: unknown;
  messages: readonly BaseMessage[];
  state?: unknown;
}

export type ModelHandler<Q> = (request: Q) => Promise<unknown>;

/**
 * A `wrapModelCall` body: records, for the tool call ids `watched(state)` names, which reached the
 * model intact, and returns the response — as a `Command` carrying `_unseenResults` when that
 * changed (langchain keeps the model's AIMessage and applies the update). Responses that are not
 * an AIMessage (structured output) pass through untouched. Recording never throws.
 */
export function createReceivedResultsHook<S extends ReceivedResultsState>(
  watched: (state: S) => ReadonlyMap<string, string | undefined>,
  onError?: (error: unknown) => void,
) {
  return async <Q extends ModelRequestView>(request: Q, handler: ModelHandler<Q>): Promise<unknown> => {
    const state = (request.state ?? {}) as S;
    let ids: ReadonlyMap<string, string | undefined>;
    try {
      ids = watched(state);
    } catch (error) {
      onError?.(error);
      return handler(request);
    }
    const before = state._unseenResults ?? [];
    if (ids.size === 0 && before.length === 0) return handler(request);
    let received: readonly BaseMessage[] | undefined;
    const model = recordingModel(request.model, (messages) => void (received = messages));
    const response = await handler(model === request.model ? request : { ...request, model });
    if (!AIMessage.isInstance(response) && !isCommand(response)) return response;
    let unseen: string[];
    try {
      unseen = unseenAmong(ids, (state.messages ?? []) as BaseMessage[], received ?? request.messages);
    } catch (error) {
      onError?.(error);
      return response;
    }
    if (sameList(unseen, before)) return response;
    const update = { [UNSEEN_RESULTS_FIELD]: unseen };
    if (AIMessage.isInstance(response)) return new Command({ update });
    // An inner middleware's Command: add the field to its update (langchain applies both).
    return response.update && !Array.isArray(response.update)
      ? new Command({ update: { ...(response.update as Record<string, unknown>), ...update }, goto: response.goto, graph: response.graph } as never)
      : response;
  };
}

/**
 * The ids (with the signature of their result, when known) whose ToolMessage did not reach the
 * model as the tool gave it: missing from `received`, or with another signature. Without a
 * signature (older checkpoints) the state's copy is the reference.
 */
export function unseenAmong(ids: ReadonlyMap<string, string | undefined>, stateMessages: readonly BaseMessage[], received: readonly BaseMessage[]): string[] {
  const wanted = new Set(ids.keys());
  const inState = toolResultsById(stateMessages, wanted);
  const sent = toolResultsById(received, wanted);
  const unseen: string[] = [];
  for (const [id, sig] of ids) {
    const had = inState.get(id);
    const got = sent.get(id);
    // Not in state: the guards already treat it as gone; nothing to record.
    if (!had) continue;
    // The tool's own text, or the state's copy as a state update changed it (a PII redaction
    // through a hook is what the model is meant to get) — unless context editing marked it cleared.
    // A result whose images were moved to the next user message (hoistImages.ts) arrived whole.
    const intact =
      got !== undefined && (imagesWereMoved(got) || (sig !== undefined && resultSignature(got.content) === sig) || (!markedCleared(got) && sameContent(had.content, got.content)));
    if (!intact) unseen.push(id);
  }
  return unseen;
}

/** Characters hashed at each end of a result for its signature. */
const SIGNATURE_SPAN = 512;

/**
 * A cheap fingerprint of a tool result's text: its block kinds, length, and a hash of its first
 * and last characters. O(1) in the result's size; a placeholder, a trimmed or a summarised
 * result differs. (A string and one text block of it sign the same: prompt caching wraps strings.)
 */
export function resultSignature(content: MessageContent): string {
  const { text, types } = kinds(content);
  const ends = text.length <= 2 * SIGNATURE_SPAN ? text : text.slice(0, SIGNATURE_SPAN) + text.slice(-SIGNATURE_SPAN);
  return `${types}:${text.length}:${createHash("sha1").update(ends).digest("base64url").slice(0, 16)}`;
}

/**
 * Adds the signature of this call's ToolMessage to the guard entries its update makes for it
 * (`_fileReadLedger` entries and `_toolLoop` naming `toolCallId`). Run on the result as it
 * leaves the last step that may change its text (the FileManager's path rewriting).
 */
export function signToolResult(result: ToolCallResult, toolCallId: string | undefined): ToolCallResult {
  if (!toolCallId || !isCommand(result) || !result.update || Array.isArray(result.update)) return result;
  const update = result.update as Record<string, unknown>;
  const ledger = update._fileReadLedger as Record<string, { toolCallId?: string } | null> | undefined;
  const loop = update._toolLoop as { toolCallId?: string } | null | undefined;
  const signsLedger = ledger && Object.values(ledger).some((e) => e?.toolCallId === toolCallId);
  if (!signsLedger && loop?.toolCallId !== toolCallId) return result;
  const messages = Array.isArray(update.messages) ? (update.messages as unknown[]) : [update.messages];
  const message = messages.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === toolCallId);
  if (!message) return result;
  const sig = resultSignature(message.content);
  const next: Record<string, unknown> = { ...update };
  if (signsLedger) next._fileReadLedger = Object.fromEntries(Object.entries(ledger!).map(([k, e]) => [k, e && e.toolCallId === toolCallId ? { ...e, sig } : e]));
  if (loop?.toolCallId === toolCallId) next._toolLoop = { ...loop, sig };
  return new Command({ update: next, goto: result.goto, graph: result.graph } as never);
}

/** langchain's ClearToolUsesEdit marks the placeholders it puts in (also into the state's array, in place). */
function markedCleared(message: ToolMessage): boolean {
  const meta = (message.response_metadata as { context_editing?: { cleared?: unknown } } | undefined)?.context_editing;
  return meta?.cleared === true;
}

function toolResultsById(messages: readonly BaseMessage[], wanted: ReadonlySet<string>): Map<string, ToolMessage> {
  const out = new Map<string, ToolMessage>();
  for (const m of messages) if (ToolMessage.isInstance(m) && wanted.has(m.tool_call_id)) out.set(m.tool_call_id, m);
  return out;
}

/** Same text and the same kinds of blocks (a string and one text block of it count as the same: prompt caching wraps strings). */
function sameContent(a: MessageContent, b: MessageContent): boolean {
  if (a === b) return true;
  const ka = kinds(a);
  const kb = kinds(b);
  return ka.text === kb.text && ka.types === kb.types;
}

function kinds(content: MessageContent): { text: string; types: string } {
  if (typeof content === "string") return { text: content, types: "text" };
  if (!Array.isArray(content)) return { text: "", types: "" };
  let text = "";
  const types: string[] = [];
  for (const block of content as unknown[]) {
    const b = block as { type?: unknown; text?: unknown };
    const type = typeof b?.type === "string" ? b.type : typeof block;
    if (type === "text" && typeof b.text === "string") text += b.text;
    if (types.at(-1) !== type || type !== "text") types.push(type);
  }
  return { text, types: types.join(",") };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * A view of `model` that reports the messages its tool-bound form is invoked with. Everything
 * else is the model's own (methods bound to it, so private fields keep working); `instanceof`,
 * `getName()` and provider checks see the real model. Returns `model` itself when it has no
 * `bindTools` to hook.
 */
export function recordingModel<M>(model: M, record: (messages: readonly BaseMessage[]) => void): M {
  if (!model || typeof model !== "object" || typeof (model as { bindTools?: unknown }).bindTools !== "function") return model;
  return new Proxy(model as object, {
    get(target, prop) {
      if (prop === "bindTools") {
        return (...args: unknown[]) => recordingInvoke((target as { bindTools: (...a: unknown[]) => unknown }).bindTools(...args), record);
      }
      return boundMember(target, prop);
    },
  }) as M;
}

/** `runnable` with its `invoke` reporting the input messages first. */
function recordingInvoke(runnable: unknown, record: (messages: readonly BaseMessage[]) => void): unknown {
  if (!runnable || typeof runnable !== "object" || typeof (runnable as { invoke?: unknown }).invoke !== "function") return runnable;
  return new Proxy(runnable as object, {
    get(target, prop) {
      if (prop === "invoke") {
        return (input: unknown, ...rest: unknown[]) => {
          if (Array.isArray(input)) record(input as BaseMessage[]);
          return (target as { invoke: (...a: unknown[]) => unknown }).invoke(input, ...rest);
        };
      }
      return boundMember(target, prop);
    },
  });
}

function boundMember(target: object, prop: string | symbol): unknown {
  const value = Reflect.get(target, prop, target) as unknown;
  return typeof value === "function" && prop !== "constructor" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
}
