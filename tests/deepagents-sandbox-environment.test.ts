// DeepAgentsSandboxEnvironment: an Environment on a deepagents sandbox provider. The provider is
// deepagents' own LocalShellBackend (real: its execute spawns `sh`; uploadFiles/downloadFiles use
// the disk), sometimes exposed through a counting pass-through or with only `execute`. Checked:
// bytes cross exactly both ways (inline, upload/download, chunks over execute) in the round trips
// documented; exit codes, stderr, cwd and exact variables; timeout and abort kill the command's
// process group; the output cap; a provider that cuts its output; no temp files left behind;
// strict options; and one agent run with createWorkbench + time travel forking back.
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver, type StateSnapshot } from "@langchain/langgraph";
import { LocalShellBackend } from "deepagents";
import { createAgent } from "langchain";
import { snapshotIdOf } from "../middleware/timeTravel.js";
import { DeepAgentsSandboxEnvironment, type DeepAgentsSandbox, type DeepAgentsSandboxOptions } from "../src/environment/deepagentsSandbox.js";
import { createWorkbench } from "../src/workbench.js";

let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-das-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const PATH = process.env.PATH ?? "/usr/bin:/bin";

/** deepagents' LocalShellBackend behind a pass-through that counts the protocol calls. */
function counted(backend: LocalShellBackend, only?: "execute"): DeepAgentsSandbox & { calls: string[] } {
  const calls: string[] = [];
  const sandbox: DeepAgentsSandbox & { calls: string[] } = {
    id: backend.id,
    calls,
    execute: (command) => (calls.push("execute"), backend.execute(command)),
  };
  if (only !== "execute") {
    sandbox.uploadFiles = (files) => (calls.push("upload"), backend.uploadFiles(files));
    sandbox.downloadFiles = (paths) => (calls.push("download"), backend.downloadFiles(paths));
  }
  return sandbox;
}

/** A fresh provider and its private temp directory (so leftovers can be checked). */
async function setup(options: DeepAgentsSandboxOptions = {}, only?: "execute", backendOptions: { maxOutputBytes?: number } = {}) {
  const tempDir = await mkdtemp(path.join(tmp, "t-"));
  const backend = await LocalShellBackend.create({ rootDir: tmp, env: { PATH }, ...backendOptions });
  const sandbox = counted(backend, only);
  const env = new DeepAgentsSandboxEnvironment(sandbox, { tempDir, ...options });
  return { env, sandbox, tempDir, backend };
}

const everyByte = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + (i >> 8)) % 256));

/** Waits (bounded) until `pid` is gone or a zombie. */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    if (stat === "" || stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** Waits (bounded) for a file to exist. */
async function appears(file: string): Promise<string> {
  for (let i = 0; i < 400; i++) {
    const text = await readFile(file, "utf8").catch(() => undefined);
    if (text) return text;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${file} never appeared`);
}

describe("DeepAgentsSandboxEnvironment.exec over deepagents' LocalShellBackend", () => {
  test("every byte crosses exactly: inline in one execute; larger stdin uploaded, larger output downloaded", async () => {
    const { env, sandbox, tempDir } = await setup();
    const small = everyByte(4096);
    let r = await env.exec("cat; printf 'to stderr\\n' >&2", { stdin: small });
    assert.deepEqual(r.stdout, small);
    assert.equal(r.stderr, "to stderr\n");
    assert.equal(r.exitCode, 0);
    assert.deepEqual(sandbox.calls, ["execute"], "small stdin and output: one round trip");

    sandbox.calls.length = 0;
    const big = everyByte(300_000);
    r = await env.exec("cat", { stdin: big });
    assert.deepEqual(r.stdout, big);
    assert.deepEqual(sandbox.calls.slice(0, 3), ["upload", "execute", "download"]);
    assert.equal(sandbox.calls.length, 4, "plus one execute removing the temp directory");
    for (let i = 0; i < 100 && (await readdir(tempDir)).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await readdir(tempDir), [], "no temp files left");
  });

  test("a provider with only execute: stdin and output go in base64 chunks, still exact", async () => {
    const { env, sandbox, tempDir } = await setup({ inlineBytes: 1024 }, "execute");
    const data = everyByte(5000);
    const r = await env.exec("cat; head -c 3000 /dev/zero >&2", { stdin: data });
    assert.deepEqual(r.stdout, data);
    assert.equal(r.stderr, "\0".repeat(3000));
    assert.ok(sandbox.calls.every((c) => c === "execute"));
    assert.ok(sandbox.calls.length >= 5 + 1 + 5 + 3, `chunked: ${sandbox.calls.length} executes`);
    for (let i = 0; i < 100 && (await readdir(tempDir)).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await readdir(tempDir), []);
  });

  test("exit codes, cwd, exact variables (values never parsed), a missing cwd is exit 1 with the shell's message", async () => {
    const { env } = await setup();
    assert.equal((await env.exec("exit 7")).exitCode, 7);
    const dir = await mkdtemp(path.join(tmp, "cwd-"));
    const r = await env.exec('pwd; printf "%s|%s\\n" "$WB_V" "${HOME-unset}"', { cwd: dir, env: { WB_V: "it's; $(touch PWNED) `x`", PATH } });
    assert.equal(r.stdout.toString(), `${dir}\nit's; $(touch PWNED) \`x\`|unset\n`);
    assert.deepEqual(await readdir(dir), [], "nothing ran from the value");
    const missing = await env.exec("echo never", { cwd: path.join(dir, "nope") });
    assert.equal(missing.exitCode, 1);
    assert.equal(missing.stdout.length, 0);
    assert.match(missing.stderr, /can't cd|No such file/);
    await assert.rejects(env.exec("true", { env: { "BAD NAME": "x" } }), /invalid variable name/);
    await assert.rejects(env.exec("true", { timeoutMs: -1 }), /timeoutMs/);
  });

  test("timeout kills the command's whole process group; a finished command's background jobs are killed too", async () => {
    const { env, tempDir } = await setup();
    const dir = await mkdtemp(path.join(tmp, "kill-"));
    const r = await env.exec("sleep 60 & echo $! > bg.pid; sleep 60", { cwd: dir, timeoutMs: 500 });
    assert.equal(r.timedOut, true);
    assert.equal(r.exitCode, -1);
    assert.ok(await gone(Number(await appears(path.join(dir, "bg.pid")))), "the background sleep was killed");

    const done = await env.exec("sleep 60 & echo $! > left.pid; echo finished", { cwd: dir, timeoutMs: 30_000 });
    assert.equal(done.stdout.toString(), "finished\n");
    assert.equal(done.timedOut, false);
    assert.ok(await gone(Number(await appears(path.join(dir, "left.pid")))), "the job it left running was killed");
    for (let i = 0; i < 100 && (await readdir(tempDir)).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await readdir(tempDir), []);
  });

  test("abort kills the running command (second execute); aborted before it starts, nothing runs", async () => {
    const { env, sandbox, tempDir } = await setup();
    const dir = await mkdtemp(path.join(tmp, "abort-"));
    const controller = new AbortController();
    const pending = env.exec("echo $$ > sh.pid; sleep 60", { cwd: dir, signal: controller.signal, timeoutMs: 120_000 });
    const pid = Number(await appears(path.join(dir, "sh.pid")));
    controller.abort();
    const r = await pending;
    assert.equal(r.aborted, true);
    assert.equal(r.timedOut, false);
    assert.equal(r.exitCode, -1);
    assert.ok(await gone(pid));
    for (let i = 0; i < 100 && (await readdir(tempDir)).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await readdir(tempDir), [], "the kill's marker and the temp directory are removed");

    sandbox.calls.length = 0;
    const early = await env.exec("touch ran", { cwd: dir, signal: AbortSignal.abort() });
    assert.equal(early.aborted, true);
    assert.deepEqual(sandbox.calls, []);
  });

  test("onOutput gets stdout then stderr and the result holds none; output over maxOutputBytes is cut in the sandbox", async () => {
    const { env } = await setup({ maxOutputBytes: 1000 });
    const chunks: string[] = [];
    const r = await env.exec("echo out; echo err >&2", { onOutput: (c, s) => chunks.push(`${s}:${c.toString()}`) });
    assert.deepEqual(chunks, ["stdout:out\n", "stderr:err\n"]);
    assert.equal(r.stdout.length, 0);
    assert.equal(r.stderr, "");
    const big = await env.exec("head -c 500000 /dev/zero");
    assert.equal(big.stdout.length, 1000);
    assert.match(big.stderr, /output cut at 1000 bytes in the sandbox/);
  });

  test("a provider that cuts its output below inlineBytes: the call rejects saying which option to lower", async () => {
    const { env } = await setup({}, undefined, { maxOutputBytes: 2000 });
    await assert.rejects(env.exec("head -c 20000 /dev/zero"), /lower the inlineBytes option/);
    const ok = await new DeepAgentsSandboxEnvironment((await setup()).sandbox, { inlineBytes: 1024 }).exec("head -c 20000 /dev/zero | wc -c");
    assert.equal(ok.stdout.toString().trim(), "20000");
  });

  test("options are strict; sandboxed is false for LocalShellBackend, true for other providers unless told", async () => {
    const backend = await LocalShellBackend.create({ rootDir: tmp, env: { PATH } });
    assert.throws(() => new DeepAgentsSandboxEnvironment(backend, { tempdir: "/tmp" } as never), /unknown key "tempdir" \(did you mean "tempDir"\?\)/);
    assert.throws(() => new DeepAgentsSandboxEnvironment(backend, { tempDir: "relative" }), /absolute path/);
    assert.throws(() => new DeepAgentsSandboxEnvironment({} as never), /needs a deepagents sandbox/);
    assert.equal(new DeepAgentsSandboxEnvironment(backend).sandboxed, false);
    assert.equal(new DeepAgentsSandboxEnvironment(backend, { sandboxed: true }).sandboxed, true);
    const remote: DeepAgentsSandbox = { id: "sbx-123", execute: (c) => backend.execute(c) };
    assert.equal(new DeepAgentsSandboxEnvironment(remote).sandboxed, true);
    assert.equal(new DeepAgentsSandboxEnvironment(backend).kind, "deepagents-sandbox");
    // deepagents' own type satisfies the adapter's protocol (checked by tsc).
    const typed: DeepAgentsSandbox = backend;
    assert.ok(typed);
  });
});

describe("createWorkbench on a deepagents sandbox, with time travel", () => {
  test("write, run_command, search; a fork back to the first turn restores the files through the provider", async () => {
    const root = await mkdtemp(path.join(tmp, "wb-"));
    const storeDir = await mkdtemp(path.join(tmp, "store-"));
    const backend = await LocalShellBackend.create({ rootDir: root, env: { PATH } });
    const environment = new DeepAgentsSandboxEnvironment(backend);
    const reports: unknown[] = [];
    const wb = createWorkbench({
      rootDir: root,
      environment,
      enableShell: true,
      webTools: false,
      fileManager: { onError: (e: unknown) => void reports.push(e), timeTravel: { remote: true, storeDir } },
    });
    const saver = new MemorySaver();
    const config = { configurable: { thread_id: "t1" } };
    const call = (name: string, args: Record<string, unknown>, id: string) => ({ name, args, id, type: "tool_call" as const });
    const agentWith = (...replies: AIMessage[]) => {
      let model = fakeModel();
      for (const r of replies) model = model.respond(r);
      return createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer: saver });
    };
    const dir = path.join(root, "t1");
    try {
      const first = await agentWith(
        new AIMessage({ content: "", tool_calls: [call("write_file", { path: "src/a.txt", content: "one\n" }, "w1")] }),
        new AIMessage("ok"),
      ).invoke({ messages: [new HumanMessage("one")] }, config);
      assert.ok(first.messages.some((m) => m.getType() === "tool" && String(m.content).includes("src/a.txt")));
      const second = await agentWith(
        new AIMessage({
          content: "",
          tool_calls: [call("run_command", { command: "echo two > src/a.txt && printf '\\001\\377' > bin.dat && echo ran" }, "r1")],
        }),
        new AIMessage({ content: "", tool_calls: [call("search_files", { pattern: "two" }, "s1")] }),
        new AIMessage("ok"),
      ).invoke({ messages: [new HumanMessage("two")] }, config);
      const tools = second.messages.filter((m) => m.getType() === "tool").map((m) => String(m.content));
      assert.ok(tools.some((t) => /^ran\n\[exit code 0\]$/.test(t)), tools.join(" | "));
      assert.ok(tools.some((t) => t.includes('"src/a.txt"')), `search found it: ${tools.join(" | ")}`);
      assert.equal(await readFile(path.join(dir, "src", "a.txt"), "utf8"), "two\n");

      const history: StateSnapshot[] = [];
      for await (const s of agentWith().graph.getStateHistory(config)) history.push(s);
      const tc = (s: StateSnapshot) => ((s.values as { messages?: { getType(): string }[] }).messages ?? []).filter((m) => m.getType() === "tool").length;
      const turn1 = history.find((s) => tc(s) === 1 && (s.next ?? []).length === 0 && snapshotIdOf(s.values) !== undefined);
      assert.ok(turn1, "the first turn's end has a snapshot");
      await agentWith(new AIMessage("forked")).invoke({ messages: [new HumanMessage("fork")] }, turn1.config);
      assert.equal(await readFile(path.join(dir, "src", "a.txt"), "utf8"), "one\n", "the fork restored src/a.txt");
      assert.deepEqual((await readdir(dir)).sort(), ["src"], "bin.dat, created after that turn, is gone");
      assert.deepEqual(reports, [], "no errors were reported");
    } finally {
      await wb.close();
      await environment.close();
    }
  });
});
