// The thread environment resolver and what every part does with it: one Environment or a
// provider per thread, native vs derived file access, fileOps-vs-environment precedence, a
// failing provider answered (never thrown), run_command and search_files inside the
// environment, LocalEnvironment's exec contract, WorkbenchBackend.execute through createDeepAgent.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createDeepAgent, isSandboxBackend } from "deepagents";
import { createAgent } from "langchain";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import type { Environment, ExecOptions, ExecResult } from "../src/environment/environment.js";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { LocalEnvironment, LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import {
  defaultLocalEnvironment,
  environmentFor,
  EnvironmentUnavailableError,
  fileOperationsOf,
  isLocalEnvironment,
  isLocalFileOperations,
  ThreadEnvironments,
} from "../src/environment/threadEnvironment.js";
import { createWorkbench } from "../src/workbench.js";
import { createFileTools } from "../tools/fileTools.js";
import { createRunCommandTool } from "../tools/runCommand.js";

let root = "";
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-env-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A real local shell environment that records the command lines it ran. */
class RecordingEnvironment extends LocalShellEnvironment {
  readonly commands: string[] = [];
  override exec(command: string, options?: ExecOptions): Promise<ExecResult> {
    this.commands.push(command);
    return super.exec(command, options);
  }
}

const thread = (id: string) => ({ configurable: { thread_id: id } });
const byName = (tools: Array<{ name: string }>, name: string) => tools.find((t) => t.name === name) as unknown as { invoke(a: unknown, c: unknown): Promise<unknown> };

function text(m: unknown): string {
  const c = (m as BaseMessage).content ?? m;
  return typeof c === "string" ? c : JSON.stringify(c);
}

describe("resolver", () => {
  test("no option: the shared LocalEnvironment with native file access", async () => {
    const env = await environmentFor(undefined, "t");
    assert.equal(env, defaultLocalEnvironment());
    assert.equal(env.kind, "local");
    assert.ok(env.fileOps instanceof LocalFileOperations);
    assert.equal(fileOperationsOf(env), env.fileOps);
  });

  test("one Environment for every thread; without native fileOps a ShellFileOperations is derived once per Environment", async () => {
    const env = new LocalShellEnvironment();
    const envs = new ThreadEnvironments({ environment: env });
    assert.equal(await envs.environmentFor("a"), env);
    assert.equal(await envs.environmentFor("b"), env);
    const ops = await envs.fileOpsFor("a");
    assert.ok(ops instanceof ShellFileOperations);
    assert.equal(ops.kind, "shell:local-shell");
    assert.equal(await envs.fileOpsFor("b"), ops, "cached per Environment");
    assert.equal(fileOperationsOf(env), ops, "shared by every part");
    assert.notEqual(fileOperationsOf(new LocalShellEnvironment()), ops, "another Environment gets its own");
  });

  test("a provider is called with the thread id on every use", async () => {
    const seen: string[] = [];
    const perThread = new Map<string, Environment>();
    const envs = new ThreadEnvironments({
      environment: (id) => {
        seen.push(id);
        if (!perThread.has(id)) perThread.set(id, new LocalShellEnvironment());
        return perThread.get(id)!;
      },
    });
    const a = await envs.environmentFor("thread-a");
    const b = await envs.environmentFor("thread-b");
    assert.notEqual(a, b);
    assert.equal(await envs.environmentFor("thread-a"), a);
    assert.deepEqual(seen, ["thread-a", "thread-b", "thread-a"]);
    assert.equal(await envs.fileOpsFor("thread-a"), fileOperationsOf(a));
    assert.equal(envs.fixedFileOps, undefined);
  });

  test("fileOps wins for file access; environment still runs the commands", async () => {
    const fileOps = new LocalFileOperations();
    const env = new LocalShellEnvironment();
    const envs = new ThreadEnvironments({ environment: env, fileOps });
    assert.equal(await envs.fileOpsFor("x"), fileOps);
    assert.equal(await envs.environmentFor("x"), env);
    // A ShellFileOperations given alone names its environment.
    const shellOps = new ShellFileOperations(env);
    assert.equal(await new ThreadEnvironments({ fileOps: shellOps }).environmentFor("x"), env);
  });

  test("a provider that throws or returns junk rejects with a guiding EnvironmentUnavailableError", async () => {
    await assert.rejects(
      environmentFor(() => {
        throw new Error("no capacity");
      }, "t"),
      (e: Error) => e instanceof EnvironmentUnavailableError && /could not be prepared: no capacity/.test(e.message),
    );
    await assert.rejects(environmentFor((() => ({ nope: 1 })) as never, "t"), /did not return an Environment/);
    assert.throws(() => new ThreadEnvironments({ environment: { kind: "x" } as never }), /environment must be an Environment/);
    assert.throws(() => createWorkbench({ rootDir: root, environment: 42 as never }), /environment must be an Environment/);
  });

  test("locality is decided in one place: isLocalFileOperations / isLocalEnvironment", () => {
    const shell = new ShellFileOperations(new LocalShellEnvironment());
    assert.equal(isLocalFileOperations({ kind: "sftp" }), false);
    assert.equal(isLocalFileOperations(new LocalFileOperations()), true);
    assert.equal(isLocalFileOperations(shell), false);
    assert.equal(isLocalEnvironment(new LocalEnvironment()), true);
    assert.equal(isLocalEnvironment(new LocalShellEnvironment()), true);
    assert.equal(isLocalEnvironment({ kind: "ssh" }), false);
  });
});

describe("parts use the thread's environment", () => {
  test("createWorkbench({ fileOps, environment }): files through fileOps, run_command through the environment", async () => {
    const files = new RecordingEnvironment();
    const commands = new RecordingEnvironment();
    const wb = createWorkbench({ rootDir: root, fileOps: new ShellFileOperations(files), environment: commands, enableShell: true, webTools: false });
    try {
      await byName(wb.tools, "write_file").invoke({ path: "p.txt", content: "precedence\n" }, thread("prec"));
      const writes = files.commands.length;
      assert.ok(writes > 0, "write_file went through fileOps");
      assert.equal(commands.commands.length, 0, "no file access through the command environment");
      const out = text(await byName(wb.tools, "run_command").invoke({ command: "cat p.txt" }, thread("prec")));
      assert.match(out, /^precedence\n\[exit code 0\]$/);
      assert.ok(commands.commands.some((c) => c.includes("cat p.txt")), "run_command ran in the environment");
    } finally {
      await wb.close();
    }
  });

  test("createWorkbench({ fileOps: ShellFileOperations }) alone: FileManager, tools, search and run_command all use its environment", async () => {
    const env = new RecordingEnvironment();
    const wb = createWorkbench({ rootDir: root, fileOps: new ShellFileOperations(env), enableShell: true, webTools: false });
    try {
      await wb.fileManager.hooks.beforeAgent({}, { configurable: { thread_id: "named" } });
      assert.ok(env.commands.some((c) => c.includes("mkdir -p")), "the FileManager created the thread directory there");
      const before = env.commands.length;
      await wb.fileManager.hooks.beforeModel({ messages: [] }, { configurable: { thread_id: "named" } });
      assert.ok(env.commands.length > before, "the tree was listed there");
      await byName(wb.tools, "write_file").invoke({ path: "n.txt", content: "named env\n" }, thread("named"));
      const search = JSON.parse(text(await byName(wb.tools, "search_files").invoke({ pattern: "named" }, thread("named"))));
      assert.deepEqual(search.matches.map((m: { path: string }) => m.path), ["n.txt"]);
      assert.ok(env.commands.some((c) => c.startsWith("'rg'")), "search ran there");
      assert.match(text(await byName(wb.tools, "run_command").invoke({ command: "cat n.txt" }, thread("named"))), /^named env\n\[exit code 0\]$/);
      assert.ok(env.commands.some((c) => c.includes("cat n.txt")), "run_command ran there");
    } finally {
      await wb.close();
    }
  });

  test("run_command runs in the environment and masks secrets in its output", async () => {
    const env = new RecordingEnvironment();
    const runCommand = createRunCommandTool({ rootDir: root, environment: env });
    const dir = path.join(root, "redact");
    await mkdir(dir, { recursive: true });
    const key = `sk-proj-${"A1b2C3d4".repeat(5)}`;
    await writeFile(path.join(dir, ".env"), `OPENAI_API_KEY=${key}\n`);
    const out = text(await runCommand.invoke({ command: "cat .env; pwd" }, thread("redact")));
    assert.ok(!out.includes(key), `the key reached the model: ${out}`);
    assert.match(out, /OPENAI_API_KEY=«redacted/);
    assert.match(out, /^\.$/m, "the thread directory is shown as a workspace path");
    assert.ok(env.commands.some((c) => c.includes("cat .env")));
  });

  test("search_files: rg inside the environment when it has one, else a walk over its file operations — same answer", async () => {
    const dir = path.join(root, "search");
    await mkdir(path.join(dir, "src"), { recursive: true });
    await writeFile(path.join(dir, "src", "a.ts"), "const needle = 1;\nother\nneedle again\n");
    await writeFile(path.join(dir, "notes.md"), "a needle in notes\n");
    await writeFile(path.join(dir, ".gitignore"), "ignored/\n");
    await mkdir(path.join(dir, "ignored"), { recursive: true });
    await writeFile(path.join(dir, "ignored", "x.ts"), "needle hidden\n");
    const args = { pattern: "needle", context: 1 };
    const run = async (options: Parameters<typeof createFileTools>[0]) => JSON.parse(text(await byName(createFileTools({ rootDir: root, ...options }), "search_files").invoke(args, thread("search"))));
    const local = await run({});
    const withRg = new RecordingEnvironment();
    const inEnv = await run({ environment: withRg });
    const withoutRg = new RecordingEnvironment();
    const walked = await run({ environment: withoutRg, search: { ripgrepPath: "wb-no-such-rg" } });
    assert.equal(local.engine, "ripgrep");
    assert.equal(inEnv.engine, "ripgrep");
    assert.ok(withRg.commands.some((c) => c.startsWith("'rg'")), "ripgrep ran inside the environment");
    assert.equal(walked.engine, "js");
    assert.ok(withoutRg.commands.some((c) => c.includes("command -v 'wb-no-such-rg'")), "probed inside the environment");
    const strip = (o: Record<string, unknown>) => ({ ...o, engine: undefined });
    assert.deepEqual(strip(inEnv), strip(local));
    assert.deepEqual(strip(walked), strip(local));
    assert.deepEqual(
      local.matches.filter((m: { match?: boolean }) => m.match !== false).map((m: { path: string }) => m.path).sort(),
      ["notes.md", "src/a.ts", "src/a.ts"],
    );
  });

  test("a provider that throws: every tool answers with an error ToolMessage and the run ends normally", async () => {
    const errors: string[] = [];
    const wb = createWorkbench({
      rootDir: root,
      enableShell: true,
      webTools: false,
      environment: () => {
        throw new Error("no capacity left");
      },
      fileManager: { onError: (e) => errors.push(e.message) },
    });
    const model = fakeModel()
      .respondWithTools([
        { name: "read_file", args: { path: "a.txt" }, id: "r" },
        { name: "write_file", args: { path: "a.txt", content: "x" }, id: "w" },
        { name: "search_files", args: { pattern: "x" }, id: "s" },
        { name: "run_command", args: { command: "true" }, id: "c" },
      ])
      .respond(new AIMessage("done"));
    const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer: new MemorySaver() });
    try {
      const out = await agent.invoke({ messages: [new HumanMessage("go")] }, thread("broken"));
      const messages = out.messages as BaseMessage[];
      assert.equal(text(messages.at(-1)), "done");
      const tools = messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
      assert.equal(tools.length, 4);
      for (const m of tools) assert.match(text(m), /could not be prepared: no capacity left/, `${m.name}: ${text(m)}`);
      for (const m of tools.filter((t) => t.name !== "run_command")) assert.equal(m.status, "error", m.name);
      assert.ok(errors.length > 0, "the FileManager reported the failure to onError");
    } finally {
      await wb.close();
    }
  });
});

describe("LocalEnvironment.exec", () => {
  const env = new LocalEnvironment();

  test("env is exact; output streams through onOutput in arrival order while the command runs, nothing buffered", async () => {
    process.env.WB_ENV_TEST_PARENT = "parent-value";
    const dir = await mkdtemp(path.join(root, "stream-"));
    try {
      const chunks: string[] = [];
      // Each step waits for a file the test creates only after it has seen the previous output:
      // without streaming the command would never finish (the timeout would end it).
      const waitFor = (name: string) => `while [ ! -e ${name} ]; do sleep 0.02; done`;
      const result = await env.exec(
        `echo "a=$WB_A p=\${WB_ENV_TEST_PARENT:-unset}"; ${waitFor("go1")}; echo err >&2; ${waitFor("go2")}; echo out`,
        {
          cwd: dir,
          timeoutMs: 20_000,
          env: { PATH: process.env.PATH ?? "/usr/bin:/bin", WB_A: "1" },
          onOutput: (chunk, stream) => {
            const piece = `${stream}:${chunk.toString("utf8")}`;
            chunks.push(piece);
            if (piece.startsWith("stdout:a=")) void writeFile(path.join(dir, "go1"), "");
            if (piece.startsWith("stderr:err")) void writeFile(path.join(dir, "go2"), "");
          },
        },
      );
      assert.equal(result.timedOut, false);
      assert.equal(result.exitCode, 0);
      assert.equal(result.stdout.length, 0);
      assert.equal(result.stderr, "");
      assert.deepEqual(chunks, ["stdout:a=1 p=unset\n", "stderr:err\n", "stdout:out\n"]);
    } finally {
      delete process.env.WB_ENV_TEST_PARENT;
    }
  });

  test("abort kills the command; background jobs die when the shell exits", async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 200).unref();
    const aborted = await env.exec("sleep 30", { signal: controller.signal });
    assert.equal(aborted.aborted, true);
    assert.ok(Date.now() - started < 10_000);

    const dir = await mkdtemp(path.join(root, "bg-"));
    const result = await env.exec("sleep 30 & echo $! > bg.pid; echo started", { cwd: dir, timeoutMs: 20_000 });
    assert.equal(result.stdout.toString(), "started\n");
    const pid = Number((await readFile(path.join(dir, "bg.pid"), "utf8")).trim());
    let alive = true;
    for (let i = 0; i < 50 && alive; i++) {
      try {
        process.kill(pid, 0);
        await new Promise((r) => setTimeout(r, 100));
      } catch {
        alive = false;
      }
    }
    assert.equal(alive, false, `background job ${pid} outlived the call`);
  });
});

describe("WorkbenchBackend.execute", () => {
  test("off by default: not a deepagents sandbox", () => {
    assert.equal(isSandboxBackend(new WorkbenchBackend({ rootDir: root })), false);
    assert.equal(isSandboxBackend(new WorkbenchBackend({ rootDir: root, execute: true })), true);
  });

  test("createDeepAgent's execute tool runs in the thread's environment, with the run_command guards", async () => {
    const env = new RecordingEnvironment();
    const backend = new WorkbenchBackend({ rootDir: root, environment: env, execute: { timeoutSeconds: 20 } });
    const key = `sk-proj-${"Z9y8X7w6".repeat(5)}`;
    const model = fakeModel()
      .respondWithTools([{ name: "write_file", args: { file_path: "/hello.txt", content: `hi from deepagents\nKEY=${key}\n` }, id: "w" }])
      .respondWithTools([{ name: "execute", args: { command: "cat hello.txt; pwd; exit 4" }, id: "x" }])
      .respondWithTools([{ name: "execute", args: { command: "rm -rf /" }, id: "danger" }])
      .respond(new AIMessage("done"));
    const agent = createDeepAgent({ model, backend, checkpointer: new MemorySaver() });
    const out = await agent.invoke({ messages: [new HumanMessage("go")] }, thread("deep-exec"));
    const tools = (out.messages as BaseMessage[]).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
    const exec = text(tools.find((m) => m.tool_call_id === "x"));
    assert.match(exec, /^hi from deepagents\n/);
    assert.ok(!exec.includes(key), "secrets are masked");
    assert.ok(!exec.includes(root), "no host path");
    assert.match(exec, /\[Command failed with exit code 4\]/);
    assert.ok(env.commands.some((c) => c.includes("cat hello.txt")), "ran in the environment");
    assert.match(text(tools.find((m) => m.tool_call_id === "danger")), /command refused/);
    assert.ok(!env.commands.some((c) => c.includes("rm -rf /")), "the danger screen ran before the environment");
  });
});
