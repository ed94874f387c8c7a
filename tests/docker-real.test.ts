/**
 * DockerEnvironment and DockerSandbox against a REAL Docker engine (`.ci/docker.sh up` starts
 * dockerd and builds `workbench-test:bookworm-1` from debootstrap; see tests/helpers/docker.ts).
 * Locally a missing engine skips with the reason; under CI=true it fails. The FileOperations
 * contract suite over `docker exec` runs in tests/environment-contract.test.ts.
 */
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { DockerEnvironment } from "../src/environment/dockerEnvironment.js";
import { DockerSandbox, removeSandboxContainers, SANDBOX_LABEL } from "../src/environment/dockerSandbox.js";
import { containerProcesses, docker, DOCKER, dockerUnavailable, startContainer } from "./helpers/docker.js";

const skip = await dockerUnavailable();
if (skip) console.log(`# SKIPPING real Docker tests: ${skip}`);

const PATH_IN_CONTAINER = "/usr/local/bin:/usr/bin:/bin";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("DockerEnvironment in a real container", { skip }, () => {
  let dir: string;
  let container: string;
  let env: DockerEnvironment;

  before(async () => {
    dir = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-docker-real-")));
    container = await startContainer({ mounts: [dir], user: `${process.getuid!()}:${process.getgid!()}` });
    env = new DockerEnvironment({ container, dockerPath: DOCKER });
  });
  after(async () => {
    if (container) await docker("rm", "-f", container);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("exit status, stdout, stderr, binary stdin and cwd; it runs in the container", async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 10, 13, 0]);
    const echoed = await env.exec("cat", { stdin: bytes });
    assert.deepEqual(echoed.stdout, bytes);
    const failed = await env.exec("echo out; echo err >&2; exit 7");
    assert.deepEqual([failed.exitCode, failed.stdout.toString(), failed.stderr], [7, "out\n", "err\n"]);
    const where = await env.exec("pwd; cat /etc/hostname", { cwd: dir });
    const [pwd, hostname] = where.stdout.toString().trim().split("\n");
    assert.equal(pwd, dir);
    assert.notEqual(hostname, os.hostname());
    assert.ok(container.length > 0 && (await docker("inspect", "-f", "{{.Config.Hostname}}", container)).stdout.trim() === hostname);
  });

  test("env: the command sees exactly the given variables; values are in no argv and not in docker inspect", async () => {
    const secret = `sk-test-${Date.now()}-value`;
    const seenArgv: string[] = [];
    const watcher = (async () => {
      // Every host process's argv while the call runs (the docker client included).
      for (let i = 0; i < 10; i++) {
        for (const pid of await readdir("/proc").catch(() => [])) {
          if (!/^\d+$/.test(pid)) continue;
          const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
          if (cmdline.includes(secret)) seenArgv.push(cmdline);
        }
        await sleep(100);
      }
    })();
    const result = await env.exec("sleep 1; env -0", { env: { API_KEY: secret, PATH: PATH_IN_CONTAINER, MULTI: "a\nb" } });
    await watcher;
    const vars = result.stdout.toString().split("\0").filter(Boolean).sort();
    assert.deepEqual(
      vars.filter((l) => !/^(PWD|WORKBENCH_EXEC_ID)=/.test(l)),
      [`API_KEY=${secret}`, "MULTI=a\nb", `PATH=${PATH_IN_CONTAINER}`],
    );
    assert.deepEqual(seenArgv, []);
    assert.ok(!(await docker("inspect", container)).stdout.includes(secret));
    // Without env: the container's own variables (docker sets HOSTNAME and HOME).
    assert.match((await env.exec("env")).stdout.toString(), /^HOSTNAME=/m);
  });

  test("onOutput streams chunks as they come and nothing is buffered", async () => {
    const chunks: { at: number; text: string; stream: string }[] = [];
    const t0 = Date.now();
    const result = await env.exec("echo first; echo oops >&2; sleep 1.5; echo second", {
      onOutput: (chunk, stream) => chunks.push({ at: Date.now() - t0, text: chunk.toString(), stream }),
    });
    const end = Date.now() - t0;
    assert.equal(result.stdout.length, 0);
    assert.equal(result.stderr, "");
    assert.equal(chunks.map((c) => c.text).join("").replace("oops\n", ""), "first\nsecond\n");
    assert.ok(chunks.some((c) => c.stream === "stderr" && c.text === "oops\n"));
    const first = chunks.find((c) => c.text.startsWith("first"))!;
    assert.ok(end - first.at >= 1000, `first chunk at ${first.at} ms, call ended at ${end} ms`);
  });

  test("a timeout kills the command inside the container, children included", async () => {
    const result = await env.exec("sleep 4242 & sleep 4243", { timeoutMs: 1500 });
    assert.equal(result.timedOut, true);
    assert.equal(result.exitCode, -1);
    const left = await containerProcesses(container);
    assert.deepEqual(left.filter((l) => /sleep 424[23]/.test(l)), [], left.join("\n"));
  });

  test("aborting the signal kills the command inside the container", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 1000);
    const result = await env.exec("sleep 4343", { signal: controller.signal });
    assert.equal(result.aborted, true);
    assert.equal(result.timedOut, false);
    const left = await containerProcesses(container);
    assert.ok(!left.some((l) => l.includes("sleep 4343")), left.join("\n"));
  });

  test("background jobs, nohup and setsid children do not outlive the call", async () => {
    const result = await env.exec("sleep 4444 & nohup sleep 4545 >/dev/null 2>&1 & setsid sleep 4646 & echo started");
    assert.equal(result.stdout.toString(), "started\n");
    const left = await containerProcesses(container);
    assert.deepEqual(left.filter((l) => /sleep 4[456]4[456]/.test(l)), [], left.join("\n"));
    // The container itself is untouched: its init and `sleep infinity` still run.
    assert.ok(left.some((l) => l.includes("sleep infinity")), left.join("\n"));
  });

  test("--network none: a loopback server of the test cannot be reached from the container", async () => {
    let connections = 0;
    const server = net.createServer((socket) => {
      connections++;
      socket.end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      // Control: the same probe from the host reaches it.
      await new Promise<void>((resolve, reject) => net.connect(port, "127.0.0.1", resolve).on("error", reject).unref());
      const hostConnections = connections;
      const probe = await env.exec(`timeout 5 bash -c 'echo > /dev/tcp/127.0.0.1/${port}' && echo CONNECTED; cat /proc/net/dev`);
      assert.doesNotMatch(probe.stdout.toString(), /CONNECTED/);
      const interfaces = probe.stdout.toString().split("\n").slice(2).map((l) => l.split(":")[0]!.trim()).filter(Boolean);
      assert.deepEqual(interfaces, ["lo"]);
      assert.equal(connections, hostConnections);
    } finally {
      server.close();
    }
  });
});

describe("DockerSandbox: one container per thread", { skip }, () => {
  let rootDir: string;
  const labels = { "workbench.test": "1" };
  const sandboxes: { close(): Promise<void> }[] = [];
  const open = (options: Partial<Parameters<typeof DockerSandbox>[0]> = {}) => {
    const sandbox = DockerSandbox({ image: process.env.WORKBENCH_TEST_DOCKER_IMAGE ?? "workbench-test:bookworm-1", rootDir, dockerPath: DOCKER, labels, ...options });
    sandboxes.push(sandbox);
    return sandbox;
  };
  const listContainers = async (instanceId: string, all = true) =>
    (await docker("ps", ...(all ? ["-a"] : []), "-q", "--filter", `label=${SANDBOX_LABEL}=${instanceId}`)).stdout.split("\n").filter(Boolean);
  const running = async (name: string) => (await docker("inspect", "-f", "{{.State.Running}}", name)).stdout.trim();

  before(async () => {
    rootDir = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-sandbox-")));
  });
  after(async () => {
    for (const s of sandboxes) await s.close();
    await rm(rootDir, { recursive: true, force: true });
  });

  test("bind mode: the thread directory is shared with the host, hardened container, no view of other threads", async () => {
    const sandbox = open();
    const a = await sandbox("alice");
    const dirA = path.join(rootDir, "alice");
    assert.equal(a.sandboxed, true);
    assert.equal(a.fileOps?.kind, "local");
    const wrote = await a.exec("pwd; echo from-container > made.txt; ls -a ..", {});
    assert.equal(wrote.exitCode, 0, wrote.stderr);
    const [pwd, ...parent] = wrote.stdout.toString().trim().split("\n");
    assert.equal(pwd, dirA);
    assert.equal(await readFile(path.join(dirA, "made.txt"), "utf8"), "from-container\n");
    assert.equal((await stat(path.join(dirA, "made.txt"))).uid, process.getuid!());
    await a.fileOps!.writeAtomic(path.join(dirA, "host.txt"), "from-host\n");
    assert.equal((await a.exec("cat host.txt")).stdout.toString(), "from-host\n");
    // A second thread: its own container; neither sees the other's directory.
    const b = await sandbox("bob");
    await writeFile(path.join(rootDir, "bob", "b.txt"), "bob's");
    assert.deepEqual(parent.filter((n) => n !== "." && n !== ".."), ["alice"]);
    assert.notEqual((await a.exec("cat ../bob/b.txt")).exitCode, 0);
    assert.equal((await b.exec("cat b.txt")).stdout.toString(), "bob's");
    const names = sandbox.containers();
    assert.equal(names.size, 2);
    assert.notEqual(names.get("alice"), names.get("bob"));
    assert.equal((await listContainers(sandbox.instanceId)).length, 2);
    const inspect = JSON.parse((await docker("inspect", names.get("alice")!)).stdout)[0].HostConfig;
    assert.deepEqual(inspect.CapDrop, ["ALL"]);
    assert.deepEqual(inspect.SecurityOpt, ["no-new-privileges"]);
    assert.equal(inspect.NetworkMode, "none");
    assert.equal(inspect.PidsLimit, 256);
    assert.equal(inspect.Memory, 1024 ** 3);
    assert.equal(inspect.Init, true);
  });

  test("the same thread reuses its container; 10 concurrent first uses create one", async () => {
    const sandbox = open();
    const envs = await Promise.all(Array.from({ length: 10 }, () => sandbox("crowd")));
    assert.ok(envs.every((e) => e === envs[0]));
    assert.equal((await listContainers(sandbox.instanceId)).length, 1);
    const id1 = (await envs[0]!.exec("cat /etc/hostname")).stdout.toString();
    const id2 = (await (await sandbox("crowd")).exec("cat /etc/hostname")).stdout.toString();
    assert.equal(id1, id2);
    assert.equal((await listContainers(sandbox.instanceId)).length, 1);
  });

  test("container mode: the workspace lives only in the container and survives an idle stop", async () => {
    const sandbox = open({ workspaceMode: "container", idleMs: 1000 });
    const env = await sandbox("inside");
    const dir = path.join(rootDir, "inside");
    assert.equal(env.fileOps?.kind, "shell:docker");
    await env.fileOps!.writeAtomic(path.join(dir, "notes", "a.txt"), "hello\n");
    assert.equal((await env.exec(`cat ${dir}/notes/a.txt`)).stdout.toString(), "hello\n");
    await assert.rejects(stat(dir), { code: "ENOENT" });
    const name = sandbox.containers().get("inside")!;
    // Idle: stopped (not removed) after idleMs without a call.
    let state = await running(name);
    for (let i = 0; i < 40 && state !== "false"; i++) {
      await sleep(250);
      state = await running(name);
    }
    assert.equal(state, "false");
    // The next call starts it again; the files are still there.
    assert.equal((await env.exec(`cat ${dir}/notes/a.txt`)).stdout.toString(), "hello\n");
    assert.equal(await running(name), "true");
  });

  test("a container removed behind the sandbox's back is created again on the next call", async () => {
    const sandbox = open();
    const env = await sandbox("phoenix");
    const name = sandbox.containers().get("phoenix")!;
    const before = (await docker("inspect", "-f", "{{.Id}}", name)).stdout.trim();
    await docker("rm", "-f", name);
    const streamed: string[] = [];
    const result = await env.exec("echo back", { onOutput: (c) => streamed.push(c.toString()) });
    assert.equal(result.exitCode, 0);
    assert.deepEqual(streamed, ["back\n"]); // docker's "No such container" never reached the caller
    const afterId = (await docker("inspect", "-f", "{{.Id}}", name)).stdout.trim();
    assert.ok(afterId && afterId !== before);
  });

  test("close() removes every container of the sandbox; leftovers are found by label", async () => {
    const sandbox = open();
    const [kept] = await Promise.all([sandbox("one"), sandbox("two")]);
    assert.equal((await listContainers(sandbox.instanceId)).length, 2);
    await sandbox.close();
    assert.deepEqual(await listContainers(sandbox.instanceId), []);
    await assert.rejects(sandbox("one"), /closed/);
    await assert.rejects(kept.exec("true"), /closed/);
    assert.deepEqual(await listContainers(sandbox.instanceId), []);
    // A "crashed" sandbox (never closed): its containers are found and removed by label.
    const crashed = open();
    await crashed("orphan");
    const removed = await removeSandboxContainers({ dockerPath: DOCKER, instanceId: crashed.instanceId });
    assert.equal(removed.length, 1);
    assert.deepEqual(await listContainers(crashed.instanceId), []);
  });

  test("bad options are refused with what to fix", () => {
    assert.throws(() => DockerSandbox({ image: "" }), /image/);
    assert.throws(() => DockerSandbox({ image: "x", workspaceMode: "volume" as "bind" }), /workspaceMode/);
    assert.throws(() => DockerSandbox({ image: "x", mounts: [{ source: "relative", target: "/x" }] }), /absolute/);
    assert.throws(() => DockerSandbox({ image: "x", bogus: 1 } as never), /bogus/);
  });
});
