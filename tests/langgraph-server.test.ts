// The LangGraph CLI serves examples/langgraph.json on 127.0.0.1; one thread runs through its HTTP
// API with the scripted offline model, then the server is stopped.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { access, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { freePort } from "./helpers/net.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const examples = path.join(repo, "examples");
const cli = path.join(repo, "node_modules", "@langchain", "langgraph-cli", "dist", "cli", "cli.mjs");

let tmp = "";
let server: ChildProcess | undefined;
let base = "";
let log = "";


async function waitForServer(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server?.exitCode !== null && server?.exitCode !== undefined) throw new Error(`server exited early:\n${log}`);
    try {
      const res = await fetch(`${url}/ok`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`server did not answer within ${timeoutMs} ms:\n${log}`);
}

async function api<T>(method: string, route: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${route} → ${res.status}: ${text}\n${log}`);
  return JSON.parse(text) as T;
}

before(async () => {
  await access(cli);
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-lgserver-"));
  // The CLI writes .langgraph_api/ and a .gitignore next to its config: keep them out of the repo
  // by serving a copy of examples/langgraph.json whose graph paths point back at examples/.
  const config = JSON.parse(await readFile(path.join(examples, "langgraph.json"), "utf8")) as { graphs: Record<string, string> };
  // The CLI joins graph paths onto the config's directory, so they must stay relative.
  for (const [id, spec] of Object.entries(config.graphs)) {
    const [file, exported] = spec.split(":");
    config.graphs[id] = `${path.relative(tmp, path.join(examples, file!))}:${exported}`;
  }
  await writeFile(path.join(tmp, "langgraph.json"), JSON.stringify(config));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LANGGRAPH_CLI_NO_ANALYTICS: "1",
    LANGSMITH_TRACING: "false",
    LANGCHAIN_TRACING_V2: "false",
    WORKBENCH_ROOT: path.join(tmp, "agent_files"),
    NO_PROXY: "127.0.0.1,localhost",
    // The server and its workers may only talk to loopback, like the tests themselves.
    NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${pathToFileURL(path.join(repo, "tests", "setup", "loopback-only.mjs")).href}`].filter(Boolean).join(" "),
  };
  delete env.OPENAI_API_KEY;
  server = spawn(
    process.execPath,
    [cli, "dev", "--host", "127.0.0.1", "--port", String(port), "--no-browser", "--no-reload", "--n-jobs-per-worker", "1", "--config", path.join(tmp, "langgraph.json")],
    { cwd: tmp, env, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  server.stdout!.on("data", (d: Buffer) => (log += d.toString()));
  server.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  await waitForServer(base, 90_000);
});

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server!.once("exit", r));
    try {
      process.kill(-server.pid!, "SIGTERM");
    } catch {
      // already gone
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-server!.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    }, 5_000);
    await exited;
    clearTimeout(timer);
  }
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

interface WireMessage {
  type: string;
  content: unknown;
  name?: string;
}

test("one thread runs through the LangGraph server's HTTP API in its own workspace", async () => {
  const thread = await api<{ thread_id: string }>("POST", "/threads", {});
  const state = await api<{ messages: WireMessage[] }>("POST", `/threads/${thread.thread_id}/runs/wait`, {
    assistant_id: "agent",
    input: { messages: [{ role: "user", content: "hello from the server test" }] },
  });
  const last = state.messages[state.messages.length - 1]!;
  assert.equal(last.type, "ai");
  assert.match(String(last.content), /offline scripted model.*hello from the server test/s);
  const tools = state.messages.filter((m) => m.type === "tool").map((m) => m.name);
  assert.deepEqual(tools, ["write_file", "read_file"]);
  for (const m of state.messages) assert.ok(!JSON.stringify(m.content).includes(tmp), `host path in ${m.type}: ${JSON.stringify(m.content)}`);
  const saved = await readFile(path.join(tmp, "agent_files", thread.thread_id, "notes", "turn-1.md"), "utf8");
  assert.equal(saved, "hello from the server test\n");
});
