/**
 * WorkbenchBackend (guarded: confinement, credential/binary/device checks, redaction) against
 * deepagents' own FilesystemBackend in virtual mode (the anchor), called directly with the same
 * arguments deepagents' tools pass: per-call read latency, glob and grep over a workspace.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { FilesystemBackend } from "deepagents";
import { WorkbenchBackend } from "../src/deepagents/backend.js";
import { BENCH_DATA_DIR, benchWorkspace, fmt, median, timeRuns } from "./fixtures.js";

interface Backendish {
  read(p: string, offset?: number, limit?: number): Promise<unknown> | unknown;
  glob(pattern: string, p?: string): Promise<unknown> | unknown;
  grep(pattern: string, p?: string | null, glob?: string | null): Promise<unknown> | unknown;
}

async function row(label: string, runs: number, ours: () => unknown, theirs: () => unknown): Promise<string> {
  const a = median(await timeRuns(ours, runs, 2));
  const b = median(await timeRuns(theirs, runs, 2));
  return `| ${label} | ${fmt(a)} ms | ${fmt(b)} ms | ${fmt(a / b)}× |`;
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const files = quick ? 1_000 : 10_000;
  const runs = quick ? 5 : 15;
  const rows: string[] = [];

  const small = await mkdtemp(path.join(os.tmpdir(), "wb-bench-da-"));
  try {
    const threadDir = path.join(small, "t");
    await mkdir(threadDir, { recursive: true });
    await writeFile(path.join(threadDir, "notes.md"), Array.from({ length: 2_000 }, (_, i) => `line ${i + 1} of the notes`).join("\n"));
    const ours: Backendish = new WorkbenchBackend({ rootDir: small, threadId: "t" });
    const theirs: Backendish = new FilesystemBackend({ rootDir: threadDir, virtualMode: true });
    rows.push(await row("read 100 lines of a 2,000-line file", runs * 10, () => ours.read("/notes.md", 0, 100), () => theirs.read("/notes.md", 0, 100)));
  } finally {
    await rm(small, { recursive: true, force: true });
  }

  const dir = await benchWorkspace(files);
  const ours: Backendish = new WorkbenchBackend({ rootDir: BENCH_DATA_DIR, threadId: path.basename(dir) });
  const theirs: Backendish = new FilesystemBackend({ rootDir: dir, virtualMode: true });
  const n = files.toLocaleString("en-US");
  rows.push(await row(`glob \`**/*.txt\` over ${n} files`, Math.min(runs, 5), () => ours.glob("**/*.txt", "/"), () => theirs.glob("**/*.txt", "/")));
  rows.push(await row(`grep literal over ${n} files`, Math.min(runs, 5), () => ours.grep("file 99", "/", null), () => theirs.grep("file 99", "/", null)));

  return [
    "## deepagents backend",
    "",
    "`WorkbenchBackend` (confined per-thread workspace, device/binary/credential refusals, secret",
    "redaction, `/`-rooted paths) beside deepagents' `FilesystemBackend({ virtualMode: true })`, the",
    `anchor, called directly. Median of ${runs * 10} reads / ${Math.min(runs, 5)} walks after 2 warm-ups;`,
    `workspace of ${n} small files in 1,020 directories. Ratio > 1 means ours is slower (the price of the guards).`,
    "",
    "| operation | WorkbenchBackend | FilesystemBackend | ours / anchor |",
    "|---|---|---|---|",
    ...rows,
  ].join("\n");
}
