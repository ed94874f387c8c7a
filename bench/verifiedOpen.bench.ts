/**
 * What the race-free opens cost: LocalFileOperations reading a 100-line file and writing a small
 * file atomically, without and with an `OpenGuard` (the descriptor verified through
 * `/proc/self/fd/N` and the access policy run on what was opened; writes through a held,
 * verified directory descriptor). Anchors: the same call without a guard, in the same run.
 */
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { accessOpenGuard } from "../src/guards/access.js";
import { fmt, median, timeRuns } from "./fixtures.js";

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const runs = quick ? 50 : 500;
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-bench-verified-")));
  const file = path.join(dir, "small.txt");
  await writeFile(file, Array.from({ length: 100 }, (_, i) => `line ${i + 1}: some ordinary source text`).join("\n") + "\n");
  await mkdir(path.join(dir, "out"));
  const ops = new LocalFileOperations();
  const policy = { workspaceDir: dir, confine: true };
  const readGuard = accessOpenGuard("read", policy);
  const writeGuard = accessOpenGuard("write", policy);
  const window = { offset: 1, limit: 500, maxLineChars: 2_000 };
  const rows: string[] = [];
  try {
    const pairs: Array<[string, () => Promise<unknown>, () => Promise<unknown>]> = [
      ["readLines, 100-line file", () => ops.readLines(file, window), () => ops.readLines(file, window, readGuard)],
      ["writeAtomic, 40 bytes into an existing directory", () => ops.writeAtomic(path.join(dir, "out", "w.txt"), "x".repeat(40)), () => ops.writeAtomic(path.join(dir, "out", "w.txt"), "x".repeat(40), writeGuard)],
    ];
    for (const [what, plain, guarded] of pairs) {
      const base = median(await timeRuns(plain, runs, 10));
      const verified = median(await timeRuns(guarded, runs, 10));
      rows.push(`| ${what} | ${fmt(base)} ms (anchor) | ${fmt(verified)} ms | ${fmt(verified / base)}× |`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return [
    "## Verified opens (race-free reads and writes)",
    "",
    `Median of ${runs} calls on the local disk. "Verified" opens the file, then checks the open descriptor (readlink of /proc/self/fd/N, fstat for the hard-link count) against the workspace and the access policy before reading; a verified write holds the directory open, verifies it, creates the temp file with O_EXCL through /proc/self/fd/N and renames it there.`,
    "",
    "| call | without a guard | verified | ratio |",
    "|---|---|---|---|",
    ...rows,
  ].join("\n");
}
