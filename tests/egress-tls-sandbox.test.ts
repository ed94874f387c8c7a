// HTTPS with secrets from a real bubblewrap sandbox (createWorkbench + createAgent + fakeModel):
// `curl https://…` with the sentinel in a header reaches the secret's loopback HTTPS server with the
// real value (the proxy intercepts, trusted through the CA bundle it puts in the sandbox); another
// allowed HTTPS host is a blind tunnel (curl sees that server's own issuer); an unlisted host is
// still refused; no tool result or checkpoint carries the value.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import type { EgressEvent } from "../src/environment/egressProxy.js";
import { createWorkbench } from "../src/workbench.js";
import { sandboxUnavailable } from "./helpers/sandbox.js";
import { makeTestCa, recordingHttpsServer, type RecordingHttpsServer } from "./helpers/tlsServer.js";

const skip = await sandboxUnavailable();
// Not secret-shaped on purpose: output redaction must not be what keeps it out of the results.
const TOKEN = "plain-words-the-model-must-never-see";

describe("HTTPS secrets in the bubblewrap sandbox (real bwrap, curl, TLS interception)", { skip }, () => {
  let root = "";
  let s: RecordingHttpsServer;
  let p: RecordingHttpsServer;
  let d: RecordingHttpsServer;
  let upstreamCa = "";

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "egress-tls-sandbox-"));
    const ca = await makeTestCa("wb test upstream CA");
    upstreamCa = ca.cert;
    [s, p, d] = await Promise.all([recordingHttpsServer(ca, "S"), recordingHttpsServer(ca, "P"), recordingHttpsServer(ca, "D")]);
  });
  after(async () => {
    await Promise.all([s, p, d].map((x) => x?.close()));
    await rm(root, { recursive: true, force: true });
  });

  it("swaps the sentinel in on HTTPS to the secret's host only; others stay blind or refused", async () => {
    const events: EgressEvent[] = [];
    const wb = createWorkbench({
      rootDir: path.join(root, "agent"),
      enableShell: true,
      webTools: false,
      basicTools: {
        shell: {
          sandbox: "required",
          network: { allow: [`127.0.0.1:${s.port}`, `127.0.0.1:${p.port}`], upstreamCa: [upstreamCa], onEgress: (e) => events.push(e) },
          secrets: { GITHUB_TOKEN: { value: TOKEN, hosts: [`127.0.0.1:${s.port}`] } },
        },
      },
    });
    const command = [
      `echo "trust $SSL_CERT_FILE $CURL_CA_BUNDLE $REQUESTS_CA_BUNDLE $GIT_SSL_CAINFO $NODE_EXTRA_CA_CERTS"`,
      // The bundle holds the system's roots and the proxy's CA.
      `[ "$(grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE")" -gt 10 ] && echo "bundle ok"`,
      `curl -sS -H "Authorization: Bearer $GITHUB_TOKEN" https://127.0.0.1:${s.port}/`,
      `curl -sS -v -o /dev/null https://127.0.0.1:${s.port}/ 2>&1 | grep -i '^\\*  *issuer:' | sed 's/^/S-/'`,
      `curl -sS -k -v -H "Authorization: Bearer $GITHUB_TOKEN" https://127.0.0.1:${p.port}/ 2>&1 | grep -i -e '^\\*  *issuer:' -e 'P saw' | sed 's/^/P-/'`,
      `curl -sS https://127.0.0.1:${d.port}/ 2>&1; echo "denied exit $?"`,
    ].join("; ");
    const model = fakeModel()
      .respond(new AIMessage({ content: "", tool_calls: [{ name: "run_command", args: { command }, id: "https" }] }))
      .respond(new AIMessage("done"));
    const checkpointer = new MemorySaver();
    const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer });
    try {
      const config = { configurable: { thread_id: "tls" } };
      const out = await agent.invoke({ messages: [new HumanMessage("go")] }, config);
      const result = (out.messages as BaseMessage[]).find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === "https")!;
      const text = typeof result.content === "string" ? result.content : JSON.stringify(result.content);
      const b = "/run/workbench-egress/ca-bundle.pem";
      assert.ok(text.includes(`trust ${b} ${b} ${b} ${b} /run/workbench-egress/egress-ca.pem\n`), text);
      assert.match(text, /^bundle ok$/m);
      // S got the real value; curl verified the proxy's certificate for S through the bundle.
      assert.deepEqual(s.auth, [`Bearer ${TOKEN}`, undefined]);
      assert.match(text, /S saw \[wbsecret_GITHUB_TOKEN_[0-9a-f]{24}\] host=127\.0\.0\.1:\d+/, "the echo came back with the sentinel");
      assert.match(text, /^S-\*\s+issuer: CN=langgraph-workbench egress proxy CA [0-9a-f]{8}$/m);
      // P is a blind tunnel: its own issuer, the sentinel unchanged.
      assert.match(text, /^P-\*\s+issuer: CN=wb test upstream CA$/m);
      assert.match(p.auth[0] ?? "", /^Bearer wbsecret_GITHUB_TOKEN_[0-9a-f]{24}$/);
      // D is not listed: refused at CONNECT, never contacted.
      assert.match(text, /CONNECT tunnel failed, response 403\ndenied exit 56/);
      assert.equal(d.auth.length, 0);
      assert.deepEqual(
        events.map((e) => [e.kind, e.port, e.allowed, e.intercepted ?? false, e.secrets ?? []]),
        [
          ["connect", s.port, true, true, []],
          ["https", s.port, true, false, ["GITHUB_TOKEN"]],
          ["connect", s.port, true, true, []],
          ["https", s.port, true, false, []],
          ["connect", p.port, true, false, []],
          ["connect", d.port, false, false, []],
        ],
      );
      assert.ok(!text.includes(TOKEN), text);
      const state = JSON.stringify(await agent.graph.getState(config));
      assert.ok(!state.includes(TOKEN));
      for await (const tuple of checkpointer.list(config)) assert.ok(!JSON.stringify(tuple).includes(TOKEN));
    } finally {
      await wb.close();
    }
  });
});
