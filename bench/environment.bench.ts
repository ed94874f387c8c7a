/**
 * What routing every part through the thread's Environment costs per call. Anchor: a plain
 * `bash --norc -c true` child process (what any local command costs at least).
 * - run_command `true` through the tool: default LocalEnvironment, and a LocalShellEnvironment
 *   (its thread directory created through a shell: more processes per call).
 * - search_files on a 100-file workspace: local ripgrep, ripgrep run through the environment's
 *   exec, and the JS walk over ShellFileOperations (an environment without rg).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { LocalShellEnvironment, runProcess } from "../src/environment/localEnvironment.js";
import { createFileTools } from "../tools/fileTools.js";
import { createRunCommandTool } from "../tools/runCommand.js";
import { fmt, median, timeRuns } from "./fixtures.js";

type Invokable = { invoke(args: unknown, config: unknown): Promise<unknown> };

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const runs = quick ? 10 : 50;
  const root = await mkdtemp(path.join(os.tmpdir(), "wb-bench-env-"));
  const config = { configurable: { thread_id: "bench" } };
  try {
    const ws = path.join(root, "bench");
    for (let d = 0; d < 5; d++) {
      await mkdir(path.join(ws, `dir${d}`), { recursive: true });
      for (let f = 0; f < 20; f++) {
        const body = Array.from({ length: 40 }, (_, i) => `line ${i} of file ${f} ${i === 7 && f % 5 === 0 ? "needle" : "hay"}`).join("\n");
        await writeFile(path.join(ws, `dir${d}`, `f${f}.txt`), `${body}\n`);
      }
    }
    const rows: Array<[string, number]> = [];
    const measure = async (name: string, fn: () => Promise<unknown>, n = runs) => rows.push([name, median(await timeRuns(fn, n, 1))]);

    await measure("anchor: `bash --norc -c true` (runProcess)", () => runProcess("bash", ["--norc", "-c", "true"]));
    const shellEnv = new LocalShellEnvironment();
    const local = createRunCommandTool({ rootDir: root }) as unknown as Invokable;
    const viaShell = createRunCommandTool({ rootDir: root, environment: shellEnv }) as unknown as Invokable;
    await measure("run_command `true`, default LocalEnvironment", () => local.invoke({ command: "true" }, config));
    await measure("run_command `true`, LocalShellEnvironment (dir via shell)", () => viaShell.invoke({ command: "true" }, config));

    const search = (options: Parameters<typeof createFileTools>[0]) =>
      createFileTools({ rootDir: root, ...options }).find((t) => t.name === "search_files") as unknown as Invokable;
    const args = { pattern: "needle", limit: 100 };
    const searches: Array<[string, Invokable]> = [
      ["search_files, local ripgrep", search({})],
      ["search_files, ripgrep through the environment's exec", search({ environment: shellEnv })],
      ["search_files, JS walk over ShellFileOperations (no rg there)", search({ environment: new LocalShellEnvironment(), search: { ripgrepPath: "wb-no-such-rg" } })],
    ];
    for (const [name, tool] of searches) {
      const check = JSON.parse(String(await tool.invoke(args, config)));
      if (check.matches?.length !== 20 || check.incomplete) throw new Error(`${name}: expected 20 matches, got ${JSON.stringify(check).slice(0, 300)}`);
      // The walk costs one process per file operation: fewer runs.
      await measure(name, () => tool.invoke(args, config), name.includes("JS walk") ? Math.max(3, Math.round(runs / 10)) : runs);
    }
    const anchor = rows[0]![1];
    const table = rows.map(([name, ms]) => `| ${name} | ${fmt(ms)} | ${(ms / anchor).toFixed(1)}× |`);
    return [
      "## Environments: per-call cost of run_command and search_files",
      "",
      `Median of ${runs} calls each (the JS walk: ${Math.max(3, Math.round(runs / 10))}), on one thread's workspace (100 files in 5 directories; search finds 20 matches). Ratio against the anchor measured in the same run. The walk over a shell costs about two processes per file: an environment without \`rg\` should offer native \`fileOps\` (SFTP) or install ripgrep.`,
      "",
      "| call | median ms | × anchor |",
      "|---|---:|---:|",
      ...table,
    ].join("\n");
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
