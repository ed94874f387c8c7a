// Link counts from one GNU `find` fed on stdin (src/search/linkCountProcess.ts): the same answer
// as lstat for every kind of name, and no answer at all — so the caller checks another way —
// whenever find did not provably get through every path (missing, not GNU, silent, killed).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmod, link, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { AccessPolicy } from "../src/guards/access.js";
import { LinkCountProcess, linkCountProcessUsable } from "../src/search/linkCountProcess.js";
import { LinkCountWorker } from "../src/search/linkCountWorker.js";
import { hardLinkScreen } from "../src/search/refused.js";
import { emptyOutcome } from "../src/search/types.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";

const gnuFind = (() => {
  try {
    const m = /GNU findutils\)? (\d+)\.(\d+)/.exec(execFileSync("find", ["--version"], { encoding: "utf8" }));
    return m !== null && (Number(m[1]) > 4 || (Number(m[1]) === 4 && Number(m[2]) >= 9));
  } catch {
    return false;
  }
})();
const skip = gnuFind ? false : "needs GNU find 4.9 or later (-files0-from)";

let root: string;
let dir: string;
/** Names in `dir`, with the odd ones find must take literally. */
const NAMES = ["one.txt", "a.txt", "missing.txt", "sub", "sym.txt", "b.txt", "with space.txt", "new\nline.txt", "-name.txt", "end", "x y 3"];

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-linkcount-"));
  dir = path.join(root, "lc");
  await mkdir(path.join(dir, "sub"), { recursive: true });
  await writeFile(path.join(dir, "one.txt"), "x");
  await writeFile(path.join(dir, "a.txt"), "hello");
  await link(path.join(dir, "a.txt"), path.join(dir, "b.txt"));
  await symlink("a.txt", path.join(dir, "sym.txt"));
  await writeFile(path.join(dir, "with space.txt"), "abc");
  await link(path.join(dir, "with space.txt"), path.join(dir, "new\nline.txt"));
  await link(path.join(dir, "with space.txt"), path.join(dir, "-name.txt"));
  await writeFile(path.join(dir, "end"), "1234567");
  await link(path.join(dir, "end"), path.join(dir, "x y 3"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

// "/." is find's own last path (the end mark): as an input it must not end the answer early.
const paths = () => [...NAMES.slice(0, 6), "/.", ...NAMES.slice(6)].map((n) => (n === "/." ? n : path.join(dir, n)));
const summary = (found: Array<{ path: string; nlink: number; size: number }>) =>
  found.map((f) => ({ name: path.relative(dir, f.path), nlink: f.nlink, size: f.size })).sort((a, b) => (a.name < b.name ? -1 : 1));

/** Runs `fn` with `find` on PATH being the shell script `body`. */
async function withFakeFind<T>(body: string, fn: () => Promise<T>): Promise<T> {
  const bin = await mkdtemp(path.join(root, "bin-"));
  await writeFile(path.join(bin, "find"), `#!/bin/sh\n${body}\n`);
  await chmod(path.join(bin, "find"), 0o755);
  const saved = process.env.PATH;
  process.env.PATH = `${bin}:${saved}`;
  try {
    return await fn();
  } finally {
    process.env.PATH = saved;
  }
}

describe("LinkCountProcess", { skip }, () => {
  it("answers what lstat answers: linked regular files only, odd names taken literally, each batch its own", async () => {
    const p = new LinkCountProcess();
    const worker = new LinkCountWorker();
    try {
      const all = paths();
      const first = p.check(all.slice(0, 7));
      const second = p.check(all.slice(7));
      p.end();
      const [a, b] = await Promise.all([first, second]);
      assert.deepEqual(summary(a), [
        { name: "a.txt", nlink: 2, size: 5 },
        { name: "b.txt", nlink: 2, size: 5 },
      ]);
      assert.deepEqual(summary(b), [
        { name: "-name.txt", nlink: 3, size: 3 },
        { name: "end", nlink: 2, size: 7 },
        { name: "new\nline.txt", nlink: 3, size: 3 },
        { name: "with space.txt", nlink: 3, size: 3 },
        { name: "x y 3", nlink: 2, size: 7 },
      ]);
      assert.deepEqual(summary([...a, ...b]), summary(await worker.check(all)), "the same answer as the lstat worker");
    } finally {
      p.close();
      worker.close();
    }
  });

  it("a find that is not on PATH rejects every batch", async () => {
    const saved = process.env.PATH;
    process.env.PATH = path.join(root, "nowhere");
    const p = new LinkCountProcess();
    let batch: Promise<unknown>;
    try {
      batch = p.check(paths());
      p.end();
    } finally {
      process.env.PATH = saved;
    }
    await assert.rejects(batch);
    p.close();
  });

  for (const [what, body] of [
    ["exits 0 without a word (ignores its input)", "cat >/dev/null; exit 0"],
    ["rejects the argv (an older or non-GNU find)", "echo \"find: unknown predicate '-files0-from'\" >&2; exit 1"],
    ["stops half-way: forged records but no end mark", "cat >/dev/null; printf '2 5 /x\\0'; kill -9 $$"],
    ["puts the end mark before other records", "cat >/dev/null; printf 'end\\0002 5 /x\\0'"],
  ] as const) {
    it(`a find that ${what} rejects every batch`, async () => {
      await withFakeFind(body, async () => {
        const p = new LinkCountProcess();
        const batch = p.check(paths());
        p.end();
        await assert.rejects(batch, /without answering every path/);
        p.close();
      });
    });
  }

  it("after close, checks reject instead of answering nothing", async () => {
    const p = new LinkCountProcess();
    p.close();
    await assert.rejects(p.check(paths()), /closed/);
  });
});

describe("hardLinkScreen over find", { skip }, () => {
  const FILES = 3_000;
  const policy = (): AccessPolicy => ({ confine: true, workspaceDir: root, credentialPatterns: [] }) as unknown as AccessPolicy;
  let plain: string[];
  let linked: string[];
  before(async () => {
    const d = path.join(root, "many");
    await mkdir(d, { recursive: true });
    plain = Array.from({ length: FILES }, (_, i) => path.join(d, `f${i}.txt`));
    for (const f of plain) await writeFile(f, "needle\n");
    linked = [10, 700, 2_900].map((i) => path.join(d, `zz-${i}.txt`));
    for (const l of linked) await link(path.join(dir, "a.txt"), l);
  });

  const screened = async (counter: () => LinkCountProcess) => {
    const screen = hardLinkScreen(policy(), counter);
    const all = [...plain.slice(0, 1_500), ...linked, ...plain.slice(1_500)];
    for (const f of all) screen.see(f);
    const outcome = { ...emptyOutcome("ripgrep"), counts: all.map((p) => ({ path: p, count: 1 })), announced: true };
    await screen.drop(outcome);
    return outcome.counts.map((c) => c.path);
  };

  it("drops the hard-linked files find reports past the first few hundred", async () => {
    let made = 0;
    const kept = await screened(() => (made++, new LinkCountProcess()));
    assert.equal(made, 1, "the bulk path was taken");
    assert.equal(kept.length, FILES, "plain files kept");
    assert.deepEqual(kept.filter((f) => linked.includes(f)), [], "hard links dropped");
  });

  it("a find that fails hands its batches back to the async check", async () => {
    const kept = await withFakeFind("cat >/dev/null; exit 0", () => screened(() => new LinkCountProcess()));
    assert.equal(kept.length, FILES, "plain files kept");
    assert.deepEqual(kept.filter((f) => linked.includes(f)), [], "hard links dropped by the fallback");
  });

  it("the probe finds this machine's find usable, and search_files then drops hard links from the totals", async () => {
    while (linkCountProcessUsable() === undefined) await new Promise((r) => setTimeout(r, 5));
    assert.equal(linkCountProcessUsable(), true);
    const tool = createSearchFilesTool({ rootDir: root, engine: "ripgrep", maxResults: 100_000 });
    const r = JSON.parse(String(await tool.invoke({ pattern: "needle", path: ".", output_mode: "count" } as never, { configurable: { thread_id: "many" } })));
    assert.equal(r.total_files, FILES, "every plain file, none of the links");
    assert.equal(r.total_matches, FILES);
    assert.ok(!JSON.stringify(r).includes("zz-"), "no hard-linked name shown");
  });
});
