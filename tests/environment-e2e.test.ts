// One end-to-end agent run per environment kind: the file tools, search_files, run_command and
// the FileManager's tree all reach the same place. Real createAgent + fakeModel + MemorySaver +
// createWorkbench({ environment, enableShell: true }). Adding a kind is one line in ENVIRONMENTS.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { isWorkspaceTreeMessage } from "../middleware/treeMessage.js";
import { workspaceView } from "./helpers/agentHarness.js";
import type { Environment, EnvironmentOption } from "../src/environment/environment.js";
import { LocalEnvironment, LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { LocalShellBackend } from "deepagents";
import { DeepAgentsSandboxEnvironment } from "../src/environment/deepagentsSandbox.js";
import { DockerSandbox } from "../src/environment/dockerSandbox.js";
import { detectSandbox } from "../src/environment/sandboxEnvironment.js";
import { SshEnvironment } from "../src/environment/sshEnvironment.js";
import { createWorkbench } from "../src/workbench.js";
import { DOCKER, dockerUnavailable, IMAGE } from "./helpers/docker.js";
import { sshdUnavailable, startSshd, type TestSshd } from "./helpers/sshd.js";

let root = "";
let sshd: TestSshd | undefined;
let sshSkip: string | undefined;
let dockerSkip: string | undefined;
let bwrapSkip: string | undefined;
const opened: Array<{ close?(): Promise<void> }> = [];

function track<E extends { close?(): Promise<void> }>(env: E): E {
  opened.push(env);
  return env;
}

/** name → the `environment` option (undefined: the default, this machine) or a reason to skip. */
const ENVIRONMENTS: Array<{ name: string; make: () => EnvironmentOption | undefined; skip?: () => string | undefined; ownDisk?: boolean }> = [
  // No option: this machine, commands in a bubblewrap sandbox (the default where bwrap works).
  { name: "local default: bubblewrap sandbox for commands", make: () => undefined, skip: () => bwrapSkip },
  { name: "LocalEnvironment", make: () => new LocalEnvironment() },
  { name: "LocalShellEnvironment (files through a shell over exec)", make: () => track(new LocalShellEnvironment()) },
  {
    name: "provider: one LocalShellEnvironment per thread",
    make: () => {
      const perThread = new Map<string, Environment>();
      return (threadId: string) => {
        let env = perThread.get(threadId);
        if (!env) perThread.set(threadId, (env = track(new LocalShellEnvironment())));
        return env;
      };
    },
  },
  {
    name: "DeepAgentsSandboxEnvironment (deepagents' LocalShellBackend as the sandbox provider)",
    make: () => track(new DeepAgentsSandboxEnvironment(new LocalShellBackend({ rootDir: root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } }))),
  },
  { name: "SshEnvironment (real sshd on 127.0.0.1)", make: () => track(new SshEnvironment(sshd!.options)), skip: () => sshSkip },
  {
    name: "DockerSandbox, bind mode (real engine: one container per thread)",
    make: () => track(DockerSandbox({ image: IMAGE, rootDir: root, dockerPath: DOCKER, labels: { "workbench.test": "1" } })),
    skip: () => dockerSkip,
  },
  {
    name: "DockerSandbox, container mode (the workspace lives only in the container)",
    make: () => track(DockerSandbox({ image: IMAGE, rootDir: root, dockerPath: DOCKER, labels: { "workbench.test": "1" }, workspaceMode: "container" })),
    skip: () => dockerSkip,
    ownDisk: true,
  },
];

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-env-e2e-"));
  sshSkip = await sshdUnavailable();
  dockerSkip = await dockerUnavailable();
  const bwrap = await detectSandbox();
  bwrapSkip = bwrap.available || process.env.CI === "true" ? undefined : bwrap.reason;
  if (!sshSkip) sshd = await startSshd();
});

after(async () => {
  await Promise.all(opened.map((e) => e.close?.()));
  await sshd?.stop();
  await rm(root, { recursive: true, force: true });
});

function text(m: BaseMessage): string {
  return typeof m.content === "string" ? m.content : JSON.stringify(m.content);
}

function turn(calls: Array<{ name: string; args: Record<string, unknown>; id: string }>): AIMessage {
  return new AIMessage({ content: "", tool_calls: calls.map((c) => ({ ...c, type: "tool_call" as const })) });
}

describe("one environment per thread, end to end", () => {
  ENVIRONMENTS.forEach(({ name, make, skip, ownDisk }, index) => {
    test(name, async (t) => {
      const reason = skip?.();
      if (reason) return t.skip(reason);
      const environment = make();
      const wb = createWorkbench({ rootDir: root, enableShell: true, webTools: false, ...(environment ? { environment } : {}) });
      const thread = `e2e-${index}`;
      const model = fakeModel()
        .respond(turn([{ name: "write_file", args: { path: "notes/a.txt", content: "hello from write_file\n" }, id: "w" }]))
        .respond(turn([{ name: "run_command", args: { command: "cat notes/a.txt" }, id: "cat" }]))
        .respond(turn([{ name: "run_command", args: { command: "mkdir -p out && echo made-by-shell > out/b.txt && echo ok" }, id: "mk" }]))
        .respond(
          turn([
            { name: "read_file", args: { path: "out/b.txt" }, id: "read" },
            { name: "search_files", args: { pattern: "made-by-shell" }, id: "search" },
          ]),
        )
        .respond(new AIMessage("done"));
      const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer: new MemorySaver() });
      try {
        const out = await agent.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: thread } });
        const tools = (out.messages as BaseMessage[]).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
        const byId = (id: string) => text(tools.find((m) => m.tool_call_id === id)!);

        assert.match(byId("w"), /"bytes_written"|"path":"notes\/a\.txt"/);
        assert.match(byId("cat"), /^hello from write_file\n\[exit code 0\]$/, "run_command sees what write_file wrote");
        assert.match(byId("mk"), /^ok\n\[exit code 0\]$/);
        assert.match(byId("read"), /made-by-shell/, "read_file sees what run_command created");
        const search = JSON.parse(byId("search"));
        assert.deepEqual(
          search.matches.map((m: { path: string; line: number }) => [m.path, m.line]),
          [["out/b.txt", 1]],
          `search_files sees it: ${byId("search")}`,
        );
        for (const m of tools) assert.ok(!text(m).includes(root), `host path in ${m.name}: ${text(m)}`);

        // The files are where the environment put them (all kinds but container mode share this disk).
        if (!ownDisk) assert.equal(await readFile(path.join(root, thread, "out", "b.txt"), "utf8"), "made-by-shell\n");

        // The model call after run_command created out/b.txt was shown a tree that lists it.
        const afterShell = model.calls[3]!.messages as BaseMessage[];
        assert.ok(afterShell.some(isWorkspaceTreeMessage), "the workspace was shown");
        const known = workspaceView(afterShell);
        assert.ok(known.has("out/b.txt"), `the model was told about out/b.txt: ${[...known].join(", ")}`);
        assert.ok([...known].some((k) => k.endsWith("a.txt")), "a.txt still known");
      } finally {
        await wb.close();
      }
    });
  });
});

describe("SshEnvironment.exec: what run_command needs", () => {
  test("env is exported on top of the login environment, output streams, abort ends the command", async (t) => {
    if (sshSkip) return t.skip(sshSkip);
    const env = track(new SshEnvironment(sshd!.options));
    const dir = await mkdtemp(path.join(root, "ssh-exec-"));
    const chunks: string[] = [];
    const waitFor = (name: string) => `while [ ! -e ${name} ]; do sleep 0.02; done`;
    const result = await env.exec(`echo "v=$WB_V home=\${HOME:+set}"; ${waitFor("go")}; echo err >&2`, {
      cwd: dir,
      timeoutMs: 20_000,
      env: { WB_V: "it's quoted; $(not run)" },
      onOutput: (chunk, stream) => {
        chunks.push(`${stream}:${chunk.toString("utf8")}`);
        if (stream === "stdout") void writeFile(path.join(dir, "go"), "");
      },
    });
    assert.equal(result.exitCode, 0);
    assert.equal(result.stdout.length, 0);
    assert.deepEqual(chunks, ["stdout:v=it's quoted; $(not run) home=set\n", "stderr:err\n"]);
    await assert.rejects(env.exec("true", { env: { "BAD NAME": "x" } }), /invalid variable name/);

    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 300).unref();
    const aborted = await env.exec("sleep 30", { signal: controller.signal, timeoutMs: 60_000 });
    assert.equal(aborted.aborted, true);
    assert.equal(aborted.timedOut, false);
    assert.ok(Date.now() - started < 20_000, "answered long before the command would have ended");
  });
});
