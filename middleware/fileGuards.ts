/**
 * The stateful file guards, applied around the file tools in `wrapToolCall`:
 *
 * - **Read dedup.** A read of the same `(file, offset, limit)` with an unchanged mtime answers
 *   with a short "unchanged" stub — but only while the earlier result (found by its
 *   tool_call_id) is still in `state.messages` *and* reached the latest model call intact (see
 *   receivedResults.ts). Once summarisation removed it, or context editing / trimming cleared it
 *   in the model request, the file is read again for real. A second stub for the same window is refused, except
 *   within a run of identical consecutive reads, which loop detection answers.
 * - **Staleness.** write_file and patch on a file whose mtime changed since this thread last
 *   read (or wrote) it get a warning appended; the write still happens.
 * - **Loop detection.** The 3rd identical consecutive read_file call gets a warning (with the
 *   stub when the file is unchanged), the 4th is refused; any other tool call, a change of the
 *   file, or the earlier result leaving the conversation (summarisation) or the model's view
 *   (context editing) restarts the count.
 *
 * State lives in private (`_`) fields with reducers, so parallel tool calls of one step merge
 * and any checkpointer persists it; every map is bounded (oldest entries evicted). The tools
 * stay stateless and work without this module — then without dedup, staleness and loop checks.
 */
import { DEDUP_STUB_STATUS, dedupStubMessage } from "../src/guards/access.js";
import { BACKEND_WARNING_KEY, isStale, staleWriteWarning } from "../src/guards/staleness.js";
import { ToolMessage } from "@langchain/core/messages";
import { ReducedValue, StateSchema } from "@langchain/langgraph";
import { PackedFields } from "./packedState.js";
import { createMiddleware, type ToolCallRequest } from "langchain";
import { z } from "zod";
import { fileToolProbe, type FileToolProbe, type FileToolTarget } from "../src/context/probes.js";
import { argumentError, errorToolMessage } from "../tools/toolResult.js";
import type { ToolCallStep } from "./toolCallSteps.js";
import { isControlFlow, mapMessageText, toolErrorMessage, withStateUpdate, type ToolCallResult } from "./toolResults.js";
import { parseOptions } from "../src/options.js";
import { createReceivedResultsHook, receivedIntact, signToolResult, UNSEEN_RESULTS_FIELD, unseenResultsSchema } from "./receivedResults.js";

/** One remembered read window. */
export interface ReadLedgerEntry {
  mtimeMs: number;
  /** The tool call whose ToolMessage holds the content. */
  toolCallId: string;
  /** How many "unchanged" stubs were already given for it. */
  hits: number;
  /** Insertion order (for eviction). */
  seq: number;
  /** Signature of that ToolMessage as stored (receivedResults.ts): what "reached the model intact" is checked against. */
  sig?: string | undefined;
}

/** Last known mtime of a file this thread read or wrote. */
export interface ReadTimeEntry {
  mtimeMs: number;
  seq: number;
}

/** The consecutive-call counter of loop detection. */
export interface ToolLoopState {
  signature: string;
  count: number;
  /** The file's mtime at the last counted call (`null`: missing): a change restarts the count. */
  mtimeMs?: number | null;
  /** The last counted call: once its result left the conversation, the count restarts. */
  toolCallId?: string;
  /** Signature of that call's result (see {@link ReadLedgerEntry.sig}). */
  sig?: string | undefined;
}

const MAX_ENTRIES_MESSAGE = "maxEntries must be a positive integer";

/** Options of the file guards (`fileGuardsMiddleware`, and FileManager's `fileGuards`). */
export const fileGuardsOptionsSchema = z
  .object({
    /** Most entries kept in each ledger (default 256; the oldest are evicted). */
    maxEntries: z.number(MAX_ENTRIES_MESSAGE).int(MAX_ENTRIES_MESSAGE).positive(MAX_ENTRIES_MESSAGE).optional(),
    /** Identical consecutive read_file calls that get a warning (default 3). */
    loopWarnAt: z.number().int().optional(),
    /** Identical consecutive read_file calls that are refused (default 4). */
    loopBlockAt: z.number().int().optional(),
  })
  .strict()
  .refine(
    ({ loopWarnAt = 3, loopBlockAt = 4 }) => loopWarnAt >= 2 && loopBlockAt > loopWarnAt,
    "loopWarnAt and loopBlockAt must be integers with 2 <= loopWarnAt < loopBlockAt",
  );

/** Options of the file guards. */
export type FileGuardsOptions = z.input<typeof fileGuardsOptionsSchema>;

const DEFAULT_MAX_ENTRIES = 256;

/** File tools without a probe whose arguments still get the schema check with guiding errors. */
const ARGUMENT_CHECKED_TOOLS = new Set(["search_files"]);

/** The newest `seq` in the thread's ledgers (0 when empty). */
function newestSeq(state: FileGuardState): number {
  let newest = 0;
  for (const e of Object.values(state._fileReadLedger ?? {})) newest = Math.max(newest, e.seq);
  for (const e of Object.values(state._fileReadTimes ?? {})) newest = Math.max(newest, e.seq);
  return newest;
}

/**
 * An ordering stamp for ledger entries, owned by one guards step: time-based, so workers of one
 * checkpointed thread stay roughly in order, and never below what the thread's state already
 * holds, so a worker with a lagging clock still ranks its new entries newest.
 */
function sequencer(): (state: FileGuardState) => number {
  let counter = 0;
  let last = 0;
  return (state) => {
    counter = (counter + 1) % 1000;
    last = Math.max(Date.now() * 1000 + counter, newestSeq(state) + 1, last + 1);
    return last;
  };
}

/** Merges two records (`null` deletes a key) and keeps the newest `max` entries. */
function mergeBounded<T extends { seq: number }>(max: number) {
  return (current: Record<string, T> | undefined, update: Record<string, T | null> | undefined): Record<string, T> => {
    const merged: Record<string, T> = { ...(current ?? {}) };
    for (const [k, v] of Object.entries(update ?? {})) {
      if (v === null) delete merged[k];
      else merged[k] = v;
    }
    const keys = Object.keys(merged);
    if (keys.length <= max) return merged;
    keys.sort((a, b) => merged[a]!.seq - merged[b]!.seq);
    for (const k of keys.slice(0, keys.length - max)) delete merged[k];
    return merged;
  };
}

const ledgerEntrySchema = z.object({ mtimeMs: z.number(), toolCallId: z.string(), hits: z.number(), seq: z.number(), sig: z.string().optional() });
const readTimeSchema = z.object({ mtimeMs: z.number(), seq: z.number() });
const loopSchema = z
  .object({ signature: z.string(), count: z.number(), mtimeMs: z.number().nullable().optional(), toolCallId: z.string().optional(), sig: z.string().optional() })
  .nullable();

/**
 * The private state fields of the file guards, for a middleware's `StateSchema` (the
 * FileManager middleware spreads them into its own). Keys start with `_`: never sent to the
 * model, but checkpointed and visible to the application like any graph state.
 */
export function fileGuardStateFields(maxEntries = DEFAULT_MAX_ENTRIES) {
  if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new TypeError(`maxEntries must be a positive integer (got ${String(maxEntries)})`);
  return {
    _fileReadLedger: new ReducedValue(z.record(z.string(), ledgerEntrySchema).default(() => ({})), {
      inputSchema: z.record(z.string(), ledgerEntrySchema.nullable()),
      reducer: mergeBounded<ReadLedgerEntry>(maxEntries),
    }),
    _fileReadTimes: new ReducedValue(z.record(z.string(), readTimeSchema).default(() => ({})), {
      inputSchema: z.record(z.string(), readTimeSchema.nullable()),
      reducer: mergeBounded<ReadTimeEntry>(maxEntries),
    }),
    _toolLoop: new ReducedValue(loopSchema.default(null), {
      inputSchema: loopSchema,
      // Parallel calls of one step: the last update wins; consecutive order is per step anyway.
      reducer: (_current: ToolLoopState | null, next: ToolLoopState | null) => next,
    }),
    /** Tool call ids of watched results the latest model call got cleared or trimmed (receivedResults.ts). */
    [UNSEEN_RESULTS_FIELD]: unseenResultsSchema,
  };
}

/** The part of agent state the guards read. */
export interface FileGuardState {
  messages?: unknown[];
  _fileReadLedger?: Record<string, ReadLedgerEntry>;
  _fileReadTimes?: Record<string, ReadTimeEntry>;
  _toolLoop?: ToolLoopState | null;
  _unseenResults?: string[] | undefined;
}

/**
 * The guards' `wrapModelCall`: records which results the read ledger and loop detection point
 * at reached the model intact (see receivedResults.ts), so dedup follows what the model received.
 */
export function fileGuardsModelCallHook(onError?: (error: unknown) => void) {
  return createReceivedResultsHook<FileGuardState>((state) => {
    const ids = new Map<string, string | undefined>();
    for (const e of Object.values(state._fileReadLedger ?? {})) ids.set(e.toolCallId, e.sig);
    const loop = state._toolLoop;
    if (loop?.toolCallId) ids.set(loop.toolCallId, loop.sig);
    return ids;
  }, onError);
}

type Update = Record<string, unknown>;

function stableStringify(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "undefined";
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  const obj = value as Record<string, unknown>;
  return `{${Object.keys(obj)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${stableStringify(obj[k])}`)
    .join(",")}}`;
}

/** The result of `toolCallId` is in the history and the latest model call received it intact. */
function resultVisible(state: FileGuardState, toolCallId: string): boolean {
  return receivedIntact(state, toolCallId) && (state.messages ?? []).some((m) => ToolMessage.isInstance(m) && m.tool_call_id === toolCallId);
}

function errorMessage(request: Request, payload: { error: string } & Record<string, unknown>): ToolMessage {
  return errorToolMessage(request.toolCall, payload.error, payload);
}

function isErrorResult(msg: ToolMessage): boolean {
  if (msg.status === "error") return true;
  if (typeof msg.content !== "string") return false;
  try {
    const parsed = JSON.parse(msg.content) as unknown;
    return typeof parsed === "object" && parsed !== null && "error" in parsed;
  } catch {
    return false;
  }
}

/**
 * deepagents' write_file/edit_file put a backend result's `metadata` on the ToolMessage, which
 * the model never sees: WorkbenchBackend's warning (staleness) is moved into the text here.
 */
function surfaceBackendWarning(result: ToolCallResult): ToolCallResult {
  if (!ToolMessage.isInstance(result)) return result;
  const warning = (result.metadata as Record<string, unknown> | undefined)?.[BACKEND_WARNING_KEY];
  return typeof warning === "string" && warning !== "" ? withWarning(result, warning) : result;
}

/** Adds `_warning` text to a JSON ToolMessage (or appends a line to plain text). */
function withWarning(msg: ToolMessage, warning: string): ToolMessage {
  return mapMessageText(msg, (text) => {
    try {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      parsed._warning = parsed._warning ? `${String(parsed._warning)} ${warning}` : warning;
      return JSON.stringify(parsed);
    } catch {
      return `${text}\n\nWarning: ${warning}`;
    }
  });
}

function withUpdate(result: ToolCallResult, update: Update): ToolCallResult {
  return Object.keys(update).length === 0 ? result : withStateUpdate(result, update);
}

function displayPath(args: unknown): string {
  const p = (args as { path?: unknown })?.path;
  return typeof p === "string" ? p : "the file";
}

type Request = ToolCallRequest<any, any>;
type Handler = (request: Request) => ToolCallResult | Promise<ToolCallResult>;

/** The guards as a function of a tool call request and the handler that runs the tool. */
export type FileGuardsStep = (request: Request, handler: Handler) => Promise<ToolCallResult>;

/**
 * Builds the wrapToolCall step. Non-file tools pass straight through (they only reset loop
 * detection). Exceptions of file tools become error ToolMessages (a thrown error inside
 * `wrapToolCall` would end the whole run); interrupts (human-in-the-loop) still propagate.
 */
export function createFileGuardsStep(options: FileGuardsOptions = {}): FileGuardsStep {
  parseOptions(fileGuardsOptionsSchema, options ?? {}, "Invalid file guards options");
  return fileGuardsStepFrom(options);
}

/** {@link createFileGuardsStep} over options already checked with {@link fileGuardsOptionsSchema} (the FileManager's, nested). */
function fileGuardsStepFrom(options: FileGuardsOptions): FileGuardsStep {
  const warnAt = options.loopWarnAt ?? 3;
  const blockAt = options.loopBlockAt ?? 4;
  const nextSeq = sequencer();

  return async (request, handler) => {
    const state = (request.state ?? {}) as FileGuardState;
    const probe = fileToolProbe(request.tool);
    const loopBefore = state._toolLoop ?? null;

    if (!probe && !ARGUMENT_CHECKED_TOOLS.has(request.toolCall.name)) {
      const result = surfaceBackendWarning(await handler(request));
      return loopBefore ? withUpdate(result, { _toolLoop: null }) : result;
    }
    const badArgs = argumentError(request.tool, request.toolCall.name, request.toolCall.args);
    if (badArgs) return withUpdate(errorMessage(request, { error: badArgs }), loopBefore ? { _toolLoop: null } : {});
    if (!probe) {
      const result = await handler(request);
      return loopBefore ? withUpdate(result, { _toolLoop: null }) : result;
    }
    try {
      return probe.kind === "read" ? await guardedRead(request, handler, probe, state, loopBefore) : await guardedWrite(request, handler, probe, state);
    } catch (err) {
      if (isControlFlow(err) || request.runtime?.signal?.aborted) throw err;
      return toolErrorMessage(request.toolCall, err);
    }
  };

  async function guardedRead(
    request: Request,
    handler: Handler,
    probe: FileToolProbe,
    state: FileGuardState,
    loopBefore: ToolLoopState | null,
  ): Promise<ToolCallResult> {
    const { toolCall } = request;
    const signature = `${toolCall.name}:${stableStringify({ path: (toolCall.args as { path?: unknown })?.path, window: probe.window?.(toolCall.args) })}`;
    const targets = await probe.targets(toolCall.args, request.runtime);
    const target: FileToolTarget | undefined = targets[0];
    const mtimeMs = target ? target.mtimeMs : null;
    // Same call again, on the same file version, and the model still has the previous answer.
    const repeats =
      loopBefore?.signature === signature &&
      (loopBefore.mtimeMs === undefined || loopBefore.mtimeMs === mtimeMs) &&
      (loopBefore.toolCallId === undefined || resultVisible(state, loopBefore.toolCallId));
    const ledgerKey = target && probe.window ? `${target.key}\0${probe.window(toolCall.args)}` : undefined;
    const entry = ledgerKey ? state._fileReadLedger?.[ledgerKey] : undefined;
    const sameVersion = target !== undefined && target.mtimeMs !== null && entry !== undefined && entry.mtimeMs === target.mtimeMs;
    // The model lost the content (cleared in its request, summarised): asking again is no loop.
    const contentLost = sameVersion && !resultVisible(state, entry.toolCallId);
    const count = repeats && !contentLost ? loopBefore.count + 1 : 1;
    const update: Update = { _toolLoop: { signature, count, mtimeMs, ...(toolCall.id ? { toolCallId: toolCall.id } : {}) } };
    if (count >= blockAt) {
      return withUpdate(
        errorMessage(request, {
          error: `Blocked: this is call ${count} in a row of ${toolCall.name} with the same path, offset and limit. The content has not changed — use the result you already have, read a different window (offset), or move on to the next step.`,
        }),
        update,
      );
    }
    const loopWarning =
      count >= warnAt
        ? `You called ${toolCall.name} with the same arguments ${count} times in a row. The next identical call will be refused; use the content you already have.`
        : undefined;

    if (sameVersion && ledgerKey && !contentLost) {
      // A run of identical consecutive reads is loop detection's to answer (warn, then block).
      if (entry.hits >= 1 && count === 1) {
        return withUpdate(
          errorMessage(request, {
            error: `Blocked: "${displayPath(toolCall.args)}" (same offset and limit) is unchanged and its content is already in the conversation (tool call ${entry.toolCallId}). Use that result instead of reading it again, or read a different window.`,
          }),
          update,
        );
      }
      update._fileReadLedger = { [ledgerKey]: { ...entry, hits: entry.hits + 1 } };
      const stub: Record<string, unknown> = {
        status: DEDUP_STUB_STATUS,
        dedup: true,
        path: displayPath(toolCall.args),
        message: dedupStubMessage(entry.toolCallId),
      };
      if (loopWarning) stub._warning = loopWarning;
      return withUpdate(new ToolMessage({ content: JSON.stringify(stub), tool_call_id: toolCall.id ?? "", name: toolCall.name }), update);
    }

    let result = await handler(request);
    if (ToolMessage.isInstance(result) && !isErrorResult(result) && target && target.mtimeMs !== null && ledgerKey && toolCall.id) {
      const seq = nextSeq(state);
      update._fileReadLedger = { [ledgerKey]: { mtimeMs: target.mtimeMs, toolCallId: toolCall.id, hits: 0, seq } };
      update._fileReadTimes = { [target.key]: { mtimeMs: target.mtimeMs, seq } };
    }
    if (loopWarning && ToolMessage.isInstance(result)) result = withWarning(result, loopWarning);
    return withUpdate(result, update);
  }

  async function guardedWrite(
    request: Request,
    handler: Handler,
    probe: FileToolProbe,
    state: FileGuardState,
  ): Promise<ToolCallResult> {
    const config = request.runtime;
    const before = await probe.targets(request.toolCall.args, config);
    const stale = before.filter((t) => isStale(state._fileReadTimes?.[t.key]?.mtimeMs, t.mtimeMs));
    let result = await handler(request);
    const update: Update = state._toolLoop ? { _toolLoop: null } : {};
    if (!ToolMessage.isInstance(result) || isErrorResult(result)) return withUpdate(result, update);

    // The thread's own write is not a reason for a later staleness warning.
    const after = await probe.targets(request.toolCall.args, config);
    const times: Record<string, ReadTimeEntry | null> = {};
    for (const t of after) times[t.key] = t.mtimeMs === null ? null : { mtimeMs: t.mtimeMs, seq: nextSeq(state) };
    if (Object.keys(times).length) update._fileReadTimes = times;
    if (stale.length > 0) result = withWarning(result, staleWriteWarning(stale.map((t) => t.display)));
    return withUpdate(result, update);
  }
}

/**
 * The guards as a FileManager pipeline step (see `ToolCallStep` in toolCallSteps.ts). The
 * FileManager middleware lists it and spreads {@link fileGuardStateFields} into its state.
 */
export function fileGuardsToolCallStep(options: FileGuardsOptions = {}): ToolCallStep {
  return asToolCallStep(createFileGuardsStep(options));
}

/** {@link fileGuardsToolCallStep} over options the caller checked already (the FileManager, as part of its own). */
export function checkedFileGuardsToolCallStep(options: FileGuardsOptions = {}): ToolCallStep {
  return asToolCallStep(fileGuardsStepFrom(options));
}

function asToolCallStep(guards: FileGuardsStep): ToolCallStep {
  return (ctx, next) => guards(ctx.request, (request) => next({ ...ctx, request }));
}

/** The standalone guards middleware's channel for its private fields. */
export const FILE_GUARDS_CHANNEL = "_fileGuards";

/**
 * The file guards as a standalone middleware, for agents that do not use the FileManager
 * middleware (which already runs these guards — do not add both).
 */
export function fileGuardsMiddleware(options: FileGuardsOptions = {}) {
  const guards = createFileGuardsStep(options);
  // One channel for the three fields (see packedState.ts); the guards read and write them flat.
  const packed = new PackedFields(FILE_GUARDS_CHANNEL, fileGuardStateFields(options.maxEntries));
  return createMiddleware({
    name: "FileGuards",
    stateSchema: new StateSchema({ [FILE_GUARDS_CHANNEL]: packed.field }),
    wrapToolCall: packed.wrapToolCall(async (request: Request, handler: Handler) => signToolResult(await guards(request, handler), request.toolCall.id)) as never,
    wrapModelCall: packed.wrapModelCall(fileGuardsModelCallHook()) as never,
  });
}
