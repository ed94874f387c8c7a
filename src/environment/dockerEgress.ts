/**
 * Wires one DockerSandbox container to an {@link EgressProxy}: the container runs with
 * `--network none`; the proxy listens on a Unix socket in a host directory bind-mounted at
 * {@link DOCKER_PROXY_DIR}; the container's main process is a relay (socat when the image has
 * it, else a few lines of Perl, which every Debian/Ubuntu image carries as perl-base) that
 * listens on the container's 127.0.0.1:3128 and forwards to the socket. The standard proxy
 * variables and the secrets' sentinels are set on the container; with secrets, so are the trust
 * variables naming the proxy's CA bundle in that directory (see `egressCa.ts`). One proxy per
 * container: it lives as long as the sandbox holds the thread.
 */
import { randomBytes } from "node:crypto";
import { chmod } from "node:fs/promises";
import type { EgressNetwork, SecretsOption } from "./egressProxy.js";
import { SANDBOX_PROXY_PORT, startEgressSession } from "./egressSession.js";

/** Where the proxy's socket directory appears inside the container. */
export const DOCKER_PROXY_DIR = "/run/workbench-egress";

/** A forking TCP → Unix-socket relay with only perl-base modules; half-closes are passed on. */
const PERL_RELAY = `use IO::Socket::INET;use IO::Socket::UNIX;use IO::Select;$SIG{CHLD}="IGNORE";
my $l=IO::Socket::INET->new(LocalAddr=>"127.0.0.1",LocalPort=>$ARGV[1],Listen=>128,ReuseAddr=>1) or die "egress relay: $!\\n";
while(1){my $c=$l->accept or next;if(fork==0){close $l;my $u=IO::Socket::UNIX->new(Peer=>$ARGV[0]) or exit 1;
my $s=IO::Select->new($c,$u);my $b;L:while($s->count){for my $h ($s->can_read){my $o=$h==$c?$u:$c;my $n=sysread($h,$b,65536);
if(!$n){shutdown($o,1);$s->remove($h);next}my $f=0;while($f<$n){my $w=syswrite($o,$b,$n-$f,$f);last L unless $w;$f+=$w}}}exit 0}close $c}`;

/** The container's main process: the relay ($1 socket, $2 port). */
export const RELAY_MAIN = `if command -v socat >/dev/null 2>&1; then exec socat "TCP-LISTEN:$2,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$1"; fi
command -v perl >/dev/null 2>&1 || { echo "egress relay: the image has neither socat nor perl" >&2; exit 127; }
exec perl -e '${PERL_RELAY.replace(/'/g, `'\\''`)}' "$1" "$2"`;

/** Waits (bounded, 10 s) until something listens on the container's 127.0.0.1:PORT. */
export const RELAY_READY = `i=0; while [ $i -lt 2000 ]; do
  while read -r _ a _ s _; do [ "$a" = "$1" ] && [ "$s" = 0A ] && exit 0; done < /proc/net/tcp
  i=$((i+1)); sleep 0.005
done; echo "egress relay did not start" >&2; exit 1`;
export const RELAY_LISTEN_ADDRESS = `0100007F:${SANDBOX_PROXY_PORT.toString(16).toUpperCase().padStart(4, "0")}`;

/** One container's proxy. */
export interface DockerEgress {
  /** `docker run` arguments: the socket directory's mount and the variables. */
  runArgs: string[];
  /** The container's command (after the image): the relay. */
  command: string[];
  close(): Promise<void>;
}

/**
 * Starts the proxy. The socket directory is private to this user (0700) when the container runs
 * as this process's uid; otherwise it is traversable but not listable (0711) and the socket has a
 * random name, so only the container (which is told the name) can find it.
 */
export async function startDockerEgress(network: EgressNetwork, secrets: SecretsOption | undefined, sameUid: boolean): Promise<DockerEgress> {
  const name = `${randomBytes(12).toString("hex")}.sock`;
  // Certificates are public: readable by the container's user whoever it is.
  const session = await startEgressSession({ network, secrets, prefix: "wb-docker-egress-", socketName: name, mountDir: DOCKER_PROXY_DIR, trustMode: 0o644 });
  const { dir, env } = session;
  try {
    if (!sameUid) {
      await chmod(dir, 0o711);
      await chmod(session.socket, 0o666);
    }
  } catch (err) {
    await session.close();
    throw err;
  }
  const field = (s: string) => `"${s.replace(/"/g, '""')}"`;
  const runArgs = ["--mount", [field("type=bind"), field(`source=${dir}`), field(`target=${DOCKER_PROXY_DIR}`), "readonly"].join(",")];
  for (const [k, v] of Object.entries(env)) runArgs.push("--env", `${k}=${v}`);
  return {
    runArgs,
    command: ["sh", "-c", RELAY_MAIN, "relay", `${DOCKER_PROXY_DIR}/${name}`, String(SANDBOX_PROXY_PORT)],
    close: () => session.close(),
  };
}
