/**
 * Append-only workspace updates (the default `tree.mode: "append"`): change messages instead of
 * replaced trees, so every request the model gets extends the previous one (prefix cache).
 */
import assert from "node:assert/strict";
import { mkdir, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { AIMessage, HumanMessage, RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent, createMiddleware, summarizationMiddleware, tool } from "langchain";
import { z } from "zod";
import { isWorkspaceChangeMessage, treeTextOf } from "../middleware/treeMessage.js";
import { renderDirectoryTree } from "../src/tree.js";
import { parseTreeListing } from "../src/treeListing.js";
import { fileManagerPool, tempRoot, text, treeMessages, workspaceTools } from "./helpers/agentHarness.js";

let root: string;
let cleanup: () => Promise<void>;
const managers = fileManagerPool(() => root, {});
const fileManager = managers.make;

type Call = { name: string; args: Record<string, unknown>; id: string };

/** A scripted model: explicit AIMessages (content stays small however long the script). */
function scripted(turns: (Call[] | string)[]) {
  const model = fakeModel();
  for (const t of turns) model.respond(typeof t === "string" ? new AIMessage(t) : new AIMessage({ content: "", tool_calls: t }));
  return model;
}

const call = (name: string, args: Record<string, unknown>, id: string): Call => ({ name, args, id });

/** The checkpoint surface of an agent (createAgent's types hide it behind the middleware list). */
type Checkpointed = { getState(c: unknown): Promise<{ values: Record<string, any> }>; updateState(c: unknown, v: unknown): Promise<unknown> };
const checkpointed = (agent: unknown) => agent as Checkpointed;

/** A first run on a seeded thread (its tree sent), then its checkpointed state and a way to edit it. */
async function firstRun(thread: string) {
  await seedWorkspace(thread, ["old.txt"]);
  const checkpointer = new MemorySaver();
  const agent = checkpointed(createAgent({ model: scripted(["hi"]), tools: workspaceTools(root), middleware: [fileManager()], checkpointer }));
  const config = { configurable: { thread_id: thread } };
  await invoke(agent, thread);
  return { checkpointer, values: async () => (await agent.getState(config)).values, update: (v: unknown) => agent.updateState(config, v) };
}

/** A workspace big enough that a change message is cheaper than a fresh tree. */
async function seedWorkspace(thread: string, extra: string[] = []): Promise<string> {
  const dir = path.join(root, thread);
  await mkdir(path.join(dir, "src", "lib"), { recursive: true });
  await mkdir(path.join(dir, "docs"), { recursive: true });
  for (let i = 0; i < 40; i++) await writeFile(path.join(dir, "src", `component-module-${String(i).padStart(2, "0")}.ts`), "x");
  for (let i = 0; i < 6; i++) await writeFile(path.join(dir, "docs", `chapter${i}.md`), "x");
  await writeFile(path.join(dir, "src", "lib", "util.ts"), "x");
  for (const f of extra) await writeFile(path.join(dir, f), "x");
  return dir;
}

const invoke = (agent: any, thread: string, prompt = "go") =>
  agent.invoke({ messages: [new HumanMessage(prompt)] }, { configurable: { thread_id: thread } }) as Promise<{ messages: BaseMessage[] }>;

/** A message as the provider would receive it (everything that reaches the wire). */
function wire(m: BaseMessage): string {
  const ai = m as { tool_calls?: unknown; tool_call_id?: unknown };
  return JSON.stringify([m.getType(), m.id, m.name, m.content, ai.tool_calls ?? null, ai.tool_call_id ?? null]);
}

/** Problems where a request does not extend the previous one byte for byte. */
function prefixBreaks(calls: { messages: BaseMessage[] }[]): string[] {
  const problems: string[] = [];
  for (let i = 1; i < calls.length; i++) {
    const prev = calls[i - 1]!.messages.map(wire);
    const next = calls[i]!.messages.map(wire);
    if (next.length < prev.length) problems.push(`call ${i} has fewer messages (${next.length} < ${prev.length})`);
    for (let j = 0; j < Math.min(prev.length, next.length); j++) {
      if (prev[j] !== next[j]) {
        problems.push(`call ${i} changed message ${j}`);
        break;
      }
    }
  }
  return problems;
}

function changeLines(m: BaseMessage | undefined): string[] {
  const body = /<workspace_changes[^>]*>\n([\s\S]*?)\n<\/workspace_changes>/.exec(text(m))?.[1];
  return body ? body.split("\n") : [];
}

before(async () => {
  ({ root, cleanup } = await tempRoot("wb-append-"));
});

after(async () => {
  await managers.closeAll();
  await cleanup();
});

describe("append mode (default)", () => {
  it("create, delete and rename each append the right change message; every request extends the previous one", async () => {
    await seedWorkspace("crd", ["keep.txt", "old.txt"]);
    const model = scripted([
      [call("create_file", { path: "src/new.ts" }, "c1")],
      [call("delete_file", { path: "keep.txt" }, "c2")],
      [call("rename_file", { from: "old.txt", to: "renamed.txt" }, "c3")],
      [call("rename_file", { from: "src/lib", to: "src/core" }, "c4")],
      [call("rename_file", { from: "docs/chapter0.md", to: "src/chapter0.md" }, "c5")],
      "done",
    ]);
    const agent = createAgent({ model, tools: workspaceTools(root), middleware: [fileManager()], checkpointer: new MemorySaver() });
    const out = await invoke(agent, "crd");
    const updates = (i: number) => changeLines(model.calls[i]!.messages.filter(isWorkspaceChangeMessage).at(-1));
    assert.deepEqual(updates(1), ["+ src/new.ts"]);
    assert.deepEqual(updates(2), ["- keep.txt"]);
    assert.deepEqual(updates(3), ["renamed old.txt => renamed.txt"]);
    assert.deepEqual(updates(4), ["renamed src/lib/ => src/core/"], "the directory's children moved with it");
    assert.deepEqual(updates(5), ["renamed docs/chapter0.md => src/chapter0.md"]);
    assert.deepEqual(prefixBreaks(model.calls), [], "no request edits or drops an earlier message");
    const trees = treeMessages(out.messages);
    assert.equal(trees.length, 6, "one full tree + five change messages, none removed");
    assert.equal(trees.filter(isWorkspaceChangeMessage).length, 5);
    const notice = text(trees[1]);
    assert.match(notice, /generated by the workspace, not the user/, "names itself as generated");
    assert.equal(trees[1]!.getType(), "human");
  });

  it("parallel tool calls in one step give one change message with every change", async () => {
    await seedWorkspace("par", ["gone.txt"]);
    const model = scripted([
      [call("create_file", { path: "a.txt" }, "p1"), call("create_file", { path: "docs/b.md" }, "p2"), call("delete_file", { path: "gone.txt" }, "p3")],
      "done",
    ]);
    const agent = createAgent({ model, tools: workspaceTools(root), middleware: [fileManager()], checkpointer: new MemorySaver() });
    await invoke(agent, "par");
    const changes = model.calls[1]!.messages.filter(isWorkspaceChangeMessage);
    assert.equal(changes.length, 1, "one change message for the step");
    assert.deepEqual(changeLines(changes[0]).sort(), ["+ a.txt", "+ docs/b.md", "- gone.txt"]);
    assert.deepEqual(prefixBreaks(model.calls), []);
  });

  it("a content-only edit adds nothing", async () => {
    await seedWorkspace("edit", ["notes.md"]);
    const model = scripted([[call("append_file", { path: "notes.md", text: "more" }, "e1")], "done"]);
    const agent = createAgent({ model, tools: workspaceTools(root), middleware: [fileManager()], checkpointer: new MemorySaver() });
    const out = await invoke(agent, "edit");
    assert.equal(treeMessages(out.messages).length, 1);
  });

  it("a mass change falls back to a full tree (the change message stays bounded)", async () => {
    await seedWorkspace("mass");
    const bulk = tool(
      async (_input, config) => {
        const dir = path.join(root, String((config as any).configurable.thread_id), "generated");
        await mkdir(dir, { recursive: true });
        await Promise.all(Array.from({ length: 150 }, (_, i) => writeFile(path.join(dir, `generated-file-with-a-long-name-${i}.txt`), "x")));
        return "made 150 files";
      },
      { name: "bulk", description: "make many files", schema: z.object({}) },
    );
    const model = scripted([[call("create_file", { path: "one.txt" }, "m1")], [call("bulk", {}, "m2")], "done"]);
    const agent = createAgent({ model, tools: [...workspaceTools(root), bulk] as any[], middleware: [fileManager()], checkpointer: new MemorySaver() });
    const out = await invoke(agent, "mass");
    const trees = treeMessages(out.messages);
    assert.equal(trees.length, 3);
    assert.ok(isWorkspaceChangeMessage(trees[1]), "the single create is a change message");
    assert.ok(!isWorkspaceChangeMessage(trees[2]), "150 new files: a fresh tree instead");
    assert.match(text(trees[2]), /<workspace_tree/);
    assert.match(text(trees[2]), /generated\//);
    assert.ok(text(trees[2]).length < 9_000, `tree stays in budget (${text(trees[2]).length})`);
    assert.deepEqual(prefixBreaks(model.calls), []);
  });

  it("a tree summarised away by summarizationMiddleware is sent in full again", async () => {
    await seedWorkspace("summ");
    const summarizer = fakeModel();
    for (let i = 0; i < 4; i++) summarizer.respond(new AIMessage("Summary: files were created."));
    const model = scripted([
      [call("create_file", { path: "a1.txt" }, "s1")],
      [call("create_file", { path: "a2.txt" }, "s2")],
      [call("create_file", { path: "a3.txt" }, "s3")],
      [call("create_file", { path: "a4.txt" }, "s4")],
      "done",
    ]);
    const agent = createAgent({
      model,
      tools: workspaceTools(root),
      middleware: [summarizationMiddleware({ model: summarizer, trigger: { messages: 8 }, keep: { messages: 2 } }), fileManager()],
      checkpointer: new MemorySaver(),
    });
    await invoke(agent, "summ");
    const fullTrees = (i: number) => treeMessages(model.calls[i]!.messages).filter((m) => !isWorkspaceChangeMessage(m));
    const summarised = model.calls.findIndex((c) => c.messages.some((m) => text(m).includes("Summary: files were created.")));
    assert.ok(summarised > 0, "summarisation happened");
    assert.equal(fullTrees(summarised).length, 1, "a full tree is back in the very call after summarisation");
    assert.match(text(fullTrees(summarised)[0]), /a\d\.txt/);
    assert.deepEqual(prefixBreaks(model.calls.slice(0, summarised)), [], "no prefix break before summarisation");
  });

  it("a removed change message (trimmed by other middleware) also brings a full tree back", async () => {
    await seedWorkspace("trim");
    let removeId: string | undefined;
    const trimmer = createMiddleware({
      name: "Trimmer",
      beforeModel: (state: { messages: BaseMessage[] }) => {
        const change = state.messages.find(isWorkspaceChangeMessage);
        if (change && state.messages.filter((m) => m.getType() === "ai").length === 2) {
          removeId = change.id;
          return { messages: [new RemoveMessage({ id: change.id! })] };
        }
        return undefined;
      },
    });
    const model = scripted([[call("create_file", { path: "x.txt" }, "t1")], [call("create_file", { path: "y.txt" }, "t2")], "done"]);
    const agent = createAgent({ model, tools: workspaceTools(root), middleware: [trimmer, fileManager()], checkpointer: new MemorySaver() });
    await invoke(agent, "trim");
    assert.ok(removeId, "the trimmer removed the change message");
    const last = treeMessages(model.calls[2]!.messages).at(-1);
    assert.ok(!isWorkspaceChangeMessage(last), "full tree instead of another change");
    assert.match(text(last), /x\.txt/);
    assert.match(text(last), /y\.txt/);
  });

  it("the change is computed from checkpointed state (another process with an empty cache gets it right)", async () => {
    await seedWorkspace("durable", ["old.txt"]);
    const checkpointer = new MemorySaver();
    const first = createAgent({ model: scripted(["hi"]), tools: workspaceTools(root), middleware: [fileManager()], checkpointer });
    await invoke(first, "durable");
    const model = scripted([[call("rename_file", { from: "old.txt", to: "new.txt" }, "d1")], "done"]);
    const second = createAgent({ model, tools: workspaceTools(root), middleware: [fileManager()], checkpointer });
    await invoke(second, "durable", "again");
    assert.deepEqual(changeLines(model.calls[1]!.messages.filter(isWorkspaceChangeMessage).at(-1)), ["renamed old.txt => new.txt"]);
    assert.equal(treeMessages(model.calls[1]!.messages).filter((m) => !isWorkspaceChangeMessage(m)).length, 1, "no second full tree");
  });

  it("the checkpointed record holds only the changes: what the model knows is rebuilt from the tree message", async () => {
    await seedWorkspace("small", ["old.txt", "gone.txt"]);
    const checkpointer = new MemorySaver();
    const model = scripted([[call("create_file", { path: "src/new.ts" }, "s1")], [call("delete_file", { path: "gone.txt" }, "s2")], "done"]);
    const agent = createAgent({ model, tools: workspaceTools(root), middleware: [fileManager()], checkpointer });
    await invoke(agent, "small");
    const { values } = await checkpointed(agent).getState({ configurable: { thread_id: "small" } });
    const view = (values as { _fileManager: { _treeView?: Record<string, unknown> } })._fileManager._treeView!;
    assert.equal(view.known, undefined, "no copy of the tree's entries in state");
    assert.equal(view.added, "src/new.ts");
    assert.equal(view.removed, "gone.txt");
    assert.equal(view.partial, undefined, "the partial directories are the tree's own: not copied either");
    const tree = text(treeMessages((values as { messages: BaseMessage[] }).messages)[0]);
    assert.ok(JSON.stringify(view).length * 5 < tree.length, `record ${JSON.stringify(view).length} chars vs tree ${tree.length}`);
    // A fresh process (empty caches) continues from the checkpoint: a rename, not a full tree.
    const next = scripted([[call("rename_file", { from: "old.txt", to: "new.txt" }, "s3")], "done"]);
    const again = createAgent({ model: next, tools: workspaceTools(root), middleware: [fileManager()], checkpointer });
    await invoke(again, "small", "again");
    assert.deepEqual(changeLines(next.calls[1]!.messages.filter(isWorkspaceChangeMessage).at(-1)), ["renamed old.txt => new.txt"]);
  });

  it("a tree message altered by other code is not trusted: the next change sends a full tree", async () => {
    const { checkpointer, values, update } = await firstRun("altered");
    const tree = treeMessages((await values()).messages as BaseMessage[])[0]!;
    // Same id, one entry dropped from the listing: the rebuilt list no longer matches the record.
    const edited = new HumanMessage({ id: tree.id, name: tree.name, content: text(tree).replace(/\n[^\n]*old\.txt/, ""), additional_kwargs: tree.additional_kwargs });
    assert.notEqual(text(edited), text(tree));
    await update({ messages: [edited] });
    const model = scripted([[call("create_file", { path: "fresh.txt" }, "a1")], "done"]);
    const second = createAgent({ model, tools: workspaceTools(root), middleware: [fileManager()], checkpointer });
    await invoke(second, "altered", "again");
    const last = treeMessages(model.calls[1]!.messages).at(-1);
    assert.ok(!isWorkspaceChangeMessage(last), "a full tree, not a change message computed from a wrong list");
    assert.match(text(last), /fresh\.txt/);
  });

  it("an older checkpoint's full record of known entries is still used", async () => {
    const { checkpointer, values: read, update } = await firstRun("legacy");
    const values = (await read()) as { messages: BaseMessage[]; _fileManager: { _treeView: Record<string, unknown> } };
    const listed = parseTreeListing(treeTextOf(treeMessages(values.messages)[0])!).entries;
    // The record as v0.1 wrote it: every known key, no deltas, no fingerprint.
    const { added: _a, removed: _r, sum: _s, ...rest } = values._fileManager._treeView;
    await update({ _fileManager: { _treeView: { ...rest, known: listed.join("\n") } } });
    const model = scripted([[call("rename_file", { from: "old.txt", to: "new.txt" }, "l1")], "done"]);
    const second = createAgent({ model, tools: workspaceTools(root), middleware: [fileManager()], checkpointer });
    await invoke(second, "legacy", "again");
    assert.deepEqual(changeLines(model.calls[1]!.messages.filter(isWorkspaceChangeMessage).at(-1)), ["renamed old.txt => new.txt"]);
  });

  it("with a budgeted tree, entries that only dropped out of the listing are not reported as removed", async () => {
    const dir = path.join(root, "budget");
    for (const d of ["a", "b", "c", "d", "e", "f"]) {
      await mkdir(path.join(dir, d), { recursive: true });
      for (let i = 0; i < 20; i++) {
        const file = path.join(dir, d, `file-number-${i}.txt`);
        await writeFile(file, "x");
        // Files from before the session: newly listed, not new.
        await utimes(file, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
      }
    }
    const model = scripted([[call("create_file", { path: "top1.txt" }, "b1")], [call("delete_file", { path: "a/file-number-0.txt" }, "b2")], "done"]);
    const agent = createAgent({ model, tools: workspaceTools(root), middleware: [fileManager({ tree: { maxEntries: 40 } })], checkpointer: new MemorySaver() });
    await invoke(agent, "budget");
    assert.deepEqual(changeLines(model.calls[1]!.messages.filter(isWorkspaceChangeMessage).at(-1)), ["+ top1.txt"]);
    assert.deepEqual(changeLines(model.calls[2]!.messages.filter(isWorkspaceChangeMessage).at(-1)), ["- a/file-number-0.txt"]);
  });

  it("replace mode still removes the previous tree and sends full trees", async () => {
    await seedWorkspace("repl");
    const model = scripted([[call("create_file", { path: "r.txt" }, "r1")], "done"]);
    const agent = createAgent({ model, tools: workspaceTools(root), middleware: [fileManager({ tree: { mode: "replace" } })], checkpointer: new MemorySaver() });
    const out = await invoke(agent, "repl");
    assert.equal(treeMessages(out.messages).length, 1);
    assert.equal(model.calls[1]!.messages.filter(isWorkspaceChangeMessage).length, 0);
    assert.match(text(treeMessages(model.calls[1]!.messages)[0]), /r\.txt/);
    assert.equal(prefixBreaks(model.calls).length, 1, "replace mode edits history (the prefix break append mode avoids)");
  });
});

describe("tree character budget", () => {
  it("a 200-level deep path stays within the budget and is still shown", async () => {
    const thread = "deep";
    const parts = Array.from({ length: 200 }, (_, i) => `d${i}`);
    const deep = path.join(root, thread, ...parts);
    await mkdir(deep, { recursive: true });
    await writeFile(path.join(deep, "leaf.txt"), "x");
    await writeFile(path.join(root, thread, "top.txt"), "x");
    const unbudgeted = await renderDirectoryTree(path.join(root, thread), { maxChars: Infinity, maxEntries: Infinity });
    assert.ok(unbudgeted.length > 50_000, `without the budget the tree is huge (${unbudgeted.length})`);
    const model = scripted(["hi"]);
    const agent = createAgent({ model, tools: [], middleware: [fileManager()], checkpointer: new MemorySaver() });
    await invoke(agent, thread);
    const tree = /<workspace_tree[^>]*>\n([\s\S]*)\n<\/workspace_tree>/.exec(text(treeMessages(model.calls[0]!.messages)[0]))![1]!;
    assert.ok(tree.length <= 8_000, `tree within 8,000 chars (${tree.length})`);
    assert.match(tree, /d0\/d1\/d2\//, "the chain of single directories shares a line");
    assert.match(tree, /\.\.\.\(\+[\d,]+ chars\)\.\.\.|more lines? not shown|more entr/, "what is not shown is marked");
    assert.match(tree, /top\.txt/);
  });

  it("long names are shortened with a marker, and a tree still over budget ends with a count of the lines left out", async () => {
    const dir = path.join(root, "wide");
    await mkdir(dir, { recursive: true });
    for (let i = 0; i < 150; i++) await writeFile(path.join(dir, `${String(i).padStart(3, "0")}-${"n".repeat(180)}.txt`), "x");
    const out = await renderDirectoryTree(dir, { maxChars: 2_000 });
    assert.ok(out.length <= 2_000, `within budget (${out.length})`);
    assert.match(out, /\.\.\.\(\+[\d,]+ chars\)\.\.\./, "long names shortened with a marker");
    const cut = /`-- \.\.\. ([\d,]+) more lines not shown \(character budget\)$/.exec(out);
    assert.ok(cut, "the lines left out are counted");
    assert.equal(Number(cut![1]!.replace(/,/g, "")) + out.split("\n").length - 2, 150, "shown + counted = all entries");
    assert.equal(parseTreeListing(out).complete, false);
    const small = await renderDirectoryTree(dir, { maxEntries: 3 });
    assert.doesNotMatch(small, /\.\.\.\(\+/, "a tree within budget is not compacted");
  });
});
