// Restart order: on a workspace too large for its watcher to be live within a run start's wait,
// the restart's look at every file runs before the thread's watcher starts (the watcher's own
// crawl would compete with it for the CPU; the look sets no mark either way). A small workspace
// keeps the watcher first, so its look can set a mark. Both record a hand edit made while no
// process ran. After the large restart, a listing in the background (directory digests only)
// finds the files as the look recorded them and sets the mark once the watcher is live, so the
// next run looks at what the watcher listed, not at every file again.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { waitsForWatcher } from "../middleware/timeTravel.js";
import { SnapshotStore } from "../src/snapshots/index.js";
import { createWorkbench, type Workbench } from "../src/workbench.js";

let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-tt-restart-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** What the hooks hold inside (read by the test only, to see when the watcher started). */
interface HooksInside {
  pool: { get: (dir: string, ...rest: unknown[]) => unknown; has(dir: string): boolean };
  timeTravel: {
    stores: { storeFor(threadId: string, dir: string): SnapshotStore };
    marks: Map<string, { tracker: { changesSince(cursor: number): { paths: string[] } | undefined }; cursor: number }>;
  };
}

/** Polls `check` every 20 ms for up to `ms`. */
async function until(check: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) if (check()) return true;
  return check();
}

function workbench(root: string): Workbench {
  return createWorkbench({ rootDir: root, webTools: false, fileManager: { onError: () => undefined } });
}

async function turn(wb: Workbench, saver: MemorySaver, threadId: string, reply: string) {
  const agent = createAgent({ model: fakeModel().respond(new AIMessage(reply)), tools: wb.tools, middleware: wb.middleware, checkpointer: saver });
  return agent.invoke({ messages: [new HumanMessage("Still there?")] }, { configurable: { thread_id: threadId } });
}

/** `files` one-line files in 100 directories under `<root>/<threadId>`. */
async function seed(root: string, threadId: string, files: number): Promise<string> {
  const dir = path.join(root, threadId);
  const perDir = Math.ceil(files / 100);
  for (let d = 0; d < 100 && d * perDir < files; d++) {
    const sub = path.join(dir, `d${d}`);
    await mkdir(sub, { recursive: true });
    const writes: Promise<void>[] = [];
    for (let f = d * perDir; f < Math.min(files, (d + 1) * perDir); f++) writes.push(writeFile(path.join(sub, `f${f}.txt`), `${f}\n`));
    await Promise.all(writes);
  }
  return dir;
}

/**
 * A first process records the baseline and closes; a file is edited by hand; a second workbench
 * on the same root runs one turn. Returns whether the store's head had already moved past the
 * first process's head when the second one started the thread's watcher.
 */
async function restart(label: string, files: number): Promise<{ headMovedFirst: boolean; recordedEdit: boolean }> {
  const root = path.join(tmp, label);
  const threadId = `t-${label}`;
  const dir = await seed(root, threadId, files);
  const saver = new MemorySaver();
  const first = workbench(root);
  try {
    await turn(first, saver, threadId, "Hello.");
    await first.snapshots(threadId); // the background baseline is in
  } finally {
    await first.close();
  }
  const edited = path.join(dir, "d0", "f0.txt");
  await writeFile(edited, "edited by hand\n");

  const second = workbench(root);
  const hooks = second.fileManager.hooks as unknown as HooksInside;
  const store = hooks.timeTravel.stores.storeFor(threadId, dir);
  const headBefore = (await store.headInfo())!.id;
  let headAtWatcher: string | undefined;
  const get = hooks.pool.get.bind(hooks.pool);
  hooks.pool.get = (d: string, ...rest: unknown[]) => {
    if (headAtWatcher === undefined && path.resolve(d) === path.resolve(dir)) headAtWatcher = store.peekHead()?.id ?? "";
    return get(d, ...rest);
  };
  try {
    await turn(second, saver, threadId, "Yes.");
    assert.ok(hooks.pool.has(dir), "the thread's watcher runs after the turn");
    const recordedEdit = store.peekHead()!.id !== headBefore;
    const text = await readFile(edited, "utf8");
    assert.equal(text, "edited by hand\n", "the restart keeps the hand edit");
    return { headMovedFirst: headAtWatcher !== undefined && headAtWatcher !== headBefore, recordedEdit };
  } finally {
    await second.close();
  }
}

describe("time travel: the restart's look and the thread's watcher", () => {
  test("after a large restart a background listing sets the mark: the next run re-reads what the watcher listed, not every file", { timeout: 120_000 }, async () => {
    const root = path.join(tmp, "marked");
    const threadId = "t-marked";
    const dir = await seed(root, threadId, 40_000);
    const saver = new MemorySaver();
    const first = workbench(root);
    try {
      await turn(first, saver, threadId, "Hello.");
      await first.snapshots(threadId);
    } finally {
      await first.close();
    }
    const second = workbench(root);
    const hooks = second.fileManager.hooks as unknown as HooksInside;
    const store = hooks.timeTravel.stores.storeFor(threadId, dir);
    try {
      await turn(second, saver, threadId, "Yes.");
      assert.ok(await until(() => hooks.timeTravel.marks.has(threadId), 60_000), "a mark is set once the listing found the files as recorded");
      const mark = hooks.timeTravel.marks.get(threadId)!;
      const edited = path.join(dir, "d7", "f2000.txt");
      await writeFile(edited, "edited while the process runs\n");
      assert.ok(await until(() => (mark.tracker.changesSince(mark.cursor)?.paths.length ?? 0) > 0, 10_000), "the watcher reports the edit");
      const looks: string[] = [];
      const snapshot = store.snapshot.bind(store);
      store.snapshot = (opts = {}) => {
        looks.push(opts.paths ? `paths:${opts.paths.length}` : "all");
        return snapshot(opts);
      };
      await turn(second, saver, threadId, "Still.");
      assert.deepEqual(looks, ["paths:1"], "the run start re-read the one path the watcher listed");
      const files = (await store.manifest(store.peekHead()!.id)).files;
      assert.equal(files.get("d7/f2000.txt")!.s, "edited while the process runs\n".length, "and recorded the edit");
    } finally {
      await second.close();
    }
  });

  test("the background listing sets no mark when the files moved since the look", async () => {
    const root = path.join(tmp, "verify");
    const dir = await seed(root, "t-verify", 300);
    const store = new SnapshotStore(dir, path.join(root, "store"), { ignoreNames: [".git"], excludePath: () => false }, { maxSnapshots: 100, maxAgeMs: 1e12, maxBytes: 1e12 });
    await store.snapshot();
    assert.equal(await store.matchesDisk(), true, "as recorded");
    await writeFile(path.join(dir, "d1", "f3.txt"), "a longer line than before\n");
    assert.equal(await store.matchesDisk(), false, "a file's size moved");
    await store.snapshot();
    assert.equal(await store.matchesDisk(), true);
    await mkdir(path.join(dir, "d2", "new"));
    assert.equal(await store.matchesDisk(), false, "a directory appeared");
    await store.snapshot();
    await rm(path.join(dir, "d2", "new"), { recursive: true });
    assert.equal(await store.matchesDisk(), false, "a directory went");
    await store.snapshot();
    await writeFile(path.join(dir, "d0", "added.txt"), "x\n");
    assert.equal(await store.matchesDisk(), false, "a file appeared");
    await store.snapshot();
    assert.equal(await store.matchesDisk(), true);
  });

  test("waitsForWatcher: only when a watcher can be live in the wait (0.004 ms a file)", () => {
    assert.equal(waitsForWatcher(undefined, 150), true);
    assert.equal(waitsForWatcher(0, 150), true);
    assert.equal(waitsForWatcher(37_500, 150), true);
    assert.equal(waitsForWatcher(37_501, 150), false);
    assert.equal(waitsForWatcher(100_000, 150), false);
    assert.equal(waitsForWatcher(100_000, 3_000), true);
  });

  test("a large workspace: the look at every file comes before the watcher starts", { timeout: 120_000 }, async () => {
    const { headMovedFirst, recordedEdit } = await restart("large", 40_000);
    assert.equal(recordedEdit, true, "the hand edit is in a new snapshot");
    assert.equal(headMovedFirst, true, "the watcher started only after the look recorded the edit");
  });

  test("a small workspace: the watcher starts first, so the look can set a mark", async () => {
    const { headMovedFirst, recordedEdit } = await restart("small", 50);
    assert.equal(recordedEdit, true, "the hand edit is in a new snapshot");
    assert.equal(headMovedFirst, false, "the watcher started before the look");
  });
});
