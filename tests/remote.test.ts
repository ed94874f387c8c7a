/**
 * The FileManager stack over a FileOperations other than the local disk: the tree, change
 * tracking, the workspace's symlink checks and path mapping all go through `fileOps`.
 *
 * - Unit tests use ShellFileOperations over LocalShellEnvironment (bash on this machine).
 * - The end-to-end test runs a real `createAgent` whose FileManager and file tools share one SSH
 *   file backend — SFTP (`SshEnvironment.fileOps`), then ShellFileOperations over exec — to a
 *   REAL OpenSSH server on 127.0.0.1 (tests/helpers/sshd.ts).
 *   Skipped with a message when /usr/sbin/sshd is missing; under CI=true that is a failure.
 *
 * The "remote" host is this machine, so the same files are visible locally too: every test
 * also checks, with a recording wrapper that delegates to the real backend (nothing is faked),
 * that the reads went through `fileOps`.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool, type StructuredTool } from "@langchain/core/tools";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { z } from "zod";
import { createFileManagerMiddleware, type FileManagerMiddleware } from "../middleware/fileManager.js";
import { isWorkspaceTreeMessage } from "../middleware/treeMessage.js";
import { workspaceView } from "./helpers/agentHarness.js";
import { createChangeTracker, PollingTracker, TrackerPool } from "../src/changes/index.js";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { SshEnvironment } from "../src/environment/sshEnvironment.js";
import type { FileOperations } from "../src/environment/fileOperations.js";
import { renderDirectoryTree } from "../src/tree.js";
import { Workspace, WorkspacePathError } from "../src/workspace.js";
import { createFileTools } from "../tools/fileTools.js";
import { workspaceFromConfig } from "../src/context/thread.js";
import { sshdUnavailable, startSshd, type TestSshd } from "./helpers/sshd.js";

/** The backend as it is, plus a log of `method path` for every call made through it. */
function recorded(ops: FileOperations): { ops: FileOperations; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(ops, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(`${String(key)} ${String(args[0])}`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { ops: proxy, calls };
}

/** Waits (bounded) until `check` holds, refreshing the tracker each round. */
async function until(tracker: { refresh(): Promise<number> }, check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await tracker.refresh();
    if (!check()) await new Promise((r) => setTimeout(r, 25));
  }
}

let tmp: string;
const shellOps = new ShellFileOperations(new LocalShellEnvironment());

before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-remote-"));
});
after(async () => {
  await shellOps.close();
  await rm(tmp, { recursive: true, force: true });
});

describe("renderDirectoryTree over a FileOperations", () => {
  test("renders the same text as the local fast path, listing through fileOps", async () => {
    const dir = path.join(tmp, "corpus");
    const files = ["README.md", "b.txt", "B.txt", "src/index.ts", "src/lib/deep/x.ts", "src/lib/y.ts", "dist/out.js", "logs/a.log",
      "docs/guide.md", ".gitignore", "src/.gitignore", "src/gen/skip.ts", "node_modules/pkg/index.js", "weird\nname.txt"];
    for (const f of files) {
      await mkdir(path.dirname(path.join(dir, f)), { recursive: true });
      await writeFile(path.join(dir, f), "x\n");
    }
    await writeFile(path.join(dir, ".gitignore"), "dist/\n*.log\n");
    await writeFile(path.join(dir, "src/.gitignore"), "gen/\n");
    await mkdir(path.join(dir, "empty"));
    await symlink("src/index.ts", path.join(dir, "entry.ts"));
    await symlink("../docs", path.join(dir, "src/docs-link"));
    await symlink("/etc", path.join(dir, "etc-link"));
    const { ops, calls } = recorded(shellOps);
    for (const options of [{}, { maxEntries: 6 }, { maxDepth: 1 }, { ignore: ["*.md"] }]) {
      const local = await renderDirectoryTree(dir, options);
      assert.equal(await renderDirectoryTree(dir, { ...options, fileOps: ops }), local, JSON.stringify(options));
    }
    const local = await renderDirectoryTree(dir);
    assert.match(local, /entry\.ts -> src\/index\.ts/);
    assert.match(local, /etc-link -> \[outside the tree\]/);
    assert.match(local, /docs-link -> \.\.\/docs/);
    assert.ok(calls.includes(`readdir ${dir}`) && calls.includes(`readText ${path.join(dir, ".gitignore")}`), calls.join("\n"));
  });

  test("an unreadable directory is marked as locally; a bad fileOps is refused up front", async () => {
    const dir = path.join(tmp, "gone");
    assert.equal(await renderDirectoryTree(dir, { fileOps: shellOps }), await renderDirectoryTree(dir));
    await assert.rejects(renderDirectoryTree(dir, { fileOps: {} as never }), /fileOps must implement FileOperations \(missing: readdir/);
  });
});

describe("change tracking over a FileOperations", () => {
  test("a PollingTracker polling through fileOps sees create, delete and rename", async () => {
    const dir = path.join(tmp, "polled");
    await mkdir(path.join(dir, "sub"), { recursive: true });
    await writeFile(path.join(dir, "sub/a.txt"), "a");
    const { ops, calls } = recorded(shellOps);
    const tracker = new PollingTracker(dir, { fileOps: ops, intervalMs: 60_000 });
    try {
      await tracker.start();
      assert.ok(tracker.live);
      assert.ok(calls.includes(`stat ${dir}`) && calls.includes(`readdir ${path.join(dir, "sub")}`), calls.join("\n"));
      const steps: [string, () => Promise<unknown>][] = [
        ["create", () => writeFile(path.join(dir, "sub/new.txt"), "n")],
        ["mkdir", () => mkdir(path.join(dir, "sub/inner"))],
        ["create deep", () => writeFile(path.join(dir, "sub/inner/deep.txt"), "d")],
        ["rename", () => rename(path.join(dir, "sub/a.txt"), path.join(dir, "sub/b.txt"))],
        ["delete", () => rm(path.join(dir, "sub/new.txt"))],
        ["rmdir", () => rm(path.join(dir, "sub/inner"), { recursive: true })],
      ];
      for (const [what, change] of steps) {
        const before = tracker.generation;
        await change();
        await until(tracker, () => tracker.generation > before, what);
      }
    } finally {
      await tracker.close();
    }
  });

  test("createChangeTracker and TrackerPool poll a remote backend even when a watcher kind is asked for", async () => {
    for (const kind of ["parcel", "chokidar", "polling"] as const) {
      const tracker = createChangeTracker(tmp, { kind, fileOps: shellOps });
      assert.ok(tracker instanceof PollingTracker, kind);
      await tracker.close();
    }
    assert.ok(!(createChangeTracker(tmp, { kind: "parcel" }) instanceof PollingTracker), "local stays on the watcher");
    const pool = new TrackerPool({ kind: "parcel", fileOps: shellOps });
    try {
      assert.ok(pool.get(tmp) instanceof PollingTracker);
    } finally {
      await pool.close();
    }
  });
});

describe("Workspace over a FileOperations", () => {
  test("ensure creates the directory and resolve checks symlinks on the given host", async () => {
    const root = path.join(tmp, "ws-root");
    const ws = Workspace.forThread(root, "t1");
    const { ops, calls } = recorded(shellOps);
    assert.equal(await ws.ensure(ops), ws.dir);
    assert.ok(calls.includes(`mkdirp ${ws.dir}`) && calls.includes(`realpath ${ws.dir}`), calls.join("\n"));
    await symlink("/etc", path.join(ws.dir, "out"));
    await assert.rejects(ws.resolve("out/passwd", ops), WorkspacePathError);
    assert.ok(calls.some((c) => c.startsWith(`realpath ${path.join(ws.dir, "out")}`)), calls.join("\n"));
    assert.equal(await ws.resolve("notes/new.md", ops), path.join(ws.dir, "notes/new.md"));
  });

  test("a host that failed (unreachable) is asked again on the next call, not remembered as failed", async () => {
    const ws = Workspace.forThread(path.join(tmp, "ws-flaky"), "t1");
    let down = true;
    const flaky = {
      mkdirp: (p: string) => (down ? Promise.reject(Object.assign(new Error("connection lost"), { code: "ECONNRESET" })) : shellOps.mkdirp(p)),
      realpath: (p: string) => shellOps.realpath(p),
    };
    await assert.rejects(ws.ensure(flaky), /connection lost/);
    down = false;
    assert.equal(await ws.ensure(flaky), ws.dir);
  });
});

describe("FileManager fileOps option", () => {
  test("is validated when the middleware is built", () => {
    assert.throws(() => createFileManagerMiddleware({ rootDir: tmp, fileOps: { kind: "x" } as never }), /fileOps must implement FileOperations/);
  });
});

const skip = await sshdUnavailable();
if (skip) console.log(`# SKIPPING the ssh end-to-end test: ${skip}`);

describe("an agent whose files live behind SSH (real sshd on 127.0.0.1)", { skip }, () => {
  let sshd: TestSshd;
  let env: SshEnvironment;
  let remoteRoot: string;
  let fm: FileManagerMiddleware | undefined;

  before(async () => {
    sshd = await startSshd();
    env = new SshEnvironment(sshd.options);
    remoteRoot = path.join(tmp, "remote-root");
  });
  after(async () => {
    await fm?.close();
    await env?.close();
    await sshd?.stop();
  });

  // The same run over both SSH file backends: SFTP (`SshEnvironment.fileOps`) and shell over exec.
  for (const [label, thread, backend] of [
    ["sftp (SshEnvironment.fileOps)", "t-sftp", () => env.fileOps],
    ["shell over exec", "t-shell", () => new ShellFileOperations(env)],
  ] as const) test(`${label}: write_file, then the next model call sees it in the tree; read_file; a symlink out is refused; paths rewritten`, async () => {
    await fm?.close();
    const { ops, calls } = recorded(backend());
    const threadDir = path.join(remoteRoot, thread);
    // Set up the far side over SSH: a file, and a symlink leading out of the workspace.
    const setup = await env.exec(`mkdir -p "$1/docs" && printf 'hello\\n' > "$1/docs/intro.md" && ln -s /etc "$1/escape"`.replace(/\$1/g, threadDir));
    assert.equal(setup.exitCode, 0, setup.stderr);

    const errors: string[] = [];
    fm = createFileManagerMiddleware({ rootDir: remoteRoot, fileOps: ops, pathArgs: ["file_path"], onError: (e) => errors.push(e.message) });
    // A tool this package did not make: its path argument is mapped (and checked) by the FileManager.
    const remoteCat = tool(async ({ file_path }) => `${file_path}: ${await ops.readText(file_path)}`, {
      name: "remote_cat",
      description: "print a file",
      schema: z.object({ file_path: z.string() }),
    });
    const whereAmI = tool(async (_args, config) => `working in ${workspaceFromConfig(config, remoteRoot).dir}/docs`, {
      name: "where_am_i",
      description: "print the working directory",
      schema: z.object({}),
    });
    const { fakeModel } = await import("@langchain/core/testing");
    const model = fakeModel()
      .respondWithTools([{ name: "write_file", args: { path: "src/app.ts", content: "export const x = 1;\n" }, id: "w1" }])
      .respondWithTools([{ name: "read_file", args: { path: "src/app.ts" }, id: "r1" }])
      .respondWithTools([
        { name: "read_file", args: { path: "escape/hostname" }, id: "r2" },
        { name: "remote_cat", args: { file_path: "escape/passwd" }, id: "c1" },
        { name: "remote_cat", args: { file_path: "docs/intro.md" }, id: "c2" },
        { name: "where_am_i", args: {}, id: "p1" },
      ])
      .respond(new AIMessage("done"));
    const agent = createAgent({
      model,
      tools: [...createFileTools({ rootDir: remoteRoot, fileOps: ops }), remoteCat, whereAmI] as StructuredTool[],
      middleware: [fm],
      checkpointer: new MemorySaver(),
    });
    const out = (await agent.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: thread } })) as { messages: BaseMessage[] };
    const content = (m: BaseMessage | undefined) => (typeof m?.content === "string" ? m.content : JSON.stringify(m?.content));

    // First model call: the tree of the existing remote workspace (symlink shown, target hidden).
    const firstTree = content(model.calls[0]!.messages.find(isWorkspaceTreeMessage));
    assert.match(firstTree, /docs\//);
    assert.match(firstTree, /escape -> \[outside the tree\]/);
    assert.doesNotMatch(firstTree, /app\.ts/);
    // The very next model call after write_file sees the new file in the tree.
    assert.ok(workspaceView(model.calls[1]!.messages).has("src/app.ts"), "told about src/app.ts");

    const results = new Map(out.messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m)).map((m) => [m.tool_call_id, m]));
    assert.notEqual(results.get("w1")?.status, "error", content(results.get("w1")));
    assert.match(content(results.get("r1")), /export const x = 1;/);
    assert.equal(results.get("r2")?.status, "error");
    assert.match(content(results.get("r2")), /symlink that leads outside the workspace/);
    assert.equal(results.get("c1")?.status, "error");
    assert.match(content(results.get("c1")), /symlink that leads outside the workspace/);
    assert.equal(content(results.get("c2")), "docs/intro.md: hello\n");
    assert.equal(content(results.get("p1")), "working in docs");
    for (const m of out.messages) assert.ok(!content(m).includes(threadDir), `system path leaked: ${content(m)}`);
    assert.equal(content(out.messages.at(-1)), "done");
    assert.deepEqual(errors, []);

    // Everything went through the SSH backend: tree listing, symlink checks, change polling.
    assert.ok(calls.includes(`readdir ${threadDir}`), "listed over ssh");
    assert.ok(calls.includes(`realpath ${path.join(threadDir, "escape")}`), "the tree described the symlink over ssh");
    assert.ok(calls.includes(`realpath ${path.join(threadDir, "escape/hostname")}`), "read_file's symlink check ran over ssh");
    assert.ok(calls.includes(`realpath ${path.join(threadDir, "escape/passwd")}`), "pathArgs mapping checked the symlink over ssh");
    assert.ok(calls.includes(`stat ${threadDir}`), "tracker polled over ssh");
    assert.ok(fm.hooks.trackerOf(thread) instanceof PollingTracker);
  });
});
