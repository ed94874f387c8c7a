/**
 * The certificate authority of one egress proxy: made at proxy start, in memory only (its private
 * key is not extractable and never written anywhere), used to sign a leaf certificate for each
 * HTTPS host the proxy intercepts (the hosts a secret is for). Commands trust it through a CA
 * bundle (the system's roots plus this CA) written next to the proxy socket; see
 * {@link writeEgressTrust}.
 *
 * X.509 through `@peculiar/x509` on Node's WebCrypto: ECDSA P-256 keys are made natively in
 * about a millisecond (node-forge is pure JS and RSA only, whose key generation costs 100 ms+ per
 * proxy); `selfsigned` is a wrapper around the same library. Loaded on first use, so a process
 * without secrets never imports it (it installs the `reflect-metadata` polyfill).
 */
import { randomBytes, webcrypto } from "node:crypto";
type CryptoKeyPair = webcrypto.CryptoKeyPair;
import { constants } from "node:fs";
import { open, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import path from "node:path";
import tls from "node:tls";
import { LIMITS } from "../guards/limits.js";

type X509 = typeof import("@peculiar/x509");

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const DAY_MS = 86_400_000;
/** Leaves live a week; one is made again once less than a day of it remains. */
const LEAF_LIFETIME_MS = 7 * DAY_MS;
/** The CA outlives any leaf it signs (a Docker sandbox's proxy can live for days). */
const CA_LIFETIME_MS = 3650 * DAY_MS;
/** Accepted clock skew between host and sandbox. */
const BACKDATE_MS = 3_600_000;

let x509Module: Promise<X509> | undefined;

function loadX509(): Promise<X509> {
  x509Module ??= import("@peculiar/x509").then((m) => {
    m.cryptoProvider.set(webcrypto as unknown as Parameters<typeof m.cryptoProvider.set>[0]);
    return m;
  });
  return x509Module;
}

/** A positive serial number of 16 random bytes (RFC 5280 §4.1.2.2). */
function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString("hex");
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString("base64").replace(/.{64}/g, "$&\n");
  return `-----BEGIN ${label}-----\n${b64.replace(/\n$/, "")}\n-----END ${label}-----\n`;
}

interface Leaf {
  context: tls.SecureContext;
  renewAt: number;
}

/** A per-proxy CA; see the module comment. */
export class EgressCa {
  private readonly leaves = new Map<string, Promise<Leaf>>();

  private constructor(
    private readonly x509: X509,
    private readonly caKeys: CryptoKeyPair,
    private readonly caCert: InstanceType<X509["X509Certificate"]>,
    /** One key for every leaf of this proxy (its certificates differ by name). */
    private readonly leafKeys: CryptoKeyPair,
    private readonly leafKeyPem: string,
    /** The CA certificate (PEM), for the sandbox's trust store. */
    readonly certificate: string,
  ) {}

  /** Makes a new CA (and the key its leaves share). */
  static async create(): Promise<EgressCa> {
    const x509 = await loadX509();
    const caKeys = (await webcrypto.subtle.generateKey(ALGORITHM, false, ["sign", "verify"])) as CryptoKeyPair;
    const now = Date.now();
    const caCert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: `CN=langgraph-workbench egress proxy CA ${randomBytes(4).toString("hex")}`,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + CA_LIFETIME_MS),
      keys: caKeys,
      signingAlgorithm: ALGORITHM,
      extensions: [
        // pathLen 0: this CA signs leaves only.
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
      ],
    });
    const leafKeys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"])) as CryptoKeyPair;
    const leafKeyPem = pem("PRIVATE KEY", await webcrypto.subtle.exportKey("pkcs8", leafKeys.privateKey));
    return new EgressCa(x509, caKeys, caCert, leafKeys, leafKeyPem, caCert.toString("pem") + "\n");
  }

  /** The TLS context presenting a certificate for `host` (a DNS name or an IP), signed by this CA. */
  contextFor(rawHost: string): Promise<tls.SecureContext> {
    const host = rawHost.toLowerCase();
    const cached = this.leaves.get(host);
    const fresh = cached?.then((leaf) => (Date.now() < leaf.renewAt ? leaf : undefined), () => undefined);
    return (fresh ?? Promise.resolve(undefined)).then((leaf) => {
      if (leaf) {
        // Most recently used last: the oldest entry is the one dropped.
        this.leaves.delete(host);
        this.leaves.set(host, cached!);
        return leaf.context;
      }
      const made = this.makeLeaf(host);
      this.leaves.delete(host);
      this.leaves.set(host, made);
      made.catch(() => this.leaves.get(host) === made && this.leaves.delete(host));
      while (this.leaves.size > LIMITS.egressLeafCacheEntries) this.leaves.delete(this.leaves.keys().next().value!);
      return made.then((l) => l.context);
    });
  }

  /** How many leaf certificates are kept. */
  get cachedLeaves(): number {
    return this.leaves.size;
  }

  private async makeLeaf(host: string): Promise<Leaf> {
    const x = this.x509;
    const now = Date.now();
    const cert = await x.X509CertificateGenerator.create({
      serialNumber: serial(),
      // The name is in the SAN (what clients check); a fixed CN keeps host text out of the DN syntax.
      subject: "CN=langgraph-workbench egress proxy leaf",
      issuer: this.caCert.subject,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + LEAF_LIFETIME_MS),
      signingAlgorithm: ALGORITHM,
      publicKey: this.leafKeys.publicKey,
      signingKey: this.caKeys.privateKey,
      extensions: [
        new x.BasicConstraintsExtension(false, undefined, true),
        new x.KeyUsagesExtension(x.KeyUsageFlags.digitalSignature, true),
        new x.ExtendedKeyUsageExtension([x.ExtendedKeyUsage.serverAuth]),
        new x.SubjectAlternativeNameExtension([{ type: isIP(host) ? "ip" : "dns", value: host }]),
        await x.AuthorityKeyIdentifierExtension.create(this.caCert),
      ],
    });
    const context = tls.createSecureContext({ key: this.leafKeyPem, cert: cert.toString("pem") + "\n" + this.certificate });
    return { context, renewAt: now + LEAF_LIFETIME_MS - DAY_MS };
  }
}

/** Where the system keeps its CA bundle (Debian/Ubuntu/Alpine, Fedora/RHEL, others). */
const SYSTEM_BUNDLES = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"];

let systemRoots: Promise<string> | undefined;

/** The host's CA bundle (a regular file, bounded), else Node's bundled roots. */
function systemCaBundle(): Promise<string> {
  systemRoots ??= (async () => {
    for (const file of SYSTEM_BUNDLES) {
      const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => undefined);
      if (!handle) continue;
      try {
        const info = await handle.stat();
        if (!info.isFile() || info.size > LIMITS.egressCaBundleMaxBytes) continue;
        const text = await handle.readFile("utf8");
        if (text.includes("-----BEGIN CERTIFICATE-----")) return text.endsWith("\n") ? text : `${text}\n`;
      } finally {
        await handle.close();
      }
    }
    return `${tls.rootCertificates.join("\n")}\n`;
  })();
  return systemRoots;
}

/** File names of the trust files in the egress directory. */
export const CA_FILE = "egress-ca.pem";
export const CA_BUNDLE_FILE = "ca-bundle.pem";

/**
 * Writes the CA certificate and a bundle (system roots + the CA) into `hostDir`; answers the
 * variables that make common clients trust them at `insideDir` (curl, git, OpenSSL, Python
 * requests, Node).
 */
export async function writeEgressTrust(hostDir: string, insideDir: string, caPem: string, mode = 0o600): Promise<Record<string, string>> {
  const bundle = `${await systemCaBundle()}${caPem}`;
  await writeFile(path.join(hostDir, CA_FILE), caPem, { mode, flag: "wx" });
  await writeFile(path.join(hostDir, CA_BUNDLE_FILE), bundle, { mode, flag: "wx" });
  const b = path.posix.join(insideDir, CA_BUNDLE_FILE);
  return {
    SSL_CERT_FILE: b,
    CURL_CA_BUNDLE: b,
    REQUESTS_CA_BUNDLE: b,
    GIT_SSL_CAINFO: b,
    // Node adds these to its own roots.
    NODE_EXTRA_CA_CERTS: path.posix.join(insideDir, CA_FILE),
  };
}
