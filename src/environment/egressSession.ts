/**
 * The part of a sandbox's egress that does not depend on the sandbox: an {@link EgressProxy}
 * listening on a Unix socket in a fresh private directory, the CA trust files written beside it
 * when it intercepts, and the environment a command inside needs (proxy variables pointing at the
 * in-sandbox relay, secret sentinels, trust variables naming `mountDir`). The bubblewrap sandbox
 * (sandboxEgress.ts) and DockerSandbox (dockerEgress.ts) each add how the directory gets in.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { writeEgressTrust } from "./egressCa.js";
import { EgressProxy, type EgressNetwork, type SecretsOption } from "./egressProxy.js";

/** The port the relay inside a sandbox listens on (127.0.0.1), which the proxy variables name. */
export const SANDBOX_PROXY_PORT = 3128;

export interface EgressSession {
  proxy: EgressProxy;
  /** The host directory holding the socket (and trust files): the caller mounts it at `mountDir`. */
  dir: string;
  socket: string;
  /** Variables for the command: HTTP(S)_PROXY/ALL_PROXY (both cases), secret sentinels, CA trust. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Starts the proxy in a fresh directory; on any failure nothing is left running or on disk. */
export async function startEgressSession(options: {
  network: EgressNetwork;
  secrets: SecretsOption | undefined;
  prefix: string;
  socketName: string;
  mountDir: string;
  /** Mode of the trust files (the certificates are public). */
  trustMode?: number;
}): Promise<EgressSession> {
  const dir = await mkdtemp(path.join(os.tmpdir(), options.prefix));
  const socket = path.join(dir, options.socketName);
  let proxy: EgressProxy | undefined;
  let trust: Record<string, string> = {};
  try {
    proxy = await EgressProxy.start({ network: options.network, ...(options.secrets ? { secrets: options.secrets } : {}), listen: { path: socket } });
    if (proxy.caCertificate) trust = await writeEgressTrust(dir, options.mountDir, proxy.caCertificate, ...(options.trustMode !== undefined ? [options.trustMode] : []));
  } catch (err) {
    await proxy?.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const url = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
  const env: Record<string, string> = { ...proxy.secretEnv, ...trust };
  for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]) env[name] = env[name.toLowerCase()] = url;
  const running = proxy;
  return {
    proxy: running,
    dir,
    socket,
    env,
    async close() {
      await running.close().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
