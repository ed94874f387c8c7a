/**
 * SshEnvironment against a REAL OpenSSH server on 127.0.0.1 (tests/helpers/sshd.ts): one reused
 * connection, reconnect after the server dropped it, host key pinning, timeouts, concurrency
 * above OpenSSH's per-connection session limit, close(). Skipped with a message when
 * /usr/sbin/sshd is missing; under CI=true a missing sshd fails instead.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { hostKeyMatcher, SshEnvironment } from "../src/environment/sshEnvironment.js";
import { sshdUnavailable, startSshd, type TestSshd } from "./helpers/sshd.js";

const skip = await sshdUnavailable();
if (skip) console.log(`# SKIPPING ssh tests: ${skip}`);

describe("SshEnvironment against a real sshd", { skip }, () => {
  let sshd: TestSshd;
  const opened: SshEnvironment[] = [];
  const open = (extra: Partial<ConstructorParameters<typeof SshEnvironment>[0]> = {}) => {
    const env = new SshEnvironment({ ...sshd.options, ...extra });
    opened.push(env);
    return env;
  };

  before(async () => {
    sshd = await startSshd();
  });
  after(async () => {
    await Promise.all(opened.map((env) => env.close()));
    await sshd?.stop();
  });

  test("runs a command: stdout bytes, stderr, exit status, stdin, cwd", async () => {
    const env = open();
    const result = await env.exec("cat; echo problem >&2; pwd; exit 5", { stdin: "from stdin\n", cwd: "/tmp" });
    assert.equal(result.exitCode, 5);
    assert.equal(result.timedOut, false);
    assert.equal(result.stdout.toString("utf8"), "from stdin\n/tmp\n");
    assert.equal(result.stderr, "problem\n");
  });

  test("a missing cwd fails the command instead of running it elsewhere", async () => {
    const result = await open().exec("echo ran", { cwd: "/nonexistent/dir" });
    assert.notEqual(result.exitCode, 0);
    assert.equal(result.stdout.length, 0);
  });

  test("reuses one connection for many commands", async () => {
    const env = open();
    // SSH_CLIENT holds the client's source port: the same port means the same TCP connection.
    const first = (await env.exec("echo $SSH_CLIENT")).stdout.toString();
    const second = (await env.exec("echo $SSH_CLIENT")).stdout.toString();
    assert.match(first, /^127\.0\.0\.1 \d+ \d+/);
    assert.equal(second, first);
  });

  test("reconnects once when the server dropped the connection", async () => {
    const env = open();
    const before = (await env.exec("echo $SSH_CLIENT")).stdout.toString();
    await sshd.restart();
    const after = await env.exec("echo $SSH_CLIENT; echo ok");
    assert.equal(after.exitCode, 0);
    assert.match(after.stdout.toString(), /ok\n$/);
    assert.notEqual(after.stdout.toString().split("\n")[0], before.trim(), "a new connection was made");
  });

  test("more parallel commands than OpenSSH's 10 sessions per connection all succeed", async () => {
    const env = open();
    const results = await Promise.all(Array.from({ length: 25 }, (_, i) => env.exec(`echo ${i}`)));
    assert.deepEqual(
      results.map((r) => r.stdout.toString().trim()),
      Array.from({ length: 25 }, (_, i) => String(i)),
    );
  });

  test("a command past timeoutMs is reported as timed out, and the connection stays usable", async () => {
    const env = open();
    const result = await env.exec("sleep 20", { timeoutMs: 300 });
    assert.equal(result.timedOut, true);
    assert.equal(result.exitCode, -1);
    assert.equal((await env.exec("echo still")).stdout.toString(), "still\n");
  });

  test("a pinned host key given as a SHA256 fingerprint is accepted", async () => {
    const blob = Buffer.from(sshd.hostPublicKey.split(/\s+/)[1]!, "base64");
    const fingerprint = `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
    const env = open({ hostKey: fingerprint });
    assert.equal((await env.exec("echo pinned")).stdout.toString(), "pinned\n");
  });

  test("a different host key is refused before authenticating", async () => {
    const otherKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl other";
    const env = open({ hostKey: otherKey });
    await assert.rejects(env.exec("echo never"), /SSH connection to 127\.0\.0\.1:\d+ failed/);
  });

  test("a wrong user key is refused with a clear error", async () => {
    const { privateKey: _unused, ...rest } = sshd.options;
    const env = new SshEnvironment({ ...rest, password: "not-the-password" });
    opened.push(env);
    await assert.rejects(env.exec("echo never"), /failed/);
  });

  test("after close() commands reject; ShellFileOperations.close() closes its environment", async () => {
    const env = open();
    await env.exec("true");
    await env.close();
    await assert.rejects(env.exec("true"), { code: "ERR_SSH_CLOSED" });
    const ops = new ShellFileOperations(open());
    assert.equal((await ops.stat("/"))?.type, "directory");
    await ops.close();
    await assert.rejects(ops.stat("/"), { code: "ERR_SSH_CLOSED" });
  });
});

test("SshEnvironment validates options and demands a host key decision", () => {
  const base = { host: "127.0.0.1", username: "u", password: "p", acceptAnyHostKey: true };
  assert.doesNotThrow(() => new SshEnvironment(base));
  assert.throws(() => new SshEnvironment({ ...base, host: "" }), /host/);
  assert.throws(() => new SshEnvironment({ ...base, port: 70000 }), /port/);
  assert.throws(() => new SshEnvironment({ ...base, password: undefined }), /privateKey, password or agent/);
  assert.throws(() => new SshEnvironment({ ...base, acceptAnyHostKey: false }), /exactly one of hostKey/);
  assert.throws(() => new SshEnvironment({ ...base, hostVerifier: () => true }), /exactly one of hostKey/);
  assert.throws(() => new SshEnvironment({ ...base, connectTimeoutMs: 0 }), /connectTimeoutMs/);
  assert.throws(() => new SshEnvironment({ ...base, acceptAnyHostKey: undefined, hostKey: "garbage" }), /cannot read host key/);
});

test("hostKeyMatcher accepts the listed key blobs and fingerprints only", () => {
  const blob = Buffer.from("key-blob");
  const line = `127.0.0.1 ssh-ed25519 ${blob.toString("base64")} comment`;
  assert.equal(hostKeyMatcher(line)(blob), true);
  assert.equal(hostKeyMatcher(line)(Buffer.from("other")), false);
  const fp = `SHA256:${createHash("sha256").update(blob).digest("base64")}`;
  assert.equal(hostKeyMatcher([fp])(blob), true);
});
