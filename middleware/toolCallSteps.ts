import { randomUUID } from "node:crypto";
import type { ToolCallRequest } from "langchain";
import type { FileOperations } from "../src/environment/fileOperations.js";
import { WorkspacePathError, type Workspace } from "../src/workspace.js";
import { errorToolMessage, isWorkbenchTool } from "../tools/toolResult.js";
import { isControlFlow, mapToolResultStrings, toolErrorMessage, withStateUpdate, type ToolCallResult } from "./toolResults.js";

/**
 * One tool call as it travels through the FileManager's `wrapToolCall` pipeline. A step may
 * pass on a modified copy (e.g. with mapped arguments); it never mutates the one it got.
 */
export interface ToolCallContext {
  request: ToolCallRequest;
  /** The calling thread's workspace. */
  workspace: Workspace;
  /** The tool is known never to change the workspace (see `readOnlyTools`). */
  readOnly: boolean;
  /** The host holding the files (the FileManager's `fileOps`); unset: this machine. */
  host?: Pick<FileOperations, "mkdirp" | "realpath">;
}

/** Runs the rest of the pipeline (later steps, then the tool). */
export type ToolCallNext = (ctx: ToolCallContext) => Promise<ToolCallResult>;

/**
 * A pipeline step: look at or change the call, call `next` (or answer without it, e.g. to
 * refuse), look at or change the result. Steps listed first wrap the ones after them.
 *
 * Adding a guard is a three-line change: write `const myGuard: ToolCallStep = async (ctx, next)
 * => { …; return next(ctx); }` and list it in `toolCallSteps` (option) or in
 * the `pipeline` list built in `FileManagerHooks`' constructor. Steps placed after the built-ins run inside error
 * catching and path rewriting, so they may throw and may return system paths.
 */
export type ToolCallStep = (ctx: ToolCallContext, next: ToolCallNext) => Promise<ToolCallResult>;

/** Chains `steps` in front of `handler` (the tool itself). */
export function composeToolCallSteps(
  steps: readonly ToolCallStep[],
  handler: (request: ToolCallRequest) => ToolCallResult | Promise<ToolCallResult>,
): ToolCallNext {
  const run = async (index: number, ctx: ToolCallContext): Promise<ToolCallResult> => {
    const step = steps[index];
    if (!step) return handler(ctx.request);
    return step(ctx, (next) => run(index + 1, next));
  };
  return (ctx) => run(0, ctx);
}

/** A fresh dirty mark: unique, so a check that answered it is known by the mark alone. */
export function dirtyMark(): string {
  return `dirty-${randomUUID()}`;
}

/**
 * Marks the tree dirty after any tool that may change the workspace, so the very next model
 * call re-checks the tree even if the watcher's event has not arrived yet. Failed calls count:
 * a tool can change files before it fails.
 */
export const markTreeDirtyStep: ToolCallStep = async (ctx, next) => {
  const result = await next(ctx);
  return ctx.readOnly ? result : withStateUpdate(result, { _treeDirty: dirtyMark() });
};

/**
 * Turns any exception from the tool or a later step into an error ToolMessage answering the
 * real `tool_call_id`, so a tool failure never ends the run. LangGraph control flow (interrupts
 * for human approval) and aborted runs still propagate.
 */
export function catchToolErrorsStep(options: { rewrite: boolean; onError?: (error: unknown, ctx: ToolCallContext) => void }): ToolCallStep {
  return async (ctx, next) => {
    try {
      return await next(ctx);
    } catch (error) {
      if (isControlFlow(error) || ctx.request.runtime?.signal?.aborted) throw error;
      options.onError?.(error, ctx);
      const rewrite = options.rewrite ? (t: string) => ctx.workspace.rewrite(t) : undefined;
      return toolErrorMessage(ctx.request.toolCall, error, rewrite);
    }
  };
}

/**
 * Replaces system paths in everything the tool's result shows: the thread directory becomes
 * agent paths, the root and other threads' directories placeholders (see `Workspace.rewrite`);
 * every content block type and the JSON `artifact`, binary payloads excepted.
 */
export const rewritePathsStep: ToolCallStep = async (ctx, next) =>
  mapToolResultStrings(await next(ctx), (text) => ctx.workspace.rewrite(text));

/**
 * For tools this package did not make (deepagents', MCP tools…), maps the named arguments from
 * agent paths to system paths inside the workspace before the call. A refused path (`../x`, a
 * symlink out, `/etc/passwd`) answers with an error ToolMessage and the tool never runs.
 */
export function mapPathArgsStep(pathArgs: readonly string[]): ToolCallStep {
  const names = new Set(pathArgs);
  return async (ctx, next) => {
    const { toolCall, tool } = ctx.request;
    const args = toolCall.args as Record<string, unknown> | undefined;
    if (names.size === 0 || !args || typeof args !== "object" || isWorkbenchTool(tool)) return next(ctx);
    const mapped: Record<string, unknown> = { ...args };
    let changed = false;
    const refuse = (message: string) => errorToolMessage(toolCall, message);
    try {
      for (const [key, value] of Object.entries(args)) {
        if (!names.has(key)) continue;
        if (typeof value === "string") mapped[key] = await ctx.workspace.resolve(value, ctx.host);
        else if (Array.isArray(value)) {
          // A non-string entry would reach the tool unmapped (and a tool may coerce it to a path).
          const bad = value.findIndex((v) => typeof v !== "string");
          if (bad !== -1) return refuse(`"${key}" must be a list of path strings; entry ${bad} is ${value[bad] === null ? "null" : typeof value[bad]}. Pass every path as a string relative to the workspace.`);
          mapped[key] = await Promise.all(value.map((v: string) => ctx.workspace.resolve(v, ctx.host)));
        } else continue;
        changed = true;
      }
    } catch (error) {
      if (!(error instanceof WorkspacePathError)) throw error;
      return refuse(error.message);
    }
    if (!changed) return next(ctx);
    return next({ ...ctx, request: { ...ctx.request, toolCall: { ...toolCall, args: mapped } } });
  };
}
