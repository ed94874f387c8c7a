/**
 * DockerEnvironment. There is no Docker engine on the test machines, so these tests put a
 * stand-in `docker` executable (tests/fixtures/fake-docker/docker) on PATH: it accepts only
 * `docker exec -i [-u user] [-w dir] <container> sh -c <cmd>`, logs the argv, and runs the command
 * locally with `sh`. The contract suite runs ShellFileOperations over the same stand-in.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { DockerEnvironment } from "../src/fileops/docker.js";
import { ShellFileOperations } from "../src/fileops/shell.js";

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

test("runs `docker exec -i <container> sh -c <cmd>` found on PATH, with stdin", async () => {
  const env = new DockerEnvironment({ container: "wb-fake" });
  const result = await env.exec("cat; echo done", { stdin: "in\n" });
  assert.equal(result.exitCode, 0, result.stderr);
  assert.equal(result.stdout.toString(), "in\ndone\n");
  assert.deepEqual(await lastArgv(), ["exec", "-i", "wb-fake", "sh", "-c", "cat; echo done"]);
});

test("cwd becomes -w and user becomes -u", async () => {
  const env = new DockerEnvironment({ container: "wb-fake", user: "1000:1000" });
  const result = await env.exec("pwd", { cwd: dir });
  assert.equal(result.stdout.toString(), `${dir}\n`);
  assert.deepEqual(await lastArgv(), ["exec", "-i", "-u", "1000:1000", "-w", dir, "wb-fake", "sh", "-c", "pwd"]);
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

test("container names that could be read as options or syntax are refused", () => {
  for (const container of ["-rm", "--privileged", "a b", "x;y", ""]) {
    assert.throws(() => new DockerEnvironment({ container }), TypeError, container);
  }
  assert.throws(() => new DockerEnvironment({ container: "ok", user: "--root" }), TypeError);
  assert.throws(() => new DockerEnvironment({ container: "ok", dockerPath: "" }), TypeError);
});
