// A listing stats entries by their real path only where that path is proven to name the directory
// it holds by descriptor (listWorker.ts, statEntries): the attacker below swaps a directory above
// the listed one for a link to an outside tree of the same names and back, in another process,
// while the list workers stat. Had one lstat gone through the link, the listing would give an
// outside file's stat (size 0 here, another inode) for a workspace path.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile, lstat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { listDirs, listTree, type ListedDir } from "../src/environment/listWorker.js";

const FILES = 6_000;
let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-real-path-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function tree(dir: string, content: string): Promise<void> {
  await mkdir(path.join(dir, "x", "y"), { recursive: true });
  for (let i = 0; i < FILES; i += 500) await Promise.all(Array.from({ length: 500 }, (_, k) => writeFile(path.join(dir, "x", "y", `f${i + k}`), content)));
  await mkdir(path.join(dir, "other"));
  await writeFile(path.join(dir, "other", "z"), content);
}

/**
 * Swaps `ws/x` for a link to `out/x` and back, again and again: quiet for `quietMs` (so the
 * workspace root's ctime is old enough to prove a path), the link in place for `linkMs`.
 */
function attacker(ws: string, out: string, quietMs: number, linkMs: number): ChildProcess {
  const source = `
    const fs = require("node:fs");
    const [ws, out, quiet, link] = process.argv.slice(1);
    const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    const x = ws + "/x", hidden = ws + "/.x-real";
    const end = Date.now() + 60000;
    while (Date.now() < end) {
      sleep(Number(quiet) * (0.5 + Math.random()));
      fs.renameSync(x, hidden);
      fs.symlinkSync(out + "/x", x);
      sleep(Number(link));
      fs.unlinkSync(x);
      fs.renameSync(hidden, x);
    }
  `;
  return spawn(process.execPath, ["-e", source, ws, out, String(quietMs), String(linkMs)], { stdio: "ignore" });
}

const listings = {
  "one worker": (ws: string) => listTree(ws, "", [], { followStart: true }),
  split: (ws: string) => listTree(ws, "", [], { followStart: true, split: true }),
  // A restore's look at the directories it touches: each reached from the root by name.
  "directories by relative path": (ws: string) => listDirs(ws, ["x/y", "other", "x"], []),
} satisfies Record<string, (ws: string) => Promise<{ dirs: ListedDir[] }>>;

for (const [how, list] of Object.entries(listings)) {
  test(`a directory above the listed one swapped for a link and back never lends its target's stats (${how})`, { timeout: 120_000 }, async () => {
    const ws = path.join(tmp, `ws-${how.replaceAll(" ", "-")}`);
    const out = path.join(tmp, `out-${how.replaceAll(" ", "-")}`);
    await tree(ws, "x");
    await tree(out, "");
    // Old enough that the first listings may take the real path (ctimes older than the slack).
    await new Promise((r) => setTimeout(r, 60));
    const inside = (await lstat(path.join(ws, "x", "y", "f0"))).dev;
    const child = attacker(ws, out, 25, 4);
    let listedY = 0;
    try {
      for (let round = 0; round < 40; round++) {
        const listing = await list(ws);
        for (const d of listing.dirs) {
          if (d.rel !== "x/y" || !d.entries) continue;
          listedY++;
          for (const e of d.entries) {
            assert.equal(e.kind, "file", `${d.rel}/${e.name}`);
            // Every workspace file holds one byte; every outside one none.
            assert.equal(e.size, 1, `${d.rel}/${e.name} was stat'ed through the link (size ${e.size})`);
            assert.equal(e.dev, inside);
          }
        }
      }
    } finally {
      child.kill("SIGKILL");
    }
    assert.ok(listedY > 10, `x/y was listed in ${listedY} of 40 rounds`);
  });
}

test("a listing of a quiet tree gives the same stats by either path", async () => {
  const ws = path.join(tmp, "quiet");
  await tree(ws, "ab");
  await new Promise((r) => setTimeout(r, 60));
  const listing = await listTree(ws, "", [], { followStart: true });
  const y = listing.dirs.find((d) => d.rel === "x/y")!;
  assert.equal(y.entries!.length, FILES);
  for (const e of y.entries!.slice(0, 50)) {
    const st = await lstat(path.join(ws, "x", "y", e.name!));
    assert.deepEqual([e.size, e.ino, e.mtimeMs, e.ctimeMs], [st.size, st.ino, st.mtimeMs, st.ctimeMs]);
  }
});
