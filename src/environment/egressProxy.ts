/**
 * The host side of a sandbox's network: an HTTP proxy (CONNECT tunnels for HTTPS and anything
 * else, plain forwarding for `http://` URLs) listening on a Unix socket that is bound into the
 * sandbox. Every request is judged by the egress policy (`src/guards/egress.ts`), its name is
 * resolved here and vetted by the one SSRF policy (`checkUrlSafety`), and the connection goes to
 * the vetted address (no second lookup, so DNS rebinding cannot redirect it). Each decision is
 * reported to `onEgress`.
 *
 * Credentials: the sandbox sees sentinels; on requests to a secret's hosts the proxy puts the real
 * value in place of the sentinel in the request headers (Basic credentials included). Plain HTTP is
 * rewritten as it is forwarded. A CONNECT to a secret's host whose client starts a TLS handshake
 * is intercepted: the proxy answers with a certificate for that host signed by its own CA
 * (`egressCa.ts`, trusted inside the sandbox), verifies the real server's certificate itself, and
 * relays each request with the real value in it. Every other CONNECT is a blind tunnel: the proxy
 * never sees inside it and the client verifies the server's own certificate.
 *
 * Written on `node:http` rather than `proxy`/`proxy-chain`: both connect by host name themselves
 * (a second DNS lookup after the check) and offer no hook to pin the address or rewrite headers.
 */
import { X509Certificate, createHmac, randomBytes } from "node:crypto";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { Transform } from "node:stream";
import tls from "node:tls";
import { z } from "zod";
import { decideEgress, parseEgressPattern, parseEgressPolicy, secretAppliesTo, type EgressPattern, type EgressPolicy } from "../guards/egress.js";
import { LIMITS } from "../guards/limits.js";
import { checkUrlSafety } from "../guards/url.js";
import { EgressCa } from "./egressCa.js";

/** One decision of the proxy, as reported to `onEgress`. */
export interface EgressEvent {
  /**
   * `connect`: a CONNECT tunnel (HTTPS, git, ssh over proxy…); `http`: a forwarded `http://`
   * request; `https`: a request inside an intercepted CONNECT (a host a secret is for).
   */
  kind: "connect" | "http" | "https";
  host: string;
  port: number;
  allowed: boolean;
  /** Why it was refused, or the allow entry that let it through. */
  reason: string;
  /** The address connected to (allowed requests). */
  address?: string;
  /** Names of the secrets put into this request. */
  secrets?: string[];
  /** A CONNECT the proxy may decrypt (TLS from the client to a host a secret is for). */
  intercepted?: boolean;
}

/** Resolves a name to every address (tests inject one; default: the system resolver). */
export type EgressLookup = (host: string) => Promise<string[]>;

const egressEntry = z.string().superRefine((entry, ctx) => {
  try {
    parseEgressPattern(entry);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: (err as Error).message });
  }
});

/** `network: { allow, deny?, onEgress?, lookup? }`: an allow-list through the egress proxy. */
export const egressNetworkSchema = z.strictObject({
  /** Hosts commands may reach, e.g. `["registry.npmjs.org", "*.github.com:443", "127.0.0.1:8080"]`. */
  allow: z.array(egressEntry),
  /** Hosts refused even when an allow entry covers them. */
  deny: z.array(egressEntry).optional(),
  /** Called with every decision (allowed or refused). Must not throw (a throw is ignored). */
  onEgress: z.custom<(event: EgressEvent) => void>((v) => typeof v === "function", "onEgress must be a function").optional(),
  /** Name resolver of the proxy (default: the system's). Its answers are vetted like any other. */
  lookup: z.custom<EgressLookup>((v) => typeof v === "function", "lookup must be a function").optional(),
  /**
   * PEM CA certificates the proxy trusts, besides Node's roots, when it verifies a server it
   * intercepts (an HTTPS host a secret is for): a corporate CA, or a test server's.
   */
  upstreamCa: z.array(z.string().superRefine((text, ctx) => {
    try {
      new X509Certificate(text);
    } catch {
      ctx.addIssue({ code: "custom", message: "upstreamCa entries are PEM certificates (-----BEGIN CERTIFICATE----- …)" });
    }
  })).optional(),
});

/** The `network` option of the sandbox: off, the host's network, or an allow-list. */
export const networkOptionSchema = z.union([z.boolean(), egressNetworkSchema]);
export type NetworkOption = z.input<typeof networkOptionSchema>;
export type EgressNetwork = z.output<typeof egressNetworkSchema>;

/** `secrets: { NAME: { value, hosts } }`: credentials the command sees only as sentinels. */
export const secretsOptionSchema = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "a secret's name is an environment variable name"),
  z.strictObject({
    /** The real credential; never enters the sandbox. */
    value: z.string().min(8, "a secret value must be at least 8 characters (a shorter one would be replaced inside unrelated text)"),
    /** Where it may be sent (allow-list grammar); anywhere else the sentinel goes unchanged. */
    hosts: z.array(egressEntry).min(1),
  }),
);
export type SecretsOption = z.input<typeof secretsOptionSchema>;

/** Per-process key: a secret's sentinel is stable for the process and reveals nothing of the value. */
const SENTINEL_KEY = randomBytes(32);

/** The placeholder a command sees for secret `name`. */
export function secretSentinel(name: string, value: string): string {
  return `wbsecret_${name}_${createHmac("sha256", SENTINEL_KEY).update(name).update("\0").update(value).digest("hex").slice(0, 24)}`;
}

interface Secret {
  name: string;
  sentinel: string;
  value: string;
  hosts: EgressPattern[];
}

/** Options of {@link EgressProxy.start}. */
export interface EgressProxyOptions {
  network: EgressNetwork;
  secrets?: SecretsOption;
  /** Listen here: a Unix socket path, or a TCP port on 127.0.0.1 (0: any free one). */
  listen: { path: string } | { port: number };
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) and the proxy's own: never forwarded. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade"]);

/** Where one relayed request goes, once vetted. */
interface Target {
  kind: "http" | "https";
  host: string;
  port: number;
  address: string;
  rule: string;
}

/** The first byte of a TLS handshake record (RFC 8446 §5.1). */
const TLS_HANDSHAKE = 0x16;

/** An allow-list proxy for one sandbox; see the module comment. Stop it with `close()`. */
export class EgressProxy {
  private readonly server: http.Server;
  /** Serves the requests decrypted from intercepted tunnels (never listens). */
  private readonly inner: http.Server;
  private readonly intercepted = new WeakMap<net.Socket, Target>();
  private readonly policy: EgressPolicy;
  private readonly secrets: Secret[];
  private readonly sockets = new Set<net.Socket>();
  /** Verifies intercepted servers: made once (parsing the roots per request cost ~25 ms). */
  private readonly upstreamContext: tls.SecureContext | undefined;

  private constructor(
    private readonly network: EgressNetwork,
    secrets: SecretsOption | undefined,
    /** Present when there are secrets: the CA that signs intercepted hosts' certificates. */
    private readonly ca: EgressCa | undefined,
  ) {
    this.policy = parseEgressPolicy(network.allow, network.deny ?? []);
    this.secrets = Object.entries(secrets ?? {}).map(([name, s]) => ({ name, value: s.value, sentinel: secretSentinel(name, s.value), hosts: s.hosts.map(parseEgressPattern) }));
    this.upstreamContext = ca ? tls.createSecureContext(network.upstreamCa?.length ? { ca: [...tls.rootCertificates, ...network.upstreamCa] } : {}) : undefined;
    this.server = http.createServer({ maxHeaderSize: LIMITS.egressMaxHeaderBytes }, (req, res) => void this.forward(req, res));
    this.server.on("connect", (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => void this.tunnel(req, socket, head));
    this.server.on("connection", (socket: net.Socket) => this.track(socket));
    this.server.on("clientError", (_err, socket) => socket.destroy());
    this.inner = http.createServer({ maxHeaderSize: LIMITS.egressMaxHeaderBytes }, (req, res) => {
      const target = this.intercepted.get(req.socket);
      if (target) void this.relay(req, res, target, req.url ?? "");
      else res.destroy();
    });
    this.inner.on("clientError", (_err, socket) => socket.destroy());
  }

  /** Starts a proxy; resolves once it listens. */
  static async start(options: EgressProxyOptions): Promise<EgressProxy> {
    const hasSecrets = Object.keys(options.secrets ?? {}).length > 0;
    const proxy = new EgressProxy(options.network, options.secrets, hasSecrets ? await EgressCa.create() : undefined);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once("error", reject);
      const target = "path" in options.listen ? { path: options.listen.path } : { port: options.listen.port, host: "127.0.0.1" };
      proxy.server.listen(target, () => {
        proxy.server.off("error", reject);
        resolve();
      });
    });
    return proxy;
  }

  /** The TCP port (when listening on one). */
  get port(): number {
    const address = this.server.address();
    return typeof address === "object" && address ? address.port : 0;
  }

  /** The variables a command gets for its secrets: name → sentinel. */
  get secretEnv(): Record<string, string> {
    return Object.fromEntries(this.secrets.map((s) => [s.name, s.sentinel]));
  }

  /** The proxy's CA certificate (PEM) when it has secrets (commands must trust it), else undefined. */
  get caCertificate(): string | undefined {
    return this.ca?.certificate;
  }

  /** Stops listening and ends every open connection and tunnel. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
  }

  private report(event: EgressEvent): void {
    try {
      this.network.onEgress?.(event);
    } catch {
      // A logging callback must not break the command's traffic.
    }
  }

  /** Policy, then DNS + SSRF check; the address to connect to, or why not. */
  private async vet(host: string, port: number): Promise<{ address: string; rule: string } | { refused: string }> {
    const decision = decideEgress(this.policy, host, port);
    if (!decision.allowed) return { refused: decision.reason };
    const bare = host.replace(/^\[|\]$/g, "");
    const urlHost = net.isIP(bare) === 6 ? `[${bare}]` : bare;
    const verdict = await checkUrlSafety(`http://${urlHost}:${port}/`, {
      allowPrivate: false,
      // Only an IP entry opens a private address: a name cannot be pointed (by DNS) at one.
      allowHosts: decision.explicitAddress ? [bare] : [],
      ...(this.network.lookup ? { lookup: this.network.lookup } : {}),
    });
    if (!verdict.safe || !verdict.addresses?.length) return { refused: verdict.reason ?? `${host} has no usable address` };
    return { address: verdict.addresses[0]!, rule: decision.rule };
  }

  private async tunnel(req: http.IncomingMessage, client: net.Socket, head: Buffer): Promise<void> {
    client.on("error", () => undefined);
    const target = parseAuthority(req.url ?? "");
    if (!target) {
      client.end(refusalHead(400, "CONNECT needs host:port"));
      return;
    }
    const vetted = await this.vet(target.host, target.port).catch((err: unknown) => ({ refused: `egress check failed: ${(err as Error).message}` }));
    if ("refused" in vetted) {
      this.report({ kind: "connect", host: target.host, port: target.port, allowed: false, reason: vetted.refused });
      client.end(refusalHead(403, vetted.refused));
      return;
    }
    const interceptable = this.ca !== undefined && this.secrets.some((s) => secretAppliesTo(s.hosts, target.host, target.port));
    const upstream = net.connect({ host: vetted.address, port: target.port, timeout: LIMITS.egressConnectTimeoutMs });
    let connected = false;
    /** Set once the tunnel is given up for interception: the raw upstream's end is no longer the client's. */
    let detached = false;
    upstream.once("timeout", () => upstream.destroy(new Error("connect timed out")));
    upstream.once("connect", () => {
      connected = true;
      upstream.setTimeout(0);
      this.report({ kind: "connect", host: target.host, port: target.port, allowed: true, reason: vetted.rule, address: vetted.address, ...(interceptable ? { intercepted: true } : {}) });
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      const blind = (early?: Buffer) => {
        if (head.length) upstream.write(head);
        if (early) upstream.write(early);
        upstream.pipe(client);
        client.pipe(upstream);
      };
      if (!interceptable) return blind();
      const intercept = () => {
        detached = true;
        upstream.destroy();
        if (head.length) client.unshift(head);
        void this.intercept(client, { kind: "https", host: target.host, port: target.port, address: vetted.address, rule: vetted.rule });
      };
      if (head.length) return head[0] === TLS_HANDSHAKE ? intercept() : blind();
      // Whoever speaks first decides: a TLS ClientHello is intercepted; a server that talks first
      // (ssh, smtp…) or a client that is not TLS gets the blind tunnel.
      const fromClient = (chunk: Buffer) => {
        upstream.off("data", fromServer);
        client.pause();
        if (chunk[0] === TLS_HANDSHAKE) {
          client.unshift(chunk);
          intercept();
        } else blind(chunk);
      };
      const fromServer = (chunk: Buffer) => {
        client.off("data", fromClient);
        upstream.pause();
        upstream.unshift(chunk);
        blind();
      };
      client.once("data", fromClient);
      upstream.once("data", fromServer);
    });
    upstream.on("error", (err) => {
      if (!connected) {
        this.report({ kind: "connect", host: target.host, port: target.port, allowed: false, reason: `connection failed: ${err.message}` });
        client.end(refusalHead(502, `could not connect to ${target.host}:${target.port}`));
      } else if (!detached) client.destroy();
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => {
      if (!detached) client.destroy();
    });
  }

  /** Ends the client's TLS with a certificate of this proxy's CA; its requests go to {@link relay}. */
  private async intercept(client: net.Socket, target: Target): Promise<void> {
    let context: tls.SecureContext;
    try {
      context = await this.ca!.contextFor(target.host);
    } catch {
      client.destroy();
      return;
    }
    const secure = new tls.TLSSocket(client, { isServer: true, secureContext: context, ALPNProtocols: ["http/1.1"] });
    secure.on("error", () => secure.destroy());
    this.track(secure);
    this.intercepted.set(secure, target);
    this.inner.emit("connection", secure);
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    res.on("error", () => undefined);
    let url: URL;
    try {
      url = new URL(req.url ?? "");
    } catch {
      refuse(res, 400, "this is an egress proxy: send absolute http:// URLs, or CONNECT for https");
      return;
    }
    if (url.protocol !== "http:") {
      refuse(res, 400, `${url.protocol} URLs go through CONNECT (use an https-aware client), only http:// is forwarded`);
      return;
    }
    const port = url.port ? Number(url.port) : 80;
    const host = url.hostname;
    const vetted = await this.vet(host, port).catch((err: unknown) => ({ refused: `egress check failed: ${(err as Error).message}` }));
    if ("refused" in vetted) {
      this.report({ kind: "http", host, port, allowed: false, reason: vetted.refused });
      refuse(res, 403, vetted.refused);
      return;
    }
    await this.relay(req, res, { kind: "http", host: host.replace(/^\[|\]$/g, ""), port, ...vetted }, `${url.pathname}${url.search}`);
  }

  /** Sends one vetted request on (secrets put in, echoes of them hidden in the answer). */
  private async relay(req: http.IncomingMessage, res: http.ServerResponse, target: Target, requestPath: string): Promise<void> {
    res.on("error", () => undefined);
    const { host, port } = target;
    if (!requestPath.startsWith("/")) {
      refuse(res, 400, "send origin-form request targets (`GET /path`) inside the tunnel");
      return;
    }
    const applied = this.secrets.filter((s) => secretAppliesTo(s.hosts, host, port));
    const used = new Set<string>();
    /** Real → shown forms to hide in the answer: each value, and each Basic credential built with one. */
    const hidden: HiddenForm[] = applied.map((s) => ({ real: s.value, shown: s.sentinel }));
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || HOP_BY_HOP.has(name)) continue;
      headers[name] = Array.isArray(value) ? value.map((v) => insertSecrets(v, applied, used, hidden)) : insertSecrets(value, applied, used, hidden);
    }
    // RFC 9112 §3.2.2: the request target's authority replaces whatever Host the client sent; inside
    // a tunnel, the CONNECT's authority (the name the server's certificate is checked against).
    const shownHost = net.isIP(host) === 6 ? `[${host}]` : host;
    headers.host = port === (target.kind === "https" ? 443 : 80) ? shownHost : `${shownHost}:${port}`;
    const common = {
      host: target.address,
      port,
      method: req.method,
      path: requestPath,
      headers,
      setHost: false,
      // One upstream connection per request: pinned to this request's vetted address, no reuse.
      agent: false,
    } satisfies http.RequestOptions;
    const upstream =
      target.kind === "http"
        ? http.request(common)
        : https.request({
            ...common,
            // SNI carries names only; the certificate is checked against the CONNECT's host either way.
            ...(net.isIP(host) ? {} : { servername: host }),
            ...({ secureContext: this.upstreamContext } as https.RequestOptions),
            checkServerIdentity: (_name, cert) => tls.checkServerIdentity(host, cert),
          });
    // Bounded connect only: an allowed API may take its time to answer.
    upstream.once("socket", (socket) => {
      socket.setTimeout(LIMITS.egressConnectTimeoutMs);
      socket.once("connect", () => socket.setTimeout(0));
      socket.once("timeout", () => upstream.destroy(new Error("connect timed out")));
    });
    this.report({ kind: target.kind, host, port, allowed: true, reason: target.rule, address: target.address, ...(used.size ? { secrets: [...used] } : {}) });
    upstream.on("response", (answer) => {
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value === undefined || HOP_BY_HOP.has(name)) continue;
        // A server echoing the credential back must not hand it to the command.
        out[name] = Array.isArray(value) ? value.map((v) => hideSecrets(v, hidden)) : hideSecrets(value, hidden);
      }
      const hide = applied.length > 0 && !out["content-encoding"];
      // The length changes when an echoed credential is hidden in the body.
      if (hide) delete out["content-length"];
      res.writeHead(answer.statusCode ?? 502, out);
      if (hide) answer.pipe(hidingStream(hidden)).pipe(res);
      else answer.pipe(res);
    });
    upstream.on("error", (err) => {
      if (!res.headersSent) refuse(res, 502, `could not reach ${host}:${port}: ${err.message}`);
      else res.destroy();
    });
    req.pipe(upstream);
    res.on("close", () => upstream.destroy());
  }
}

/** `host:port` of a CONNECT request (IPv6 in brackets). */
function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/\s]+):(\d{1,5})$/.exec(authority);
  if (!m) return undefined;
  const port = Number(m[2]);
  return port >= 1 && port <= 65_535 ? { host: m[1]!.replace(/^\[|\]$/g, ""), port } : undefined;
}

/** A real form of a credential and what the command is shown instead. */
interface HiddenForm {
  real: string;
  shown: string;
}

/** The sentinel replaced by the real value, also inside `Basic` credentials (whose encoding joins `hidden`). */
function insertSecrets(value: string, secrets: readonly Secret[], used: Set<string>, hidden: HiddenForm[]): string {
  if (secrets.length === 0) return value;
  let out = value;
  for (const s of secrets) {
    if (out.includes(s.sentinel)) {
      out = out.split(s.sentinel).join(s.value);
      used.add(s.name);
    }
  }
  const basic = /^(\s*basic\s+)([A-Za-z0-9+/=]+)\s*$/i.exec(out);
  if (basic) {
    const decoded = Buffer.from(basic[2]!, "base64").toString("utf8");
    let replaced = decoded;
    for (const s of secrets) {
      if (replaced.includes(s.sentinel)) {
        replaced = replaced.split(s.sentinel).join(s.value);
        used.add(s.name);
      }
    }
    if (replaced !== decoded) {
      const real = Buffer.from(replaced, "utf8").toString("base64");
      hidden.push({ real, shown: basic[2]! });
      out = `${basic[1]}${real}`;
    }
  }
  return out;
}

function hideSecrets(value: string, hidden: readonly HiddenForm[]): string {
  let out = value;
  for (const h of hidden) if (out.includes(h.real)) out = out.split(h.real).join(h.shown);
  return out;
}

/**
 * Replaces each real value by its sentinel in a response body streamed to the command. Holds back
 * the last `longest - 1` bytes of each chunk so a value split across chunks is still found.
 */
function hidingStream(hidden: readonly HiddenForm[]): Transform {
  const pairs = hidden.map((h) => ({ from: Buffer.from(h.real, "utf8"), to: Buffer.from(h.shown, "utf8") }));
  const keep = Math.max(...pairs.map((p) => p.from.length)) - 1;
  let pending: Buffer = Buffer.alloc(0);
  const replaceAll = (buf: Buffer): Buffer => {
    let out = buf;
    for (const { from, to } of pairs) {
      if (out.indexOf(from) < 0) continue;
      const parts: Buffer[] = [];
      let at = 0;
      for (let hit = out.indexOf(from); hit >= 0; hit = out.indexOf(from, at)) {
        parts.push(out.subarray(at, hit), to);
        at = hit + from.length;
      }
      parts.push(out.subarray(at));
      out = Buffer.concat(parts);
    }
    return out;
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      const joined = replaceAll(Buffer.concat([pending, chunk]));
      const cut = Math.max(0, joined.length - keep);
      pending = joined.subarray(cut);
      done(null, joined.subarray(0, cut));
    },
    flush(done) {
      done(null, replaceAll(pending));
    },
  });
}

/** One-line header-safe text. */
function headerText(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "?").slice(0, 300);
}

function refusalHead(status: number, reason: string): string {
  const body = `workbench egress proxy: ${reason}\n`;
  return `HTTP/1.1 ${status} ${status === 403 ? "Forbidden" : status === 400 ? "Bad Request" : "Bad Gateway"}\r\nContent-Type: text/plain\r\nX-Workbench-Egress: ${headerText(reason)}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function refuse(res: http.ServerResponse, status: number, reason: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `workbench egress proxy: ${reason}\n`;
  res.writeHead(status, { "content-type": "text/plain", "x-workbench-egress": headerText(reason), connection: "close" });
  res.end(body);
}
