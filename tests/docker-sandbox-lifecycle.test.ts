/**
 * DockerSandbox's life cycle against the real engine: containers of a process that exits (or
 * is terminated) without close() are removed at exit; a missing CLI, engine or image is an
 * operator error when the sandbox is built, and nothing is ever pulled unless `pull: "missing"`.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { DockerSandbox, SANDBOX_LABEL } from "../src/environment/dockerSandbox.js";
import { docker, DOCKER, dockerUnavailable, IMAGE } from "./helpers/docker.js";

const skip = await dockerUnavailable();

describe("DockerSandbox life cycle", { skip }, () => {
  let dir: string;
  before(async () => {
    dir = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-docker-life-")));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A child process that starts a thread's container, prints the sandbox id, then ends as `how` says (never close()). */
  async function childThatLeaves(how: "exit" | "SIGTERM" | "return"): Promise<{ instanceId: string; code: number | null; signal: string | null }> {
    const script = path.join(dir, `child-${how}.mts`);
    const mod = fileURLToPath(new URL("../src/environment/dockerSandbox.ts", import.meta.url));
    await writeFile(
      script,
      `import { DockerSandbox } from ${JSON.stringify(mod)};\n` +
        `const s = DockerSandbox({ image: ${JSON.stringify(IMAGE)}, rootDir: ${JSON.stringify(path.join(dir, "root"))}, dockerPath: ${JSON.stringify(DOCKER)}, labels: { "workbench.test": "1" } });\n` +
        `const env = await s("t1");\nawait env.exec("true");\nconsole.log(s.instanceId);\n` +
        (how === "exit" ? "process.exit(0);\n" : how === "SIGTERM" ? "process.kill(process.pid, 'SIGTERM'); setInterval(() => {}, 1000);\n" : ""),
    );
    const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    child.stderr.on("data", (c: Buffer) => (err += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.on("close", (c, s) => resolve([c, s])));
    clearTimeout(timer);
    const instanceId = out.trim();
    assert.match(instanceId, /^[0-9a-f]{12}$/, err);
    return { instanceId, code, signal };
  }
  const containersOf = async (instanceId: string) =>
    (await docker("ps", "-aq", "--filter", `label=${SANDBOX_LABEL}=${instanceId}`)).stdout.split("\n").filter(Boolean);

  for (const how of ["exit", "return", "SIGTERM"] as const) {
    test(`a process that ends by ${how} without close() leaves no container`, async () => {
      const { instanceId, code, signal } = await childThatLeaves(how);
      if (how === "SIGTERM") assert.equal(signal, "SIGTERM");
      else assert.equal(code, 0);
      assert.deepEqual(await containersOf(instanceId), []);
    });
  }

  test("missing CLI, engine or image: an operator error when the sandbox is built, never a pull", async () => {
    assert.throws(() => DockerSandbox({ image: IMAGE, dockerPath: path.join(dir, "no-docker") }), /docker CLI .* was not found.*dockerPath/);
    const missing = "workbench-test:no-such-tag-0";
    assert.throws(() => DockerSandbox({ image: missing, dockerPath: DOCKER }), /not on the Docker engine, and pull is "never".*pull: "missing"/);
    // An engine that does not answer.
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = `unix://${path.join(dir, "no-engine.sock")}`;
    try {
      assert.throws(() => DockerSandbox({ image: IMAGE, dockerPath: DOCKER }), /engine did not answer/);
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
    // pull: "missing" builds; the image was not pulled by the check (nothing reached a registry).
    assert.doesNotThrow(() => DockerSandbox({ image: missing, dockerPath: DOCKER, pull: "missing" }));
    assert.notEqual((await docker("image", "inspect", missing)).code, 0);
  });
});
