// A writer killed between creating its temp file and renaming it over the target leaves the temp
// file behind. Such files are never shown (tree, search, ls/glob, read_file's suggestions, the
// change trackers) and are removed once stale (older than a minute, not being written here).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createChangeTracker } from "../src/changes/create.js";
import { WorkbenchBackend } from "../src/deepagents/backend.js";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { atomicTempName, isAtomicTempName, removeStaleTempFiles, STALE_TEMP_MS, whileWriting } from "../src/environment/tempFiles.js";
import { renderDirectoryTree } from "../src/tree.js";
import { createReadFileTool } from "../tools/readFile.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const WRITER = path.join(here, "fixtures", "killed-writer.ts");
const THREAD = "leftovers";
const config = { configurable: { thread_id: THREAD } };

let root = "";
let dir = "";
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-leftovers-"));
  dir = path.join(root, THREAD);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "small.txt"), "LEFTOVER-PAYLOAD in a small file\n");
});
after(() => rm(root, { recursive: true, force: true }));

const temps = async () => (await readdir(dir)).filter(isAtomicTempName);

/** Starts the writer, waits until a temp file exists (a write is under way), SIGKILLs it. */
async function killMidWrite(target: string): Promise<string[]> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const child = spawn(process.execPath, ["--import", "tsx", WRITER, target], { stdio: ["ignore", "pipe", "inherit"] });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
    const deadline = Date.now() + 60_000;
    // Kill as soon as a write is under way (its temp file exists and already has bytes).
    while (Date.now() < deadline) {
      const found = await temps();
      const sizes = await Promise.all(found.map((n) => stat(path.join(dir, n)).then((s) => s.size, () => 0)));
      if (sizes.some((s) => s > 0)) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    child.kill("SIGKILL");
    assert.equal(await exited, "SIGKILL", "the writer was killed, not finished");
    const left = await temps();
    if (left.length > 0) return left;
  }
  throw new Error("no write was caught half-way in 20 attempts");
}

test("a writer SIGKILLed mid-write leaves a temp file that nothing shows, and cleanup removes it once stale", async () => {
  const target = path.join(dir, "big.txt");
  const left = await killMidWrite(target);
  const name = left[0]!;
  // The target is either absent or a complete earlier version, never partial.
  const big = await stat(target).catch(() => undefined);
  if (big) assert.equal(big.size % "LEFTOVER-PAYLOAD line of the big file\n".length, 0, "the target is never partial");

  // Tree: hidden (fresh, so kept: a writer in another process may still be at it).
  const tree = await renderDirectoryTree(dir);
  assert.doesNotMatch(tree, /wb-write|\.tmp/, tree);
  assert.match(tree, /small\.txt/);
  assert.deepEqual(await temps(), left, "a fresh temp file is left alone");

  // search_files, both engines: neither file names nor content of the temp file.
  for (const engine of ["ripgrep", "js"] as const) {
    const t = createSearchFilesTool({ rootDir: root, engine });
    for (const args of [{ pattern: "LEFTOVER-PAYLOAD", output_mode: "files_only" }, { pattern: "*", target: "files" }, { pattern: ".wb-write*", target: "files" }]) {
      const raw = await t.invoke(args as never, config);
      // The answer echoes the pattern: look at everything else.
      const { pattern: _echo, ...rest } = JSON.parse(typeof raw === "string" ? raw : String((raw as { content: unknown }).content)) as Record<string, unknown>;
      const out = JSON.stringify(rest);
      assert.ok(!out.includes(name) && !out.includes("wb-write"), `${engine} ${JSON.stringify(args)} showed the temp file: ${out.slice(0, 500)}`);
    }
  }

  // deepagents listings: ls, glob, grep.
  const backend = new WorkbenchBackend({ rootDir: root, threadId: THREAD });
  for (const [what, result] of [
    ["ls", await backend.ls("/")],
    ["glob", await backend.glob("**/*")],
    ["glob dotfiles", await backend.glob(".*")],
    ["grep", await backend.grep("LEFTOVER-PAYLOAD")],
  ] as const) {
    const out = JSON.stringify(result);
    assert.ok(!out.includes("wb-write"), `${what} showed the temp file: ${out.slice(0, 500)}`);
  }

  // read_file's "did you mean" suggestions.
  const read = createReadFileTool({ rootDir: root });
  const missing = await read.invoke({ path: ".wb-write" } as never, config);
  assert.ok(!JSON.stringify(missing).includes(name), `suggestions named the temp file: ${JSON.stringify(missing)}`);

  // Stale (older than a minute): the next listing removes it.
  const old = new Date(Date.now() - STALE_TEMP_MS - 60_000);
  for (const n of left) await utimes(path.join(dir, n), old, old);
  const again = await renderDirectoryTree(dir);
  assert.equal(again, tree, "the tree is the same, with or without the leftover");
  assert.deepEqual(await temps(), [], "the stale temp file was removed");
});

test("cleanup spares fresh temp files, ones this process is writing, and look-alike directories", async () => {
  const sub = path.join(dir, "spare");
  await mkdir(sub);
  const fresh = atomicTempName();
  const mine = atomicTempName();
  const stale = atomicTempName();
  const legacy = ".notes.md.4242.0123456789ab.tmp";
  const folder = atomicTempName();
  for (const n of [fresh, mine, stale, legacy]) await writeFile(path.join(sub, n), "x");
  await mkdir(path.join(sub, folder));
  const old = new Date(Date.now() - 2 * STALE_TEMP_MS);
  for (const n of [mine, stale, legacy, folder]) await utimes(path.join(sub, n), old, old);
  let removed: string[] = [];
  await whileWriting(path.join(sub, mine), async () => {
    removed = await removeStaleTempFiles(sub, await readdir(sub));
  });
  assert.deepEqual(removed.sort(), [legacy, stale].sort());
  assert.deepEqual((await readdir(sub)).sort(), [folder, fresh, mine].sort());
  // Through a FileOperations (how remote workspaces are swept).
  await utimes(path.join(sub, fresh), old, old);
  assert.deepEqual((await removeStaleTempFiles(sub, await readdir(sub), { ops: new LocalFileOperations() })).sort(), [fresh, mine].sort(), "fresh aged, mine no longer written");
  assert.equal(isAtomicTempName("notes.tmp"), false, "ordinary .tmp files are the user's");
  assert.equal(isAtomicTempName(".wb-write.Ab3dE9xZ"), true, "the shell writer's mktemp names");
});

for (const kind of ["parcel", "polling"] as const) {
  test(`the ${kind} tracker does not count a temp file as a change`, async () => {
    const watched = path.join(root, `tracked-${kind}`);
    await mkdir(watched);
    const tracker = createChangeTracker(watched, { kind, pollIntervalMs: 50 });
    try {
      await tracker.start();
      const before = await tracker.refresh();
      await writeFile(path.join(watched, atomicTempName()), "half a write");
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(await tracker.refresh(), before, "a temp file is not a structural change");
      await writeFile(path.join(watched, "real.txt"), "x");
      const deadline = Date.now() + 10_000;
      while ((await tracker.refresh()) === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.ok(tracker.generation > before, "a real file still is (control)");
    } finally {
      await tracker.close();
    }
  });
}
