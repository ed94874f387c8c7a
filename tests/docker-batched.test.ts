/**
 * Container mode costs one `docker exec` per tool call: ShellFileOperations runs its steps in a
 * long-lived agent (src/environment/shellAgent.ts) over DockerEnvironment.openChannel. Counted with
 * the real engine through a docker CLI that logs each invocation (tests/fixtures/counting-docker),
 * the tools driven by createAgent + fakeModel.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import { DockerEnvironment } from "../src/environment/dockerEnvironment.js";
import { DockerSandbox } from "../src/environment/dockerSandbox.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { createFileTools } from "../tools/fileTools.js";
import { makeAgent } from "./helpers/agentHarness.js";
import { containerProcesses, DOCKER, dockerUnavailable, IMAGE, startContainer, docker } from "./helpers/docker.js";

const skip = await dockerUnavailable();
const COUNTING = fileURLToPath(new URL("./fixtures/counting-docker/docker", import.meta.url));

describe("one docker exec per tool call in container mode", { skip }, () => {
  let dir: string;
  let log: string;
  const closers: Array<() => Promise<void>> = [];
  before(async () => {
    dir = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-batched-")));
    log = path.join(dir, "docker.log");
    process.env.COUNTING_DOCKER_LOG = log;
    process.env.COUNTING_DOCKER_REAL = DOCKER;
  });
  after(async () => {
    for (const close of closers) await close();
    await rm(dir, { recursive: true, force: true });
  });
  const execCount = async () => (await readFile(log, "utf8").catch(() => "")).split("\n").filter((l) => l === "exec").length;

  test("write_file, read_file, patch and search_files: at most one exec each (was 8, 8, ?, 12)", async () => {
    const rootDir = path.join(dir, "root");
    const sandbox = DockerSandbox({ image: IMAGE, rootDir, dockerPath: COUNTING, labels: { "workbench.test": "1" }, workspaceMode: "container" });
    closers.push(() => sandbox.close());
    const tools = createFileTools({ rootDir, environment: sandbox });
    const config = { configurable: { thread_id: "counted" } };
    const calls: Array<[string, Record<string, unknown>, RegExp]> = [
      ["write_file", { path: "src/app.txt", content: "alpha\nbeta needle\ngamma\n" }, /"bytes_written"|written/i],
      ["read_file", { path: "src/app.txt" }, /beta needle/],
      ["patch", { path: "src/app.txt", old_string: "gamma", new_string: "delta" }, /"path"/],
      ["read_file", { path: "src/app.txt", offset: 3, limit: 1 }, /3\|delta/],
      ["search_files", { pattern: "needle" }, /app\.txt/],
      ["read_file", { path: "src/missing.txt" }, /not found/i],
    ];
    // The thread's container exists before counting (its creation is not a tool call's cost).
    await (await sandbox("counted")).exec("true");
    const counts: number[] = [];
    for (const [name, args, expect] of calls) {
      const before = await execCount();
      const { agent } = await makeAgent({ script: [[{ name, args, id: `c-${counts.length}` }], "done"], tools, middleware: [] });
      const out = await agent.invoke({ messages: [new HumanMessage("go")] }, { ...config, configurable: { thread_id: "counted" }, recursionLimit: 10 });
      const answer = out.messages.find((m) => ToolMessage.isInstance(m));
      assert.match(String(answer?.content), expect, `${name}: ${String(answer?.content)}`);
      counts.push((await execCount()) - before);
    }
    console.log(`# docker exec per tool call: ${calls.map(([n], i) => `${n} ${counts[i]}`).join(", ")}`);
    for (const [i, n] of counts.entries()) assert.ok(n <= 1, `${calls[i]![0]} took ${n} docker exec calls`);
  });

  test("the agent: binary round trip, errors, a FIFO never blocks it, a timeout kills it and the next step works", async () => {
    const container = await startContainer();
    closers.push(async () => void (await docker("rm", "-f", container)));
    const env = new DockerEnvironment({ container, dockerPath: DOCKER });
    const ops = new ShellFileOperations(env, { timeoutMs: 5_000 });
    closers.push(() => ops.close());
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256));
    await ops.writeAtomic("/tmp/w/bin.dat", bytes);
    assert.ok((await ops.readBytes("/tmp/w/bin.dat", 0, 70_000)).equals(bytes));
    assert.ok((await ops.readBytes("/tmp/w/bin.dat", 1000, 10)).equals(bytes.subarray(1000, 1010)));
    await assert.rejects(ops.readText("/tmp/w"), { code: "EISDIR" });
    assert.equal(await ops.stat("/tmp/w/none"), null);
    await env.exec("mkfifo /tmp/w/fifo");
    assert.equal(await ops.readText("/tmp/w/fifo"), "");
    // A step that never answers (a blocked read of a FIFO through a raw script) times out …
    const slow = new ShellFileOperations(env, { timeoutMs: 1_500 });
    closers.push(() => slow.close());
    await (slow as unknown as { run(s: string, p: string, script: string, a: string[]): Promise<Buffer> })
      .run("read", "/tmp/w/fifo", 'cat -- "$1"', ["/tmp/w/fifo"])
      .then(() => assert.fail("a blocked read answered"), (e: NodeJS.ErrnoException) => assert.equal(e.code, "ETIMEDOUT"));
    // … its processes are gone, and the next step runs in a fresh agent.
    for (let i = 0; i < 40 && (await containerProcesses(container)).some((l) => l.includes("cat -- /tmp/w/fifo")); i++) await new Promise((r) => setTimeout(r, 250));
    assert.deepEqual((await containerProcesses(container)).filter((l) => l.startsWith("cat -- /tmp/w/fifo")), []);
    assert.equal((await slow.stat("/tmp/w/bin.dat"))?.size, 70_000);
  });

  test("an image where the agent cannot start (no writable temp directory): one exec per step, same answers", async () => {
    const name = `wb-test-ro-${process.pid}`;
    const run = await docker("run", "-d", "--name", name, "--label", "workbench.test=1", "--read-only", "--network", "none", "--cap-drop", "ALL", IMAGE, "sleep", "infinity");
    assert.equal(run.code, 0, run.stderr);
    closers.push(async () => void (await docker("rm", "-f", name)));
    const env = new DockerEnvironment({ container: name, dockerPath: DOCKER });
    let execs = 0;
    const exec = env.exec.bind(env);
    env.exec = (c, o) => (execs++, exec(c, o));
    const ops = new ShellFileOperations(env);
    closers.push(() => ops.close());
    assert.equal((await ops.stat("/etc/hostname"))?.type, "file");
    assert.match(await ops.readText("/etc/os-release"), /Debian/);
    await assert.rejects(ops.writeAtomic("/etc/x", "y"), { code: "EROFS" });
    assert.ok(execs >= 3, `steps went through exec (${execs})`);
  });

  test("an idle agent does not keep the process alive", async () => {
    const container = await startContainer();
    closers.push(async () => void (await docker("rm", "-f", container)));
    const script = path.join(dir, "idle.mts");
    const shell = fileURLToPath(new URL("../src/environment/shellFileOperations.ts", import.meta.url));
    const dockerTs = fileURLToPath(new URL("../src/environment/dockerEnvironment.ts", import.meta.url));
    await writeFile(
      script,
      `import { DockerEnvironment } from ${JSON.stringify(dockerTs)};\nimport { ShellFileOperations } from ${JSON.stringify(shell)};\n` +
        `const ops = new ShellFileOperations(new DockerEnvironment({ container: ${JSON.stringify(container)}, dockerPath: ${JSON.stringify(DOCKER)} }));\n` +
        `console.log((await ops.stat("/etc/hostname"))?.type);\n`,
    );
    const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const code = await new Promise((resolve) => child.on("close", resolve));
    clearTimeout(timer);
    assert.equal(code, 0);
    assert.equal(out.trim(), "file");
  });
});
