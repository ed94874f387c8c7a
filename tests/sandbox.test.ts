/**
 * SandboxEnvironment against the real bubblewrap: escapes that must fail (host secrets through
 * /proc, other threads' directories, writes outside the workspace, loopback network, processes
 * outliving the call) and the ordinary exec behaviour. Locally, a machine where bwrap cannot
 * start a sandbox skips with the reason; under CI (`CI=true`) that is a failure.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { access, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { commandEnvironmentFor, detectSandbox, SandboxEnvironment } from "../src/environment/sandboxEnvironment.js";
import { sandboxUnavailable } from "./helpers/sandbox.js";

const SECRET = `wb-secret-${randomUUID()}`;
// Set before any sandbox is created: a bwrap spawned with this process's environment would show it.
process.env.WB_TEST_SECRET = SECRET;


const skip = await sandboxUnavailable();

const exists = (p: string) => access(p).then(() => true, () => false);

/** Host processes whose command line contains `token` (anything the sandbox left running). */
async function hostProcessesWith(token: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes(token)) found.push(`${pid}: ${cmdline.replaceAll("\0", " ")}`);
  }
  return found;
}

describe("SandboxEnvironment (real bwrap)", { skip }, () => {
  let root: string;
  let ws: string;
  let other: string;
  let sandbox: SandboxEnvironment;

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "wb-sandbox-"));
    ws = path.join(root, "thread-a");
    other = path.join(root, "thread-b");
    await mkdir(ws, { recursive: true });
    await mkdir(other, { recursive: true });
    await writeFile(path.join(other, "x"), "other thread's private note\n");
    sandbox = new SandboxEnvironment({ workspaceDir: ws });
  });

  after(async () => {
    await sandbox?.close();
    await rm(root, { recursive: true, force: true });
  });

  const out = async (command: string, options?: Parameters<SandboxEnvironment["exec"]>[1]) => {
    const r = await sandbox.exec(command, options);
    return { ...r, text: r.stdout.toString("utf8") + r.stderr };
  };

  describe("escapes that must fail", () => {
    it("cannot read the host process's secrets through /proc (parent, init, any pid)", async () => {
      const r = await out(
        'cat /proc/$PPID/environ; cat /proc/1/environ; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr "\\0" "\\n" < "$f"; done; env',
      );
      assert.ok(!r.text.includes(SECRET), "the secret leaked into the sandbox");
      assert.ok(!r.text.includes("WB_TEST_SECRET"));
    });

    it("shows no environment but the one it was given, in any process (bwrap's own included)", async () => {
      const r = await out('for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f"; done', { env: { ONLY: "1" } });
      const lines = r.stdout.toString().split("\n").filter(Boolean);
      assert.ok(lines.length > 0, "the probe read nothing");
      assert.deepEqual([...new Set(lines)].filter((l) => !/^(ONLY=1|PWD=.*|SHLVL=.*|_=.*)$/.test(l)), []);
    });

    it("does not see the Node process: only sandbox pids in /proc", async () => {
      const r = await out('for p in /proc/[0-9]*; do echo "$(basename $p) $(cat $p/comm)"; done');
      const procs = r.stdout.toString().trim().split("\n").map((l) => l.split(" "));
      assert.ok(procs.length >= 2 && procs.length <= 6, `unexpected process list:\n${r.text}`);
      for (const [pid, comm] of procs) {
        assert.ok(Number(pid) < 100, `pid ${pid} is not from a fresh PID namespace`);
        assert.ok(["bwrap", "bash", "cat", "basename"].includes(comm!), `unexpected process ${comm}`);
      }
      const ps = await out("ps -e -o comm=");
      assert.ok(!/node/.test(ps.text), ps.text);
    });

    it("cannot list or read another thread's directory", async () => {
      const ls = await out("ls -a ..; ls -a " + root);
      assert.ok(!ls.text.includes("thread-b"), ls.text);
      const cat = await out(`cat ../thread-b/x; cat ${path.join(other, "x")}`);
      assert.notEqual(cat.exitCode, 0);
      assert.ok(!cat.text.includes("private note"), cat.text);
    });

    it("cannot write outside the workspace: host /tmp, /usr, the root dir, the home directory", async () => {
      const name = `wb-escape-${randomUUID()}`;
      const home = os.homedir();
      const r = await out(
        [`echo x > /tmp/${name}`, `echo x > /usr/${name}`, `echo x > ../${name}`, `echo x > ${root}/${name}`, `mkdir -p ${home} && echo x > ${home}/${name}`, `echo x > /${name}`]
          .map((c) => `(${c}) 2>/dev/null; echo "rc=$?"`)
          .join("; "),
      );
      assert.match(r.text, /rc=[1-9]/); // /usr and / at least are read-only inside
      for (const p of [path.join(os.tmpdir(), name), `/tmp/${name}`, `/usr/${name}`, path.join(root, name), path.join(home, name), `/${name}`]) {
        assert.equal(await exists(p), false, `${p} was written on the host`);
      }
      const usr = await out(`touch /usr/${name}`);
      assert.notEqual(usr.exitCode, 0);
      assert.match(usr.text, /Read-only file system/);
    });

    it("keeps the workspace's parents read-only when the workspace is outside /tmp", async (t) => {
      const base = await mkdtemp("/var/tmp/wb-sandbox-").catch(() => undefined);
      if (!base) return t.skip("/var/tmp is not writable here");
      try {
        const dir = path.join(base, "thread");
        const env = new SandboxEnvironment({ workspaceDir: dir });
        const r = await env.exec("echo x > ../escape; r=$?; echo x > inside; exit $r");
        assert.notEqual(r.exitCode, 0);
        assert.match(r.stderr, /Read-only file system/);
        assert.equal(await exists(path.join(base, "escape")), false);
        assert.equal(await readFile(path.join(dir, "inside"), "utf8"), "x\n");
      } finally {
        await rm(base, { recursive: true, force: true });
      }
    });

    describe("network", () => {
      let server: net.Server;
      let port: number;
      let connections = 0;
      before(async () => {
        server = net.createServer((s) => {
          connections++;
          s.end("hello from the host\n");
        });
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
        port = (server.address() as net.AddressInfo).port;
      });
      after(() => new Promise<void>((resolve) => server.close(() => resolve())));

      const connect = () => `exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3`;

      it("cannot reach a loopback server with network off (the default)", async () => {
        const before = connections;
        const r = await out(connect(), { timeoutMs: 10_000 });
        assert.notEqual(r.exitCode, 0);
        assert.ok(!r.text.includes("hello from the host"), r.text);
        assert.equal(connections, before);
      });

      it("reaches it with network: true", async () => {
        const env = new SandboxEnvironment({ workspaceDir: ws, network: true });
        const r = await env.exec(connect(), { timeoutMs: 10_000 });
        assert.equal(r.exitCode, 0, r.stderr);
        assert.equal(r.stdout.toString(), "hello from the host\n");
      });
    });

    // A regression here shows as pipes held open forever: fail instead of hanging.
    describe("no process outlives the call", { timeout: 30_000 }, () => {
      const survivors = (token: string) =>
        [
          `(sleep 1; echo alive > bg-${token}) &`,
          `setsid bash -c 'sleep 1; echo alive > setsid-${token}' &`,
          `nohup bash -c 'sleep 1; echo alive > nohup-${token}' >/dev/null 2>&1 &`,
          `bash -c 'sleep 300; : ${token}' &`,
          `setsid bash -c 'sleep 300; : ${token}' &`,
        ].join("\n");

      async function assertAllGone(token: string): Promise<void> {
        assert.deepEqual(await hostProcessesWith(token), [], "sandbox processes still running on the host");
        await delay(1_500);
        for (const kind of ["bg", "setsid", "nohup"]) {
          assert.equal(await exists(path.join(ws, `${kind}-${token}`)), false, `a ${kind} child ran after the call returned`);
        }
      }

      it("after a normal return (background job, setsid, nohup)", async () => {
        const token = randomUUID();
        const r = await out(`${survivors(token)}\necho started`);
        assert.equal(r.exitCode, 0);
        assert.equal(r.stdout.toString(), "started\n");
        await assertAllGone(token);
      });

      it("after a timeout", async () => {
        const token = randomUUID();
        const r = await out(`${survivors(token)}\nsleep 300`, { timeoutMs: 400 });
        assert.equal(r.timedOut, true);
        assert.equal(r.exitCode, -1);
        await assertAllGone(token);
      });

      it("after an abort", async () => {
        const token = randomUUID();
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 400);
        const r = await out(`${survivors(token)}\nsleep 300`, { signal: controller.signal });
        assert.equal(r.aborted, true);
        assert.equal(r.timedOut, false);
        await assertAllGone(token);
      });

      it("after close() of the environment", async () => {
        const token = randomUUID();
        const env = new SandboxEnvironment({ workspaceDir: ws });
        const running = env.exec(`bash -c 'sleep 300; : ${token}' & sleep 300`);
        await delay(400);
        await env.close();
        const r = await running;
        assert.equal(r.exitCode, -1);
        assert.deepEqual(await hostProcessesWith(token), []);
      });
    });

    it("cannot create nested user namespaces and has no capabilities", async () => {
      const r = await out("grep CapEff /proc/self/status; unshare -r true && echo NESTED");
      assert.match(r.text, /CapEff:\s+0+\n/);
      assert.ok(!r.text.includes("NESTED"), r.text);
    });

    it("passes no descriptor but stdin, stdout and stderr (no control pipe, nothing inherited)", async () => {
      // "; true" keeps bash from exec-ing ls, so $$ is the shell, not ls with its own directory fd.
      const r = await out("ls -1 /proc/$$/fd; true");
      assert.deepEqual(r.stdout.toString().split("\n").filter(Boolean).sort(), ["0", "1", "2"]);
    });
  });

  describe("ordinary behaviour", () => {
    it("reports exit codes, stdout and stderr apart", async () => {
      const r = await sandbox.exec("echo out; echo err >&2; exit 7");
      assert.equal(r.exitCode, 7);
      assert.equal(r.stdout.toString(), "out\n");
      assert.equal(r.stderr, "err\n");
      assert.equal(r.timedOut, false);
    });

    it("feeds stdin, raw bytes included", async () => {
      const r = await sandbox.exec("cat; printf '|'; wc -c", { stdin: "line one\n" });
      assert.equal(r.stdout.toString(), "line one\n|0\n");
      const bin = await sandbox.exec("cat", { stdin: Buffer.from([0, 255, 10, 1]) });
      assert.deepEqual([...bin.stdout], [0, 255, 10, 1]);
    });

    it("runs in the workspace at /workspace, and in a subdirectory as cwd (given as a host or a sandbox path)", async () => {
      await mkdir(path.join(ws, "sub"), { recursive: true });
      assert.equal((await sandbox.exec("pwd")).stdout.toString(), "/workspace\n");
      assert.equal((await sandbox.exec("pwd", { cwd: path.join(ws, "sub") })).stdout.toString(), "/workspace/sub\n");
      assert.equal((await sandbox.exec("pwd", { cwd: "/workspace/sub" })).stdout.toString(), "/workspace/sub\n");
      await assert.rejects(sandbox.exec("pwd", { cwd: "/workspace/../etc" }), /inside the sandbox workspace/);
    });

    it("shares files with the host: written inside, read outside and back", async () => {
      await writeFile(path.join(ws, "from-host.txt"), "host says hi\n");
      const r = await sandbox.exec("cat from-host.txt; echo made > from-sandbox.txt");
      assert.equal(r.stdout.toString(), "host says hi\n");
      assert.equal(await readFile(path.join(ws, "from-sandbox.txt"), "utf8"), "made\n");
      assert.equal((await sandbox.fileOps.stat(path.join(ws, "from-sandbox.txt")))?.type, "file");
    });

    it("rejects a cwd outside the workspace or relative", async () => {
      await assert.rejects(sandbox.exec("pwd", { cwd: root }), /inside the sandbox workspace/);
      await assert.rejects(sandbox.exec("pwd", { cwd: path.join(ws, "..", "thread-b") }), /inside the sandbox workspace/);
      await assert.rejects(sandbox.exec("pwd", { cwd: "sub" }), /absolute path/);
      await assert.rejects(sandbox.exec("pwd", { cwd: path.join(ws, "missing") }), /not a directory/);
    });

    it("uses exactly the variables given, and a minimal default", async () => {
      const given = await sandbox.exec("env | sort", { env: { FOO: "bar baz", PATH: "/usr/bin:/bin" } });
      const names = given.stdout.toString().split("\n").filter(Boolean).map((l) => l.split("=")[0]);
      assert.deepEqual(names.filter((n) => !["PWD", "SHLVL", "_"].includes(n!)), ["FOO", "PATH"]);
      assert.match(given.stdout.toString(), /^FOO=bar baz$/m);
      const dflt = await sandbox.exec('echo "$HOME|$PATH|$TMPDIR"; env | grep -c . ');
      const [line] = dflt.stdout.toString().split("\n");
      assert.equal(line, "/workspace|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin|/tmp");
    });

    it("streams output through onOutput without buffering it", async () => {
      const chunks: Array<{ text: string; stream: string; settled: boolean }> = [];
      let settled = false;
      const done = sandbox
        .exec("echo first; sleep 0.5; echo second >&2", {
          onOutput: (chunk, stream) => chunks.push({ text: chunk.toString(), stream, settled }),
        })
        .finally(() => (settled = true));
      const r = await done;
      assert.equal(r.exitCode, 0);
      assert.equal(r.stdout.length, 0);
      assert.equal(r.stderr, "");
      assert.deepEqual(
        chunks.map((c) => [c.text, c.stream, c.settled]),
        [
          ["first\n", "stdout", false],
          ["second\n", "stderr", false],
        ],
      );
    });

    it("is aborted by an already-aborted signal", async () => {
      const r = await sandbox.exec("sleep 300", { signal: AbortSignal.abort() });
      assert.equal(r.aborted, true);
    });

    it("applies its default timeout", async () => {
      const env = new SandboxEnvironment({ workspaceDir: ws, defaultTimeoutMs: 300 });
      const r = await env.exec("sleep 300");
      assert.equal(r.timedOut, true);
    });

    it("creates a missing workspace directory", async () => {
      const dir = path.join(root, "thread-new", "deep");
      const r = await new SandboxEnvironment({ workspaceDir: dir }).exec("pwd; touch made");
      assert.equal(r.stdout.toString(), "/workspace\n");
      assert.equal(await exists(path.join(dir, "made")), true);
    });

    it("shows extra read-only binds, read-only", async () => {
      const extra = path.join(root, "tools");
      await mkdir(extra, { recursive: true });
      await writeFile(path.join(extra, "tool.sh"), "echo tool ran\n");
      const env = new SandboxEnvironment({ workspaceDir: ws, readOnlyBinds: [extra] });
      const r = await env.exec(`bash ${extra}/tool.sh; touch ${extra}/new`);
      assert.match(r.stdout.toString(), /tool ran/);
      assert.match(r.stderr, /Read-only file system/);
    });

    it("rejects when the sandbox itself cannot start (bad bind), with bwrap's reason", async () => {
      const env = new SandboxEnvironment({ workspaceDir: ws, readOnlyBinds: [path.join(root, "does-not-exist")] });
      await assert.rejects(env.exec("true"), /sandbox could not start: .*does-not-exist/);
    });

    it("validates its options with one schema", () => {
      assert.throws(() => new SandboxEnvironment({ workspaceDir: "relative/dir" }), /workspaceDir/);
      assert.throws(() => new SandboxEnvironment({ workspaceDir: "/" }), /root/);
      assert.throws(() => new SandboxEnvironment({ workspaceDir: ws, readOnlyBinds: ["rel"] }), /readOnlyBinds/);
      assert.equal(sandbox.kind, "sandbox");
      assert.equal(sandbox.sandboxed, true);
    });
  });
});

describe("detectSandbox / commandEnvironmentFor", () => {
  const missing = "/nonexistent/bwrap";

  it("reports why a sandbox is unavailable (bwrap not runnable)", async () => {
    const found = await detectSandbox({ bwrapPath: missing });
    assert.equal(found.available, false);
    assert.match(!found.available ? found.reason : "", /\/nonexistent\/bwrap/);
  });

  it("explains a bwrap that cannot create namespaces (the case of hosts that forbid them)", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "wb-fake-bwrap-"));
    try {
      // Stands in for a real bwrap on a host without unprivileged user namespaces: same message, same exit code.
      const fake = path.join(dir, "bwrap");
      await writeFile(
        fake,
        '#!/bin/sh\n[ "$1" = --help ] && { echo "usage: bwrap"; exit 0; }\n' +
          'echo "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n',
        { mode: 0o755 },
      );
      const found = await detectSandbox({ bwrapPath: fake });
      assert.equal(found.available, false);
      assert.match(!found.available ? found.reason : "", /No permissions to creating new namespace.*unprivileged user namespaces look disabled/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("auto without a sandbox: local environment, a reason, and one warning per process", async (t) => {
    const warn = t.mock.method(console, "warn", () => undefined);
    const dir = await mkdtemp(path.join(os.tmpdir(), "wb-sandbox-auto-"));
    try {
      const a = await commandEnvironmentFor(dir, { sandbox: "auto", bwrapPath: missing });
      const b = await commandEnvironmentFor(dir, { bwrapPath: missing });
      assert.equal(a.sandboxed, false);
      assert.equal(a.environment.sandboxed ?? false, false);
      assert.match(a.reason ?? "", /unsandboxed: .*\/nonexistent\/bwrap/);
      assert.equal(b.sandboxed, false);
      assert.equal(warn.mock.callCount(), 1);
      assert.match(String(warn.mock.calls[0]?.arguments[0]), /WITHOUT a sandbox/);
      // The fallback does not hand the host's secrets to commands either.
      const r = await a.environment.exec("env", { cwd: dir });
      assert.ok(!r.stdout.toString().includes(SECRET));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("required without a sandbox throws a clear error; off never sandboxes", async (t) => {
    const warn = t.mock.method(console, "warn", () => undefined);
    await assert.rejects(commandEnvironmentFor("/tmp/x", { sandbox: "required", bwrapPath: missing }), /"required" but no sandbox is available.*bubblewrap/s);
    const off = await commandEnvironmentFor("/tmp/x", { sandbox: "off" });
    assert.equal(off.sandboxed, false);
    assert.match(off.reason ?? "", /"off"/);
    assert.equal(warn.mock.callCount(), 0);
    await assert.rejects(commandEnvironmentFor("/tmp/x", { sandbox: "sometimes" as "auto" }), /sandbox/);
    await assert.rejects(commandEnvironmentFor("relative", { sandbox: "off" }), /absolute path/);
  });

  it("auto and required give a SandboxEnvironment where bwrap works", { skip }, async () => {
    for (const mode of ["auto", "required"] as const) {
      const chosen = await commandEnvironmentFor("/tmp/wb-x", { sandbox: mode });
      assert.equal(chosen.sandboxed, true);
      assert.equal(chosen.reason, undefined);
      assert.ok(chosen.environment instanceof SandboxEnvironment);
    }
  });
});
