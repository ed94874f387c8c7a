/**
 * DockerSandbox with `network: { allow }` and `secrets`: the container has no interface but
 * loopback; a relay inside (perl-base, the test image has no socat) forwards 127.0.0.1:3128 to
 * the egress proxy's Unix socket bound in. Real engine, loopback servers of this process.
 */
import assert from "node:assert/strict";
import http from "node:http";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { AddressInfo } from "node:net";
import { DockerSandbox } from "../src/environment/dockerSandbox.js";
import { shellQuote } from "../src/environment/shellQuote.js";
import { secretSentinel, type EgressEvent } from "../src/environment/egressProxy.js";
import { createRunCommandTool } from "../tools/runCommand.js";
import { DOCKER, dockerUnavailable, IMAGE } from "./helpers/docker.js";

const skip = await dockerUnavailable();
const TOKEN = "ghp_realTokenValue0123456789abcdef";

/** A loopback server that records what reached it. */
async function server(): Promise<{ port: number; seen: Array<{ url: string; authorization?: string }>; close(): Promise<void> }> {
  const seen: Array<{ url: string; authorization?: string }> = [];
  const s = http.createServer((req, res) => {
    seen.push({ url: req.url ?? "", ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
    res.end(`hello from ${req.url}`);
  });
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return { port: (s.address() as AddressInfo).port, seen, close: () => new Promise((r) => s.close(() => r())) };
}

/** A bash /dev/tcp request through the relay (the image has no curl). */
const viaProxy = (url: string, auth: string) =>
  `bash -c ${shellQuote(`exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'GET ${url} HTTP/1.0\\r\\nAuthorization: %s\\r\\n\\r\\n' "${auth}" >&3 && timeout 20 cat <&3`)}`;

describe("DockerSandbox egress: allow-list through the proxy, secrets as sentinels", { skip }, () => {
  let rootDir: string;
  let allowed: Awaited<ReturnType<typeof server>>;
  let denied: Awaited<ReturnType<typeof server>>;
  const events: EgressEvent[] = [];
  let sandbox: ReturnType<typeof DockerSandbox>;
  before(async () => {
    rootDir = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-docker-egress-")));
    [allowed, denied] = await Promise.all([server(), server()]);
    sandbox = DockerSandbox({
      image: IMAGE,
      rootDir,
      dockerPath: DOCKER,
      labels: { "workbench.test": "1" },
      network: { allow: [`127.0.0.1:${allowed.port}`], onEgress: (e) => events.push(e) },
      secrets: { GITHUB_TOKEN: { value: TOKEN, hosts: [`127.0.0.1:${allowed.port}`] } },
    });
  });
  after(async () => {
    await sandbox?.close();
    await Promise.all([allowed?.close(), denied?.close()]);
    await rm(rootDir, { recursive: true, force: true });
  });

  test("allowed host answers, with the real secret; a denied one never sees a request; no direct route; no tool result carries the value", async () => {
    const tool = createRunCommandTool({ rootDir, environment: sandbox });
    const config = { configurable: { thread_id: "net" } };
    const run = async (command: string) => String(await tool.invoke({ command }, config));
    const sentinel = secretSentinel("GITHUB_TOKEN", TOKEN);

    const env = await run("env | sort");
    assert.match(env, /HTTP_PROXY=http:\/\/127\.0\.0\.1:3128/);
    assert.ok(!env.includes(TOKEN));
    assert.match(await run(`[ "$GITHUB_TOKEN" = '${sentinel}' ] && echo SENTINEL`), /SENTINEL/);

    const ok = await run(viaProxy(`http://127.0.0.1:${allowed.port}/ok`, "Bearer $GITHUB_TOKEN"));
    assert.match(ok, /hello from \/ok/);
    assert.ok(!ok.includes(TOKEN));
    assert.deepEqual(allowed.seen, [{ url: "/ok", authorization: `Bearer ${TOKEN}` }]);

    const no = await run(viaProxy(`http://127.0.0.1:${denied.port}/no`, "Bearer $GITHUB_TOKEN"));
    assert.match(no, /403/);
    assert.deepEqual(denied.seen, []);
    assert.ok(events.some((e) => !e.allowed && e.port === denied.port), JSON.stringify(events));

    // A CONNECT tunnel (what HTTPS, git and raw TCP use) to the allowed port carries bytes both ways; to the denied one it is refused.
    const tunnel = (port: number) =>
      `bash -c ${shellQuote(`exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT 127.0.0.1:${port} HTTP/1.1\\r\\nHost: 127.0.0.1:${port}\\r\\n\\r\\nGET /tunnel HTTP/1.0\\r\\n\\r\\n' >&3 && timeout 20 cat <&3`)}`;
    assert.match(await run(tunnel(allowed.port)), /200[\s\S]*hello from \/tunnel/);
    assert.match(await run(tunnel(denied.port)), /403/);
    assert.deepEqual(denied.seen, []);

    // No network of its own: the host's loopback server is not reachable directly.
    const direct = await run(`bash -c ${shellQuote(`exec 3<>/dev/tcp/127.0.0.1/${allowed.port}`)} && echo CONNECTED || echo REFUSED`);
    assert.match(direct, /REFUSED/);
    assert.doesNotMatch(direct, /CONNECTED/);
    assert.equal(allowed.seen.length, 2);
  });

  test("bad combinations are refused when the sandbox is built", () => {
    assert.throws(() => DockerSandbox({ image: IMAGE, dockerPath: DOCKER, secrets: { T: { value: "12345678", hosts: ["x.example"] } } }), /secrets need network/);
    assert.throws(() => DockerSandbox({ image: IMAGE, dockerPath: DOCKER, network: { allow: ["*bad pattern*"] } }), /network/);
  });
});
