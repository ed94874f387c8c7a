/**
 * Large results of any tool, into the workspace: a foreign tool (MCP, custom) that returns more
 * than the threshold would otherwise go to the model whole. The full text (secrets redacted, as
 * any read is) is written atomically into the thread's workspace under `.tool-results/` through
 * the thread's file access, and the model gets a head/tail preview with the path and how to read
 * more (`read_file` offset/limit, `search_files`). This package's own tools are never evicted:
 * their answers are bounded already (read window, shell head/tail, web summaries).
 *
 * The folder is hidden from the workspace tree (the FileManager adds it to the tree's ignore
 * rules): the preview names the file, and saving a result does not append a change message.
 */
import { ToolMessage, type MessageContent } from "@langchain/core/messages";
import { Command, isCommand } from "@langchain/langgraph";
import { z } from "zod";
import { isWorkbenchTool } from "../tools/toolResult.js";
import { evictedResultNotice, LIMITS } from "../src/guards/limits.js";
import { redactSecrets } from "../src/guards/redact.js";
import { isTransferRefusal, putFile } from "../src/artifacts/transfer.js";
import type { FileOperations } from "../src/environment/fileOperations.js";
import type { ToolCallStep } from "./toolCallSteps.js";
import { copyCommand, type ToolCallResult } from "./toolResults.js";

/** The workspace folder evicted results are saved in. */
export const EVICTED_RESULTS_DIR = ".tool-results";

/** Options of the FileManager's `evictLargeResults`. */
export const evictLargeResultsOptionsSchema = z.strictObject({
  /** Results over this many tokens (4 characters each) are saved and previewed. Default 20,000. */
  thresholdTokens: z.number().int().min(100, "evictLargeResults.thresholdTokens must be an integer of at least 100").optional(),
  /** Characters shown from the start (default 3,000) and the end (default 1,000) of an evicted result. */
  headChars: z.number().int().min(0).optional(),
  tailChars: z.number().int().min(0).optional(),
});

export type EvictLargeResultsOptions = z.input<typeof evictLargeResultsOptionsSchema>;

/**
 * The eviction step. Place it outside path rewriting (so the saved text and the preview show
 * workspace paths) and inside error catching. A failure to save leaves the result as it was.
 */
export function evictLargeResultsStep(options: EvictLargeResultsOptions = {}, onError?: (error: unknown) => void): ToolCallStep {
  const thresholdTokens = options.thresholdTokens ?? LIMITS.evictThresholdTokens;
  const maxChars = thresholdTokens * 4;
  const head = options.headChars ?? LIMITS.evictHeadChars;
  const tail = options.tailChars ?? LIMITS.evictTailChars;
  return async (ctx, next) => {
    const result = await next(ctx);
    const { request } = ctx;
    if (isWorkbenchTool(request.tool)) return result;
    const id = request.toolCall.id;
    const message = toolMessageOf(result, id);
    const text = message && textOnly(message.content);
    if (!message || text === undefined || text.length <= maxChars) return result;
    const ops = ctx.host as FileOperations | undefined;
    if (!ops || typeof ops.writeAtomic !== "function") return result;
    try {
      const cut = text.length > LIMITS.evictMaxSavedChars;
      const saved = redactSecrets(cut ? text.slice(0, LIMITS.evictMaxSavedChars) : text);
      const name = `${EVICTED_RESULTS_DIR}/${safeName(request.toolCall.name)}-${safeName(id ?? String(Date.now()))}.txt`;
      const put = await putFile(ctx.workspace, ops, name, Buffer.from(saved, "utf8"), { maxBytes: LIMITS.evictMaxSavedChars * 4 });
      if (isTransferRefusal(put)) throw new Error(put.message);
      const preview =
        `${evictedResultNotice(request.toolCall.name, text.length, thresholdTokens, put.path, cut)}\n\n` +
        `--- start ---\n${saved.slice(0, head)}\n--- … ${Math.max(0, saved.length - head - tail)} characters not shown … ---\n${tail > 0 ? saved.slice(-tail) : ""}\n--- end ---`;
      return replaceMessage(result, message, preview);
    } catch (error) {
      onError?.(error);
      return result;
    }
  };
}

/** The ToolMessage answering `id` in a result (a ToolMessage, or a Command's `update.messages`). */
function toolMessageOf(result: ToolCallResult, id: string | undefined): ToolMessage | undefined {
  if (ToolMessage.isInstance(result)) return result;
  if (!isCommand(result) || result.graph === Command.PARENT || !result.update || Array.isArray(result.update)) return undefined;
  const messages = (result.update as { messages?: unknown }).messages;
  const list = Array.isArray(messages) ? messages : [messages];
  return list.find((m): m is ToolMessage => ToolMessage.isInstance(m) && (id === undefined || m.tool_call_id === id));
}

/** The text of a string or text-only content; undefined when other blocks (images, files) are in it. */
function textOnly(content: MessageContent): string | undefined {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  let text = "";
  for (const block of content as unknown[]) {
    const b = block as { type?: unknown; text?: unknown };
    if (b?.type !== "text" || typeof b.text !== "string") return undefined;
    text += b.text;
  }
  return text;
}

function replaceMessage(result: ToolCallResult, message: ToolMessage, content: string): ToolCallResult {
  const fields = { ...(message.lc_kwargs as Record<string, unknown>), content, id: message.id };
  const replacement = new ToolMessage(fields as unknown as ConstructorParameters<typeof ToolMessage>[0]);
  if (ToolMessage.isInstance(result)) return replacement;
  const command = result as Command;
  const update = command.update as Record<string, unknown>;
  const messages = Array.isArray(update.messages) ? update.messages.map((m) => (m === message ? replacement : m)) : replacement;
  return copyCommand(command, { ...update, messages } as Command["update"]);
}

/** A file-name-safe form of a tool name or call id (the model and the tool chose them). */
function safeName(value: string): string {
  return value.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) || "result";
}
