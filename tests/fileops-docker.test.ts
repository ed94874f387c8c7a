/**
 * DockerEnvironment's argv, against a stand-in `docker` executable
 * (tests/fixtures/fake-docker/docker) put on PATH: it accepts only
 * `docker exec -i [-u user] [-w dir] [-e NAME]… <container> sh -c <script> [arg]…`, logs the
 * argv, and runs the script locally with `sh`. Behaviour against a real engine (timeouts inside
 * the container, cleanup, env, DockerSandbox) is in tests/docker-real.test.ts.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { DockerEnvironment } from "../src/environment/dockerEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";

const FAKE_DOCKER_DIR = fileURLToPath(new URL("./fixtures/fake-docker", import.meta.url));
let dir: string;
let log: string;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "wb-docker-"));
  log = path.join(dir, "argv.log");
  process.env.PATH = `${FAKE_DOCKER_DIR}${path.delimiter}${process.env.PATH ?? ""}`;
  process.env.FAKE_DOCKER_LOG = log;
});
after(async () => {
  delete process.env.FAKE_DOCKER_LOG;
  await rm(dir, { recursive: true, force: true });
});

async function lastArgv(): Promise<string[]> {
  const calls = (await readFile(log, "utf8")).split("--\n").filter(Boolean);
  return calls[calls.length - 1]!.replace(/\n$/, "").split("\n");
}

/** The argv up to the container's `sh -c`, with the random call id masked, then the command and its arguments. */
async function lastCall(): Promise<{ head: string[]; command: string; rest: string[] }> {
  const argv = (await readFile(log, "utf8")).split("--\n").filter(Boolean).pop()!.replace(/\n$/, "");
  // The wrapper script spans lines; the command and the rest follow its `wb` $0.
  const lines = argv.split("\n");
  const sh = lines.indexOf("sh");
  const head = lines.slice(0, sh).map((a) => a.replace(/^(WORKBENCH_EXEC_ID=)[0-9a-f]+$/, "$1<id>"));
  const wb = lines.indexOf("wb", sh);
  return { head, command: lines[wb + 1]!, rest: lines.slice(wb + 2) };
}

test("runs `docker exec -i <container> sh -c <cmd>` found on PATH, with stdin", async () => {
  const env = new DockerEnvironment({ container: "wb-fake" });
  const result = await env.exec("cat; echo done", { stdin: "in\n" });
  assert.equal(result.exitCode, 0, result.stderr);
  assert.equal(result.stdout.toString(), "in\ndone\n");
  const call = await lastCall();
  assert.deepEqual(call.head, ["exec", "-i", "-e", "WORKBENCH_EXEC_ID=<id>", "wb-fake"]);
  assert.equal(call.command, "cat; echo done");
});

test("cwd becomes -w and user becomes -u", async () => {
  const env = new DockerEnvironment({ container: "wb-fake", user: "1000:1000" });
  const result = await env.exec("pwd", { cwd: dir });
  assert.equal(result.stdout.toString(), `${dir}\n`);
  assert.deepEqual((await lastCall()).head, ["exec", "-i", "-u", "1000:1000", "-w", dir, "-e", "WORKBENCH_EXEC_ID=<id>", "wb-fake"]);
});

test("an unknown container surfaces docker's error and exit status", async () => {
  const result = await new DockerEnvironment({ container: "missing-box" }).exec("true");
  assert.equal(result.exitCode, 1);
  assert.match(result.stderr, /No such container: missing-box/);
});

test("dockerPath selects the CLI; a missing CLI rejects with ENOENT", async () => {
  const env = new DockerEnvironment({ container: "wb-fake", dockerPath: path.join(FAKE_DOCKER_DIR, "docker") });
  assert.equal((await env.exec("echo via-path")).stdout.toString(), "via-path\n");
  await assert.rejects(new DockerEnvironment({ container: "wb-fake", dockerPath: "/nonexistent/docker" }).exec("true"), {
    code: "ENOENT",
  });
});

test("file content goes through stdin, never through docker's argv", async () => {
  const ops = new ShellFileOperations(new DockerEnvironment({ container: "wb-fake" }));
  const secretish = "payload-that-must-not-be-in-argv";
  await ops.writeAtomic(path.join(dir, "f.txt"), secretish);
  assert.equal(await readFile(path.join(dir, "f.txt"), "utf8"), secretish);
  assert.ok(!(await lastArgv()).join(" ").includes(secretish));
  assert.equal(ops.kind, "shell:docker");
});

test("env: names go in argv as -e NAME, values only in the client's environment, and the command sees exactly them", async () => {
  const env = new DockerEnvironment({ container: "wb-fake" });
  const value = "s3cret value\nwith a newline";
  const result = await env.exec('printf "%s|" "$TOKEN" "${HOME-unset}" "$PATH"', { env: { TOKEN: value, PATH: "/usr/bin:/bin" } });
  assert.equal(result.stdout.toString(), `${value}|unset|/usr/bin:/bin|`);
  const call = await lastCall();
  assert.deepEqual(call.head, ["exec", "-i", "-e", "WORKBENCH_EXEC_ID=<id>", "-e", "TOKEN", "-e", "PATH", "wb-fake"]);
  assert.deepEqual(call.rest, ["1", "TOKEN", "PATH"]);
  assert.ok(!(await readFile(log, "utf8")).includes("s3cret"));
});

test("env names docker would misread, or invalid ones, are refused before anything runs", async () => {
  const env = new DockerEnvironment({ container: "wb-fake" });
  await assert.rejects(env.exec("true", { env: { DOCKER_HOST: "tcp://x" } }), /DOCKER_\* itself/);
  await assert.rejects(env.exec("true", { env: { "A=B": "x" } }), /not a valid variable name/);
  assert.throws(() => new DockerEnvironment({ container: "ok", env: { "1X": "y" } }), TypeError);
});

test("a signal aborted before the call runs nothing", async () => {
  const marker = path.join(dir, "must-not-exist");
  const result = await new DockerEnvironment({ container: "wb-fake" }).exec(`touch '${marker}'`, { signal: AbortSignal.abort() });
  assert.equal(result.aborted, true);
  await assert.rejects(readFile(marker), { code: "ENOENT" });
});

test("container names that could be read as options or syntax are refused", () => {
  for (const container of ["-rm", "--privileged", "a b", "x;y", ""]) {
    assert.throws(() => new DockerEnvironment({ container }), TypeError, container);
  }
  assert.throws(() => new DockerEnvironment({ container: "ok", user: "--root" }), TypeError);
  assert.throws(() => new DockerEnvironment({ container: "ok", dockerPath: "" }), TypeError);
});
