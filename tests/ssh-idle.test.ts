/**
 * An SshEnvironment never keeps an idle process alive: a program that uses it (commands and
 * SFTP file calls) and forgets `close()` still exits by itself once the connection has been idle
 * for `idleTimeoutMs`; the environment reconnects on the next call, and a call in flight is never
 * cut by the idle timer. Against a REAL sshd on 127.0.0.1 (tests/helpers/sshd.ts); skipped with a
 * message when /usr/sbin/sshd is missing (a failure under CI=true).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SshEnvironment } from "../src/environment/sshEnvironment.js";
import { sshdUnavailable, startSshd, type TestSshd } from "./helpers/sshd.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const skip = await sshdUnavailable();
if (skip) console.log(`# SKIPPING ssh idle tests: ${skip}`);

/** Generous: the child needs tsx start-up, ssh2's import and a handshake on a loaded machine. */
const EXIT_BOUND_MS = 90_000;

const CHILD = `
const { SshEnvironment } = await import(process.env.WB_SSH_MODULE);
const options = JSON.parse(process.env.WB_SSH_OPTIONS);
options.privateKey = Buffer.from(options.privateKey, "base64");
const env = new SshEnvironment(options);
const result = await env.exec("echo from-ssh");
const dir = await env.fileOps.stat("/");
process.stdout.write(JSON.stringify({ out: result.stdout.toString("utf8").trim(), type: dir?.type }));
// No env.close(): the process must still end.
`;

describe("SshEnvironment lets an idle process exit", { skip }, () => {
  let sshd: TestSshd;
  let dir: string;
  const opened: SshEnvironment[] = [];

  before(async () => {
    sshd = await startSshd();
    dir = await mkdtemp(path.join(os.tmpdir(), "wb-ssh-idle-"));
  });
  after(async () => {
    await Promise.all(opened.map((env) => env.close()));
    await sshd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("a program that forgets close() exits by itself after the idle timeout", async () => {
    const script = path.join(dir, "forgets-close.mjs");
    await writeFile(script, CHILD);
    const { privateKey, ...rest } = sshd.options;
    const options = { ...rest, privateKey: Buffer.from(privateKey as Buffer).toString("base64"), idleTimeoutMs: 300 };
    const child = spawn(process.execPath, ["--import", "tsx", script], {
      cwd: repo,
      env: { ...process.env, WB_SSH_MODULE: pathToFileURL(path.join(repo, "src/environment/sshEnvironment.ts")).href, WB_SSH_OPTIONS: JSON.stringify(options) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    const outcome = await new Promise<{ code: number | null; exited: boolean }>((resolve) => {
      const bound = setTimeout(() => {
        child.kill("SIGKILL");
        resolve({ code: null, exited: false });
      }, EXIT_BOUND_MS);
      child.once("exit", (code) => {
        clearTimeout(bound);
        resolve({ code, exited: true });
      });
    });
    assert.equal(outcome.exited, true, `the process was still alive after ${EXIT_BOUND_MS} ms (stdout ${stdout}, stderr ${stderr})`);
    assert.equal(outcome.code, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), { out: "from-ssh", type: "directory" });
  });

  test("after an idle close the next command and file call reconnect", async () => {
    const env = new SshEnvironment({ ...sshd.options, idleTimeoutMs: 50 });
    opened.push(env);
    assert.equal((await env.exec("echo one")).stdout.toString().trim(), "one");
    // Long enough for the idle timer to have ended the first connection on any machine load
    // that lets the timer run at all; the assertions hold either way.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await env.exec("echo two")).stdout.toString().trim(), "two");
    assert.equal((await env.fileOps.stat("/"))?.type, "directory");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await env.fileOps.stat("/tmp"))?.type, "directory");
    assert.equal((await env.exec("echo three")).stdout.toString().trim(), "three");
  });

  test("a command running longer than the idle timeout is not cut", async () => {
    const env = new SshEnvironment({ ...sshd.options, idleTimeoutMs: 50 });
    opened.push(env);
    const [slow, file] = await Promise.all([env.exec("sleep 1; echo done"), env.fileOps.stat("/")]);
    assert.equal(slow.exitCode, 0);
    assert.equal(slow.stdout.toString().trim(), "done");
    assert.equal(file?.type, "directory");
  });

  test("idleTimeoutMs must be a positive number", () => {
    assert.throws(() => new SshEnvironment({ ...sshd.options, idleTimeoutMs: 0 }), /idleTimeoutMs must be a positive number/);
  });
});
