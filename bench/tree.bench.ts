/**
 * Tree render into the default budget (200 entries) at 1k/10k/100k files. Anchor: GNU `tree`
 * listing everything (what a "just run tree" middleware would pay), else the naive full
 * walk (stat of every file).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { renderDirectoryTree } from "../src/tree.js";
import { benchWorkspace, fmt, median, seedStyleNewestMtime, timeRuns } from "./fixtures.js";

const run$ = promisify(execFile);

async function gnuTreeAvailable(): Promise<boolean> {
  try {
    await run$("tree", ["--version"]);
    return true;
  } catch {
    return false;
  }
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const sizes = quick ? [1_000] : [1_000, 10_000, 100_000];
  const runs = quick ? 5 : 15;
  const gnu = await gnuTreeAvailable();
  const anchorName = gnu
    ? "GNU `tree -a --noreport` (full listing, incl. process spawn)"
    : "the seed-style full walk (`seedStyleNewestMtime`: readdir + stat of every file; GNU tree not installed)";
  const anchor = gnu
    ? (dir: string) => run$("tree", ["-a", "--noreport", dir], { maxBuffer: 1 << 28 })
    : (dir: string) => seedStyleNewestMtime(dir);
  const rows: string[] = [];
  for (const files of sizes) {
    const dir = await benchWorkspace(files);
    const text = await renderDirectoryTree(dir);
    const ours = median(await timeRuns(() => renderDirectoryTree(dir), runs, 2));
    const theirs = median(await timeRuns(() => anchor(dir), Math.min(runs, 5), 1));
    const target = files === 100_000 ? (ours <= 50 ? "✅ ≤ 50 ms" : "❌ > 50 ms") : "";
    rows.push(
      `| ${files.toLocaleString("en-US")} | ${fmt(ours)} ms | ${text.split("\n").length} | ${fmt(theirs)} ms | ${fmt(theirs / ours)}× faster | ${target} |`,
    );
  }
  return [
    "## Directory tree render",
    "",
    "`renderDirectoryTree(dir)` with the default budget (200 entries, `.gitignore` on), workspaces of",
    `1,020 directories; median of ${runs} runs after 2 warm-ups. Anchor: ${anchorName}, median of ≤ 5 runs.`,
    "Target: ≤ 50 ms at 100k files.",
    "",
    "| files | ours | lines | anchor | ours vs anchor | target |",
    "|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}
