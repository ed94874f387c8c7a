/**
 * Workspaces for the benchmarks: 1k, 10k or 100k files spread over 1,020 directories
 * (20 top-level directories × 50 subdirectories, files in the leaves), cached under
 * `.bench-data/` at the repository root and reused when complete.
 */
import { mkdir, readdir, rm, stat, writeFile } from "node:fs/promises";
import { exists } from "../src/snapshots/exists.js";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isCredentialPath } from "../src/guards/credentials.js";

export const BENCH_DATA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", ".bench-data");
export const TOP_DIRS = 20;
export const SUB_DIRS = 50;
/** Directories in every generated workspace, root excluded. */
export const DIR_COUNT = TOP_DIRS + TOP_DIRS * SUB_DIRS;

/** The generated workspace with `files` files (created on first use, reused after). */
export async function benchWorkspace(files: number): Promise<string> {
  if (!Number.isInteger(files) || files < 1) throw new TypeError("files must be a positive integer");
  const dir = path.join(BENCH_DATA_DIR, `ws-${files}`);
  const marker = path.join(BENCH_DATA_DIR, `ws-${files}.complete`);
  if (await exists(marker)) return dir;
  await rm(dir, { recursive: true, force: true });
  const leaves: string[] = [];
  for (let t = 0; t < TOP_DIRS; t++) {
    for (let s = 0; s < SUB_DIRS; s++) leaves.push(path.join(dir, `pkg${pad(t, 2)}`, `mod${pad(s, 2)}`));
  }
  await Promise.all(leaves.map((leaf) => mkdir(leaf, { recursive: true })));
  const perLeaf = Math.ceil(files / leaves.length);
  let made = 0;
  const batch: Promise<void>[] = [];
  for (let f = 0; f < perLeaf && made < files; f++) {
    for (const leaf of leaves) {
      if (made >= files) break;
      batch.push(writeFile(path.join(leaf, `file${pad(f, 3)}.txt`), `file ${made}\n`));
      made++;
      if (batch.length >= 512) await Promise.all(batch.splice(0));
    }
  }
  await Promise.all(batch);
  await writeFile(marker, `${files}\n`);
  return dir;
}

/**
 * The naive change check: walk every directory and stat every file, returning the newest
 * mtime (epoch ms). The anchor the change trackers and the middleware are measured against.
 */
export async function seedStyleNewestMtime(dir: string): Promise<number> {
  let newest = 0;
  const pending: string[] = [dir];
  while (pending.length > 0) {
    const current = pending.pop()!;
    let entries;
    try {
      entries = await readdir(current, { withFileTypes: true });
    } catch {
      continue;
    }
    const stats = await Promise.all(
      entries.map(async (e) => {
        const p = path.join(current, e.name);
        if (e.isDirectory()) {
          pending.push(p);
          return 0;
        }
        try {
          return (await stat(p)).mtimeMs;
        } catch {
          return 0;
        }
      }),
    );
    for (const m of stats) if (m > newest) newest = m;
  }
  return newest;
}

/** Median of a list of numbers (the list is sorted in place). */
export function median(values: number[]): number {
  values.sort((a, b) => a - b);
  const mid = values.length >> 1;
  return values.length % 2 ? values[mid]! : (values[mid - 1]! + values[mid]!) / 2;
}

/** Runs `fn` `runs` times after `warmup` unmeasured runs; returns each run's wall time in ms. */
export async function timeRuns(fn: () => unknown, runs: number, warmup = 1): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return times;
}

/** `n` formatted with two significant decimals (`1.23`), or `12.3`/`123` for larger values. */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const abs = Math.abs(n);
  return abs >= 100 ? n.toFixed(0) : abs >= 10 ? n.toFixed(1) : n.toFixed(2);
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/** Whether `p` exists (any kind of entry): the store's own check. */
export { exists };

/** A synthetic article page (nav + article with text, code, lists), about `chars` long. */
export function htmlPageOf(chars: number): string {
  const block =
    "<p>Some article text with <a href='/docs/x'>links</a>, <b>bold</b> words and figures like 42 ms. " +
    "It goes on for a while to look like a real paragraph of documentation.</p>\n" +
    "<pre><code>const x = await fetch(url);</code></pre>\n<ul><li>one</li><li>two</li></ul>\n";
  return `<!doctype html><html><head><title>Bench</title></head><body><nav>menu</nav><article>${block.repeat(
    Math.ceil(chars / block.length),
  )}</article></body></html>`;
}

/** `git -C dir …` for shadow-git anchors: no background gc or maintenance racing the timings. */
export async function shadowGit(dir: string, ...args: string[]): Promise<string> {
  const { execFile } = await import("node:child_process");
  const { promisify } = await import("node:util");
  const { stdout } = await promisify(execFile)(
    "git",
    ["-C", dir, "-c", "user.email=b@e.nch", "-c", "user.name=bench", "-c", "commit.gpgsign=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false", ...args],
    { maxBuffer: 1 << 26 },
  );
  return stdout;
}

/** One shadow-git snapshot: `git add -A && git commit`. */
export async function shadowGitCommit(dir: string, msg: string): Promise<void> {
  await shadowGit(dir, "add", "-A");
  await shadowGit(dir, "commit", "-q", "--no-verify", "-m", msg);
}

/** Two copies of the `files`-file workspace under `tmp`: `ours` for the store, `theirs` for the shadow-git anchor. */
export async function twinCopies(tmp: string, files: number): Promise<{ ours: string; theirs: string }> {
  const { cp } = await import("node:fs/promises");
  const src = await benchWorkspace(files);
  const ours = path.join(tmp, `ours-${files}`);
  const theirs = path.join(tmp, `git-${files}`);
  await cp(src, ours, { recursive: true });
  await cp(src, theirs, { recursive: true });
  return { ours, theirs };
}

/** The snapshot store's policy as time travel sets it by default, and retention that never prunes during a bench. */
export const SNAPSHOT_POLICY = { ignoreNames: [".git", "node_modules"], excludePath: (rel: string) => isCredentialPath(rel) };
export const SNAPSHOT_RETENTION = { maxSnapshots: 100_000, maxAgeMs: 1e12, maxBytes: 1e13 };
