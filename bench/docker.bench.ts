/**
 * Docker per call and per thread, against the real engine (.ci/docker.sh up): the cost of
 * DockerEnvironment's wrapper (exact env, cleanup sweep of the call's processes) over a bare
 * `docker exec <c> true` (the anchor, measured in the same run), a small read through
 * ShellFileOperations, container-mode file tool calls (read_file, write_file) with one exec per
 * step vs through the file agent (one exec per tool call, none when an agent is idle), and
 * DockerSandbox's first call of a thread (container start), its restart after an idle stop, and
 * a bind-mode call as root (with the set-id sweep after it).
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { DockerEnvironment } from "../src/environment/dockerEnvironment.js";
import { DockerSandbox } from "../src/environment/dockerSandbox.js";
import type { Environment } from "../src/environment/environment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { createReadFileTool } from "../tools/readFile.js";
import { createWriteFileTool } from "../tools/writeFile.js";
import { docker, DOCKER, dockerUnavailable, IMAGE, startContainer } from "../tests/helpers/docker.js";
import { fmt, median, timeRuns } from "./fixtures.js";

const TITLE = "## Docker: per-call and per-thread cost";

function bareExec(container: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(DOCKER, ["exec", "-i", container, "true"], { stdio: ["pipe", "ignore", "ignore"] });
    child.stdin.end();
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`docker exec exited ${code}`))));
  });
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const skip = await dockerUnavailable().catch((e: Error) => e.message);
  if (skip) return `${TITLE}\n\nNot measured: ${skip}`;
  const runs = quick ? 10 : 40;
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-bench-docker-")));
  const file = path.join(dir, "small.txt");
  await writeFile(file, Array.from({ length: 100 }, (_, i) => `line ${i + 1}: some ordinary source text`).join("\n") + "\n");
  const container = await startContainer({ mounts: [dir] });
  const sandbox = DockerSandbox({ image: IMAGE, rootDir: dir, dockerPath: DOCKER, labels: { "workbench.test": "1" }, idleMs: 500 });
  try {
    const env = new DockerEnvironment({ container, dockerPath: DOCKER });
    const ops = new ShellFileOperations(env);
    const window = { offset: 1, limit: 500, maxLineChars: 2_000 };
    const anchor = median(await timeRuns(() => bareExec(container), runs, 2));
    const rows: Array<[string, number, string]> = [["bare `docker exec -i <c> true` (anchor)", anchor, ""]];
    rows.push(["`DockerEnvironment.exec(\"true\")`", median(await timeRuns(() => env.exec("true"), runs, 2)), "wrapper + sweep of the call's processes"]);
    rows.push([
      "`exec(\"true\", { env })` (3 variables, exact)",
      median(await timeRuns(() => env.exec("true", { env: { PATH: "/usr/bin:/bin", A: "1", B: "2" } }), runs, 2)),
      "",
    ]);
    rows.push(["`readLines` of a 100-line file (ShellFileOperations)", median(await timeRuns(() => ops.readLines(file, window), runs, 2)), "through an idle file agent"]);
    // Container-style tool calls: file access only through docker exec. "per step": the same
    // ShellFileOperations over an environment without openChannel (one exec per step, as before).
    let execs = 0;
    const counted: Environment = { kind: "docker", exec: (c, o) => (execs++, env.exec(c, o)) };
    const perStep = new ShellFileOperations(counted);
    const viaAgent = new ShellFileOperations({ ...counted, openChannel: (c: string, onOut: (b: Buffer) => void) => (execs++, env.openChannel(c, onOut)) } as Environment);
    const config = { configurable: { thread_id: "t" } };
    await mkdir(path.join(dir, "t"), { recursive: true });
    await writeFile(path.join(dir, "t", "small.txt"), await readFile(file));
    const perCall = (n: number) => String(Math.round((n / (runs + 2)) * 100) / 100);
    for (const [label, fileOps] of [["one exec per step", perStep], ["file agent", viaAgent]] as const) {
      const read = createReadFileTool({ rootDir: dir, fileOps });
      const write = createWriteFileTool({ rootDir: dir, fileOps });
      execs = 0;
      const readMs = median(await timeRuns(() => read.invoke({ path: "small.txt" }, config), runs, 2));
      const readExecs = perCall(execs);
      execs = 0;
      let k = 0;
      const writeMs = median(await timeRuns(() => write.invoke({ path: `out/w${k++}.txt`, content: "hello\n" }, config), runs, 2));
      const writeExecs = perCall(execs);
      rows.push([`container mode: \`read_file\` tool call (${label})`, readMs, `${readExecs} docker exec per call`]);
      rows.push([`container mode: \`write_file\` tool call (${label})`, writeMs, `${writeExecs} docker exec per call`]);
    }
    await viaAgent.close();
    // Per thread: a fresh thread id per run, so each is a container start.
    let n = 0;
    const firstCalls = await timeRuns(async () => {
      const threadEnv = await sandbox(`bench-${++n}`);
      await threadEnv.exec("true");
    }, quick ? 3 : 6, 0);
    rows.push(["DockerSandbox: first call of a thread", median(firstCalls), "`docker start` miss + `docker run` + one exec"]);
    const idle = await sandbox("bench-idle");
    const restarts: number[] = [];
    for (let i = 0; i < (quick ? 2 : 4); i++) {
      // Wait for the idle stop, then time the call that starts it again.
      const name = sandbox.containers().get("bench-idle")!;
      for (let w = 0; w < 100 && (await docker("inspect", "-f", "{{.State.Running}}", name)).stdout.trim() !== "false"; w++) {
        await new Promise((r) => setTimeout(r, 200));
      }
      const t0 = performance.now();
      await idle.exec("true");
      restarts.push(performance.now() - t0);
    }
    rows.push(["DockerSandbox: call after an idle stop", median(restarts), "`docker start` + one exec"]);
    if (process.getuid?.() === 0) {
      const asRoot = await sandbox("bench-root");
      rows.push(["DockerSandbox bind mode as root: `exec(\"true\")`", median(await timeRuns(() => asRoot.exec("true"), runs, 2)), "one exec + the set-id sweep (a second exec)"]);
    }
    const load = os.loadavg()[0]!.toFixed(1);
    return [
      TITLE,
      "",
      `Median of ${runs} sequential calls (per-thread rows: fewer); docker.io 20.10 client and engine, image`,
      `\`${IMAGE}\`, container \`--network none --init --cap-drop ALL\`. 1-min load average at the end: ${load}`,
      "(the machine is shared; the ratios are the comparable part).",
      "",
      "| what | median | vs bare exec | note |",
      "|---|---|---|---|",
      ...rows.map(([what, ms, note]) => `| ${what} | ${fmt(ms)} ms | ${ms === anchor ? "1× (anchor)" : `${fmt(ms / anchor)}×`} | ${note} |`),
    ].join("\n");
  } finally {
    await sandbox.close();
    await docker("rm", "-f", container);
    await rm(dir, { recursive: true, force: true });
  }
}
