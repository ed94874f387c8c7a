/**
 * search_files content search over the generated workspace (100k files in 1,020 directories)
 * beside raw `rg` on the same directory, measured in the same run. Target: the ripgrep-backed
 * tool within 1.3× raw rg. The JS fallback's ratio is reported too.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { detectRipgrep } from "../src/search/ripgrep.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";
import { BENCH_DATA_DIR, benchWorkspace, fmt, median, timeRuns } from "./fixtures.js";

interface Case {
  label: string;
  pattern: string;
  mode: "content" | "count";
  /** Raw rg flags that produce the equivalent output. */
  rgFlags: string[];
}

const CASES: Case[] = [
  { label: "rare literal (1 match)", pattern: "file 4242$", mode: "content", rgFlags: ["--line-number"] },
  { label: "regex, ~100 matches", pattern: "file 9\\d\\d$", mode: "content", rgFlags: ["--line-number"] },
  { label: "every file, count mode", pattern: "file", mode: "count", rgFlags: ["--count"] },
];

function rawRg(dir: string, pattern: string, flags: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("rg", ["--no-config", ...flags, "--", pattern, "."], { cwd: dir, stdio: ["ignore", "pipe", "ignore"] });
    child.stdout.resume();
    child.on("error", reject);
    child.on("close", () => resolve());
  });
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const files = quick ? 1_000 : 100_000;
  const runs = quick ? 3 : 5;
  const dir = await benchWorkspace(files);
  const thread = path.basename(dir);
  const config = { configurable: { thread_id: thread } };
  const head = `## search_files (${files.toLocaleString("en-US")} files, median of ${runs})\n`;
  if (!(await detectRipgrep())) return `${head}\nripgrep is not installed: only the JS fallback could run; install \`ripgrep\` for the comparison.`;
  const rgTool = createSearchFilesTool({ rootDir: BENCH_DATA_DIR, engine: "ripgrep", timeoutMs: 600_000, maxResults: 1_000_000 });
  const jsTool = createSearchFilesTool({ rootDir: BENCH_DATA_DIR, engine: "js", timeoutMs: 600_000, maxResults: 1_000_000 });

  const rows: string[] = [];
  for (const c of CASES) {
    const args = { pattern: c.pattern, output_mode: c.mode };
    const check = JSON.parse(String(await rgTool.invoke(args as never, config)));
    const found = check.total_matches;
    // Interleaved, so page-cache warmth and machine load affect both sides alike.
    await rawRg(dir, c.pattern, c.rgFlags);
    const rawTimes: number[] = [];
    const toolTimes: number[] = [];
    for (let i = 0; i < runs; i++) {
      rawTimes.push(...(await timeRuns(() => rawRg(dir, c.pattern, c.rgFlags), 1, 0)));
      toolTimes.push(...(await timeRuns(() => rgTool.invoke(args as never, config), 1, 0)));
    }
    const raw = median(rawTimes);
    const viaRg = median(toolTimes);
    const viaJs = median(await timeRuns(() => jsTool.invoke(args as never, config), quick ? runs : 1, 0));
    rows.push(
      `| ${c.label} | ${found} | ${fmt(raw)} ms | ${fmt(viaRg)} ms | **${fmt(viaRg / raw)}×** | ${fmt(viaJs)} ms | ${fmt(viaJs / raw)}× |`,
    );
  }
  return [
    head,
    "Anchor: raw `rg --no-config PATTERN .` in the same directory (output drained), same run. The tool adds workspace resolution, output parsing, sorting, credential filtering, redaction and pagination (limit 50). Target for the ripgrep engine: ≤ 1.3× raw rg.",
    "",
    "| search | matches | raw rg | search_files (ripgrep) | ratio | search_files (JS fallback) | ratio |",
    "|---|---|---|---|---|---|---|",
    ...rows,
    "",
    quick ? "" : "The JS fallback is timed once per case (it is slow at this size by design: a fallback for machines without ripgrep).",
  ].join("\n");
}
