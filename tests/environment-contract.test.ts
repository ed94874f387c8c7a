/**
 * One list of FileOperations behaviours, run against every backend:
 *  1. LocalFileOperations (native fs),
 *  2. ShellFileOperations over LocalShellEnvironment (bash),
 *  3. ShellFileOperations over SshEnvironment, against a REAL OpenSSH server started on
 *     127.0.0.1 by tests/helpers/sshd.ts (skipped with a message when /usr/sbin/sshd is missing,
 *     a failure under CI=true),
 *  4. SftpFileOperations (`SshEnvironment.fileOps`) against the same kind of real sshd,
 *  5. ShellFileOperations over DockerEnvironment with `dockerPath` pointing at
 *     tests/fixtures/fake-docker/docker, a stand-in that checks the argv and runs the command
 *     locally with `sh` (dash on Debian, so the scripts are also checked against a strict POSIX shell),
 *  6. ShellFileOperations over DockerEnvironment in a REAL container (tests/helpers/docker.ts;
 *     skipped with a message without an engine, a failure under CI=true), the temp dir
 *     bind-mounted at the same path and the commands run as this process's uid:gid,
 *  7. ShellFileOperations over DeepAgentsSandboxEnvironment on deepagents' own LocalShellBackend
 *     (a real sandbox provider: `execute` spawns `sh`), once as shipped and once with only its
 *     `execute` exposed and 1 KiB inline transfers, so stdin and output go in chunks over `execute`.
 * The files are arranged and checked with native fs: every backend here reaches the same disk.
 */
import assert from "node:assert/strict";
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { LocalShellBackend } from "deepagents";
import { DeepAgentsSandboxEnvironment } from "../src/environment/deepagentsSandbox.js";
import { DockerEnvironment } from "../src/environment/dockerEnvironment.js";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { SshEnvironment } from "../src/environment/sshEnvironment.js";
import type { FileOperations } from "../src/environment/fileOperations.js";
import { docker, DOCKER, dockerUnavailable, startContainer } from "./helpers/docker.js";
import { sshdUnavailable, startSshd, type TestSshd } from "./helpers/sshd.js";

const FAKE_DOCKER = fileURLToPath(new URL("./fixtures/fake-docker/docker", import.meta.url));

/** Names a shell would misread if any argument escaped quoting. */
const HOSTILE_NAMES = [
  "with space.txt",
  "quote'single.txt",
  'quote"double.txt',
  "$(touch PWNED).txt",
  "`touch PWNED`.txt",
  "new\nline.txt",
  "-n",
  "--help",
  "semi;colon&amp|pipe>redir.txt",
  "ünï cødé ✓.txt",
  "*glob?[x].txt",
];

interface Backend {
  name: string;
  ops: FileOperations;
  /** mtime precision of the backend: SFTP (protocol v3) carries whole seconds. Default exact. */
  mtimeResolutionMs?: number;
  close?: () => Promise<void>;
}

const skipSsh = await sshdUnavailable();
if (skipSsh) console.log(`# SKIPPING the ssh backend: ${skipSsh}`);

describeBackend("local (native fs)", async () => ({ name: "local", ops: new LocalFileOperations() }));
describeBackend("shell over local bash", async () => ({
  name: "shell:local-shell",
  ops: new ShellFileOperations(new LocalShellEnvironment()),
}));
describeBackend(
  "shell over ssh (real sshd on 127.0.0.1)",
  async () => {
    const sshd: TestSshd = await startSshd();
    const env = new SshEnvironment(sshd.options);
    return {
      name: "shell:ssh",
      ops: new ShellFileOperations(env),
      close: async () => {
        await env.close();
        await sshd.stop();
      },
    };
  },
  skipSsh,
);
describeBackend(
  "sftp over ssh (real sshd on 127.0.0.1)",
  async () => {
    const sshd: TestSshd = await startSshd();
    const env = new SshEnvironment(sshd.options);
    return {
      name: "sftp",
      ops: env.fileOps,
      mtimeResolutionMs: 1000,
      close: async () => {
        await env.close();
        await sshd.stop();
      },
    };
  },
  skipSsh,
);
describeBackend("shell over docker exec (fake docker CLI, no engine)", async () => {
  const env = new DockerEnvironment({ container: "wb-fake", dockerPath: FAKE_DOCKER });
  return { name: "shell:docker", ops: new ShellFileOperations(env) };
});
describeBackend("shell over a deepagents sandbox (deepagents' LocalShellBackend)", async () => {
  const sandbox = await LocalShellBackend.create({ rootDir: os.tmpdir(), env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  return { name: "shell:deepagents-sandbox", ops: new ShellFileOperations(new DeepAgentsSandboxEnvironment(sandbox)), close: () => sandbox.close() };
});
describeBackend("shell over a deepagents sandbox with execute only (chunked transfers)", async () => {
  const sandbox = await LocalShellBackend.create({ rootDir: os.tmpdir(), env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  const executeOnly = { id: "execute-only", execute: (command: string) => sandbox.execute(command) };
  return { name: "shell:deepagents-sandbox", ops: new ShellFileOperations(new DeepAgentsSandboxEnvironment(executeOnly, { inlineBytes: 1024 })) };
});
const skipDocker = await dockerUnavailable();
if (skipDocker) console.log(`# SKIPPING the real docker backend: ${skipDocker}`);
describeBackend(
  "shell over docker exec (real engine)",
  async () => {
    const tmp = await realpath(os.tmpdir());
    const container = await startContainer({ mounts: [tmp], user: `${process.getuid!()}:${process.getgid!()}` });
    const env = new DockerEnvironment({ container, dockerPath: DOCKER });
    return { name: "shell:docker", ops: new ShellFileOperations(env), close: async () => void (await docker("rm", "-f", container)) };
  },
  skipDocker,
);

function describeBackend(title: string, open: () => Promise<Backend>, skip?: string): void {
  describe(title, { skip }, () => {
    let backend: Backend;
    let ops: FileOperations;
    let root: string;
    let n = 0;
    /** A fresh directory per test, so tests do not see each other's files. */
    const fresh = async () => {
      const dir = path.join(root, `t${++n}`);
      await mkdir(dir);
      return dir;
    };

    before(async () => {
      backend = await open();
      ops = backend.ops;
      root = await mkdtemp(path.join(os.tmpdir(), "wb-contract-"));
    });
    after(async () => {
      await backend?.close?.();
      if (root) await rm(root, { recursive: true, force: true });
    });

    test("kind names the backend", () => {
      assert.equal(ops.kind, backend.name);
    });

    test("stat: type, size, permission bits and mtime as fs.stat reports them; null when missing", async () => {
      const dir = await fresh();
      const file = path.join(dir, "a.txt");
      await writeFile(file, "hello\n");
      await chmod(file, 0o640);
      const got = await ops.stat(file);
      const want = await stat(file);
      assert.ok(got);
      assert.equal(got.type, "file");
      assert.equal(got.size, 6);
      assert.equal(got.mode, 0o640);
      const resolution = backend.mtimeResolutionMs ?? 0;
      const wantMs = resolution ? Math.floor(want.mtimeMs / resolution) * resolution : want.mtimeMs;
      assert.ok(Math.abs(got.mtimeMs - wantMs) < 1, `mtime ${got.mtimeMs} vs ${wantMs}`);
      assert.equal((await ops.stat(dir))?.type, "directory");
      assert.equal(await ops.stat(path.join(dir, "missing")), null);
      assert.equal(await ops.stat(path.join(file, "under-a-file")), null);
    });

    test("stat follows symlinks, lstat does not; a dangling link is null for stat only", async () => {
      const dir = await fresh();
      await writeFile(path.join(dir, "target"), "x");
      await symlink("target", path.join(dir, "link"));
      await symlink("nowhere", path.join(dir, "dangling"));
      assert.equal((await ops.stat(path.join(dir, "link")))?.type, "file");
      assert.equal((await ops.lstat(path.join(dir, "link")))?.type, "symlink");
      assert.equal(await ops.stat(path.join(dir, "dangling")), null);
      assert.equal((await ops.lstat(path.join(dir, "dangling")))?.type, "symlink");
      assert.equal(await ops.lstat(path.join(dir, "missing")), null);
    });

    test("a symlink loop: stat and readText reject with ELOOP, lstat sees the link", async () => {
      const dir = await fresh();
      await symlink("loop-b", path.join(dir, "loop-a"));
      await symlink("loop-a", path.join(dir, "loop-b"));
      await assert.rejects(ops.stat(path.join(dir, "loop-a")), { code: "ELOOP" });
      await assert.rejects(ops.readText(path.join(dir, "loop-a")), { code: "ELOOP" });
      assert.equal((await ops.lstat(path.join(dir, "loop-a")))?.type, "symlink");
    });

    test("stat reports FIFOs as 'other'", async () => {
      const dir = await fresh();
      const fifo = path.join(dir, "pipe");
      await mkfifo(fifo);
      assert.equal((await ops.stat(fifo))?.type, "other");
    });

    test("a FIFO is never opened: it reads as empty, readBytes fails with ESPIPE", { timeout: 15_000 }, async () => {
      const dir = await fresh();
      const fifo = path.join(dir, "pipe");
      await mkfifo(fifo);
      assert.deepEqual(await ops.readLines(fifo, { offset: 1, limit: 5, maxLineChars: 100 }), {
        lines: [],
        cutLines: [],
        hasMore: false,
        totalLines: 0,
      });
      assert.equal(await ops.countLines(fifo), 0);
      await assert.rejects(ops.readBytes(fifo, 0, 4), { code: "ESPIPE" });
    });

    test("realpath resolves symlinks and '..'; rejects a missing path with ENOENT", async () => {
      const dir = await fresh();
      await mkdir(path.join(dir, "real"));
      await symlink(path.join(dir, "real"), path.join(dir, "alias"));
      const canonicalDir = await import("node:fs/promises").then((fs) => fs.realpath(dir));
      assert.equal(await ops.realpath(path.join(dir, "alias", "..", "alias")), path.join(canonicalDir, "real"));
      await assert.rejects(ops.realpath(path.join(dir, "missing")), { code: "ENOENT" });
    });

    test("readdir lists names and types (hostile names intact), without . and ..", async () => {
      const dir = await fresh();
      for (const name of HOSTILE_NAMES) await writeFile(path.join(dir, name), name);
      await mkdir(path.join(dir, "sub dir"));
      await symlink("sub dir", path.join(dir, "link"));
      const entries = await ops.readdir(dir);
      const byName = new Map(entries.map((e) => [e.name, e.type]));
      assert.equal(entries.length, HOSTILE_NAMES.length + 2);
      for (const name of HOSTILE_NAMES) assert.equal(byName.get(name), "file", `entry ${JSON.stringify(name)}`);
      assert.equal(byName.get("sub dir"), "directory");
      assert.equal(byName.get("link"), "symlink");
      assert.deepEqual((await readdir(dir)).sort(), [...byName.keys()].sort());
      await assert.rejects(access(dir, "PWNED"), "no command ran from a file name");
    });

    test("readdir: ENOTDIR on a file, ENOENT when missing; follows a symlink to a directory", async () => {
      const dir = await fresh();
      await writeFile(path.join(dir, "f"), "");
      await mkdir(path.join(dir, "d"));
      await writeFile(path.join(dir, "d", "inside"), "");
      await symlink("d", path.join(dir, "dlink"));
      await assert.rejects(ops.readdir(path.join(dir, "f")), { code: "ENOTDIR" });
      await assert.rejects(ops.readdir(path.join(dir, "missing")), { code: "ENOENT" });
      assert.deepEqual(await ops.readdir(path.join(dir, "dlink")), [{ name: "inside", type: "file" }]);
    });

    test("readBytes returns a whole binary file byte-exact (every byte value; how an image is read for the model)", async () => {
      const dir = await fresh();
      const file = path.join(dir, "image.png");
      const all = Buffer.alloc(1024 * 1024 + 123);
      for (let i = 0; i < all.length; i++) all[i] = (i * 7919 + (i >> 8)) & 0xff;
      await writeFile(file, all);
      const got = await ops.readBytes(file, 0, all.length + 1);
      assert.equal(got.length, all.length, "one byte past the end asked: the file's size comes back");
      assert.ok(got.equals(all), "identical bytes (no newline, NUL or charset translation)");
    });

    test("readBytes returns the requested window, short at the end, EISDIR on a directory", async () => {
      const dir = await fresh();
      const file = path.join(dir, "bytes.bin");
      const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      await writeFile(file, all);
      assert.deepEqual(await ops.readBytes(file, 0, 8), all.subarray(0, 8));
      assert.deepEqual(await ops.readBytes(file, 100, 20), all.subarray(100, 120));
      assert.deepEqual(await ops.readBytes(file, 250, 100), all.subarray(250));
      assert.equal((await ops.readBytes(file, 300, 10)).length, 0);
      await assert.rejects(ops.readBytes(dir, 0, 4), { code: "EISDIR" });
      await assert.rejects(ops.readBytes(path.join(dir, "missing"), 0, 4), { code: "ENOENT" });
    });

    test("readLines: a window in the middle has more and no total; the last window has the total", async () => {
      const dir = await fresh();
      const file = path.join(dir, "hundred.txt");
      await writeFile(file, Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join("\n") + "\n");
      const middle = await ops.readLines(file, { offset: 10, limit: 3, maxLineChars: 100 });
      assert.deepEqual(middle, { lines: ["line 10", "line 11", "line 12"], cutLines: [], hasMore: true });
      const end = await ops.readLines(file, { offset: 99, limit: 5, maxLineChars: 100 });
      assert.deepEqual(end, { lines: ["line 99", "line 100"], cutLines: [], hasMore: false, totalLines: 100 });
      const exact = await ops.readLines(file, { offset: 91, limit: 10, maxLineChars: 100 });
      assert.equal(exact.hasMore, false);
      assert.equal(exact.totalLines, 100);
      assert.equal(exact.lines.length, 10);
    });

    test("readLines: offset past the end gives no lines and the total", async () => {
      const dir = await fresh();
      const file = path.join(dir, "three.txt");
      await writeFile(file, "a\nb\nc\n");
      assert.deepEqual(await ops.readLines(file, { offset: 10, limit: 5, maxLineChars: 100 }), {
        lines: [],
        cutLines: [],
        hasMore: false,
        totalLines: 3,
      });
    });

    test("readLines: last line without newline, CRLF endings, empty file", async () => {
      const dir = await fresh();
      const noNewline = path.join(dir, "nonl.txt");
      await writeFile(noNewline, "one\ntwo");
      assert.deepEqual(await ops.readLines(noNewline, { offset: 1, limit: 10, maxLineChars: 100 }), {
        lines: ["one", "two"],
        cutLines: [],
        hasMore: false,
        totalLines: 2,
      });
      const crlf = path.join(dir, "crlf.txt");
      await writeFile(crlf, "a\r\nb\r\n");
      assert.deepEqual((await ops.readLines(crlf, { offset: 1, limit: 10, maxLineChars: 100 })).lines, ["a", "b"]);
      const empty = path.join(dir, "empty.txt");
      await writeFile(empty, "");
      assert.deepEqual(await ops.readLines(empty, { offset: 1, limit: 10, maxLineChars: 100 }), {
        lines: [],
        cutLines: [],
        hasMore: false,
        totalLines: 0,
      });
    });

    test("readLines cuts long lines to maxLineChars (multi-byte safe) and flags their numbers", async () => {
      const dir = await fresh();
      const file = path.join(dir, "long.txt");
      const long = "é".repeat(50) + "✓".repeat(50);
      await writeFile(file, `short\n${long}\n${"x".repeat(10)}\n`);
      const got = await ops.readLines(file, { offset: 1, limit: 10, maxLineChars: 60 });
      assert.deepEqual(got.lines, ["short", "é".repeat(50) + "✓".repeat(10), "x".repeat(10)]);
      assert.deepEqual(got.cutLines, [2]);
      assert.equal(got.totalLines, 3);
    });

    test("readLines rejects a directory (EISDIR) and a missing file (ENOENT)", async () => {
      const dir = await fresh();
      await assert.rejects(ops.readLines(dir, { offset: 1, limit: 1, maxLineChars: 10 }), { code: "EISDIR" });
      await assert.rejects(ops.readLines(path.join(dir, "nope"), { offset: 1, limit: 1, maxLineChars: 10 }), {
        code: "ENOENT",
      });
    });

    test("countLines counts a final line without newline; empty file is 0", async () => {
      const dir = await fresh();
      const cases: Array<[string, number]> = [["", 0], ["\n", 1], ["a\nb\n", 2], ["a\nb", 2], ["a\n\n\nb", 4]];
      for (const [i, [content, want]] of cases.entries()) {
        const file = path.join(dir, `c${i}.txt`);
        await writeFile(file, content);
        assert.equal(await ops.countLines(file), want, JSON.stringify(content));
      }
      await assert.rejects(ops.countLines(path.join(dir, "nope")), { code: "ENOENT" });
    });

    test("readText returns UTF-8 text; EISDIR and ENOENT", async () => {
      const dir = await fresh();
      const file = path.join(dir, "utf8.txt");
      const text = "naïve ✓ 😀\nzweite Zeile\n";
      await writeFile(file, text);
      assert.equal(await ops.readText(file), text);
      await assert.rejects(ops.readText(dir), { code: "EISDIR" });
      await assert.rejects(ops.readText(path.join(dir, "nope")), { code: "ENOENT" });
    });

    test("writeAtomic creates parents (reported top-down) and writes the bytes", async () => {
      const dir = await fresh();
      const file = path.join(dir, "x", "y", "new.txt");
      const result = await ops.writeAtomic(file, "héllo\n");
      assert.deepEqual(result, { bytesWritten: 7, dirsCreated: [path.join(dir, "x"), path.join(dir, "x", "y")] });
      assert.equal(await readFile(file, "utf8"), "héllo\n");
      assert.equal((await stat(file)).mode & 0o777, 0o644 & ~process.umask());
      assert.deepEqual(await readdir(path.join(dir, "x", "y")), ["new.txt"], "no temp file left behind");
    });

    test("writeAtomic replaces content, keeps the mode, leaves no temp file", async () => {
      const dir = await fresh();
      const file = path.join(dir, "keep-mode.sh");
      await writeFile(file, "old content that is longer\n");
      await chmod(file, 0o750);
      assert.deepEqual(await ops.writeAtomic(file, "new\n"), { bytesWritten: 4, dirsCreated: [] });
      assert.equal(await readFile(file, "utf8"), "new\n");
      assert.equal((await stat(file)).mode & 0o7777, 0o750);
      assert.deepEqual(await readdir(dir), ["keep-mode.sh"]);
    });

    test("writeAtomic carries binary and multi-megabyte content (no argv limits)", async () => {
      const dir = await fresh();
      const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      await ops.writeAtomic(path.join(dir, "all-bytes.bin"), binary);
      assert.deepEqual(await readFile(path.join(dir, "all-bytes.bin")), binary);
      const big = "0123456789abcdef\n".repeat(200_000); // 3.4 MB, far over ARG_MAX
      const result = await ops.writeAtomic(path.join(dir, "big.txt"), big);
      assert.equal(result.bytesWritten, big.length);
      assert.equal(await readFile(path.join(dir, "big.txt"), "utf8"), big);
    });

    test("writeAtomic: EISDIR onto a directory; EEXIST when the parent is a file", async () => {
      const dir = await fresh();
      await mkdir(path.join(dir, "adir"));
      await writeFile(path.join(dir, "afile"), "keep");
      await assert.rejects(ops.writeAtomic(path.join(dir, "adir"), "x"), { code: "EISDIR" });
      await assert.rejects(ops.writeAtomic(path.join(dir, "afile", "child.txt"), "x"), { code: "EEXIST" });
      assert.equal(await readFile(path.join(dir, "afile"), "utf8"), "keep");
    });

    test("hostile names: write, stat, read, rename and remove without running anything", async () => {
      const dir = await fresh();
      for (const name of HOSTILE_NAMES) {
        const file = path.join(dir, name);
        await ops.writeAtomic(file, `content of ${name}`);
        assert.equal(await readFile(file, "utf8"), `content of ${name}`);
        assert.equal((await ops.stat(file))?.size, Buffer.byteLength(`content of ${name}`));
        assert.equal(await ops.readText(file), `content of ${name}`);
        const moved = path.join(dir, `moved ${name}`);
        await ops.rename(file, moved);
        assert.equal((await ops.lstat(moved))?.type, "file");
        await ops.remove(moved);
        assert.equal(await ops.lstat(moved), null);
      }
      assert.deepEqual(await readdir(dir), []);
      await assert.rejects(access(dir, "PWNED"));
      await assert.rejects(access(process.cwd(), "PWNED"));
    });

    test("remove deletes a file or a symlink (not its target); ENOENT missing, EISDIR directory", async () => {
      const dir = await fresh();
      await writeFile(path.join(dir, "target"), "t");
      await symlink("target", path.join(dir, "link"));
      await ops.remove(path.join(dir, "link"));
      assert.deepEqual(await readdir(dir), ["target"]);
      await ops.remove(path.join(dir, "target"));
      assert.deepEqual(await readdir(dir), []);
      await assert.rejects(ops.remove(path.join(dir, "missing")), { code: "ENOENT" });
      await mkdir(path.join(dir, "sub"));
      await assert.rejects(ops.remove(path.join(dir, "sub")), { code: "EISDIR" });
    });

    test("removeEmptyDir removes an empty directory only: never a symlink to one, never a full one", async () => {
      const dir = await fresh();
      await mkdir(path.join(dir, "full"));
      await writeFile(path.join(dir, "full", "x"), "x");
      await mkdir(path.join(dir, "empty"));
      await symlink("empty", path.join(dir, "link"));
      await assert.rejects(ops.removeEmptyDir(path.join(dir, "link")), "a symlink to a directory is not removed");
      await assert.rejects(ops.removeEmptyDir(path.join(dir, "full")), "a non-empty directory is not removed");
      await ops.removeEmptyDir(path.join(dir, "empty"));
      assert.deepEqual((await readdir(dir)).sort(), ["full", "link"]);
    });

    test("rename moves files and directories, creating the destination's parents", async () => {
      const dir = await fresh();
      await writeFile(path.join(dir, "a.txt"), "A");
      await ops.rename(path.join(dir, "a.txt"), path.join(dir, "deep", "er", "b.txt"));
      assert.equal(await readFile(path.join(dir, "deep", "er", "b.txt"), "utf8"), "A");
      await ops.rename(path.join(dir, "deep"), path.join(dir, "shallow"));
      assert.equal(await readFile(path.join(dir, "shallow", "er", "b.txt"), "utf8"), "A");
      await writeFile(path.join(dir, "over.txt"), "old");
      await ops.rename(path.join(dir, "shallow", "er", "b.txt"), path.join(dir, "over.txt"));
      assert.equal(await readFile(path.join(dir, "over.txt"), "utf8"), "A");
      await assert.rejects(ops.rename(path.join(dir, "missing"), path.join(dir, "z")), { code: "ENOENT" });
    });

    test("rename of a file onto a directory fails with EISDIR and moves nothing into it", async () => {
      const dir = await fresh();
      await writeFile(path.join(dir, "f"), "F");
      await mkdir(path.join(dir, "d"));
      await assert.rejects(ops.rename(path.join(dir, "f"), path.join(dir, "d")), { code: "EISDIR" });
      assert.deepEqual(await readdir(path.join(dir, "d")), []);
    });

    test("mkdirp returns the directories it created, top-down; [] when present; EEXIST over a file", async () => {
      const dir = await fresh();
      assert.deepEqual(await ops.mkdirp(path.join(dir, "a", "b c", "d")), [
        path.join(dir, "a"),
        path.join(dir, "a", "b c"),
        path.join(dir, "a", "b c", "d"),
      ]);
      assert.ok((await lstat(path.join(dir, "a", "b c", "d"))).isDirectory());
      assert.deepEqual(await ops.mkdirp(path.join(dir, "a")), []);
      await writeFile(path.join(dir, "file"), "");
      await assert.rejects(ops.mkdirp(path.join(dir, "file")), { code: "EEXIST" });
      await assert.rejects(ops.mkdirp(path.join(dir, "file", "sub")), { code: "ENOTDIR" });
    });

    test("errors are Error instances with code and path, like fs/promises errors", async () => {
      const dir = await fresh();
      const missing = path.join(dir, "missing.txt");
      const error = await ops.readText(missing).then(
        () => assert.fail("expected a rejection"),
        (e: NodeJS.ErrnoException) => e,
      );
      assert.ok(error instanceof Error);
      assert.equal(error.code, "ENOENT");
      assert.equal(error.path, missing);
      assert.match(error.message, /ENOENT/);
    });
  });
}

async function access(dir: string, name: string): Promise<void> {
  await stat(path.join(dir, name));
}

async function mkfifo(file: string): Promise<void> {
  const result = await new LocalShellEnvironment().exec(`mkfifo -- '${file.replace(/'/g, `'\\''`)}'`);
  assert.equal(result.exitCode, 0, result.stderr);
}
