// Check-then-use races: a second process swaps a symlink between an inside and an outside
// target as fast as it can while the tools read and write through it. What was *opened* is
// verified, so no try may read an outside file or create one outside the workspace.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { link, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { runJsSearch } from "../src/search/fallback.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";
import { resolveFileToolOptions } from "../tools/fileToolSupport.js";
import { readFileCore } from "../tools/readFile.js";
import { writeFileCore } from "../tools/writeFile.js";

const TRIES = 600;
/** Each loop also stops after this long, so a slow machine bounds the test's time, not its verdict. */
const MAX_MS = 20_000;
const MARK = "OUTSIDE-SECRET-4711";
let root: string;
let ws: string;
let outside: string;
const cfg = { configurable: { thread_id: "t1" } };

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-leaks-race-"));
  ws = path.join(root, "t1");
  outside = path.join(root, "outside");
  await mkdir(path.join(ws, "realdir"), { recursive: true });
  await mkdir(path.join(outside, "dir"), { recursive: true });
  await writeFile(path.join(ws, "inside.txt"), "inside\n");
  await writeFile(path.join(outside, "secret.txt"), `${MARK}\n`);
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/**
 * A child process that atomically re-points `linkPath` (temp link + rename) between `a` and `b`
 * in a tight loop until killed. Resolves once it has swapped at least once.
 */
async function swapper(linkPath: string, a: string, b: string): Promise<ChildProcess> {
  const script = `
    const fs = require("fs");
    const [link, a, b] = process.argv.slice(1);
    const tmp = link + ".swap";
    let n = 0;
    for (;;) {
      try { fs.unlinkSync(tmp); } catch {}
      fs.symlinkSync(n++ % 2 ? a : b, tmp);
      fs.renameSync(tmp, link);
      if (n === 2) process.stdout.write("ready\\n");
    }`;
  return startSwapper(script, [linkPath, a, b]);
}

/** Runs a swapper `script` (Node, `-e`) with `args`; resolves once it reports "ready" (it has swapped). */
async function startSwapper(script: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["-e", script, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`swapper exited early (${code})`)));
  });
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

/**
 * Runs `attempt(i)` for i = 0, 1, … up to `tries` times (fewer if MAX_MS runs out) while `child`
 * swaps, then stops the child. Returns how many attempts ran.
 */
async function whileSwapping(child: ChildProcess, tries: number, attempt: (i: number) => Promise<void>): Promise<number> {
  let ran = 0;
  const deadline = Date.now() + MAX_MS;
  try {
    for (let i = 0; i < tries && Date.now() < deadline; i++) {
      ran++;
      await attempt(i);
    }
  } finally {
    await stop(child);
  }
  return ran;
}

describe("race: a symlink swapped between inside and outside files", { timeout: 120_000 }, () => {
  it(`read_file through the link: ${TRIES} tries, 0 outside opens`, async (t) => {
    const child = await swapper(path.join(ws, "link.txt"), path.join(ws, "inside.txt"), path.join(outside, "secret.txt"));
    const counts = { inside: 0, refused: 0, outside: 0, tries: 0 };
    const opts = resolveFileToolOptions({ rootDir: root });
    counts.tries = await whileSwapping(child, TRIES, async () => {
      const { payload } = await readFileCore({ path: "link.txt" }, cfg, opts);
      const text = JSON.stringify(payload);
      if (text.includes(MARK)) counts.outside++;
      else if (typeof payload.content === "string" && payload.content.includes("inside")) counts.inside++;
      else counts.refused++;
    });
    t.diagnostic(`read_file race: ${JSON.stringify(counts)}`);
    assert.ok(counts.tries >= 100, `only ${counts.tries} tries ran`);
    assert.equal(counts.outside, 0, `outside file opened in ${counts.outside} of ${counts.tries} tries`);
    assert.ok(counts.inside > 0, "the race never let an inside read through: the test proves nothing");
  });

  it(`WorkbenchBackend.read / readRaw through the link: 0 outside opens`, async (t) => {
    const child = await swapper(path.join(ws, "blink.txt"), path.join(ws, "inside.txt"), path.join(outside, "secret.txt"));
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t1" });
    let outsideOpens = 0;
    const tries = await whileSwapping(child, TRIES, async (i) => {
      const r = i % 2 ? await backend.read("/blink.txt") : await backend.readRaw("/blink.txt");
      if (JSON.stringify(r).includes(MARK)) outsideOpens++;
    });
    t.diagnostic(`backend race: ${outsideOpens} outside opens in ${tries} tries`);
    assert.equal(outsideOpens, 0);
  });
});

describe("race: a directory symlink swapped between an inside and an outside directory", { timeout: 120_000 }, () => {
  it(`write_file into the linked directory (and new sub-directories): ${TRIES} tries, 0 files created outside`, async (t) => {
    const child = await swapper(path.join(ws, "d"), path.join(ws, "realdir"), path.join(outside, "dir"));
    const opts = resolveFileToolOptions({ rootDir: root });
    let written = 0;
    let refused = 0;
    const tries = await whileSwapping(child, TRIES, async (i) => {
      const target = i % 3 === 0 ? `d/sub${i}/f.txt` : `d/f${i}.txt`;
      const { isError } = await writeFileCore({ path: target, content: "x\n" }, cfg, opts);
      if (isError) refused++;
      else written++;
    });
    const leaked = await readdir(path.join(outside, "dir"));
    t.diagnostic(`write_file race: ${tries} tries, ${written} written inside, ${refused} refused, ${leaked.length} entries created outside`);
    assert.deepEqual(leaked, [], `created outside: ${leaked.slice(0, 5).join(", ")}`);
    assert.ok(written > 0, "no write ever succeeded: the test proves nothing");
  });
});

/** A child that alternately renames a regular file and a symlink to `outsideFile` onto `name`. */
async function fileLinkSwapper(name: string, outsideFile: string): Promise<ChildProcess> {
  const script = `
    const fs = require("fs");
    const [name, outside] = process.argv.slice(1);
    let n = 0;
    for (;;) {
      const tmp = name + ".swap" + (n % 2);
      try { fs.unlinkSync(tmp); } catch {}
      if (n % 2) fs.writeFileSync(tmp, "inside line\\n"); else fs.symlinkSync(outside, tmp);
      fs.renameSync(tmp, name);
      if (++n === 2) process.stdout.write("ready\\n");
    }`;
  return startSwapper(script, [name, outsideFile]);
}

describe("race: search while a file is swapped for a link to an outside file", { timeout: 180_000 }, () => {
  it(`JS walker: ${TRIES / 2} searches, 0 outside matches`, async (t) => {
    const dir = path.join(ws, "searched-js");
    await mkdir(dir, { recursive: true });
    const child = await fileLinkSwapper(path.join(dir, "f.txt"), path.join(outside, "secret.txt"));
    let leaks = 0;
    const tries = await whileSwapping(child, TRIES / 2, async () => {
      const out = await runJsSearch({ target: "content", pattern: "OUTSIDE|inside", mode: "content", cwd: ws, searchPath: dir, context: 0, maxRecords: 100, timeoutMs: 5_000, maxOutputBytes: 1 << 20 });
      if (out.lines.some((l) => l.text.includes(MARK))) leaks++;
    });
    t.diagnostic(`JS search race: ${leaks} outside matches in ${tries} tries`);
    assert.equal(leaks, 0);
  });

  it(`search_files (ripgrep when installed): ${TRIES / 2} searches, 0 outside text shown`, async (t) => {
    const dir = path.join(ws, "searched-rg");
    await mkdir(dir, { recursive: true });
    const child = await fileLinkSwapper(path.join(dir, "f.txt"), path.join(outside, "secret.txt"));
    const tool = createSearchFilesTool({ rootDir: root });
    let leaks = 0;
    const tries = await whileSwapping(child, TRIES / 2, async () => {
      const raw = await tool.invoke({ pattern: "OUTSIDE|inside", path: "searched-rg", context: 1 }, cfg);
      if (String(typeof raw === "string" ? raw : (raw as { content: unknown }).content).includes(MARK)) leaks++;
    });
    t.diagnostic(`search_files race: ${leaks} outside matches shown in ${tries} tries`);
    assert.equal(leaks, 0);
  });
});

describe("hard links", () => {
  it("a hard link to an outside file is refused by read_file (nlink > 1)", async () => {
    await link(path.join(outside, "secret.txt"), path.join(ws, "hard.txt"));
    const { payload } = await readFileCore({ path: "hard.txt" }, cfg, resolveFileToolOptions({ rootDir: root }));
    assert.ok(!JSON.stringify(payload).includes(MARK));
    assert.match(String(payload.error), /hard link/);
  });
});
