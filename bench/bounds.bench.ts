/**
 * Bounded work on hostile input, before/after in the same run:
 * - glob matching: the previous hand-written glob→RegExp against the non-backtracking NFA
 *   matcher, on an ordinary pattern (the anchor) and on backtracking patterns;
 * - the JS search engine's regex: `^(a+)+$` on a long `aaaa…!` line answers at the deadline;
 *   its worker's cost on ordinary searches is shown against raw `rg`;
 * - ripgrep's peak RSS on a single-line file with the previous `--json` argv and the current one;
 * - WorkbenchBackend.edit: a replace_all that would grow a file to ~20 MB.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { WorkbenchBackend } from "../src/deepagents/backend.js";
import { globMatcher } from "../src/deepagents/glob.js";
import { compileGlob } from "../src/search/globMatch.js";
import { runJsSearch } from "../src/search/fallback.js";
import { detectRipgrep, ripgrepArgs } from "../src/search/ripgrep.js";
import type { SearchRequest } from "../src/search/types.js";
import { benchWorkspace, fmt, median, timeRuns } from "./fixtures.js";

/** The glob compiler this package used before (src/deepagents/glob.ts at v0.1.0), for comparison. */
function previousGlobToRegExp(glob: string): RegExp {
  let re = "";
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const slashAfter = glob[i + 2] === "/";
        re += slashAfter ? "(?:.*/)?" : ".*";
        i += slashAfter ? 2 : 1;
      } else re += "[^/]*";
    } else if (c === "?") re += "[^/]";
    else if (c === "{") {
      depth++;
      re += "(?:";
    } else if (c === "}" && depth > 0) {
      depth--;
      re += ")";
    } else if (c === "," && depth > 0) re += "|";
    else re += c.replace(/[.+^${}()|[\]\\/]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

function timeMatch(match: (p: string) => boolean, paths: string[], runs: number): number {
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (const p of paths) match(p);
    times.push(performance.now() - t0);
  }
  return median(times);
}

async function globSection(quick: boolean): Promise<string[]> {
  const names = Array.from({ length: 200 }, (_, i) => `${"a".repeat(86)}${String(i).padStart(4, "0")}`);
  const ordinary = Array.from({ length: 20_000 }, (_, i) => `src/dir${i % 50}/sub${i % 7}/file${i}.${i % 3 ? "ts" : "md"}`);
  const runs = quick ? 3 : 5;
  const previousTs = previousGlobToRegExp("**/*.ts");
  const anchor = timeMatch((p) => previousTs.test(p), ordinary, runs);
  const nfaTs = timeMatch(globMatcher("**/*.ts"), ordinary, runs);
  const nfaOnly = compileGlob("**/*.ts", { globstar: "anywhere", escapes: false, regexFastPath: false });
  const nfaOnlyTs = timeMatch((p) => nfaOnly.test(p), ordinary, runs);
  const rows = [
    `| \`**/*.ts\` over 20,000 ordinary paths (anchor: previous RegExp), total | ${fmt(anchor)} ms | ${fmt(nfaTs)} ms | ${fmt(nfaTs / anchor)}× the anchor |`,
    `| the same, RegExp fast path off (NFA only) | ${fmt(anchor)} ms | ${fmt(nfaOnlyTs)} ms | ${fmt(nfaOnlyTs / anchor)}× the anchor |`,
  ];
  // The previous matcher grows ~15× per extra "*a"; 6 stars took minutes, so it runs only up to 4, on 5 names.
  for (const stars of [3, 4, 6]) {
    const pattern = `${"*a".repeat(stars)}*b`;
    const previous = previousGlobToRegExp(pattern);
    const before = stars <= 4 ? timeMatch((p) => previous.test(p), names.slice(0, 5), 1) / 5 : undefined;
    const after = timeMatch(globMatcher(pattern), names, runs) / names.length;
    rows.push(
      `| \`${pattern}\` against one 90-character name | ${before === undefined ? "not run (minutes)" : `${fmt(before)} ms`} | ${fmt(after * 1000)} µs | ${before === undefined ? "—" : `${fmt(before / after)}× faster`} |`,
    );
  }
  return [
    "### Glob matching (WorkbenchBackend.glob/grep, search_files file_glob)",
    "",
    "| case | previous glob→RegExp | new matcher | ratio |",
    "|---|---|---|---|",
    ...rows,
    "",
    "The matcher takes a RegExp when a glob has at most two unbounded wildcards and the path is at most 1,024 characters (backtracking then stays O(n²)), else the NFA. The first two rows are the price on an ordinary pattern against the previous matcher (the anchor); the others are the speed-up on backtracking patterns.",
  ];
}

function rawRg(dir: string, pattern: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("rg", ["--no-config", "--line-number", "--", pattern, "."], { cwd: dir, stdio: ["ignore", "pipe", "ignore"] });
    child.stdout.resume();
    child.on("error", reject);
    child.on("close", () => resolve());
  });
}

async function regexSection(quick: boolean, tmp: string): Promise<string[]> {
  const files = quick ? 1_000 : 10_000;
  const dir = await benchWorkspace(files);
  const req = (pattern: string, cwd: string, timeoutMs = 600_000): SearchRequest => ({
    target: "content",
    pattern,
    mode: "content",
    cwd,
    searchPath: cwd,
    context: 0,
    maxRecords: 1_000_000,
    timeoutMs,
    maxOutputBytes: 64 * 1024 * 1024,
  });
  const rows: string[] = [];
  if (await detectRipgrep()) {
    const raw = median(await timeRuns(() => rawRg(dir, "file 9\\d\\d$"), quick ? 3 : 5));
    const js = median(await timeRuns(() => runJsSearch(req("file 9\\d\\d$", dir)), quick ? 3 : 3));
    rows.push(`| \`file 9\\d\\d$\` over ${files.toLocaleString("en-US")} files | raw rg (anchor) ${fmt(raw)} ms | JS engine with the worker ${fmt(js)} ms | ${fmt(js / raw)}× |`);
  }
  const redos = path.join(tmp, "redos");
  await mkdir(redos, { recursive: true });
  await writeFile(path.join(redos, "evil.txt"), `${"a".repeat(40)}!\n`);
  const t0 = performance.now();
  const out = await runJsSearch(req("^(a+)+$", redos, 2_000));
  const answered = performance.now() - t0;
  rows.push(
    `| \`^(a+)+$\` on a 41-character \`aaaa…!\` line, time limit 2 s | previous engine: blocks the event loop (2^40 steps, not run) | answered in ${fmt(answered)} ms | ${out.error?.startsWith("The regular expression ran for more than") ? "error asks to simplify" : "unexpected answer"} |`,
  );
  return ["### Regex run time (JS search engine)", "", "| case | before / anchor | now | ratio / verdict |", "|---|---|---|---|", ...rows];
}

/** Peak RSS (VmHWM, MB) of one rg run, polled from /proc while it runs. */
function rgPeakRss(args: string[], cwd: string): Promise<{ mb: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn("rg", args, { cwd, stdio: ["ignore", "pipe", "ignore"] });
    let peakKb = 0;
    const poll = setInterval(() => {
      readFile(`/proc/${child.pid}/status`, "utf8").then(
        (s) => {
          const kb = Number(/VmHWM:\s+(\d+)/.exec(s)?.[1] ?? 0);
          if (kb > peakKb) peakKb = kb;
        },
        () => undefined,
      );
    }, 10);
    child.stdout.resume();
    child.on("error", reject);
    child.on("close", () => {
      clearInterval(poll);
      resolve({ mb: peakKb / 1024, ms: performance.now() - t0 });
    });
  });
}

async function ripgrepSection(quick: boolean, tmp: string): Promise<string[]> {
  if (!(await detectRipgrep())) return ["### ripgrep memory", "", "ripgrep is not installed."];
  const mb = quick ? 2 : 8;
  const dir = path.join(tmp, "oneline");
  await mkdir(dir, { recursive: true });
  const fh = await open(path.join(dir, "line.txt"), "w");
  const piece = Buffer.alloc(1024 * 1024, "a");
  for (let i = 0; i < mb; i++) await fh.write(piece);
  await fh.close();
  const req: SearchRequest = { target: "content", pattern: "a", mode: "content", cwd: dir, searchPath: dir, context: 0, maxRecords: 10, timeoutMs: 600_000, maxOutputBytes: 1 << 30 };
  const now = ripgrepArgs(req);
  const previous = ["--json", ...now.filter((a) => !/^--(no-heading|with-filename|line-number|null|color=|max-columns)/.test(a))];
  const before = await rgPeakRss(previous, dir);
  const after = await rgPeakRss(now, dir);
  return [
    "### ripgrep memory on a single-line file",
    "",
    `One search for \`a\` in a ${mb} MB file holding one line of \`a\` (every byte a match). Anchor: the file size.`,
    "",
    "| argv | peak RSS of rg | × file size | time |",
    "|---|---|---|---|",
    `| previous: \`--json\` (ignores --max-columns) | ${fmt(before.mb)} MB | ${fmt(before.mb / mb)}× | ${fmt(before.ms)} ms |`,
    `| now: standard printer, \`--max-columns=8192 --max-columns-preview\` | ${fmt(after.mb)} MB | ${fmt(after.mb / mb)}× | ${fmt(after.ms)} ms |`,
    "",
    `Peak RSS ratio previous/now: **${fmt(before.mb / after.mb)}×**. (Measured by hand at 64 MB: 6.9 GB and 100 s with \`--json\`, 146 MB and 2.2 s now.)`,
  ];
}

async function editSection(tmp: string): Promise<string[]> {
  const root = path.join(tmp, "edit");
  await mkdir(path.join(root, "t"), { recursive: true });
  const text = "a\n".repeat(200_000);
  await writeFile(path.join(root, "t", "many.txt"), text);
  const backend = new WorkbenchBackend({ rootDir: root, threadId: "t" });
  const rss0 = process.memoryUsage().rss;
  const t0 = performance.now();
  const res = await backend.edit("/many.txt", "a", "b".repeat(100), true);
  const ms = performance.now() - t0;
  const grew = (process.memoryUsage().rss - rss0) / 1024 / 1024;
  const anchorT0 = performance.now();
  await readFile(path.join(root, "t", "many.txt"), "utf8");
  const anchor = performance.now() - anchorT0;
  return [
    "### Edit size cap (WorkbenchBackend.edit, patch)",
    "",
    "`replace_all` of `a` by 100 characters in a 400 kB file of 200,000 `a` lines (the result would be 20.2 MB, over the 16 MiB cap). Anchor: reading the file once.",
    "",
    "| | time | RSS growth | outcome |",
    "|---|---|---|---|",
    `| read the file (anchor) | ${fmt(anchor)} ms | — | — |`,
    `| edit | ${fmt(ms)} ms (${fmt(ms / anchor)}×) | ${fmt(Math.max(0, grew))} MB | ${res.error ? "refused before the text is built; nothing written" : "written (cap missing)"} |`,
  ];
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "wb-bench-bounds-"));
  try {
    return [
      "## Bounded work on hostile input",
      "",
      ...(await globSection(quick)),
      "",
      ...(await regexSection(quick, tmp)),
      "",
      ...(await ripgrepSection(quick, tmp)),
      "",
      ...(await editSection(tmp)),
    ].join("\n");
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
