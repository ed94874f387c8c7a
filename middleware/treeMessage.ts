import { randomUUID } from "node:crypto";
import { HumanMessage } from "@langchain/core/messages";

/** `name` and `additional_kwargs.workbench` of the messages that carry the workspace tree. */
export const WORKSPACE_TREE_MARKER = "workspace_tree";

/**
 * True for the workspace-tree messages the FileManager middleware adds (a live message or its
 * serialised/plain form), so other middleware, UIs and trimming code can recognise them.
 */
export function isWorkspaceTreeMessage(message: unknown): boolean {
  if (!message || typeof message !== "object") return false;
  const m = message as { name?: unknown; additional_kwargs?: { workbench?: unknown }; kwargs?: { additional_kwargs?: { workbench?: unknown } } };
  return (m.additional_kwargs?.workbench ?? m.kwargs?.additional_kwargs?.workbench) === WORKSPACE_TREE_MARKER;
}

/**
 * The tree as a user message: providers accept a user message after a tool result and at the
 * start of a conversation, unlike a tool message with an invented `tool_call_id`.
 */
export function buildTreeMessage(treeText: string, options: { first: boolean; changedAt: number }): HumanMessage {
  const preface = options.first
    ? "Current files in your workspace (your working directory; use paths relative to it):"
    : "The workspace's file structure changed (files or folders were created, deleted or moved). Updated tree, paths relative to the workspace:";
  const changed = new Date(options.changedAt).toISOString();
  return new HumanMessage({
    id: `workspace-tree-${randomUUID()}`,
    name: WORKSPACE_TREE_MARKER,
    content: `${preface}\n<workspace_tree changed="${changed}">\n${treeText}\n</workspace_tree>`,
    additional_kwargs: { workbench: WORKSPACE_TREE_MARKER },
  });
}
