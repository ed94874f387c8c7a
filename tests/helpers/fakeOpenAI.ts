/** Pieces of OpenAI's chat-completions wire format for loopback fake servers in tests. */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

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

/** A chat message as it crosses the wire (what the fake server records). */
export type WireMessage = { role: string; content?: unknown; tool_calls?: { id: string }[]; tool_call_id?: string; name?: string };

/**
 * OpenAI Chat Completions' request rules the fake server enforces, with OpenAI's own wording
 * where it has one: images only in user messages; every tool message answers an open tool call,
 * and an assistant turn with tool calls is followed by their answers. Returns the first violation.
 */
export function openAiViolation(messages: WireMessage[]): string | undefined {
  let open = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m.role !== "user" && Array.isArray(m.content) && m.content.some((p: { type?: string }) => p.type !== "text")) {
      return `Invalid 'messages[${i}]'. Image URLs are only allowed for messages with role 'user', but this message with role '${m.role}' contains an image URL.`;
    }
    if (m.role === "tool") {
      if (!m.tool_call_id || !open.has(m.tool_call_id)) return `Invalid parameter: messages[${i}]: role 'tool' must answer a preceding 'tool_calls' entry`;
      open.delete(m.tool_call_id);
      continue;
    }
    if (open.size > 0) return `Invalid parameter: messages[${i}]: an assistant message with 'tool_calls' must be followed by tool messages answering each id`;
    open = new Set((m.role === "assistant" ? (m.tool_calls ?? []) : []).map((c) => c.id));
  }
  return undefined;
}

/**
 * A loopback server speaking OpenAI's chat-completions wire format under its rules: each request's
 * messages are recorded in `requests`; a request that breaks a rule gets OpenAI's 400; otherwise
 * the n-th request gets the n-th of `replies()` (the last one repeats).
 */
export async function startOpenAiRulesServer(replies: () => readonly ChatReply[]): Promise<{ baseURL: string; requests: WireMessage[][]; close(): Promise<void> }> {
  const requests: WireMessage[][] = [];
  const server = createServer(async (req, res) => {
    const send = (status: number, payload: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(payload));
    };
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) return send(404, { error: { message: `unexpected ${req.method} ${req.url}` } });
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const payload = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { messages: WireMessage[]; model: unknown };
    requests.push(payload.messages);
    const violation = openAiViolation(payload.messages);
    if (violation) return send(400, { error: { message: violation, type: "invalid_request_error" } });
    const list = replies();
    send(200, chatCompletionBody(list[Math.min(requests.length - 1, list.length - 1)]!, requests.length, payload.model));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
