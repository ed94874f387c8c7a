// A test CA of its own (made with @peculiar/x509 directly, not with the proxy's CA code) and a
// loopback HTTPS server whose certificate it signs: the "real" upstream an egress proxy must verify.
import { randomBytes, webcrypto } from "node:crypto";
import https from "node:https";
import type net from "node:net";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

function pem(label: string, der: ArrayBuffer): string {
  return `-----BEGIN ${label}-----\n${Buffer.from(der).toString("base64").replace(/.{64}/g, "$&\n").replace(/\n$/, "")}\n-----END ${label}-----\n`;
}

export interface TestCa {
  /** The CA certificate (PEM). */
  cert: string;
  /** Signs a server certificate for these IPs; answers key and chain (PEM). */
  issue(ips: string[]): Promise<{ key: string; cert: string }>;
}

/** A CA named `CN=<name>`. */
export async function makeTestCa(name: string): Promise<TestCa> {
  const keys = (await webcrypto.subtle.generateKey(ALG, false, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const day = 86_400_000;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: `CN=${name}`,
    notBefore: new Date(Date.now() - day),
    notAfter: new Date(Date.now() + day),
    keys,
    signingAlgorithm: ALG,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
  });
  return {
    cert: ca.toString("pem") + "\n",
    async issue(ips) {
      const leafKeys = (await webcrypto.subtle.generateKey(ALG, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
      const leaf = await x509.X509CertificateGenerator.create({
        serialNumber: randomBytes(8).toString("hex").replace(/^./, "1"),
        subject: `CN=${name} server`,
        issuer: ca.subject,
        notBefore: new Date(Date.now() - day),
        notAfter: new Date(Date.now() + day),
        signingAlgorithm: ALG,
        publicKey: leafKeys.publicKey,
        signingKey: keys.privateKey,
        extensions: [new x509.SubjectAlternativeNameExtension(ips.map((value) => ({ type: "ip" as const, value }))), new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth])],
      });
      return { key: pem("PRIVATE KEY", await webcrypto.subtle.exportKey("pkcs8", leafKeys.privateKey)), cert: leaf.toString("pem") + "\n" };
    },
  };
}

export interface RecordingHttpsServer {
  port: number;
  /** The Authorization header of each request received. */
  auth: Array<string | undefined>;
  close: () => Promise<void>;
}

/** An HTTPS server on 127.0.0.1 that records the Authorization it gets and echoes it without its scheme word. */
export async function recordingHttpsServer(ca: TestCa, name: string): Promise<RecordingHttpsServer> {
  const auth: Array<string | undefined> = [];
  const server = https.createServer(await ca.issue(["127.0.0.1"]), (req, res) => {
    auth.push(req.headers.authorization);
    res.setHeader("x-echo", req.headers.authorization ?? "");
    res.end(`${name} saw [${(req.headers.authorization ?? "no auth").replace(/^(Bearer|Basic) /, "")}] host=${req.headers.host}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    auth,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
