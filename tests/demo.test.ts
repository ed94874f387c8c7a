/**
 * `npm run demo` (examples/quickstart.ts) as a user runs it: a child process whose transcript
 * must show each piece the demo promises, whose workspace must hold the real results, and which
 * must exit on its own. The online path runs against loopback servers (an OpenAI-compatible chat
 * endpoint and the fake web vendors), never the network.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { tempRoot } from "./helpers/agentHarness.js";
import { FakeVendors, fakeVendorEnv } from "./helpers/fakeVendors.js";
import { chatCompletionBody, type ChatReply } from "./helpers/fakeOpenAI.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const demo = path.join(here, "..", "examples", "quickstart.ts");

/** Every variable that would switch the demo to a real model or real web backends. */
const SWITCHES = [
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "OPENAI_MODEL",
  "WORKBENCH_ENABLE_SHELL",
  "WEB_SEARCH_BACKEND",
  "WEB_EXTRACT_BACKEND",
  "WORKBENCH_SUMMARY_MODEL",
  "TAVILY_API_KEY",
  "TAVILY_BASE_URL",
  "EXA_API_KEY",
  "EXA_BASE_URL",
  "FIRECRAWL_API_KEY",
  "FIRECRAWL_API_URL",
  "PARALLEL_API_KEY",
  "PARALLEL_BASE_URL",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "http_proxy",
  "https_proxy",
];

interface DemoRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the demo with a clean env plus `extra`; killed after 120 s so a hang fails instead of blocking. */
function runDemo(root: string, extra: Record<string, string> = {}): Promise<DemoRun> {
  const env: NodeJS.ProcessEnv = { ...process.env, WORKBENCH_ROOT: root, NO_PROXY: "127.0.0.1,localhost", ...extra };
  for (const name of SWITCHES) if (!(name in extra)) delete env[name];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", demo], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The transcript lines from one `[model]` turn up to the next. */
function turnAfter(stdout: string, modelSays: string): string {
  const start = stdout.indexOf(`[model] ${modelSays}`);
  assert.notEqual(start, -1, `no model turn starting "${modelSays}"`);
  const next = stdout.indexOf("\n[model] ", start + 1);
  return stdout.slice(start, next === -1 ? undefined : next);
}

describe("offline demo", () => {
  let root: string;
  let cleanup: () => Promise<void>;
  let run: DemoRun;

  before(async () => {
    ({ root, cleanup } = await tempRoot("wb-demo-"));
    run = await runDemo(root);
  });
  after(() => cleanup());

  it("runs the scripted model, exits 0 on its own, and says where the workspace lives", () => {
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /OFFLINE SCRIPTED MODEL \(fakeModel/);
    assert.ok(run.stdout.includes(`Workspace root: ${root}`));
    assert.ok(run.stdout.trimEnd().endsWith(`Files kept in ${path.join(root, "demo")}`), run.stdout.slice(-300));
  });

  it("leaves the web tools out offline and says how to enable them", () => {
    const tools = /^Tools: (.*)$/m.exec(run.stdout)?.[1] ?? "";
    assert.deepEqual(tools.split(", ").sort(), ["get_current_time", "patch", "read_file", "run_command", "search_files", "write_file"]);
    assert.match(run.stdout, /^Web tools: off in the offline demo .*set OPENAI_API_KEY and one of TAVILY_API_KEY, EXA_API_KEY, FIRECRAWL_API_KEY \(or FIRECRAWL_API_URL/m);
  });

  it("writes files with write_file", async () => {
    const turn = turnAfter(run.stdout, "I'll create");
    assert.equal(turn.match(/^\[write_file\] path: /gm)?.length, 3, turn);
    assert.match(turn, /\[write_file\] path: src\/greet\.py\n\s+bytes_written: 158/);
  });

  it("shows the dedup stub when the same file is read twice", () => {
    const first = turnAfter(run.stdout, "Reading the script.");
    assert.match(first, /^\s+2\| {4}message = "Hello, " \+ name$/m, "the first read shows the content");
    const second = turnAfter(run.stdout, "Reading it again");
    assert.match(second, /\[read_file\] status: unchanged/);
    assert.match(second, /use it instead of re-reading/);
    assert.doesNotMatch(second, /\d\|/, "the stub carries no file content");
  });

  it("patches with a fuzzy match: unified diff and the non-exact strategy are shown, the file changes on disk", async () => {
    const turn = turnAfter(run.stdout, "Using an f-string.");
    const strategy = /match_strategy: (\S+)/.exec(turn)?.[1];
    assert.ok(strategy && strategy !== "exact", `strategy: ${strategy}`);
    assert.match(turn, /--- a\/src\/greet\.py\n\s+\+\+\+ b\/src\/greet\.py\n\s+@@ -1,6 \+1,5 @@/);
    assert.match(turn, /^\s+- {4}message = "Hello, " \+ name$/m);
    assert.match(turn, /^\s+\+ {4}return f"Hello, \{name\}!"$/m, "the 2-space new_string took the file's 4-space indentation");
    const onDisk = await readFile(path.join(root, "demo", "src", "greet.py"), "utf8");
    assert.match(onDisk, /^def greet\(name\):\n {4}return f"Hello, \{name\}!"\n/);
  });

  it("finds the TODOs with search_files", () => {
    const turn = turnAfter(run.stdout, "Where are the open TODOs?");
    assert.match(turn, /total_matches: 2/);
    assert.match(turn, /- notes\/ideas\.md:3: - TODO: write the README/);
    assert.match(turn, /- src\/greet\.py:\d+: +# TODO: read the name from argv/);
  });

  it("refuses .env and ../outside.txt with guidance, and the run goes on", async () => {
    const turn = turnAfter(run.stdout, "Is there an API key");
    assert.match(turn, /\[read_file ERROR\] error: "\.env" is a protected credential file/);
    assert.match(turn, /\[read_file ERROR\] error: Path "\.\.\/outside\.txt" is not allowed: .*Use a path relative to the workspace root/);
    assert.doesNotMatch(run.stdout, /sk-demo-not-a-real-key/, "the secret never reaches the transcript");
    assert.ok(run.stdout.indexOf("[model] What time is it in Paris?") > run.stdout.indexOf("[model] Is there an API key"));
    assert.match(run.stdout, /\[run_command ERROR\] error: command refused/);
  });

  it("shows a tree injection at the start, after the writes and after delete+rename — not after content-only edits", () => {
    // A full tree or a change message (append mode), whichever is shorter.
    const trees = [...run.stdout.matchAll(/┌ workspace (?:tree|changes) sent to the model\n((?:\s+│.*\n)+)/g)].map((m) => m[1]!);
    assert.equal(trees.length, 3, run.stdout);
    assert.match(trees[0]!, /`-- \.env/, "the seeded workspace, before the first turn");
    assert.match(trees[1]!, /greet\.py[\s\S]*draft\.txt/);
    assert.match(trees[2]!, /`-- roadmap\.md/);
    assert.doesNotMatch(trees[2]!, /draft\.txt|ideas\.md/);
    // The patch and the append come between the 2nd and 3rd tree: no injection for them.
    const patchAt = run.stdout.indexOf("[model] Using an f-string.");
    const treeAt = [...run.stdout.matchAll(/┌ workspace (?:tree|changes)/g)].map((m) => m.index);
    assert.ok(treeAt[1]! < patchAt && patchAt < treeAt[2]! && treeAt[2]! > run.stdout.indexOf("[model] The draft is obsolete"));
  });

  it("prints agent paths, not system paths, after the header", () => {
    const transcript = run.stdout.slice(run.stdout.indexOf("[user]"), run.stdout.lastIndexOf("\nDone."));
    assert.ok(!transcript.includes(root), "transcript uses agent paths");
  });
});

type Reply = ChatReply;

/** An OpenAI-compatible chat endpoint on 127.0.0.1 answering from a script; records the tools each request offered. */
async function startChatServer(replies: Reply[]): Promise<{ server: Server; baseURL: string; offeredTools: string[][] }> {
  const offeredTools: string[][] = [];
  const body = async (req: IncomingMessage): Promise<any> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  };
  const server = createServer(async (req, res) => {
    const payload = await body(req);
    offeredTools.push((payload.tools ?? []).map((t: { function: { name: string } }) => t.function.name));
    const reply = replies[Math.min(offeredTools.length - 1, replies.length - 1)]!;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(chatCompletionBody(reply, offeredTools.length, payload.model)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, offeredTools };
}

const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, type: "function" as const, function: { name, arguments: JSON.stringify(args) } });

describe("demo with a real (OpenAI-compatible) model", () => {
  let root: string;
  let cleanup: () => Promise<void>;
  let vendors: FakeVendors;

  before(async () => {
    ({ root, cleanup } = await tempRoot("wb-demo-online-"));
    vendors = await FakeVendors.start();
  });
  after(async () => {
    await vendors.close();
    await cleanup();
  });

  it("offers the web tools when a backend is configured and shows web_search results", async () => {
    const chat = await startChatServer([
      { tool_calls: [call("call_1", "web_search", { query: "LangGraph.js docs" })] },
      { tool_calls: [call("call_2", "write_file", { path: "notes/roadmap.md", content: "- docs\n" })] },
      { content: "Added the docs link." },
    ]);
    try {
      const run = await runDemo(root, { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: chat.baseURL, ...fakeVendorEnv(vendors, ["tavily"]) });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /OpenAI-compatible model gpt-4o-mini/);
      assert.match(run.stdout, /^Web tools: on \(web_search via tavily/m);
      assert.match(run.stdout, /\[user\] .*search the web for the LangGraph\.js docs/);
      assert.ok(chat.offeredTools[0]!.includes("web_search") && chat.offeredTools[0]!.includes("web_extract"), String(chat.offeredTools[0]));
      assert.ok(!chat.offeredTools[0]!.includes("run_command"), "the shell stays off online unless WORKBENCH_ENABLE_SHELL=true");
      assert.equal(vendors.requestsFor("tavily", "/search").length, 1);
      assert.match(run.stdout, /\[web_search\] success: true[\s\S]*- Result 1 for LangGraph\.js docs <https:\/\/example\.com\//);
      assert.match(run.stdout, /\[write_file\] path: notes\/roadmap\.md/);
      assert.match(run.stdout, /\[model\] Added the docs link\./);
    } finally {
      chat.server.close();
    }
  });

  it("without a web backend, leaves the web tools out and says how to enable them", async () => {
    const chat = await startChatServer([{ content: "Nothing to do." }]);
    try {
      const run = await runDemo(root, { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: chat.baseURL });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /^Web tools: off — to enable web_search and web_extract, set one of TAVILY_API_KEY/m);
      assert.ok(!chat.offeredTools[0]!.includes("web_search"), String(chat.offeredTools[0]));
      assert.doesNotMatch(run.stdout, /search the web/);
    } finally {
      chat.server.close();
    }
  });
});
