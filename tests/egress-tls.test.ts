// TLS interception in the egress proxy (src/environment/egressProxy.ts + egressCa.ts), over TCP on
// 127.0.0.1 against loopback HTTPS servers with their own test CA: a CONNECT to a secret's host is
// decrypted with a certificate of the proxy's CA, the upstream is verified, and the sentinel is
// replaced; every other CONNECT stays a blind tunnel (the client sees the server's own certificate).
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import tls from "node:tls";
import { after, before, describe, it } from "node:test";
import { EgressCa } from "../src/environment/egressCa.js";
import { EgressProxy, egressNetworkSchema, secretSentinel, type EgressEvent } from "../src/environment/egressProxy.js";
import { LIMITS } from "../src/guards/limits.js";
import { makeTestCa, recordingHttpsServer, type RecordingHttpsServer, type TestCa } from "./helpers/tlsServer.js";

const TOKEN = "ghp_real_token_value_0123456789";

interface Answer {
  status: number;
  head: string;
  body: string;
  issuer: string | undefined;
}

/** CONNECT through the proxy, then TLS verified against `ca` only, then one GET. */
function httpsViaProxy(proxyPort: number, port: number, ca: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: proxyPort, method: "CONNECT", path: `127.0.0.1:${port}`, agent: false });
    req.on("connect", (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, head: "", body: String(res.headers["x-workbench-egress"] ?? ""), issuer: undefined });
        return;
      }
      const secure = tls.connect({ socket, ca: [ca], host: "127.0.0.1" }, () => {
        const cn = secure.getPeerCertificate().issuer?.CN;
        const issuer = Array.isArray(cn) ? cn[0] : cn;
        const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
        secure.write(`GET /x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${extra}Connection: close\r\n\r\n`);
        const chunks: Buffer[] = [];
        secure.on("data", (c: Buffer) => chunks.push(c));
        secure.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          const [head = "", ...rest] = text.split("\r\n\r\n");
          resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0), head, body: rest.join("\r\n\r\n"), issuer });
        });
      });
      secure.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** A body without chunked framing (the proxy re-chunks a body it may rewrite). */
function dechunk(answer: Answer): string {
  if (!/transfer-encoding: chunked/i.test(answer.head)) return answer.body;
  let out = "";
  let rest = answer.body;
  for (;;) {
    const at = rest.indexOf("\r\n");
    const size = parseInt(rest.slice(0, at), 16);
    if (!size) return out;
    out += rest.slice(at + 2, at + 2 + size);
    rest = rest.slice(at + 2 + size + 2);
  }
}

describe("EgressProxy TLS interception (loopback HTTPS servers)", () => {
  let ca: TestCa;
  let secretHost: RecordingHttpsServer;
  let plainHost: RecordingHttpsServer;
  let proxy: EgressProxy;
  const events: EgressEvent[] = [];
  let sentinel = "";

  before(async () => {
    ca = await makeTestCa("wb test upstream CA");
    [secretHost, plainHost] = await Promise.all([recordingHttpsServer(ca, "S"), recordingHttpsServer(ca, "P")]);
    proxy = await EgressProxy.start({
      network: { allow: [`127.0.0.1:${secretHost.port}`, `127.0.0.1:${plainHost.port}`], upstreamCa: [ca.cert], onEgress: (e) => events.push(e) },
      secrets: { GITHUB_TOKEN: { value: TOKEN, hosts: [`127.0.0.1:${secretHost.port}`] } },
      listen: { port: 0 },
    });
    sentinel = secretSentinel("GITHUB_TOKEN", TOKEN);
  });
  after(async () => {
    await proxy?.close();
    await Promise.all([secretHost?.close(), plainHost?.close()]);
  });

  it("decrypts a CONNECT to a secret's host with its own CA and puts the real value in (Bearer and Basic)", async () => {
    assert.match(proxy.caCertificate ?? "", /^-----BEGIN CERTIFICATE-----/);
    const r = await httpsViaProxy(proxy.port, secretHost.port, proxy.caCertificate!, { Authorization: `Bearer ${sentinel}` });
    assert.equal(r.status, 200, r.head);
    assert.match(r.issuer ?? "", /^langgraph-workbench egress proxy CA /, "the client was shown the proxy's certificate");
    assert.equal(secretHost.auth.at(-1), `Bearer ${TOKEN}`);
    // The server echoed the real value (header and body): the client gets the sentinel back.
    assert.match(r.head, new RegExp(`x-echo: Bearer ${sentinel}`));
    assert.equal(dechunk(r), `S saw [${sentinel}] host=127.0.0.1:${secretHost.port}\n`);
    assert.ok(!r.head.includes(TOKEN) && !r.body.includes(TOKEN));
    assert.deepEqual(
      events.slice(-2).map((e) => [e.kind, e.allowed, e.intercepted ?? false, e.secrets ?? []]),
      [["connect", true, true, []], ["https", true, false, ["GITHUB_TOKEN"]]],
    );

    const basic = `Basic ${Buffer.from(`x-access-token:${sentinel}`).toString("base64")}`;
    await httpsViaProxy(proxy.port, secretHost.port, proxy.caCertificate!, { Authorization: basic });
    assert.equal(Buffer.from(secretHost.auth.at(-1)!.slice(6), "base64").toString(), `x-access-token:${TOKEN}`);
  });

  it("keeps any other CONNECT a blind tunnel: the server's own certificate, the sentinel unchanged", async () => {
    const before = events.length;
    const r = await httpsViaProxy(proxy.port, plainHost.port, ca.cert, { Authorization: `Bearer ${sentinel}` });
    assert.equal(r.status, 200);
    assert.equal(r.issuer, "wb test upstream CA");
    assert.equal(plainHost.auth.at(-1), `Bearer ${sentinel}`);
    assert.deepEqual(events.slice(before).map((e) => [e.kind, e.intercepted ?? false]), [["connect", false]]);
    // And the proxy's CA does not vouch for it: a client trusting only ours refuses the server.
    await assert.rejects(httpsViaProxy(proxy.port, plainHost.port, proxy.caCertificate!), /self-signed|unable to (verify|get)/);
  });

  it("refuses to send the secret to a server whose certificate it cannot verify", async () => {
    const strict = await EgressProxy.start({
      network: { allow: [`127.0.0.1:${secretHost.port}`] },
      secrets: { GITHUB_TOKEN: { value: TOKEN, hosts: [`127.0.0.1:${secretHost.port}`] } },
      listen: { port: 0 },
    });
    try {
      const count = secretHost.auth.length;
      const r = await httpsViaProxy(strict.port, secretHost.port, strict.caCertificate!, { Authorization: `Bearer ${sentinel}` });
      assert.equal(r.status, 502);
      assert.match(r.body, /could not reach 127\.0\.0\.1:\d+: (self-signed certificate|unable to (verify|get))/);
      assert.equal(secretHost.auth.length, count, "the server got no request");
    } finally {
      await strict.close();
    }
  });

  it("tunnels blind what is not TLS on a secret's host: a plain client, or a server that speaks first", async () => {
    const seen: Array<string | undefined> = [];
    const plain = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.end("plain\n");
    });
    const banner = net.createServer((s) => s.end("SSH-2.0-test\r\n"));
    await Promise.all([plain, banner].map((s) => new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve))));
    const plainPort = (plain.address() as net.AddressInfo).port;
    const bannerPort = (banner.address() as net.AddressInfo).port;
    const p = await EgressProxy.start({
      network: { allow: ["127.0.0.1"] },
      secrets: { T: { value: TOKEN, hosts: ["127.0.0.1"] } },
      listen: { port: 0 },
    });
    const raw = (port: number, send: string) =>
      new Promise<string>((resolve, reject) => {
        const s = net.connect(p.port, "127.0.0.1", () => s.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: x\r\n\r\n${send}`));
        let got = "";
        s.on("data", (c: Buffer) => (got += c.toString()));
        s.on("close", () => resolve(got));
        s.on("error", reject);
      });
    try {
      const t = secretSentinel("T", TOKEN);
      const r = await raw(plainPort, `GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${t}\r\nConnection: close\r\n\r\n`);
      assert.match(r, /plain\n$/);
      assert.deepEqual(seen, [`Bearer ${t}`], "no TLS, no interception: the sentinel stays");
      assert.match(await raw(bannerPort, ""), /^HTTP\/1\.1 200 Connection Established\r\n\r\nSSH-2\.0-test\r\n$/);
    } finally {
      await p.close();
      await Promise.all([plain, banner].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    }
  });

  it("makes no CA without secrets, and refuses an upstreamCa that is not a certificate", async () => {
    const p = await EgressProxy.start({ network: { allow: ["127.0.0.1"] }, listen: { port: 0 } });
    assert.equal(p.caCertificate, undefined);
    await p.close();
    assert.throws(() => egressNetworkSchema.parse({ allow: [], upstreamCa: ["not a pem"] }), /upstreamCa entries are PEM certificates/);
  });
});

describe("EgressCa", () => {
  it("signs one leaf per host, reuses it, and keeps a bounded number", async () => {
    const ca = await EgressCa.create();
    const a = await ca.contextFor("api.example.com");
    assert.equal(await ca.contextFor("API.example.com"), a);
    await Promise.all(Array.from({ length: LIMITS.egressLeafCacheEntries + 5 }, (_, i) => ca.contextFor(`h${i}.example.com`)));
    assert.equal(ca.cachedLeaves, LIMITS.egressLeafCacheEntries);
    assert.notEqual(await ca.contextFor("api.example.com"), a, "the oldest leaf was dropped and made again");
  });
});
