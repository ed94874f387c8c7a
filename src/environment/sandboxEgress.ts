/**
 * Wires one bubblewrap sandbox to an {@link EgressProxy}: the sandbox keeps its own network
 * namespace (only `lo`); the proxy's Unix socket is bound inside, and a relay started before the
 * command (socat, else node) listens on the sandbox's 127.0.0.1 and forwards to that socket.
 * The standard proxy variables point at the relay. One proxy per command: it lives exactly as
 * long as the command, and its decisions belong to that call. With secrets, the proxy's CA (and a
 * bundle of it with the system's roots) is bound in read-only and named by the trust variables
 * of curl, git, OpenSSL, Python and Node, so HTTPS to a secret's host verifies against the proxy.
 */
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import path from "node:path";
import { CA_BUNDLE_FILE, CA_FILE } from "./egressCa.js";
import type { EgressNetwork, SecretsOption } from "./egressProxy.js";
import { SANDBOX_PROXY_PORT, startEgressSession } from "./egressSession.js";

/** Where the proxy socket appears inside the sandbox. */
export const SANDBOX_EGRESS_DIR = "/run/workbench-egress";
export const SANDBOX_PROXY_SOCKET = `${SANDBOX_EGRESS_DIR}/proxy.sock`;
/** The relay's port on the sandbox's own loopback. */
export { SANDBOX_PROXY_PORT };
/** Polls of /proc/net/tcp (5 ms apart) before the command runs without the relay listening. */
const RELAY_WAIT_POLLS = 2_000;

/** Host paths that are visible inside the sandbox at the same place (the read-only system). */
const SOCAT_CANDIDATES = ["/usr/bin/socat", "/usr/local/bin/socat"];

/** What a sandbox with an allow-list adds to one command. */
export interface SandboxEgress {
  /** bwrap arguments (the socket bind, the node binary when it is the relay). */
  args: string[];
  /** Proxy variables and secret sentinels. */
  env: Record<string, string>;
  /** Shell run inside before the command: starts the relay and waits until it listens. */
  prelude: string;
  close(): Promise<void>;
}

let relayChoice: Promise<{ kind: "socat"; path: string } | { kind: "node"; path: string }> | undefined;

/** socat when the system has it (cheap to start), else this Node binary. */
function chooseRelay(): Promise<{ kind: "socat"; path: string } | { kind: "node"; path: string }> {
  relayChoice ??= (async () => {
    for (const candidate of SOCAT_CANDIDATES) {
      if (await access(candidate, constants.X_OK).then(() => true, () => false)) return { kind: "socat", path: candidate } as const;
    }
    return { kind: "node", path: process.execPath } as const;
  })();
  return relayChoice;
}

/** Shell words, single-quoted. */
function q(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

const NODE_RELAY =
  'const n=require("net");n.createServer(c=>{const u=n.connect(process.argv[1]);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy());c.pipe(u).pipe(c)}).listen(+process.argv[2],"127.0.0.1")';

/** The relay, backgrounded with no stdio, then a bounded wait for its listening socket. */
export function relayPrelude(relay: { kind: "socat" | "node"; path: string }): string {
  const start =
    relay.kind === "socat"
      ? `${q(relay.path)} TCP-LISTEN:${SANDBOX_PROXY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${SANDBOX_PROXY_SOCKET}`
      : `${q(relay.path)} -e ${q(NODE_RELAY)} ${SANDBOX_PROXY_SOCKET} ${SANDBOX_PROXY_PORT}`;
  const local = `0100007F:${SANDBOX_PROXY_PORT.toString(16).toUpperCase().padStart(4, "0")}`;
  return (
    `${start} </dev/null >/dev/null 2>&1 & ` +
    `__wb_i=0; while [ $__wb_i -lt ${RELAY_WAIT_POLLS} ]; do ` +
    `while read -r _ __wb_a _ __wb_s _; do [ "$__wb_a" = ${local} ] && [ "$__wb_s" = 0A ] && break 2; done </proc/net/tcp; ` +
    `__wb_i=$((__wb_i+1)); sleep 0.005; done; unset __wb_i __wb_a __wb_s`
  );
}

/** Starts the proxy of one sandboxed command. */
export async function startSandboxEgress(network: EgressNetwork, secrets: SecretsOption | undefined): Promise<SandboxEgress> {
  const relay = await chooseRelay();
  const session = await startEgressSession({ network, secrets, prefix: "wb-egress-", socketName: "proxy.sock", mountDir: SANDBOX_EGRESS_DIR });
  const { proxy, dir, socket, env } = session;
  const args = ["--bind", socket, SANDBOX_PROXY_SOCKET];
  if (proxy.caCertificate) {
    for (const file of [CA_FILE, CA_BUNDLE_FILE]) args.push("--ro-bind", path.join(dir, file), `${SANDBOX_EGRESS_DIR}/${file}`);
  }
  // A node outside the system directories is made visible at its own path, read-only.
  if (relay.kind === "node" && !relay.path.startsWith("/usr/")) args.push("--ro-bind", relay.path, relay.path);
  return {
    args,
    env,
    prelude: relayPrelude(relay),
    close: () => session.close(),
  };
}
