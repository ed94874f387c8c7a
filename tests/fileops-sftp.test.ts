/**
 * SftpFileOperations specifics against a REAL OpenSSH server on 127.0.0.1 (tests/helpers/sshd.ts):
 * one SFTP session shared by parallel calls, reconnect after the server restarted, a windowed
 * read of a big file that transfers only what the window needs (counted at the ssh2 client's
 * read requests), atomic overwrite by rename keeping the mode, a server without the SFTP
 * subsystem, close(). The behaviours shared with every backend are in environment-contract.test.ts.
 */
import assert from "node:assert/strict";
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { SFTPWrapper } from "ssh2";
import { isLocalFileOperations } from "../src/environment/locality.js";
import { SftpFileOperations } from "../src/environment/sftpFileOperations.js";
import { SshEnvironment } from "../src/environment/sshEnvironment.js";
import { sshdUnavailable, startSshd, type TestSshd } from "./helpers/sshd.js";

const skip = await sshdUnavailable();
if (skip) console.log(`# SKIPPING sftp tests: ${skip}`);

/** Counts the read requests ssh2 sends on `sftp` and the bytes they bring back. */
function countReads(sftp: SFTPWrapper): { requests: number; bytes: number; restore(): void } {
  const counter = { requests: 0, bytes: 0, restore: () => void (sftp.read = original) };
  const original = sftp.read;
  sftp.read = function (this: SFTPWrapper, handle, buffer, offset, length, position, callback) {
    counter.requests++;
    return original.call(this, handle, buffer, offset, length, position, (error, bytesRead, data, pos) => {
      if (!error) counter.bytes += bytesRead;
      callback(error, bytesRead, data, pos);
    });
  } as SFTPWrapper["read"];
  return counter;
}

describe("SftpFileOperations against a real sshd", { skip }, () => {
  let sshd: TestSshd;
  let root: string;
  const opened: SshEnvironment[] = [];
  const open = () => {
    const env = new SshEnvironment(sshd.options);
    opened.push(env);
    return env;
  };

  before(async () => {
    sshd = await startSshd();
    root = await mkdtemp(path.join(os.tmpdir(), "wb-sftp-"));
  });
  after(async () => {
    await Promise.all(opened.map((env) => env.close()));
    await sshd?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  test("SshEnvironment.fileOps is the SFTP backend, polled for changes", () => {
    const env = open();
    assert.equal(env.fileOps.kind, "sftp");
    assert.equal(isLocalFileOperations(env.fileOps), false);
  });

  test("50 parallel reads share one SFTP session, alongside commands on the same connection", async () => {
    const env = open();
    const files = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const file = path.join(root, `par-${i}.txt`);
        await writeFile(file, `file ${i}\n`.repeat(i + 1));
        return file;
      }),
    );
    const session = await env.sftp();
    const [reads, commands] = await Promise.all([
      Promise.all(files.map((f) => env.fileOps.readLines(f, { offset: 1, limit: 500, maxLineChars: 100 }))),
      Promise.all(Array.from({ length: 12 }, (_, i) => env.exec(`echo ${i}`))),
    ]);
    reads.forEach((r, i) => {
      assert.equal(r.lines.length, i + 1);
      assert.equal(r.lines[0], `file ${i}`);
      assert.equal(r.totalLines, i + 1);
    });
    assert.deepEqual(
      commands.map((c) => c.stdout.toString().trim()),
      Array.from({ length: 12 }, (_, i) => String(i)),
    );
    assert.equal(await env.sftp(), session, "no second SFTP session was opened");
  });

  test("reconnects after the server restarted: a new session on a new connection", async () => {
    const env = open();
    const file = path.join(root, "reconnect.txt");
    await writeFile(file, "before\n");
    assert.equal(await env.fileOps.readText(file), "before\n");
    const first = await env.sftp();
    await sshd.restart();
    await writeFile(file, "after\n");
    assert.equal(await env.fileOps.readText(file), "after\n");
    assert.notEqual(await env.sftp(), first, "the dead session was replaced");
    // Writes work on the new session too, and commands on the new connection.
    await env.fileOps.writeAtomic(file, "written after restart\n");
    assert.equal(await readFile(file, "utf8"), "written after restart\n");
    assert.equal((await env.exec("echo ok")).stdout.toString(), "ok\n");
  });

  test("a connection killed before the client noticed: the call is retried once on a new connection", async () => {
    const env = open();
    const file = path.join(root, "killed.txt");
    await writeFile(file, "still here\n");
    const first = await env.sftp();
    // The command's shell runs under the connection's sshd session process ("sshd: user@notty"),
    // which holds the TCP connection: killing it drops the connection.
    const session = Number((await env.exec("echo $PPID")).stdout.toString().trim());
    assert.ok(session > 1);
    process.kill(session, "SIGKILL");
    // Same tick: the session still looks open, so the first request goes out on the dead one.
    const [text, write] = await Promise.all([env.fileOps.readText(file), env.fileOps.writeAtomic(path.join(root, "killed-2.txt"), "new\n")]);
    assert.equal(text, "still here\n");
    assert.equal(write.bytesWritten, 4);
    assert.equal(await readFile(path.join(root, "killed-2.txt"), "utf8"), "new\n");
    assert.notEqual(await env.sftp(), first);
  });

  test("a session that stops answering: ETIMEDOUT, and the next call gets a fresh session", async () => {
    const env = open();
    const ops = new SftpFileOperations(env, { timeoutMs: 500 });
    assert.equal((await ops.stat("/"))?.type, "directory");
    const stalled = await env.sftp();
    // The SFTP server of this connection is a child of its sshd session process; stop it.
    const found = await env.exec(
      'for p in $(pgrep -P $PPID); do [ "$p" = $$ ] || case $(tr "\\0" " " < /proc/$p/cmdline) in *internal-sftp*) echo $p;; esac; done',
    );
    const server = Number(found.stdout.toString().trim());
    assert.ok(server > 1, `internal-sftp process not found: ${found.stdout.toString()}`);
    process.kill(server, "SIGSTOP");
    try {
      await assert.rejects(ops.stat("/"), { code: "ETIMEDOUT" });
      assert.equal((await ops.stat("/"))?.type, "directory");
      assert.notEqual(await env.sftp(), stalled);
    } finally {
      process.kill(server, "SIGKILL");
    }
  });

  test("lines 1-10 of a 50 MB file: one 64 KiB read request, not the whole file", { timeout: 120_000 }, async () => {
    const env = open();
    const file = path.join(root, "big.txt");
    const line = "0123456789".repeat(10) + "\n"; // 101 bytes
    await writeFile(file, line.repeat(Math.ceil((50 * 1024 * 1024) / line.length)));
    const size = (await stat(file)).size;
    const counter = countReads(await env.sftp());
    try {
      const got = await env.fileOps.readLines(file, { offset: 1, limit: 10, maxLineChars: 2000 });
      assert.equal(got.lines.length, 10);
      assert.equal(got.hasMore, true);
      assert.equal(got.totalLines, undefined, "no total: the end was not reached");
      assert.equal(counter.requests, 1);
      assert.ok(counter.bytes <= 64 * 1024, `${counter.bytes} bytes transferred`);
      // The same session streams the whole file when asked to (countLines), pipelined.
      counter.requests = 0;
      counter.bytes = 0;
      assert.equal(await env.fileOps.countLines(file), size / line.length);
      assert.equal(counter.bytes, size);
    } finally {
      counter.restore();
      await rm(file);
    }
  });

  test("a small file costs one read request; a file that reports size 0 (/proc) is still read to its end", async () => {
    const env = open();
    const file = path.join(root, "small.txt");
    await writeFile(file, "a\nb\n");
    const counter = countReads(await env.sftp());
    try {
      assert.deepEqual(await env.fileOps.readLines(file, { offset: 1, limit: 10, maxLineChars: 100 }), {
        lines: ["a", "b"],
        cutLines: [],
        hasMore: false,
        totalLines: 2,
      });
      assert.equal(counter.requests, 1, "the short read at the known size is the end: no extra EOF request");
      // The kernel hands out /proc text a page at a time: every read is short, none is the end.
      const text = await env.fileOps.readText("/proc/self/smaps");
      assert.ok(text.length > 3 * 4096, `${text.length} chars`);
      assert.match(text, /VmFlags:[^\n]*\n$/);
    } finally {
      counter.restore();
    }
  });

  test("writeAtomic replaces by rename (new inode), keeps the exact mode, fsyncs, leaves no temp", async () => {
    const env = open();
    const dir = await mkdtemp(path.join(root, "atomic-"));
    const file = path.join(dir, "script.sh");
    await writeFile(file, "#!/bin/sh\necho old\n");
    await chmod(file, 0o751);
    const before = await stat(file);
    const sftp = await env.sftp();
    const fsync = sftp.ext_openssh_fsync;
    let fsyncs = 0;
    sftp.ext_openssh_fsync = function (this: SFTPWrapper, handle, callback) {
      fsyncs++;
      return fsync.call(this, handle, callback);
    } as SFTPWrapper["ext_openssh_fsync"];
    try {
      assert.deepEqual(await env.fileOps.writeAtomic(file, "#!/bin/sh\necho new\n"), { bytesWritten: 19, dirsCreated: [] });
    } finally {
      sftp.ext_openssh_fsync = fsync;
    }
    const after = await stat(file);
    assert.equal(await readFile(file, "utf8"), "#!/bin/sh\necho new\n");
    assert.equal(after.mode & 0o7777, 0o751);
    assert.notEqual(after.ino, before.ino, "replaced by rename, not rewritten in place");
    assert.equal(fsyncs, 1);
    assert.deepEqual(await readdir(dir), ["script.sh"]);
  });

  test("a server without the SFTP subsystem: file calls fail with a clear error, commands still run", async () => {
    const bare = await startSshd({ sftp: false });
    const env = new SshEnvironment(bare.options);
    try {
      await assert.rejects(env.fileOps.stat("/"), (error: NodeJS.ErrnoException) => {
        assert.equal(error.code, "ERR_SSH_NO_SFTP");
        assert.match(error.message, /Subsystem sftp internal-sftp/);
        return true;
      });
      assert.equal((await env.exec("echo still")).stdout.toString(), "still\n");
    } finally {
      await env.close();
      await bare.stop();
    }
  });

  test("close() ends the SFTP session and the connection; later calls reject; twice is fine", async () => {
    const env = open();
    assert.equal((await env.fileOps.stat("/"))?.type, "directory");
    const sftp = await env.sftp();
    const closed = new Promise<void>((resolve) => sftp.once("close", () => resolve()));
    await env.fileOps.close();
    await closed;
    await assert.rejects(env.fileOps.stat("/"), { code: "ERR_SSH_CLOSED" });
    await assert.rejects(env.exec("true"), { code: "ERR_SSH_CLOSED" });
    await env.close();
  });
});
