/**
 * ShellFileOperations and LocalShellEnvironment specifics the contract suite does not cover:
 * exec results, stdin, cwd, timeouts killing whole pipelines, content never travelling in argv,
 * error mapping, FIFOs not hanging, and the polling hint for change tracking.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import type { Environment, ExecOptions, ExecResult } from "../src/environment/environment.js";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { isLocalFileOperations } from "../src/environment/locality.js";

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "wb-shellops-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A real local shell that also remembers the command lines it was given. */
class RecordingEnvironment implements Environment {
  readonly kind = "recording";
  readonly commands: string[] = [];
  readonly inner = new LocalShellEnvironment();
  exec(command: string, options?: ExecOptions): Promise<ExecResult> {
    this.commands.push(command);
    return this.inner.exec(command, options);
  }
}

test("LocalShellEnvironment reports stdout bytes, stderr, exit status; passes stdin; honours cwd", async () => {
  const env = new LocalShellEnvironment();
  const result = await env.exec("cat; echo oops >&2; pwd; exit 7", { stdin: Buffer.from([0xff, 0x0a]), cwd: dir });
  assert.equal(result.exitCode, 7);
  assert.equal(result.timedOut, false);
  assert.equal(result.stderr, "oops\n");
  assert.deepEqual(result.stdout, Buffer.concat([Buffer.from([0xff, 0x0a]), Buffer.from(`${dir}\n`)]));
});

test("LocalShellEnvironment timeout kills the whole pipeline, not only the shell", async () => {
  const env = new LocalShellEnvironment();
  const result = await env.exec("sleep 31.4159 | cat", { timeoutMs: 200 });
  assert.equal(result.timedOut, true);
  // The bracket keeps pgrep's own shell from matching the pattern.
  const check = await env.exec(
    "for i in $(seq 50); do pgrep -f 'sleep 31[.]4159' >/dev/null || { echo gone; exit; }; sleep 0.1; done; echo alive",
  );
  assert.equal(check.stdout.toString().trim(), "gone");
});

test("LocalShellEnvironment validates its options and exec options", async () => {
  assert.throws(() => new LocalShellEnvironment({ shell: "" }), TypeError);
  assert.throws(() => new LocalShellEnvironment({ defaultTimeoutMs: -1 }), TypeError);
  const env = new LocalShellEnvironment();
  await assert.rejects(env.exec("true", { timeoutMs: 0 }), TypeError);
  await assert.rejects(env.exec("true", { cwd: "a\0b" }), TypeError);
});

test("file content travels through stdin: the command line stays small for a 2 MB write", async () => {
  const env = new RecordingEnvironment();
  const ops = new ShellFileOperations(env);
  const content = "x".repeat(2_000_000);
  await ops.writeAtomic(path.join(dir, "big.txt"), content);
  assert.equal(env.commands.length, 1);
  assert.ok(env.commands[0]!.length < 4_000, `command line is ${env.commands[0]!.length} chars`);
  assert.ok(!env.commands[0]!.includes("xxxxxxxx"));
});

test("every path reaches the shell single-quoted", async () => {
  const env = new RecordingEnvironment();
  const ops = new ShellFileOperations(env);
  const hostile = path.join(dir, "a'b $(c)");
  await ops.stat(hostile);
  assert.ok(env.commands[0]!.startsWith(`set -- '${dir}/a'\\''b $(c)'`), env.commands[0]);
});

test("a command that outlives timeoutMs rejects with ETIMEDOUT", async () => {
  const slow: Environment = {
    kind: "slow",
    exec: (command, options) => new LocalShellEnvironment().exec(`sleep 5\n${command}`, options),
  };
  const ops = new ShellFileOperations(slow, { timeoutMs: 150 });
  await assert.rejects(ops.stat(dir), { code: "ETIMEDOUT" });
});

test("paths must be absolute and NUL-free (a relative path means different things per host)", async () => {
  const ops = new ShellFileOperations(new LocalShellEnvironment());
  await assert.rejects(ops.stat("relative/file"), { code: "ERR_INVALID_ARG_VALUE" });
  await assert.rejects(ops.readText(`${dir}/a\0b`), { code: "ERR_INVALID_ARG_VALUE" });
});

test("an environment that cannot run the command rejects with its code, naming the path", async () => {
  const ops = new ShellFileOperations(new LocalShellEnvironment({ shell: "/nonexistent/shell" }));
  await assert.rejects(ops.readText(path.join(dir, "x")), (error: NodeJS.ErrnoException) => {
    assert.equal(error.code, "ENOENT");
    assert.match(error.message, /could not run/);
    return true;
  });
});

test("an unexpected failure keeps the command's own message (code EIO)", async () => {
  const broken: Environment = {
    kind: "broken",
    exec: async () => ({ stdout: Buffer.alloc(0), stderr: "sed: -e expression #1: weird\n", exitCode: 4, timedOut: false }),
  };
  await assert.rejects(new ShellFileOperations(broken).readText("/x"), (error: NodeJS.ErrnoException) => {
    assert.equal(error.code, "EIO");
    assert.match(error.message, /weird/);
    return true;
  });
});

test("readLines of a huge single-line file returns the cut line without holding the whole line", async () => {
  const file = path.join(dir, "one-long-line.txt");
  await writeFile(file, "y".repeat(5_000_000) + "\nsecond\n");
  const ops = new ShellFileOperations(new LocalShellEnvironment());
  const got = await ops.readLines(file, { offset: 1, limit: 1, maxLineChars: 2_000 });
  assert.deepEqual(got, { lines: ["y".repeat(2_000)], cutLines: [1], hasMore: true });
});

test("kind and locality: shell backends are polled by change tracking, native is not", () => {
  const shell = new ShellFileOperations(new LocalShellEnvironment());
  assert.equal(shell.kind, "shell:local-shell");
  assert.equal(isLocalFileOperations(shell), false);
  assert.equal(isLocalFileOperations(new LocalFileOperations()), true);
});

test("ShellFileOperations validates its arguments", () => {
  assert.throws(() => new ShellFileOperations({} as Environment), TypeError);
  assert.throws(() => new ShellFileOperations(new LocalShellEnvironment(), { timeoutMs: 0 }), TypeError);
});
