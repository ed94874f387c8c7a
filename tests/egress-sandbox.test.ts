// A real bubblewrap sandbox with a network allow-list: curl inside reaches the listed loopback
// servers only through the egress proxy (Unix socket bound in, relay on the sandbox's own
// loopback), and nothing else — no direct TCP, no name that resolves to loopback. Secrets: an
// agent run (createWorkbench + createAgent + fakeModel) where the command prints its environment
// and sends its token to three hosts; only the secret's host gets the real value, and no tool
// result or checkpoint carries it.
import assert from "node:assert/strict";
import http from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import type net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import type { EgressEvent } from "../src/environment/egressProxy.js";
import { SandboxEnvironment } from "../src/environment/sandboxEnvironment.js";
import { createWorkbench } from "../src/workbench.js";
import { createRunCommandTool } from "../tools/runCommand.js";
import { sandboxUnavailable } from "./helpers/sandbox.js";

const skip = await sandboxUnavailable();
// Not secret-shaped on purpose: output redaction must not be what keeps it out of the results.
const TOKEN = "plain-words-the-model-must-never-see";

interface Server {
  port: number;
  auth: Array<string | undefined>;
  close: () => Promise<void>;
}

/** A loopback server that records the Authorization it gets and echoes it (a worst case). */
async function server(name: string): Promise<Server> {
  const auth: Array<string | undefined> = [];
  const s = http.createServer((req, res) => {
    auth.push(req.headers.authorization);
    // Echoed without its scheme word, so output redaction (which masks "Bearer …") does not hide it.
    res.end(`${name} saw [${(req.headers.authorization ?? "no auth").replace(/^(Bearer|Basic) /, "")}]\n`);
  });
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return { port: (s.address() as net.AddressInfo).port, auth, close: () => new Promise<void>((resolve) => s.close(() => resolve())) };
}

describe("network allow-list in the bubblewrap sandbox (real bwrap, curl)", { skip }, () => {
  let root = "";
  let a: Server;
  let b: Server;
  let c: Server;
  let sandbox: SandboxEnvironment;
  const events: EgressEvent[] = [];

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "egress-sandbox-"));
    [a, b, c] = await Promise.all([server("A"), server("B"), server("C")]);
    sandbox = new SandboxEnvironment({
      workspaceDir: path.join(root, "ws"),
      network: {
        allow: [`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`, "*.example.com"],
        onEgress: (e) => events.push(e),
        lookup: async () => ["127.0.0.1"],
      },
      defaultTimeoutMs: 60_000,
    });
  });
  after(async () => {
    await sandbox?.close();
    await Promise.all([a, b, c].map((s) => s?.close()));
    await rm(root, { recursive: true, force: true });
  });

  const run = async (command: string) => {
    const r = await sandbox.exec(command);
    return { out: r.stdout.toString("utf8"), err: r.stderr, code: r.exitCode };
  };

  it("sets the proxy variables and reaches a listed server, plain and through CONNECT", async () => {
    const r = await run(`echo "$HTTP_PROXY $HTTPS_PROXY $ALL_PROXY $https_proxy"; curl -sS http://127.0.0.1:${a.port}/plain; curl -sS -p http://127.0.0.1:${a.port}/tunnel`);
    assert.equal(r.code, 0, r.err);
    const url = "http://127.0.0.1:3128";
    assert.equal(r.out, `${url} ${url} ${url} ${url}\nA saw [no auth]\nA saw [no auth]\n`);
    assert.deepEqual(events.slice(-2).map((e) => [e.kind, e.allowed, e.port]), [["http", true, a.port], ["connect", true, a.port]]);
  });

  it("refuses an unlisted server; the server never hears of it", async () => {
    const before = c.auth.length;
    const r = await run(`curl -sS -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:${c.port}/; curl -sS -p http://127.0.0.1:${c.port}/ 2>&1; echo "exit $?"`);
    assert.match(r.out, /^403\n/);
    assert.match(r.out, /CONNECT tunnel failed, response 403/);
    assert.equal(c.auth.length, before);
    assert.equal(events.at(-1)?.allowed, false);
  });

  it("refuses a listed name that resolves to loopback (DNS rebinding)", async () => {
    const r = await run(`curl -sS -w ' %{http_code}' http://rebind.example.com:${a.port}/`);
    assert.match(r.out, /resolves to 127\.0\.0\.1 \(loopback range\).* 403$/s);
  });

  it("has no route around the proxy: direct TCP to the host or anywhere fails", async () => {
    const before = a.auth.length;
    const r = await run(
      [
        // The sandbox's loopback is its own: the host's servers are not there.
        `curl -sS --noproxy '*' --max-time 20 http://127.0.0.1:${a.port}/ 2>&1; echo "curl $?"`,
        `(exec 3<>/dev/tcp/127.0.0.1/${a.port}) 2>&1; echo "loopback $?"`,
        // No interface but lo, no route: refused inside the sandbox, nothing leaves it.
        `(exec 3<>/dev/tcp/192.0.2.1/80) 2>&1; echo "routed $?"`,
        `cat /proc/net/route | wc -l`,
        `ls /sys/class/net 2>/dev/null || cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '`,
      ].join("; "),
    );
    assert.match(r.out, /Failed to connect|Couldn't connect/);
    assert.match(r.out, /curl 7\n/);
    assert.match(r.out, /Connection refused\nloopback 1\n/);
    assert.match(r.out, /Network is unreachable\nrouted 1\n/);
    assert.match(r.out, /\n1\nlo\n$/, "a route table with only its header, and only lo");
    assert.equal(a.auth.length, before);
  });

  it("network: true and false are unchanged (no proxy variables)", async () => {
    const off = new SandboxEnvironment({ workspaceDir: path.join(root, "ws") });
    const r = await off.exec(`echo "[$HTTP_PROXY]"; curl -sS http://127.0.0.1:${a.port}/ 2>&1; echo "exit $?"`);
    assert.match(r.stdout.toString(), /^\[\]\n.*exit 7\n$/s);
  });

  it("passes secrets as sentinels only to their hosts; no tool result or checkpoint carries the value", async () => {
    const wsRoot = path.join(root, "agent");
    const onEgress: EgressEvent[] = [];
    const wb = createWorkbench({
      rootDir: wsRoot,
      enableShell: true,
      webTools: false,
      basicTools: {
        shell: {
          sandbox: "required",
          network: { allow: [`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`], onEgress: (e) => onEgress.push(e) },
          secrets: { GITHUB_TOKEN: { value: TOKEN, hosts: [`127.0.0.1:${a.port}`] } },
        },
      },
    });
    const counts = [a.auth.length, b.auth.length, c.auth.length];
    const send = (port: number) => `curl -sS -H "Authorization: Bearer $GITHUB_TOKEN" http://127.0.0.1:${port}/ 2>&1`;
    const command = `printenv GITHUB_TOKEN | sed 's/^/token=/'; env | grep -c plain-words; ${send(a.port)}; curl -sS -u "x:$GITHUB_TOKEN" http://127.0.0.1:${a.port}/; ${send(b.port)}; ${send(c.port)}; echo; cat /proc/1/environ | tr '\\0' '\\n' | grep -c plain-words`;
    const model = fakeModel()
      .respond(new AIMessage({ content: "", tool_calls: [{ name: "run_command", args: { command }, id: "leak" }] }))
      .respond(new AIMessage("done"));
    const checkpointer = new MemorySaver();
    const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer });
    try {
      const config = { configurable: { thread_id: "secrets" } };
      const out = await agent.invoke({ messages: [new HumanMessage("go")] }, config);
      const result = (out.messages as BaseMessage[]).find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "leak")!;
      const text = typeof result.content === "string" ? result.content : JSON.stringify(result.content);
      // The command saw a sentinel, never the token (its environment and its init's).
      const sentinel = /A saw \[(wbsecret_GITHUB_TOKEN_[0-9a-f]{24})\]/.exec(text)?.[1];
      assert.ok(sentinel, `A's echo reached the command with the sentinel in place of the value: ${text}`);
      assert.ok(text.includes(`A saw [${Buffer.from(`x:${sentinel}`).toString("base64")}]`), "the echoed Basic credential shows the sentinel's encoding");
      assert.ok(text.includes(`B saw [${sentinel}]`));
      assert.match(text, /^0\n/m, "the token is in no variable of the command");
      assert.match(text, /\n0\n\[exit code 1\]$/, "nor of the sandbox's init");
      assert.ok(!text.includes(TOKEN), text);
      assert.ok(!text.includes(Buffer.from(`x:${TOKEN}`).toString("base64")), text);
      // Only A got the real value (Bearer and Basic); B got the sentinel; C got nothing.
      assert.deepEqual(a.auth.slice(counts[0]), [`Bearer ${TOKEN}`, `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}`]);
      const bGot = b.auth.slice(counts[1]);
      assert.equal(bGot.length, 1);
      assert.match(bGot[0]!, /^Bearer wbsecret_GITHUB_TOKEN_[0-9a-f]{24}$/);
      assert.equal(c.auth.length, counts[2]);
      assert.deepEqual(onEgress.map((e) => [e.port, e.allowed, e.secrets ?? []]), [
        [a.port, true, ["GITHUB_TOKEN"]],
        [a.port, true, ["GITHUB_TOKEN"]],
        [b.port, true, []],
        [c.port, false, []],
      ]);
      // Nothing the run kept (messages, artifacts, checkpoints) holds the token.
      const state = JSON.stringify(await agent.graph.getState(config));
      assert.ok(!state.includes(TOKEN));
      for await (const tuple of checkpointer.list(config)) assert.ok(!JSON.stringify(tuple).includes(TOKEN));
    } finally {
      await wb.close();
    }
  });
});

describe("network and secrets options", () => {
  it("refuses secrets without an allow-list, and an allow-list without the sandbox", () => {
    const secrets = { T: { value: "0123456789abcdef", hosts: ["api.github.com"] } };
    assert.throws(() => createRunCommandTool({ rootDir: os.tmpdir(), secrets }), /secrets need shell\.network: \{ allow/);
    assert.throws(() => createRunCommandTool({ rootDir: os.tmpdir(), secrets, network: true }), /secrets need shell\.network/);
    assert.throws(() => createRunCommandTool({ rootDir: os.tmpdir(), sandbox: "off", network: { allow: ["api.github.com"] } }), /need the sandbox, but shell\.sandbox is "off"/);
    assert.throws(() => createRunCommandTool({ rootDir: os.tmpdir(), network: { allow: ["http://api.github.com"] } }), /invalid egress entry "http:\/\/api\.github\.com"/);
    assert.throws(() => createRunCommandTool({ rootDir: os.tmpdir(), network: { allow: [], alow: [] } as never }), /unknown key "alow"/);
    assert.throws(() => new SandboxEnvironment({ workspaceDir: os.tmpdir(), secrets }), /secrets need network: \{ allow/);
  });
});
