/**
 * Per-call cost of the bubblewrap sandbox (SandboxEnvironment.exec) against the anchor, a plain
 * `bash -c` through runProcess, measured in the same run. The variants are interleaved call by
 * call so that load from other work on the machine hits them alike.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { runProcess } from "../src/environment/localEnvironment.js";
import { detectSandbox, SandboxEnvironment } from "../src/environment/sandboxEnvironment.js";
import { fmt, median } from "./fixtures.js";

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface Variant {
  name: string;
  call: () => Promise<string>;
  expect: string;
  /** Name of the variant this one is compared with. */
  anchor?: string;
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const runs = quick ? 20 : 150;
  const title = "## Local sandbox (bubblewrap): per-call cost of a command";
  const found = await detectSandbox();
  if (!found.available) return `${title}\n\nNot measured: ${found.reason}`;
  const dir = await mkdtemp(path.join(os.tmpdir(), "wb-bench-sandbox-"));
  const env = { PATH: "/usr/bin:/bin", HOME: dir, LANG: "C.UTF-8" };
  const sandbox = new SandboxEnvironment({ workspaceDir: dir, env });
  const networked = new SandboxEnvironment({ workspaceDir: dir, env, network: true });
  const plain = async (command: string) => (await runProcess("bash", ["-c", command], { cwd: dir, env })).stdout.toString();
  const boxed = (box: SandboxEnvironment) => async (command: string) => (await box.exec(command)).stdout.toString();
  const variants: Variant[] = [
    { name: "plain `bash -c true` (runProcess)", call: () => plain("true"), expect: "" },
    { name: "sandboxed `true` (no network)", call: () => boxed(sandbox)("true"), expect: "", anchor: "plain `bash -c true` (runProcess)" },
    { name: "sandboxed `true`, `network: true`", call: () => boxed(networked)("true"), expect: "", anchor: "plain `bash -c true` (runProcess)" },
    { name: "plain `echo hi`", call: () => plain("echo hi"), expect: "hi\n" },
    { name: "sandboxed `echo hi` (output round-trip)", call: () => boxed(sandbox)("echo hi"), expect: "hi\n", anchor: "plain `echo hi`" },
  ];
  const times = new Map(variants.map((v) => [v.name, [] as number[]]));
  try {
    for (let i = 0; i < runs + 5; i++) {
      for (const v of variants) {
        const t0 = performance.now();
        const got = await v.call();
        const ms = performance.now() - t0;
        if (got !== v.expect) throw new Error(`${v.name} printed ${JSON.stringify(got)}`);
        if (i >= 5) times.get(v.name)!.push(ms);
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const rows = variants.map((v) => {
    const t = times.get(v.name)!;
    const med = median([...t]);
    const ratio = v.anchor ? `${fmt(med / median([...times.get(v.anchor)!]))}×` : "1× (anchor)";
    return `| ${v.name} | ${fmt(med)} ms | ${fmt(percentile(t, 95))} ms | ${ratio} |`;
  });
  return [
    title,
    "",
    `${runs} calls per variant after 5 warm-up rounds, the variants interleaved call by call, sequential.`,
    `A sandboxed call starts \`${found.bwrapPath}\` with fresh user, PID, mount, IPC, UTS and cgroup`,
    "namespaces (and a network namespace unless `network: true`), a new /proc, /dev and /tmp, the",
    "read-only system binds and the workspace bind, then `bash -c`. Ratios compare medians with the",
    "plain command of the same kind.",
    "",
    "| variant | median | p95 | vs plain |",
    "|---|---|---|---|",
    ...rows,
  ].join("\n");
}
