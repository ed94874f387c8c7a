// The egress proxy (src/environment/egressProxy.ts) on its own, over TCP on 127.0.0.1, against
// loopback servers: allowed and refused requests (plain HTTP and CONNECT), a name that resolves to
// loopback (DNS rebinding), metadata addresses, and credentials swapped in only for their hosts.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import { EgressProxy, secretSentinel, type EgressEvent, type EgressNetwork, type SecretsOption } from "../src/environment/egressProxy.js";

interface Seen {
  url: string;
  headers: http.IncomingHttpHeaders;
}

/** A loopback HTTP server recording what it received; it answers with the Authorization header it got. */
async function recordingServer(): Promise<{ port: number; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    res.setHeader("x-echo", req.headers.authorization ?? "");
    res.end(`got ${req.headers.authorization ?? "nothing"}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return { port, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A plain-HTTP request through the proxy (absolute URL in the request line). */
function viaProxy(proxyPort: number, url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: proxyPort, path: url, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** A CONNECT through the proxy; when it is accepted, one GET over the tunnel. */
function tunnel(proxyPort: number, authority: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: proxyPort, method: "CONNECT", path: authority, agent: false });
    req.on("connect", (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, body: String(res.headers["x-workbench-egress"] ?? "") });
        return;
      }
      const chunks: Buffer[] = [];
      socket.on("data", (c: Buffer) => chunks.push(c));
      socket.on("end", () => resolve({ status: 200, body: Buffer.concat(chunks).toString() }));
      socket.on("error", reject);
      socket.write(`GET /tunnelled HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("EgressProxy", () => {
  let allowed: Awaited<ReturnType<typeof recordingServer>>;
  let other: Awaited<ReturnType<typeof recordingServer>>;
  let proxy: EgressProxy;
  const events: EgressEvent[] = [];
  const lookups: string[] = [];
  const secrets: SecretsOption = {};
  const TOKEN = "ghp_real_token_value_0123456789";

  before(async () => {
    allowed = await recordingServer();
    other = await recordingServer();
    secrets.GITHUB_TOKEN = { value: TOKEN, hosts: [`127.0.0.1:${allowed.port}`] };
    const network: EgressNetwork = {
      allow: [`127.0.0.1:${allowed.port}`, `127.0.0.1:${other.port}`, "*.example.com", "rebind.test", "169.254.169.254", "[::1]"],
      deny: [`blocked.example.com`],
      onEgress: (e) => events.push(e),
      // Every name resolves to loopback: a name must never reach it.
      lookup: async (host) => {
        lookups.push(host);
        return ["127.0.0.1"];
      },
    };
    proxy = await EgressProxy.start({ network, secrets, listen: { port: 0 } });
  });
  after(async () => {
    await proxy.close();
    await allowed.close();
    await other.close();
  });

  it("forwards a plain-HTTP request to a listed address and reports it", async () => {
    const r = await viaProxy(proxy.port, `http://127.0.0.1:${allowed.port}/path?q=1`);
    assert.equal(r.status, 200);
    assert.equal(allowed.seen.at(-1)?.url, "/path?q=1");
    assert.equal(allowed.seen.at(-1)?.headers.host, `127.0.0.1:${allowed.port}`);
    assert.deepEqual(events.at(-1), { kind: "http", host: "127.0.0.1", port: allowed.port, allowed: true, reason: `127.0.0.1:${allowed.port}`, address: "127.0.0.1" });
  });

  it("tunnels CONNECT to a listed address", async () => {
    const r = await tunnel(proxy.port, `127.0.0.1:${allowed.port}`);
    assert.equal(r.status, 200);
    assert.match(r.body, /^HTTP\/1\.1 200/);
    assert.equal(allowed.seen.at(-1)?.url, "/tunnelled");
    assert.equal(events.at(-1)?.kind, "connect");
    assert.equal(events.at(-1)?.allowed, true);
  });

  it("refuses an unlisted port of a listed address, without connecting", async () => {
    const closed = await recordingServer();
    await closed.close();
    const before = events.length;
    const r = await viaProxy(proxy.port, `http://127.0.0.1:${closed.port}/`);
    assert.equal(r.status, 403);
    assert.match(r.body, /not in the sandbox's network allow-list/);
    const t = await tunnel(proxy.port, `127.0.0.1:${closed.port}`);
    assert.equal(t.status, 403);
    assert.deepEqual(
      events.slice(before).map((e) => [e.kind, e.allowed]),
      [["http", false], ["connect", false]],
    );
  });

  it("refuses a listed name that resolves to loopback (DNS rebinding), wildcard or exact", async () => {
    for (const host of ["rebind.example.com", "rebind.test"]) {
      const r = await viaProxy(proxy.port, `http://${host}:${allowed.port}/`);
      assert.equal(r.status, 403, host);
      assert.match(r.body, /resolves to 127\.0\.0\.1 \(loopback range\)/);
      const t = await tunnel(proxy.port, `${host}:${allowed.port}`);
      assert.equal(t.status, 403, host);
    }
    assert.ok(lookups.includes("rebind.example.com") && lookups.includes("rebind.test"));
    assert.ok(!allowed.seen.some((s) => s.headers.host?.startsWith("rebind")), "the server never saw a rebound request");
  });

  it("refuses denied and unlisted names before any lookup", async () => {
    const before = lookups.length;
    for (const host of ["blocked.example.com", "example.com", "unlisted.org"]) {
      const r = await viaProxy(proxy.port, `http://${host}/`);
      assert.equal(r.status, 403, host);
    }
    assert.equal(lookups.length, before);
  });

  it("refuses metadata addresses even when listed, and unlisted IPs", async () => {
    for (const target of ["169.254.169.254:80", "127.0.0.2:80", "10.0.0.1:80"]) {
      const t = await tunnel(proxy.port, target);
      assert.equal(t.status, 403, target);
    }
    const r = await viaProxy(proxy.port, "http://169.254.169.254/latest/meta-data/");
    assert.equal(r.status, 403);
    assert.match(r.body, /metadata/);
  });

  it("answers a request that is not a proxy request with a 400", async () => {
    const r = await viaProxy(proxy.port, "/not-absolute");
    assert.equal(r.status, 400);
    const s = await viaProxy(proxy.port, `https://127.0.0.1:${allowed.port}/`);
    assert.equal(s.status, 400);
    assert.match(s.body, /CONNECT/);
    const t = await tunnel(proxy.port, "no-port");
    assert.equal(t.status, 400);
  });

  it("puts a secret into headers (Bearer and Basic) only for its hosts, and hides it in the answer", async () => {
    const sentinel = secretSentinel("GITHUB_TOKEN", TOKEN);
    assert.deepEqual(proxy.secretEnv, { GITHUB_TOKEN: sentinel });
    assert.ok(!sentinel.includes(TOKEN));
    const basic = `Basic ${Buffer.from(`x-access-token:${sentinel}`).toString("base64")}`;

    const r = await viaProxy(proxy.port, `http://127.0.0.1:${allowed.port}/`, { authorization: `Bearer ${sentinel}`, "x-other": `token=${sentinel}` });
    assert.equal(allowed.seen.at(-1)?.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(allowed.seen.at(-1)?.headers["x-other"], `token=${TOKEN}`);
    // The server echoed the real value (header and body): the client gets the sentinel back.
    assert.equal(r.headers["x-echo"], `Bearer ${sentinel}`);
    assert.equal(r.body, `got Bearer ${sentinel}\n`);
    assert.deepEqual(events.at(-1)?.secrets, ["GITHUB_TOKEN"]);

    await viaProxy(proxy.port, `http://127.0.0.1:${allowed.port}/`, { authorization: basic });
    assert.equal(Buffer.from(allowed.seen.at(-1)!.headers.authorization!.slice(6), "base64").toString(), `x-access-token:${TOKEN}`);

    // Another allowed host gets the sentinel unchanged.
    const o = await viaProxy(proxy.port, `http://127.0.0.1:${other.port}/`, { authorization: `Bearer ${sentinel}` });
    assert.equal(other.seen.at(-1)?.headers.authorization, `Bearer ${sentinel}`);
    assert.equal(o.body, `got Bearer ${sentinel}\n`);
    assert.equal(events.at(-1)?.secrets, undefined);
    for (const s of other.seen) assert.ok(!JSON.stringify(s).includes(TOKEN), "the other host never saw the real value");
  });

  it("keeps a secret split across body chunks hidden", async () => {
    const server = http.createServer((_req, res) => {
      res.write(`a${TOKEN.slice(0, 7)}`);
      setImmediate(() => res.end(`${TOKEN.slice(7)}b ${TOKEN}`));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as net.AddressInfo).port;
    const p = await EgressProxy.start({ network: { allow: [`127.0.0.1:${port}`] }, secrets: { T: { value: TOKEN, hosts: ["127.0.0.1"] } }, listen: { port: 0 } });
    try {
      const r = await viaProxy(p.port, `http://127.0.0.1:${port}/`);
      const sentinel = secretSentinel("T", TOKEN);
      assert.equal(r.body, `a${sentinel}b ${sentinel}`);
    } finally {
      await p.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("a throwing onEgress does not break traffic", async () => {
    const p = await EgressProxy.start({
      network: {
        allow: [`127.0.0.1:${allowed.port}`],
        onEgress: () => {
          throw new Error("logger down");
        },
      },
      listen: { port: 0 },
    });
    try {
      assert.equal((await viaProxy(p.port, `http://127.0.0.1:${allowed.port}/`)).status, 200);
    } finally {
      await p.close();
    }
  });
});
