/**
 * Images in tool results for models that take images only from the user.
 *
 * `read_file` of a PNG (and many MCP tools) answers with an image block in the ToolMessage.
 * Anthropic, Gemini and OpenAI's Responses API accept that; OpenAI Chat Completions (and the
 * OpenAI-compatible servers that copy it) reject images outside `user` messages. So, in the
 * model *request* only (state keeps the tool's answer), each image block of a ToolMessage is
 * replaced by a short note and the images follow in a user message placed right after that
 * step's tool results, naming the tool call they came from.
 *
 * Cache-friendly: the transform is a pure function of the history, position by position, and
 * the moved images sit where the tool results were; a longer history yields a request whose
 * start is the shorter history's request byte for byte, so the provider's prompt cache keeps
 * hitting.
 */
import { HumanMessage, ToolMessage, type BaseMessage, type ContentBlock } from "@langchain/core/messages";
import { z } from "zod";

/** `"auto"` (default): decide from the model; `"inline"`: leave images in tool messages; `"user-message"`: always move them. */
export const imagesInToolResultsSchema = z.enum(["auto", "inline", "user-message"], {
  error: 'imagesInToolResults must be "auto", "inline" or "user-message"',
});
/** Where tool-result images go (see {@link imagesInToolResultsSchema}). */
export type ImagesInToolResults = z.infer<typeof imagesInToolResultsSchema>;

/** What replaces an image block in the ToolMessage. */
export const MOVED_IMAGE_NOTE = "[image moved to the next user message]";

/**
 * The `response_metadata` flag of a ToolMessage whose images were moved: the model received the
 * result whole (text here, images in the next user message), so read dedup treats it as seen.
 */
export const IMAGES_MOVED_FLAG = "workbench_images_moved";

/** True for a ToolMessage this module rewrote (its images went to the next user message). */
export function imagesWereMoved(message: ToolMessage): boolean {
  return (message.response_metadata as Record<string, unknown> | undefined)?.[IMAGES_MOVED_FLAG] === true;
}

/** The `name` of the user message carrying moved images (and the prefix of its id). */
export const TOOL_IMAGES_NAME = "tool_result_images";

/** Block types that carry an image: LangChain's standard block, OpenAI's part, and its Responses form. */
const IMAGE_TYPES = new Set(["image", "image_url", "input_image"]);

/** `llmType`s that send tool results over OpenAI's Chat Completions wire (no images in `tool` messages). */
const CHAT_COMPLETIONS_TYPES = new Set(["openai", "azure_openai"]);

function isImageBlock(block: unknown): block is Record<string, unknown> {
  return typeof block === "object" && block !== null && IMAGE_TYPES.has(String((block as { type?: unknown }).type));
}

/**
 * An image block in LangChain's standard (v1) form, `{ type: "image", mimeType, data }` or
 * `{ type: "image", url }`, from the forms tools return: standard, OpenAI's `image_url` part,
 * the Responses `input_image`, Anthropic's `source`, and core's older `source_type` blocks.
 * Unrecognised shapes stay as they are.
 */
export function standardImageBlock(block: Record<string, unknown>): Record<string, unknown> {
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  if (block.type === "image_url") {
    const raw = block.image_url;
    const url = str(raw) ?? str((raw as { url?: unknown } | undefined)?.url);
    return url ? { type: "image", url } : block;
  }
  if (block.type === "input_image") {
    const url = str(block.image_url);
    return url ? { type: "image", url } : block;
  }
  const source = block.source as { type?: unknown; media_type?: unknown; data?: unknown; url?: unknown } | undefined;
  if (source && typeof source === "object") {
    if (source.type === "base64" && str(source.media_type) && str(source.data)) return { type: "image", mimeType: source.media_type, data: source.data };
    if (source.type === "url" && str(source.url)) return { type: "image", url: source.url };
    return block;
  }
  if (block.source_type === "base64" && str(block.data)) return { type: "image", mimeType: str(block.mime_type) ?? "image/png", data: block.data };
  if (block.source_type === "url" && str(block.url)) return { type: "image", url: block.url };
  return block;
}

function hasImages(message: BaseMessage): boolean {
  return ToolMessage.isInstance(message) && Array.isArray(message.content) && message.content.some(isImageBlock);
}

/**
 * The request's messages with tool-result images moved into user messages. The same array
 * (identity) when no ToolMessage holds an image. Never throws on odd content: blocks it does not
 * recognise as images stay where they are.
 */
export function hoistToolImages(messages: readonly BaseMessage[]): readonly BaseMessage[] {
  if (!messages.some(hasImages)) return messages;
  const out: BaseMessage[] = [];
  let pending: { id: string; name: string | undefined; images: Record<string, unknown>[] }[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const content: ContentBlock[] = [];
    for (const p of pending) {
      const count = p.images.length === 1 ? "The image" : `The ${p.images.length} images`;
      content.push({ type: "text", text: `${count} returned by tool call ${p.id}${p.name ? ` (${p.name})` : ""}:` });
      for (const image of p.images) content.push(standardImageBlock(image) as ContentBlock);
    }
    // A stable id: the same history always produces the same request. `output_version: "v1"`
    // tells provider converters the blocks are standard ones (ChatOpenAI turns them into
    // `image_url` parts only then).
    out.push(new HumanMessage({ content, name: TOOL_IMAGES_NAME, id: `${TOOL_IMAGES_NAME}-${pending[0]!.id}`, response_metadata: { output_version: "v1" } }));
    pending = [];
  };
  for (const message of messages) {
    if (!ToolMessage.isInstance(message)) {
      flush();
      out.push(message);
      continue;
    }
    if (!hasImages(message)) {
      out.push(message);
      continue;
    }
    const blocks = message.content as unknown[];
    const images = blocks.filter(isImageBlock);
    const kept = blocks.map((b) => (isImageBlock(b) ? { type: "text", text: MOVED_IMAGE_NOTE } : b));
    out.push(
      new ToolMessage({
        content: kept as ContentBlock[],
        tool_call_id: message.tool_call_id,
        ...(message.name !== undefined ? { name: message.name } : {}),
        ...(message.id !== undefined ? { id: message.id } : {}),
        ...(message.status !== undefined ? { status: message.status } : {}),
        ...(message.artifact !== undefined ? { artifact: message.artifact } : {}),
        additional_kwargs: message.additional_kwargs,
        response_metadata: { ...message.response_metadata, [IMAGES_MOVED_FLAG]: true },
      }),
    );
    pending.push({ id: message.tool_call_id, name: message.name, images });
  }
  flush();
  return out;
}

/** The chat model under bindings (`withConfig`, `bindTools`) and views of it. */
function chatModelOf(model: unknown): Record<string, unknown> | undefined {
  let current = model;
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    const bound = (current as { bound?: unknown }).bound;
    if (bound === undefined) return current as Record<string, unknown>;
    current = bound;
  }
  return undefined;
}

/**
 * Whether `model` must get tool-result images in a user message. OpenAI's Chat Completions
 * models say `imageToolMessage: true` in their profile (it describes the Responses API), so the
 * wire decides first: ChatOpenAI / AzureChatOpenAI move images unless `useResponsesApi` is on.
 * Otherwise the profile's `imageToolMessage: false` moves them; an unknown model keeps them inline.
 */
export function modelNeedsImageHoist(model: unknown): boolean {
  try {
    const chat = chatModelOf(model);
    if (!chat) return false;
    const llmType = typeof chat._llmType === "function" ? String((chat._llmType as () => unknown).call(chat)) : undefined;
    if (llmType !== undefined && CHAT_COMPLETIONS_TYPES.has(llmType)) return chat.useResponsesApi !== true;
    const profile = chat.profile as { imageToolMessage?: unknown } | undefined;
    return profile?.imageToolMessage === false;
  } catch {
    return false; // A model whose getters throw: leave the request as it is.
  }
}

/** The request parts used here (langchain's `ModelRequest`). */
export interface HoistRequestView {
  model?: unknown;
  messages: readonly BaseMessage[];
}

/**
 * A `wrapModelCall` step: moves tool-result images per `mode` (see {@link hoistToolImages}) and
 * calls `handler` with the request. A failure of the transform is reported and the request goes
 * out as it was.
 */
export function hoistImagesModelCallStep(mode: ImagesInToolResults = "auto", onError?: (error: unknown) => void) {
  return <Q extends HoistRequestView, R>(request: Q, handler: (request: Q) => Promise<R>): Promise<R> => {
    if (mode === "inline") return handler(request);
    let messages: readonly BaseMessage[] = request.messages;
    try {
      if (mode === "user-message" || modelNeedsImageHoist(request.model)) messages = hoistToolImages(request.messages);
    } catch (error) {
      onError?.(error);
    }
    return handler(messages === request.messages ? request : { ...request, messages: messages as BaseMessage[] });
  };
}
