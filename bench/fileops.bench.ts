/**
 * Per-call latency of reading a small file (readLines of a 100-line file, the read_file hot path)
 * on each FileOperations backend: native fs, shell over local bash, and over SSH to a throwaway
 * OpenSSH server on 127.0.0.1 (tests/helpers/sshd.ts) both SFTP (`SshEnvironment.fileOps`) and
 * shell over exec. Anchor: the native backend.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { SshEnvironment } from "../src/environment/sshEnvironment.js";
import type { FileOperations } from "../src/environment/fileOperations.js";
import { sshdUnavailable, startSshd } from "../tests/helpers/sshd.js";
import { fmt, median } from "./fixtures.js";

const WARMUP = 5;
const PASSES = 4;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const runs = quick ? 30 : 200;
  const dir = await mkdtemp(path.join(os.tmpdir(), "wb-bench-fileops-"));
  const file = path.join(dir, "small.txt");
  await writeFile(file, Array.from({ length: 100 }, (_, i) => `line ${i + 1}: some ordinary source text`).join("\n") + "\n");
  const window = { offset: 1, limit: 500, maxLineChars: 2_000 };
  const backends: Array<{ name: string; ops?: FileOperations; note?: string }> = [
    { name: "native (`LocalFileOperations`)", ops: new LocalFileOperations() },
    { name: "shell over local bash", ops: new ShellFileOperations(new LocalShellEnvironment()) },
  ];
  const skip = await sshdUnavailable().catch((e: Error) => e.message);
  const sshd = skip ? undefined : await startSshd();
  const ssh = sshd ? new SshEnvironment(sshd.options) : undefined;
  backends.push(
    ssh
      ? { name: "SFTP over SSH (`SshEnvironment.fileOps`, one session on the reused connection)", ops: ssh.fileOps }
      : { name: "SFTP over SSH", note: `not measured: ${skip}` },
    ssh
      ? { name: "shell over SSH (OpenSSH on 127.0.0.1, one reused connection)", ops: new ShellFileOperations(ssh) }
      : { name: "shell over SSH", note: `not measured: ${skip}` },
  );
  const rows: string[] = [];
  try {
    // Blocks: each backend runs PASSES blocks of runs/PASSES calls, the backends taking turns, so
    // a burst of load on the machine is spread over every backend instead of hitting one. A few
    // unmeasured calls start each block (the previous backend's processes are still exiting).
    const measured = backends.filter((b): b is { name: string; ops: FileOperations } => b.ops !== undefined);
    const times = measured.map(() => [] as number[]);
    const perBlock = Math.ceil(runs / PASSES);
    for (let pass = 0; pass < PASSES; pass++) {
      for (const [i, { ops }] of measured.entries()) {
        for (let call = -WARMUP; call < perBlock; call++) {
          const t0 = performance.now();
          const result = await ops.readLines(file, window);
          const elapsed = performance.now() - t0;
          if (result.lines.length !== 100) throw new Error(`${ops.kind} read ${result.lines.length} lines`);
          if (call >= 0) times[i]!.push(elapsed);
        }
      }
    }
    const anchor = median([...times[0]!]);
    for (const backend of backends) {
      const i = measured.findIndex((m) => m === backend);
      if (i < 0) {
        rows.push(`| ${backend.name} | – | – | – | ${backend.note} |`);
        continue;
      }
      const med = median([...times[i]!]);
      const ratio = i === 0 ? "1× (anchor)" : `${fmt(med / anchor)}× native`;
      rows.push(`| ${backend.name} | ${fmt(med)} ms | ${fmt(percentile(times[i]!, 95))} ms | ${ratio} | |`);
    }
  } finally {
    await ssh?.close();
    await sshd?.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return [
    "## File operations backends: per-call latency of a small read",
    "",
    `\`readLines\` of a 100-line file (all lines), ${runs} sequential calls per backend in ${PASSES} blocks, the backends`,
    `taking turns (so a burst of machine load is spread over all of them); ${WARMUP} unmeasured calls start each block.`,
    "SFTP sends four requests per call on one long-lived SFTP session (stat, open, one read that reaches",
    "the end, close without waiting) and starts no process. The shell backends spawn one command per call",
    "(`cut | sed` behind a `stat` probe); shell over SSH adds one exec channel per call on the reused",
    "connection. The test sshd sets `SHLVL=1` so Debian's bash skips `~/.bashrc` for these sessions; a slow",
    "bashrc on a real server adds its start-up time to every shell call (not to SFTP calls).",
    "",
    "| backend | median | p95 | vs native | note |",
    "|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}
