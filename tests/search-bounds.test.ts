// Search on hostile input stays bounded: ripgrep's memory on a huge single-line file, and the
// JS engine's regex run time (catastrophic backtracking) — each with a limit that a regression
// would blow through.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, mkdir, readFile, rm, writeFile, open } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { detectRipgrep } from "../src/search/ripgrep.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";

const THREAD = "hostile";
let root = "";
let ws = "";
const config = { configurable: { thread_id: THREAD } };
const hasRg = await detectRipgrep();
const LINE_MB = 32;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-sbounds-"));
  ws = path.join(root, THREAD);
  await mkdir(path.join(ws, "big"), { recursive: true });
  // One 32 MB line of "a" (written in 1 MB pieces).
  const fh = await open(path.join(ws, "big", "one-line.txt"), "w");
  const piece = Buffer.alloc(1024 * 1024, "a");
  for (let i = 0; i < LINE_MB; i++) await fh.write(piece);
  await fh.close();
  await mkdir(path.join(ws, "redos"), { recursive: true });
  await writeFile(path.join(ws, "redos", "evil.txt"), `${"a".repeat(40)}!\nfine line\n`);
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("ripgrep on a huge single-line file", { skip: hasRg && existsSync("/proc/self/status") ? false : "needs ripgrep and /proc" }, () => {
  it("peak RSS of the rg process stays near the line size, and the match comes back cut", { timeout: 60_000 }, async (t) => {
    // A stand-in "rg" that runs the real one and records its peak resident set (VmHWM).
    const hwmFile = path.join(root, "hwm.txt");
    const wrapper = path.join(root, "rg-hwm.sh");
    await writeFile(
      wrapper,
      `#!/bin/sh\nrg "$@" &\npid=$!\nwhile kill -0 $pid 2>/dev/null; do grep VmHWM /proc/$pid/status >> "${hwmFile}" 2>/dev/null; sleep 0.05; done\nwait $pid\n`,
      { mode: 0o755 },
    );
    const tool = createSearchFilesTool({ rootDir: root, engine: "ripgrep", ripgrepPath: wrapper, timeoutMs: 30_000 });
    const r = JSON.parse(String(await tool.invoke({ pattern: "a", path: "big" } as never, config)));
    assert.equal(r.error, undefined);
    assert.equal(r.total_matches, 1);
    assert.equal(r.matches[0].line, 1);
    assert.ok(r.matches[0].text.length < 1_000, "the line is cut");
    const peaksKb = (await readFile(hwmFile, "utf8")).match(/\d+/g)!.map(Number);
    const peakMb = Math.max(...peaksKb) / 1024;
    // --json without --max-columns held every submatch: ~110× the line (6.9 GB for 64 MB).
    t.diagnostic(`rg peak RSS ${peakMb.toFixed(0)} MB for a ${LINE_MB} MB line`);
    assert.ok(peakMb < LINE_MB * 6, `rg peak RSS ${peakMb.toFixed(0)} MB for a ${LINE_MB} MB line`);
  });
});

describe("the JS engine's regex timeout", () => {
  it("^(a+)+$ on a long a…! line is stopped at the deadline with advice to simplify", { timeout: 20_000 }, async () => {
    const tool = createSearchFilesTool({ rootDir: root, engine: "js", timeoutMs: 1_500 });
    const started = Date.now();
    const r = JSON.parse(String(await tool.invoke({ pattern: "^(a+)+$", path: "redos" } as never, config)));
    const took = Date.now() - started;
    assert.match(r.error ?? "", /ran for more than 1\.5 s on redos\/evil\.txt and was stopped/);
    assert.match(r.error, /Simplify it/);
    assert.doesNotMatch(r.error, new RegExp(root.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")), "no host path");
    assert.ok(took < 10_000, `answered after ${took} ms`);
    // The engine still works afterwards, and ordinary patterns are unaffected.
    const ok = JSON.parse(String(await tool.invoke({ pattern: "^fine", path: "redos" } as never, config)));
    assert.equal(ok.total_matches, 1);
  });
});
