/**
 * Per-call cost of the egress proxy path against direct requests on loopback, measured in the
 * same run: (1) one HTTP request from this process, direct vs through an EgressProxy (plain
 * forward and CONNECT); (2) one sandboxed `curl`, `network: true` (direct) vs an allow-list
 * (proxy started for the call, relay inside, request through both); (3) HTTPS: a CONNECT to a
 * secret's host (intercepted: TLS ended at the proxy with its CA, upstream TLS verified, sentinel
 * swapped) vs a blind CONNECT tunnel to a host without one, from this process and from a sandboxed
 * `curl`. Variants interleaved.
 */
import http from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import type net from "node:net";
import tls from "node:tls";
import os from "node:os";
import path from "node:path";
import { EgressProxy, secretSentinel } from "../src/environment/egressProxy.js";
import { makeTestCa, recordingHttpsServer } from "../tests/helpers/tlsServer.js";
import { detectSandbox, SandboxEnvironment } from "../src/environment/sandboxEnvironment.js";
import { fmt, median } from "./fixtures.js";

interface Variant {
  name: string;
  call: () => Promise<void>;
  anchor?: string;
}

function get(options: http.RequestOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request({ ...options, agent: false }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on("error", reject);
    req.end();
  });
}

function connectGet(proxyPort: number, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: proxyPort, method: "CONNECT", path: `127.0.0.1:${port}`, agent: false });
    req.on("connect", (res, socket) => {
      if (res.statusCode !== 200) return reject(new Error(`CONNECT ${res.statusCode}`));
      let got = "";
      socket.on("data", (c: Buffer) => (got += c.toString()));
      socket.on("end", () => (got.startsWith("HTTP/1.1 200") ? resolve() : reject(new Error(got.slice(0, 80)))));
      socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    });
    req.on("error", reject);
    req.end();
  });
}

/** CONNECT, TLS verified against `ca`, one GET (new connection each). */
function connectHttpsGet(proxyPort: number, port: number, ca: string, headers = ""): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: proxyPort, method: "CONNECT", path: `127.0.0.1:${port}`, agent: false });
    req.on("connect", (res, socket) => {
      if (res.statusCode !== 200) return reject(new Error(`CONNECT ${res.statusCode}`));
      const secure = tls.connect({ socket, ca: [ca], host: "127.0.0.1" }, () => {
        secure.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${headers}Connection: close\r\n\r\n`);
      });
      let got = "";
      secure.on("data", (c: Buffer) => (got += c.toString()));
      secure.on("end", () => (got.startsWith("HTTP/1.1 200") ? resolve() : reject(new Error(got.slice(0, 80)))));
      secure.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

async function measure(variants: Variant[], runs: number, warm: number): Promise<Map<string, number[]>> {
  const times = new Map(variants.map((v) => [v.name, [] as number[]]));
  for (let i = 0; i < runs + warm; i++) {
    for (const v of variants) {
      const t0 = performance.now();
      await v.call();
      if (i >= warm) times.get(v.name)!.push(performance.now() - t0);
    }
  }
  return times;
}

function rows(variants: Variant[], times: Map<string, number[]>): string[] {
  return variants.map((v) => {
    const med = median([...times.get(v.name)!]);
    const anchor = v.anchor ? median([...times.get(v.anchor)!]) : undefined;
    const extra = anchor === undefined ? "1× (anchor)" : `${fmt(med / anchor)}× (+${fmt(med - anchor)} ms)`;
    return `| ${v.name} | ${fmt(med)} ms | ${extra} |`;
  });
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const title = "## Egress proxy: per-call cost of the allow-list path";
  const server = http.createServer((_req, res) => res.end("ok\n"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const proxy = await EgressProxy.start({ network: { allow: [`127.0.0.1:${port}`] }, listen: { port: 0 } });
  const dir = await mkdtemp(path.join(os.tmpdir(), "wb-bench-egress-"));
  const out: string[] = [title, ""];
  const cleanups: Array<() => Promise<void>> = [];
  try {
    const hostRuns = quick ? 50 : 500;
    const direct = "direct GET from this process";
    const hostVariants: Variant[] = [
      { name: direct, call: () => get({ host: "127.0.0.1", port, path: "/" }) },
      { name: "GET through the proxy (plain forward)", call: () => get({ host: "127.0.0.1", port: proxy.port, path: `http://127.0.0.1:${port}/` }), anchor: direct },
      { name: "CONNECT tunnel + GET through the proxy", call: () => connectGet(proxy.port, port), anchor: direct },
    ];
    const hostTimes = await measure(hostVariants, hostRuns, 20);
    out.push(
      `### One request on loopback (${hostRuns} calls per variant, medians, new connection each)`,
      "",
      "| variant | median | vs direct |",
      "|---|---|---|",
      ...rows(hostVariants, hostTimes),
      "",
    );

    // HTTPS: intercepted (a secret's host) vs blind tunnel, same proxy, same kind of server.
    const testCa = await makeTestCa("bench upstream CA");
    const [secretHost, plainHost] = await Promise.all([recordingHttpsServer(testCa, "S"), recordingHttpsServer(testCa, "P")]);
    const TOKEN = "bench-token-value-0123456789";
    const tlsProxy = await EgressProxy.start({
      network: { allow: [`127.0.0.1:${secretHost.port}`, `127.0.0.1:${plainHost.port}`], upstreamCa: [testCa.cert] },
      secrets: { T: { value: TOKEN, hosts: [`127.0.0.1:${secretHost.port}`] } },
      listen: { port: 0 },
    });
    cleanups.push(() => tlsProxy.close(), () => secretHost.close(), () => plainHost.close());
    const auth = `Authorization: Bearer ${secretSentinel("T", TOKEN)}\r\n`;
    const blindName = "blind CONNECT tunnel + TLS + GET (host without a secret)";
    const httpsVariants: Variant[] = [
      { name: blindName, call: () => connectHttpsGet(tlsProxy.port, plainHost.port, testCa.cert, auth) },
      { name: "intercepted CONNECT + TLS + GET (secret's host: TLS to the proxy, verified TLS upstream, sentinel swapped)", call: () => connectHttpsGet(tlsProxy.port, secretHost.port, tlsProxy.caCertificate!, auth), anchor: blindName },
    ];
    const httpsTimes = await measure(httpsVariants, hostRuns, 20);
    if (secretHost.auth.at(-1) !== `Bearer ${TOKEN}`) throw new Error("the intercepted request did not carry the real value");
    out.push(
      `### One HTTPS request on loopback (${hostRuns} calls per variant, medians, new connection each, ECDSA P-256)`,
      "",
      "| variant | median | vs blind tunnel |",
      "|---|---|---|",
      ...rows(httpsVariants, httpsTimes),
      "",
    );

    const found = await detectSandbox();
    if (!found.available) {
      out.push(`Sandbox rows not measured: ${found.reason}`);
      return out.join("\n");
    }
    const boxRuns = quick ? 10 : 60;
    const env = { PATH: "/usr/bin:/bin", HOME: dir, LANG: "C.UTF-8" };
    const open = new SandboxEnvironment({ workspaceDir: dir, env, network: true });
    const listed = new SandboxEnvironment({ workspaceDir: dir, env, network: { allow: [`127.0.0.1:${port}`] } });
    const none = new SandboxEnvironment({ workspaceDir: dir, env });
    const curl = `curl -sS -f -o /dev/null http://127.0.0.1:${port}/`;
    const check = (box: SandboxEnvironment, command: string) => async () => {
      const r = await box.exec(command);
      if (r.exitCode !== 0) throw new Error(`${command}: ${r.exitCode} ${r.stderr}`);
    };
    const anchorCurl = "sandboxed `curl`, `network: true` (direct)";
    const anchorTrue = "sandboxed `true`, no network";
    const boxVariants: Variant[] = [
      { name: anchorCurl, call: check(open, curl) },
      { name: "sandboxed `curl`, allow-list (proxy + relay + request)", call: check(listed, curl), anchor: anchorCurl },
      { name: anchorTrue, call: check(none, "true") },
      { name: "sandboxed `true`, allow-list (proxy + relay start, no request)", call: check(listed, "true"), anchor: anchorTrue },
    ];
    const secretBox = new SandboxEnvironment({
      workspaceDir: dir,
      env,
      network: { allow: [`127.0.0.1:${secretHost.port}`, `127.0.0.1:${plainHost.port}`], upstreamCa: [testCa.cert] },
      secrets: { T: { value: TOKEN, hosts: [`127.0.0.1:${secretHost.port}`] } },
    });
    const anchorBlind = "sandboxed `curl https` to a host without a secret (blind tunnel)";
    boxVariants.push(
      { name: anchorBlind, call: check(secretBox, `curl -sS -f -k -o /dev/null https://127.0.0.1:${plainHost.port}/`) },
      {
        name: "sandboxed `curl https` with the sentinel to the secret's host (intercepted)",
        call: check(secretBox, `curl -sS -f -o /dev/null -H "Authorization: Bearer $T" https://127.0.0.1:${secretHost.port}/`),
        anchor: anchorBlind,
      },
    );
    const boxTimes = await measure(boxVariants, boxRuns, 3);
    out.push(
      `### One sandboxed command (${boxRuns} calls per variant, medians)`,
      "",
      "| variant | median | vs anchor |",
      "|---|---|---|",
      ...rows(boxVariants, boxTimes),
      "",
      "With an allow-list each command gets its own proxy (a Unix socket in a private temp directory,",
      "bound into the sandbox) and a relay inside (`socat` here) that the command's proxy variables",
      "point at; the relay is waited for before the command starts. That start-up is the fixed part",
      "of the cost; a request through the proxy adds one local hop. With secrets, the per-command",
      "proxy also makes its CA (ECDSA P-256, about a millisecond) and writes the trust bundle; both",
      "`curl https` rows include that, so their difference is the interception itself: a leaf",
      "certificate signed on first use of the host, a TLS handshake at the proxy and a second",
      "(verified) one to the server.",
    );
    return out.join("\n");
  } finally {
    for (const cleanup of cleanups) await cleanup();
    await proxy.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  }
}
