/**
 * search_files content search over the generated workspace (100k files in 1,020 directories)
 * beside raw `rg` on the same directory, measured in the same run. Target: the ripgrep-backed
 * tool within 1.3× raw rg. The JS fallback's ratio is reported too. Beside wall time, the CPU
 * both sides used (this process plus its children: rg, and the tool's link-count `find`), which
 * a loaded machine shifts far less than wall time.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
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

/** CPU ms of this process and its reaped children (Linux `/proc`; `undefined` elsewhere). */
function cpuMs(): number | undefined {
  try {
    const f = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
    const own = process.cpuUsage();
    // utime, stime of this process are fields 14-15 (taken from cpuUsage: µs, not ticks); children's are 16-17, in ticks (100 Hz).
    return (own.user + own.system) / 1000 + (Number(f[13]) + Number(f[14])) * 10;
  } catch {
    return undefined;
  }
}

/** Wall ms of one call, and its CPU ms when measurable. */
async function measure(fn: () => Promise<unknown>): Promise<{ wall: number; cpu: number | undefined }> {
  const c0 = cpuMs();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const c1 = cpuMs();
  return { wall, cpu: c0 === undefined || c1 === undefined ? undefined : c1 - c0 };
}

function rawRg(dir: string, pattern: string, flags: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("rg", ["--no-config", ...flags, "--", pattern, "."], { cwd: dir, stdio: ["ignore", "pipe", "ignore"] });
    child.stdout.resume();
    child.on("error", reject);
    child.on("close", () => resolve());
  });
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const loadAtStart = loadavg();
  const files = quick ? 1_000 : 100_000;
  const runs = quick ? 3 : 9;
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
    const rawRuns: Array<{ wall: number; cpu: number | undefined }> = [];
    const toolRuns: Array<{ wall: number; cpu: number | undefined }> = [];
    for (let i = 0; i < runs; i++) {
      rawRuns.push(await measure(() => rawRg(dir, c.pattern, c.rgFlags)));
      toolRuns.push(await measure(() => rgTool.invoke(args as never, config)));
    }
    const raw = median(rawRuns.map((r) => r.wall));
    const viaRg = median(toolRuns.map((r) => r.wall));
    const cpuOf = (rs: typeof rawRuns) => (rs.every((r) => r.cpu !== undefined) ? median(rs.map((r) => r.cpu!)) : undefined);
    const [rawCpu, toolCpu] = [cpuOf(rawRuns), cpuOf(toolRuns)];
    const cpu = rawCpu && toolCpu ? `${fmt(rawCpu)} / ${fmt(toolCpu)} ms (${fmt(toolCpu / rawCpu)}×)` : "n/a";
    const viaJs = median(await timeRuns(() => jsTool.invoke(args as never, config), quick ? runs : 1, 0));
    rows.push(
      `| ${c.label} | ${found} | ${fmt(raw)} ms | ${fmt(viaRg)} ms | **${fmt(viaRg / raw)}×** | ${cpu} | ${fmt(viaJs)} ms | ${fmt(viaJs / raw)}× |`,
    );
  }
  return [
    head,
    "Anchor: raw `rg --no-config PATTERN .` in the same directory (output drained), same run, the two interleaved. The tool adds workspace resolution, output parsing, sorting, credential filtering, the hard-link check, redaction and pagination (limit 50). Target for the ripgrep engine: ≤ 1.3× raw rg.",
    `Load average at the start: ${loadAtStart.map((l) => l.toFixed(1)).join(", ")} (${cpus().length} cores). CPU: milliseconds of CPU this process and its children (rg; the tool's link-count \`find\`) used per call, raw rg / tool — what a loaded machine shifts least.`,
    "",
    "| search | matches | raw rg | search_files (ripgrep) | ratio | CPU raw / tool | search_files (JS fallback) | ratio |",
    "|---|---|---|---|---|---|---|---|",
    ...rows,
    "",
    quick ? "" : "The JS fallback is timed once per case (it is slow at this size by design: a fallback for machines without ripgrep).",
  ].join("\n");
}
