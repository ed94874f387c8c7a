/**
 * The bubblewrap sandbox's hardening against the real bwrap (issues 23.4/23.5, 24.3–24.5): no
 * set-id bit leaves it (run as root here, the case that matters), the workspace shows at
 * /workspace and the tool results never name the host path, resource limits end runaway
 * commands with a clear note, protected paths are read-only inside and refused by the file
 * tools, and a call ended by timeout, abort or close() always reports the same outcome.
 * Every proof is bounded: limits are small, timeouts generous, nothing is timed.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { lstat, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { createAgent } from "langchain";
import { SandboxEnvironment } from "../src/environment/sandboxEnvironment.js";
import { setidSeccompFilter } from "../src/environment/setidFilter.js";
import { protectedPathList, protectedPathReason } from "../src/guards/protectedPaths.js";
import { mountPathToHost } from "../src/rewrite/mountPath.js";
import { createWorkbench } from "../src/workbench.js";
import { createPatchTool } from "../tools/patchTool.js";
import { createRunCommandTool } from "../tools/runCommand.js";
import { createWriteFileTool } from "../tools/writeFile.js";
import { sandboxUnavailable } from "./helpers/sandbox.js";

const skip = await sandboxUnavailable();
const exists = (p: string) => lstat(p).then(() => true, () => false);
const thread = (id: string) => ({ configurable: { thread_id: id } });
const call = (name: string, args: Record<string, unknown>, id = `c-${name}`) => ({ type: "tool_call" as const, id, name, args });
function text(m: unknown): string {
  const c = (m as BaseMessage).content ?? m;
  return typeof c === "string" ? c : JSON.stringify(c);
}
/** Generous: a loaded 2-core box may be slow, never wrong. */
const LONG = 120_000;

describe("pure parts", () => {
  it("mountPathToHost replaces whole occurrences only", () => {
    const t = "/workspace /workspace/a x/workspace/b /workspaces /workspace.bak '/workspace' /workspace:1";
    assert.equal(mountPathToHost(t, "/workspace", "/h/t1"), "/h/t1 /h/t1/a x/workspace/b /workspaces /workspace.bak '/h/t1' /h/t1:1");
  });

  it("protectedPathReason: the default list, directories, parents, options", () => {
    for (const p of [".bashrc", ".git/config", ".git/hooks/pre-commit", ".vscode/settings.json", ".idea", ".mcp.json", ".git", ".gitmodules"]) {
      assert.match(protectedPathReason(p) ?? "", /is protected/, p);
    }
    for (const p of ["src/.bashrc", ".git/objects/ab/cd", ".git/refs/heads/main", ".git/index", "AGENTS.md", "notes.md"]) {
      assert.equal(protectedPathReason(p), undefined, p);
    }
    assert.equal(protectedPathReason(".git/config", protectedPathList({ allowGitConfig: true })), undefined);
    assert.match(protectedPathReason("AGENTS.md", protectedPathList({ protectAgentInstructions: true })) ?? "", /is protected/);
    assert.equal(protectedPathReason(".bashrc", protectedPathList(false)), undefined);
  });

  it("the seccomp filter assembles for x64 and arm64 (8-byte instructions), none elsewhere", () => {
    assert.equal(setidSeccompFilter("x64")!.length % 8, 0);
    assert.equal(setidSeccompFilter("arm64")!.length % 8, 0);
    assert.equal(setidSeccompFilter("mips"), undefined);
  });
});

describe("sandbox hardening (real bwrap)", { skip }, () => {
  let root: string;
  let ws: string;
  let sandbox: SandboxEnvironment;
  const out = async (command: string, env: SandboxEnvironment = sandbox, timeoutMs = LONG) => {
    const r = await env.exec(command, { timeoutMs });
    return { ...r, text: r.stdout.toString() + r.stderr };
  };

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "wb-harden-"));
    ws = path.join(root, "t1");
    await mkdir(ws, { recursive: true });
    sandbox = new SandboxEnvironment({ workspaceDir: ws });
  });
  after(async () => {
    await sandbox?.close();
    await rm(root, { recursive: true, force: true });
  });

  describe("no set-id bit leaves the sandbox", () => {
    it(`chmod 4755, install -m, open(O_CREAT, 04755), chmod g+s: none leaves a set-id file on the host (running as uid ${process.getuid?.()})`, async () => {
      const r = await out(
        "cp /bin/bash x && chmod 4755 x; chmod u+s,g+s x; install -m 4755 /bin/true y; " +
          "python3 -c 'import os; os.close(os.open(\"z\", os.O_CREAT | os.O_WRONLY, 0o6755))'; " +
          "perl -e 'sysopen(my $f, \"w\", 0101, 04755) or print \"open: $!\\n\"'; mkdir -p d && chmod 2775 d; echo done",
      );
      assert.match(r.text, /done/);
      assert.match(r.text, /Operation not permitted/);
      for (const name of ["x", "y", "z", "w", "d"]) {
        const s = await stat(path.join(ws, name)).catch(() => undefined);
        if (s) assert.equal(s.mode & 0o6000, 0, `${name} has mode ${s.mode.toString(8)}`);
      }
      // Ordinary modes still work.
      const ok = await out("chmod 755 x && chmod 600 x && stat -c %a x");
      assert.equal(ok.stdout.toString(), "600\n");
    });
  });

  describe("a neutral mount path", () => {
    it("inside: $PWD, $HOME, pwd and error texts show /workspace, never the host path", async () => {
      const r = await out('pwd; echo "$HOME|$PWD"; cd /workspace && cat no-such-file; ls -d "$PWD"');
      assert.equal(r.stdout.toString(), "/workspace\n/workspace|/workspace\n/workspace\n");
      assert.match(r.stderr, /^cat: no-such-file: No such file or directory\n$/);
      assert.ok(!r.text.includes(ws) && !r.text.includes(root));
    });

    it("through run_command: pwd | rev, pwd | base64, mountinfo, an error naming a file — no host path in any form", async () => {
      const wsRoot = path.join(root, "rc");
      const tool = createRunCommandTool({ rootDir: wsRoot, sandbox: "required" });
      const forms = (p: string) => [p, [...p].reverse().join(""), Buffer.from(p).toString("base64").replace(/=+$/, ""), Buffer.from(`${p}\n`).toString("base64").replace(/=+$/, "")];
      const commands = ["pwd | rev", "pwd | base64", "echo $HOME $PWD | rev", "cat /proc/self/mountinfo", "cat /proc/self/mountinfo | base64 -w0 | head -c 100000", "cat sub/missing.txt", "mkdir -p sub && cd sub && pwd && realpath ../x"];
      const thread1 = path.join(wsRoot, "neutral");
      for (const command of commands) {
        const result = text(await tool.invoke(call("run_command", { command }), thread("neutral")));
        assert.doesNotMatch(result, /^Error/, result);
        for (const form of [...forms(thread1), ...forms(wsRoot)]) {
          // mountinfo's base64 may name the host path only as the bind's source field (see README): not as $PWD.
          if (command.includes("mountinfo | base64")) continue;
          assert.ok(!result.includes(form), `${command}: ${JSON.stringify(form)} in ${result}`);
        }
        if (command === "cat sub/missing.txt") assert.match(result, /cat: sub\/missing\.txt: No such file/);
      }
      // The translation keeps the shell and the file tools in agreement: /workspace/sub is `sub`.
      const pwd = text(await tool.invoke(call("run_command", { command: "cd sub && pwd; echo /workspace/sub/a.txt" }), thread("neutral")));
      assert.match(pwd, /^sub\nsub\/a\.txt\n\[exit code 0\]$/);
    });
  });

  describe("rootDir on a filesystem of its own", () => {
    // The documented way to hide the last trace: mountinfo names the bind's source relative to its
    // filesystem's root, so with rootDir a mount of its own only `/<thread_id>` shows, even encoded.
    let mnt = "";
    let mounted = false;
    before(async () => {
      mnt = await mkdtemp(path.join(os.tmpdir(), "wb-own-fs-"));
      mounted = await new Promise<boolean>((resolve) => {
        execFile("mount", ["-t", "tmpfs", "-o", "size=8m,mode=0755", "wb-own-fs", mnt], (err) => resolve(!err));
      });
    });
    after(async () => {
      if (mounted) await new Promise((resolve) => execFile("umount", [mnt], resolve));
      await rm(mnt, { recursive: true, force: true });
    });

    it("mountinfo, even base64-encoded, carries no host path", async (t) => {
      if (!mounted) return t.skip("cannot mount a tmpfs here (needs root)");
      const tool = createRunCommandTool({ rootDir: mnt, sandbox: "required" });
      const result = text(await tool.invoke(call("run_command", { command: "cat /proc/self/mountinfo | base64 -w0" }), thread("own-fs")));
      const decoded = Buffer.from(result.replace(/\n\[exit code 0\]$/, ""), "base64").toString();
      assert.match(decoded, / \/own-fs \/workspace /, "the workspace's line names only the thread directory");
      for (const p of [mnt, path.basename(mnt)]) assert.ok(!decoded.includes(p), `${p} in ${decoded}`);
    });
  });

  describe("resource limits", () => {
    let limited: SandboxEnvironment;
    before(() => {
      limited = new SandboxEnvironment({
        workspaceDir: ws,
        limits: { processes: 48, memoryBytes: 64 * 1024 * 1024, tmpfsBytes: 8 * 1024 * 1024, fileSizeBytes: 4 * 1024 * 1024, outputBytes: 256 * 1024, cpuSeconds: 1 },
      });
    });

    it("a fork bomb ends the call with the process-limit note, leaving nothing behind", async () => {
      const r = await out(":(){ :|:& };:; wait", limited);
      assert.equal(r.timedOut, false, "ended by the limit, not the timeout");
      assert.equal(r.exitCode, 137);
      assert.match(r.text, /ran into the process limit of the sandbox \(48 processes\)/);
      const again = await out("echo alive", limited);
      assert.equal(again.stdout.toString(), "alive\n");
    });

    it("many sleeping children: the process limit holds (as root too, where the kernel ignores RLIMIT_NPROC)", async () => {
      const r = await out("for i in $(seq 200); do sleep 600 & done; wait", limited);
      assert.equal(r.timedOut, false);
      assert.match(r.text, /process limit/);
    });

    it("a memory balloon fails inside the process with the memory note", async () => {
      const r = await out("python3 -c 'b = bytearray(512 * 1024 * 1024)'; x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}", limited);
      assert.equal(r.timedOut, false);
      assert.match(r.text, /MemoryError/);
      assert.match(r.text, /memory limit of one process of the sandbox \(64 MiB\)/);
    });

    it("disk fill: /tmp is full at its size, a big file stops at the file size limit", async () => {
      const tmp = await out("for i in 1 2 3 4; do head -c 3000000 /dev/zero > /tmp/fill$i; done; du -sk /tmp | cut -f1", limited);
      assert.ok(Number(tmp.stdout.toString().trim()) <= 8 * 1024, tmp.text);
      assert.match(tmp.text, /No space left on device/);
      assert.match(tmp.text, /size of \/tmp/);
      const big = await out("head -c 64000000 /dev/zero > big.bin", limited);
      assert.equal((await stat(path.join(ws, "big.bin"))).size, 4 * 1024 * 1024);
      assert.match(big.text, /file size limit of the sandbox \(4 MiB\)/);
      await rm(path.join(ws, "big.bin"));
    });

    it("endless output stops at the output limit; a CPU loop at the CPU limit", async () => {
      const yes = await out("yes", limited);
      assert.equal(yes.timedOut, false);
      assert.equal(yes.exitCode, 137);
      assert.ok(yes.stdout.length <= 256 * 1024 + 64 * 1024);
      assert.match(yes.text, /stopped: it reached the output limit of the sandbox \(256 KiB|stopped: it reached the output limit of the sandbox \(262144 bytes\)/);
      const spin = await out("exec python3 -c 'while True: pass'", limited);
      assert.equal(spin.timedOut, false);
      assert.match(spin.text, /CPU time limit of one process of the sandbox \(1 s of CPU time\)/);
    });

    it("the defaults are on, and the options are strict", async () => {
      const r = await out("ulimit -u; ulimit -d; ulimit -f; ulimit -t; df -k /tmp | tail -1 | awk '{print $2}'");
      assert.equal(r.stdout.toString(), `256\n${2 * 1024 * 1024}\n${1024 * 1024}\n600\n${512 * 1024}\n`);
      assert.throws(() => new SandboxEnvironment({ workspaceDir: ws, limits: { procs: 5 } as never }), /procs/);
      assert.throws(() => new SandboxEnvironment({ workspaceDir: ws, limits: { processes: 0 } }), /processes/);
      assert.throws(() => new SandboxEnvironment({ workspaceDir: ws, mountPath: "/usr/ws" }), /mountPath/);
      assert.throws(() => createRunCommandTool({ rootDir: root, limits: { memory: 1 } as never }), /memory/);
    });
  });

  describe("protected paths", () => {
    let pws: string;
    let env: SandboxEnvironment;
    before(async () => {
      pws = path.join(root, "prot");
      await mkdir(path.join(pws, ".vscode"), { recursive: true });
      await writeFile(path.join(pws, ".bashrc"), "# user's\n");
      await writeFile(path.join(pws, ".vscode", "settings.json"), "{}\n");
      env = new SandboxEnvironment({ workspaceDir: pws });
    });

    it("existing ones are read-only inside; git init, add and commit still work", async () => {
      const r = await out(
        "echo evil >> .bashrc; echo evil > .vscode/settings.json; touch .vscode/tasks.json; rm -f .bashrc; mv .vscode v2; " +
          "git init -q . && git -c user.email=a@b -c user.name=n commit -q --allow-empty -m first && echo hi > f && git add f && " +
          "git -c user.email=a@b -c user.name=n commit -qm second && git log --format=%s | tr '\\n' ' '",
        env,
      );
      assert.match(r.text, /Read-only file system|Device or resource busy/);
      assert.match(r.stdout.toString(), /second first/);
      assert.equal(await readFile(path.join(pws, ".bashrc"), "utf8"), "# user's\n");
      assert.equal(await readFile(path.join(pws, ".vscode", "settings.json"), "utf8"), "{}\n");
      assert.equal(await exists(path.join(pws, ".vscode", "tasks.json")), false);
      // What git init made is kept (core settings, *.sample hooks); objects, refs and index stayed
      // writable, and the next call sees the history.
      assert.match(await readFile(path.join(pws, ".git", "config"), "utf8"), /^\[core\]\n\trepositoryformatversion = 0\n/);
      assert.equal(await exists(path.join(pws, ".git", "hooks", "pre-commit.sample")), true);
      const log = await out("git log --format=%s | tr '\\n' ' '", env);
      assert.equal(log.stdout.toString(), "second first ");
    });

    it("hooks and git config planted during a call do not outlive it (no placeholder needed)", async () => {
      const r = await out(
        "echo 'evil' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config; " +
          "echo x > .zshrc; ln -s /etc/passwd .profile; mkdir -p .idea && echo x > .idea/workspace.xml; echo '{}' > .mcp.json; ls -a | tr '\\n' ' '",
        env,
      );
      assert.equal(r.exitCode, 0);
      for (const p of [".git/hooks/pre-commit", ".zshrc", ".profile", ".idea", ".mcp.json"]) {
        assert.equal(await exists(path.join(pws, p)), false, `${p} outlived the call`);
      }
      assert.doesNotMatch(await readFile(path.join(pws, ".git", "config"), "utf8").catch(() => ""), /evil/);
      // Renaming the parent away and planting a new one is undone too.
      await out("mv .git .git-real; mkdir -p .git/hooks && echo evil > .git/hooks/post-checkout", env);
      assert.equal(await exists(path.join(pws, ".git", "hooks", "post-checkout")), false);
      await rm(path.join(pws, ".git"), { recursive: true, force: true });
      await out("mv .git-real .git", env);
    });

    it("configurable: allowGitConfig, protectAgentInstructions, false", async () => {
      const git = new SandboxEnvironment({ workspaceDir: pws, protectedPaths: { allowGitConfig: true, protectAgentInstructions: true } });
      await writeFile(path.join(pws, "AGENTS.md"), "rules\n");
      const r = await out("git config user.name tester && git config user.name; echo more >> AGENTS.md", git);
      assert.match(r.stdout.toString(), /^tester\n/);
      assert.equal(await readFile(path.join(pws, "AGENTS.md"), "utf8"), "rules\n");
      const off = new SandboxEnvironment({ workspaceDir: pws, protectedPaths: false });
      await out("echo mine >> .bashrc", off);
      assert.match(await readFile(path.join(pws, ".bashrc"), "utf8"), /mine/);
    });

    it("write_file and patch refuse them with a clear message; ordinary files and AGENTS.md are fine", async () => {
      const wsRoot = path.join(root, "tools");
      const write = createWriteFileTool({ rootDir: wsRoot });
      const patch = createPatchTool({ rootDir: wsRoot });
      const t = thread("ft");
      for (const p of [".bashrc", ".git/config", ".git/hooks/pre-commit", ".vscode/settings.json", ".mcp.json"]) {
        const r = text(await write.invoke(call("write_file", { path: p, content: "x\n" }), t));
        assert.match(r, /is protected .*ask the user to install it/s, `${p}: ${r}`);
        assert.equal(await exists(path.join(wsRoot, "ft", p)), false);
      }
      assert.doesNotMatch(text(await write.invoke(call("write_file", { path: "AGENTS.md", content: "a\n" }), t)), /protected/);
      assert.doesNotMatch(text(await write.invoke(call("write_file", { path: ".git/objects/info/x", content: "a\n" }), t)), /protected/);
      const dir = path.join(wsRoot, "ft");
      await mkdir(path.join(dir, ".git"), { recursive: true });
      await writeFile(path.join(dir, ".git", "config"), "[core]\n");
      const r = text(await patch.invoke(call("patch", { path: ".git/config", old_string: "[core]", new_string: "[core]\n\tfsmonitor = x" }), t));
      assert.match(r, /is protected/);
      assert.equal(await readFile(path.join(dir, ".git", "config"), "utf8"), "[core]\n");
      const allowed = createWriteFileTool({ rootDir: wsRoot, protectedPaths: { allowGitConfig: true } });
      assert.doesNotMatch(text(await allowed.invoke(call("write_file", { path: ".git/config", content: "[core]\n" }), t)), /protected/);
    });
  });

  describe("deterministic outcomes under load", () => {
    it("24 parallel calls ended by timeout, abort or close() each report exactly their outcome", async () => {
      const env = new SandboxEnvironment({ workspaceDir: ws });
      const closing = new SandboxEnvironment({ workspaceDir: ws });
      const calls: Array<Promise<{ kind: string; r: Awaited<ReturnType<SandboxEnvironment["exec"]>> }>> = [];
      for (let i = 0; i < 8; i++) {
        calls.push(env.exec("sleep 600", { timeoutMs: 50 + i * 40 }).then((r) => ({ kind: "timeout", r })));
        const ac = new AbortController();
        // Some before bwrap has even reported its child, some later.
        setTimeout(() => ac.abort(), i * 30);
        calls.push(env.exec("sleep 600", { timeoutMs: LONG, signal: ac.signal }).then((r) => ({ kind: "abort", r })));
        calls.push(closing.exec("sleep 600", { timeoutMs: LONG }).then((r) => ({ kind: "close", r })));
      }
      // close() while some are starting and some are running.
      setTimeout(() => void closing.close(), 10);
      setTimeout(() => void closing.close(), 300);
      const late = new Promise<void>((resolve) => setTimeout(resolve, 1_500)).then(() => closing.close());
      const results = await Promise.all(calls);
      await late;
      for (const { kind, r } of results) {
        assert.equal(r.exitCode, -1, `${kind}: ${JSON.stringify(r)}`);
        assert.equal(r.timedOut, kind === "timeout", kind);
        assert.equal(r.aborted === true, kind !== "timeout", kind);
      }
    });

    it("run_command: 12 parallel calls in one agent step, each timed out, each says so", async () => {
      const wsRoot = path.join(root, "det");
      const wb = createWorkbench({ rootDir: wsRoot, enableShell: true, webTools: false, basicTools: { shell: { sandbox: "required" } } });
      const tool_calls = Array.from({ length: 12 }, (_, i) => ({ name: "run_command", args: { command: "echo started; sleep 600", timeout: 1 }, id: `slow-${i}` }));
      const model = fakeModel().respond(new AIMessage({ content: "", tool_calls })).respond(new AIMessage("done"));
      const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware });
      const res = await agent.invoke({ messages: [new HumanMessage("go")] }, thread("det"));
      const msgs = (res.messages as BaseMessage[]).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
      assert.equal(msgs.length, 12);
      for (const m of msgs) {
        assert.equal(m.status, "error", text(m));
        assert.match(text(m), /^\{"error":"timed out after 1 s: the command and its child processes were killed/, text(m));
      }
    });
  });
});
