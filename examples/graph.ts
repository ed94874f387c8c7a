/**
 * The agent served by the LangGraph server (`examples/langgraph.json`):
 *
 *   cd examples && LANGGRAPH_CLI_NO_ANALYTICS=1 npx @langchain/langgraph-cli dev --host 127.0.0.1 --no-browser
 *
 * With `OPENAI_API_KEY` (optional `OPENAI_BASE_URL`, `OPENAI_MODEL`) it talks to an OpenAI-compatible
 * model; without, a clearly labelled scripted offline model drives it (it saves the user's message
 * to a file, reads it back and reports), so the server works with no key and no network.
 * The server passes `configurable.thread_id`, so each server thread gets its own workspace under
 * `WORKBENCH_ROOT` (default `./agent_files`).
 */
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { fakeModel } from "@langchain/core/testing";
import { ChatOpenAI } from "@langchain/openai";
import { createAgent } from "langchain";
import { isWorkspaceTreeMessage } from "../middleware/treeMessage.js";
import { createWorkbench } from "../src/workbench.js";

/** Label the scripted model puts on every answer, so nobody mistakes it for a real model. */
export const OFFLINE_LABEL = "[offline scripted model]";

function contentText(m: BaseMessage): string {
  return typeof m.content === "string" ? m.content : JSON.stringify(m.content);
}

/** One scripted step, decided from the conversation so far (works for any number of turns). */
function scriptedStep(messages: BaseMessage[]): AIMessage {
  const relevant = messages.filter((m) => !isWorkspaceTreeMessage(m) && m.getType() !== "system");
  const last = relevant[relevant.length - 1];
  const turn = relevant.filter((m) => m.getType() === "human").length;
  const id = `scripted_${turn}_${relevant.length}`;
  if (last && ToolMessage.isInstance(last)) {
    if (last.name === "write_file") {
      return new AIMessage({ content: "", tool_calls: [{ name: "read_file", args: { path: `notes/turn-${turn}.md` }, id }] });
    }
    return new AIMessage(`${OFFLINE_LABEL} Saved your message to notes/turn-${turn}.md and read it back: ${contentText(last).slice(0, 300)}`);
  }
  const said = last ? contentText(last) : "";
  return new AIMessage({
    content: "",
    tool_calls: [{ name: "write_file", args: { path: `notes/turn-${turn}.md`, content: `${said}\n` }, id }],
  });
}

/** A model that never runs out: each call answers with {@link scriptedStep}. */
export function scriptedModel(maxCalls = 10_000): BaseChatModel {
  const model = fakeModel();
  for (let i = 0; i < maxCalls; i++) model.respond((messages: BaseMessage[]) => scriptedStep(messages));
  return model;
}

function chooseModel(): BaseChatModel {
  if (!process.env.OPENAI_API_KEY) return scriptedModel();
  return new ChatOpenAI({
    model: process.env.OPENAI_MODEL ?? "gpt-4o-mini",
    ...(process.env.OPENAI_BASE_URL ? { configuration: { baseURL: process.env.OPENAI_BASE_URL } } : {}),
  });
}

export const workbench = createWorkbench({ rootDir: process.env.WORKBENCH_ROOT });

export const agent = createAgent({
  model: chooseModel(),
  tools: workbench.tools,
  middleware: workbench.middleware,
  systemPrompt: "You work in a private workspace directory. Use the file tools with paths relative to it.",
});
