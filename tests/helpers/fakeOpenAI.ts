/** Pieces of OpenAI's chat-completions wire format for loopback fake servers in tests. */

/** One scripted assistant turn: text, or tool calls in OpenAI's shape. */
export type ChatReply = {
  content?: string;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
};

/** The response body OpenAI sends for `reply` as the `n`-th completion of `model`. */
export function chatCompletionBody(reply: ChatReply, n: number, model: unknown) {
  return {
    id: `chatcmpl-${n}`,
    object: "chat.completion",
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: reply.content ?? null, ...(reply.tool_calls ? { tool_calls: reply.tool_calls } : {}) },
        finish_reason: reply.tool_calls ? "tool_calls" : "stop",
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}
