// The hard-link refusal at search scale: past the first few hundred results the link counts are
// read by a worker thread while ripgrep still runs. Every mode must still drop every hard-linked
// file, wherever it lands in ripgrep's (unordered) output, and a failed worker must not let one through.
import assert from "node:assert/strict";
import { link, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { AccessPolicy } from "../src/guards/access.js";
import { LinkCountWorker } from "../src/search/linkCountWorker.js";
import { hardLinkScreen } from "../src/search/refused.js";
import { emptyOutcome } from "../src/search/types.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";

const SECRET = "ghp_H4rdL1nk3dS3cr3tV4lu3F0rT3st1ng000000";
const FILES = 3_000;
const DIRS = 30;
let root: string;
let ws: string;
/** Hard links made in the workspace: to its .env, and to a file outside the workspace. */
const linked: string[] = [];
const cfg = { configurable: { thread_id: "t1" } };

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-hardlinks-scale-"));
  ws = path.join(root, "t1");
  const outside = path.join(root, "outside");
  await mkdir(outside, { recursive: true });
  await writeFile(path.join(outside, "secret.txt"), `needle ${SECRET}\n`);
  for (let d = 0; d < DIRS; d++) await mkdir(path.join(ws, `d${d}`), { recursive: true });
  await writeFile(path.join(ws, ".env"), `needle=${SECRET}\n`);
  for (let i = 0; i < FILES; i++) await writeFile(path.join(ws, `d${i % DIRS}`, `f${i}.txt`), `needle ${i}\n`);
  // Spread over every directory, so some land early and most land late in any output order.
  for (let d = 0; d < DIRS; d += 3) {
    const name = path.join(ws, `d${d}`, `zz-notes-${d}.txt`);
    await link(d % 2 === 0 ? path.join(ws, ".env") : path.join(outside, "secret.txt"), name);
    linked.push(name);
  }
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const rel = (p: string) => path.relative(ws, p);

async function search(args: Record<string, unknown>, allowHardLinks = false): Promise<Record<string, any>> {
  const tool = createSearchFilesTool({ rootDir: root, engine: "ripgrep", maxResults: 100_000, allowHardLinks });
  return JSON.parse(String(await tool.invoke({ pattern: "needle", limit: 500, ...args } as never, cfg)));
}

describe("search_files at scale refuses every hard-linked file", () => {
  for (const mode of ["count", "files_only", "content"] as const) {
    it(`output_mode ${mode}: ${FILES} plain files found, none of the ${DIRS / 3} links`, async () => {
      const r = await search({ output_mode: mode });
      const total = mode === "content" ? r.total_matches : r.total_files;
      assert.equal(total, FILES, `every plain file and only those (got ${JSON.stringify(total)})`);
      const text = JSON.stringify(r);
      assert.ok(!text.includes(SECRET.slice(4, 20)), "no secret text");
      assert.ok(!text.includes("zz-notes"), "no hard-linked name on the first page");
    });
  }

  it("every page of the count answer: no hard-linked name anywhere", async () => {
    const shown: string[] = [];
    for (let offset = 0; ; ) {
      const r = await search({ output_mode: "count", offset });
      shown.push(...r.counts.map((c: { path: string }) => c.path));
      if (r.next_offset === undefined) break;
      offset = r.next_offset;
    }
    assert.equal(shown.length, FILES, "all pages together list every plain file");
    assert.deepEqual(shown.filter((p) => p.includes("zz-notes")), [], "no hard-linked file on any page");
  });

  it("allowHardLinks: true lists them (so the check is what removed them)", async () => {
    const r = await search({ output_mode: "count" }, true);
    assert.equal(r.total_files, FILES + linked.length, "plain files plus every hard link");
  });
});

describe("hardLinkScreen", () => {
  const policy = (): AccessPolicy => ({ confine: true, workspaceDir: ws, credentialPatterns: [] }) as unknown as AccessPolicy;
  const plain = () => Array.from({ length: FILES }, (_, i) => path.join(ws, `d${i % DIRS}`, `f${i}.txt`));

  it("files seen after the first few hundred (the worker's share) are refused", async () => {
    const screen = hardLinkScreen(policy());
    for (const f of plain()) screen.see(f);
    for (const f of linked) screen.see(f);
    const outcome = { ...emptyOutcome("ripgrep"), files: [...plain(), ...linked] };
    await screen.drop(outcome);
    assert.equal(outcome.files.length, FILES, "plain files kept");
    assert.deepEqual(outcome.files.filter((f) => linked.includes(f)), [], "hard links dropped");
  });

  it("files the engine never announced are checked at the end", async () => {
    const screen = hardLinkScreen(policy());
    const outcome = { ...emptyOutcome("ripgrep"), counts: [...plain(), ...linked].map((p) => ({ path: p, count: 1 })) };
    await screen.drop(outcome);
    assert.deepEqual(outcome.counts.map((c) => c.path).filter((f) => linked.includes(f)).map(rel), [], "hard links dropped");
    assert.equal(outcome.counts.length, FILES, "plain files kept");
  });

  it("a worker that failed hands its batches back to the async check", async () => {
    let made = 0;
    const screen = hardLinkScreen(policy(), () => {
      made++;
      const dead = new LinkCountWorker();
      dead.close();
      return dead;
    });
    for (const f of [...plain(), ...linked]) screen.see(f);
    const outcome = { ...emptyOutcome("ripgrep"), lines: [...plain(), ...linked].map((p) => ({ path: p, line: 1, text: "needle", match: true })) };
    await screen.drop(outcome);
    assert.equal(made, 1, "the worker path was taken");
    assert.equal(outcome.lines.length, FILES, "plain files kept");
    assert.deepEqual(outcome.lines.filter((l) => linked.includes(l.path)), [], "hard links dropped by the fallback");
  });

  it("allowHardLinks: the screen keeps everything", async () => {
    const screen = hardLinkScreen({ ...policy(), allowHardLinks: true });
    const outcome = { ...emptyOutcome("ripgrep"), files: [...linked] };
    await screen.drop(outcome);
    assert.equal(outcome.files.length, linked.length, "nothing dropped");
  });
});

describe("LinkCountWorker", () => {
  it("reports regular files with more than one link, never missing files, directories or symlinks", async () => {
    const dir = path.join(root, "lc");
    await mkdir(path.join(dir, "sub"), { recursive: true });
    await writeFile(path.join(dir, "one.txt"), "x");
    await writeFile(path.join(dir, "a.txt"), "hello");
    await link(path.join(dir, "a.txt"), path.join(dir, "b.txt"));
    await symlink("a.txt", path.join(dir, "sym.txt"));
    const w = new LinkCountWorker();
    try {
      const names = ["one.txt", "a.txt", "missing.txt", "sub", "sym.txt", "b.txt"];
      const found = await w.check(names.map((n) => path.join(dir, n)));
      assert.deepEqual(
        found.map((f) => ({ name: path.basename(f.path), nlink: f.nlink, size: f.size })),
        [
          { name: "a.txt", nlink: 2, size: 5 },
          { name: "b.txt", nlink: 2, size: 5 },
        ],
        "only the two names of the hard-linked file",
      );
    } finally {
      w.close();
    }
  });

  it("after close, checks reject instead of answering nothing", async () => {
    const w = new LinkCountWorker();
    w.close();
    await assert.rejects(w.check([path.join(ws, ".env")]), /closed/, "a closed worker rejects");
  });
});
