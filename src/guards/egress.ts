/**
 * The egress policy of sandboxed commands: which `host:port` a command may reach through the
 * egress proxy. Pure decisions on names and numbers; resolving names and the SSRF check of the
 * addresses they resolve to happen in the proxy (`src/environment/egressProxy.ts`, through
 * `checkUrlSafety`), which asks this module first.
 *
 * Pattern grammar (case-insensitive): `host`, `host:port` or `host:*` where host is
 * - a domain (`registry.npmjs.org`): that name exactly;
 * - a wildcard `*.github.com`: any name below github.com (not github.com itself);
 * - `*`: any name (the SSRF check still refuses private and metadata addresses);
 * - an IP literal (`127.0.0.1`, `[::1]`): that address exactly. Only an IP entry opens a
 *   private/loopback address, so a name can never be made (by DNS) to reach one.
 * No port means any port.
 */
import { isIP } from "node:net";

/** One parsed allow/deny entry. */
export interface EgressPattern {
  /** The entry as written. */
  source: string;
  kind: "any" | "exact" | "wildcard" | "ip";
  /** Lower-case name without trailing dot (for a wildcard, the suffix without `*.`), or the IP. */
  host: string;
  /** Undefined: any port. */
  port?: number;
}

/** An allow-list and a deny-list (deny wins). */
export interface EgressPolicy {
  allow: readonly EgressPattern[];
  deny: readonly EgressPattern[];
}

/** What {@link decideEgress} answers. */
export type EgressDecision =
  | { allowed: true; rule: string; /** The matched entry names this IP: private ranges may be reached. */ explicitAddress: boolean }
  | { allowed: false; reason: string };

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const MAX_HOST_CHARS = 253;

/** Lower-case, without IPv6 brackets or trailing dots. */
function normalise(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  return h.replace(/\.+$/, "");
}

function isDomain(host: string): boolean {
  return host.length > 0 && host.length <= MAX_HOST_CHARS && host.split(".").every((label) => LABEL.test(label));
}

/** Splits `host[:port]` (IPv6 in brackets when a port follows); undefined when malformed. */
function splitHostPort(text: string): { host: string; port?: string } | undefined {
  if (text.startsWith("[")) {
    const end = text.indexOf("]");
    if (end < 0) return undefined;
    const rest = text.slice(end + 1);
    if (rest === "") return { host: text.slice(1, end) };
    if (!rest.startsWith(":")) return undefined;
    return { host: text.slice(1, end), port: rest.slice(1) };
  }
  const colons = text.split(":").length - 1;
  if (colons === 0) return { host: text };
  if (colons === 1) {
    const at = text.indexOf(":");
    return { host: text.slice(0, at), port: text.slice(at + 1) };
  }
  // Several colons without brackets: a bare IPv6 address, no port.
  return isIP(text) === 6 ? { host: text } : undefined;
}

function parsePort(text: string): number | undefined | "bad" {
  if (text === "*") return undefined;
  if (!/^\d{1,5}$/.test(text)) return "bad";
  const port = Number(text);
  return port >= 1 && port <= 65_535 ? port : "bad";
}

/** Parses one allow/deny entry; throws a TypeError saying what a valid entry looks like. */
export function parseEgressPattern(entry: string): EgressPattern {
  const fail = (why: string) =>
    new TypeError(`invalid egress entry ${JSON.stringify(entry)}: ${why} (expected e.g. "registry.npmjs.org", "*.github.com:443", "127.0.0.1:8080" or "[::1]:8080")`);
  if (typeof entry !== "string") throw fail("not a string");
  const text = entry.trim().toLowerCase();
  if (text === "" || text.length > MAX_HOST_CHARS + 8) throw fail("empty or too long");
  const parts = splitHostPort(text);
  if (!parts) throw fail("malformed host or port");
  const port = parts.port === undefined ? undefined : parsePort(parts.port);
  if (port === "bad") throw fail("the port must be 1-65535 or *");
  const withPort = (p: Omit<EgressPattern, "port" | "source">): EgressPattern => ({ source: entry, ...p, ...(port === undefined ? {} : { port }) });
  const host = normalise(parts.host);
  if (host === "*") return withPort({ kind: "any", host: "" });
  if (isIP(host)) return withPort({ kind: "ip", host: canonicalIp(host) });
  if (host.startsWith("*.")) {
    const suffix = host.slice(2);
    if (!isDomain(suffix)) throw fail("a wildcard is `*.` followed by a domain");
    return withPort({ kind: "wildcard", host: suffix });
  }
  if (host.includes("*")) throw fail("`*` is allowed only alone or as a leading `*.`");
  if (!isDomain(host)) throw fail("not a domain name or IP address");
  return withPort({ kind: "exact", host });
}

/** Parses the allow and deny lists (throws on the first bad entry). */
export function parseEgressPolicy(allow: readonly string[], deny: readonly string[] = []): EgressPolicy {
  return { allow: allow.map(parseEgressPattern), deny: deny.map(parseEgressPattern) };
}

/** IPv6 in one spelling (`::1` and `0:0::1` are the same entry); IPv4 unchanged. */
function canonicalIp(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  try {
    return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return ip;
  }
}

/** Whether `pattern` covers the normalised `host` and `port`. */
export function matchesEgressPattern(pattern: EgressPattern, host: string, port: number): boolean {
  if (pattern.port !== undefined && pattern.port !== port) return false;
  const ip = isIP(host) !== 0;
  switch (pattern.kind) {
    case "any":
      return true;
    case "ip":
      return ip && canonicalIp(host) === pattern.host;
    case "exact":
      return !ip && host === pattern.host;
    case "wildcard":
      return !ip && host.endsWith(`.${pattern.host}`);
  }
}

/**
 * Decides whether a command may open a connection to `host:port` (before any DNS lookup).
 * A deny entry wins over every allow entry; nothing listed is refused.
 */
export function decideEgress(policy: EgressPolicy, rawHost: string, port: number): EgressDecision {
  const host = normalise(rawHost);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return { allowed: false, reason: `invalid port ${String(port)}` };
  if (!(isIP(host) || isDomain(host))) return { allowed: false, reason: `invalid host name ${JSON.stringify(rawHost.slice(0, 100))}` };
  const shown = isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
  const denied = policy.deny.find((p) => matchesEgressPattern(p, host, port));
  if (denied) return { allowed: false, reason: `${shown} is denied by the egress rule "${denied.source}"` };
  const allowed = policy.allow.find((p) => matchesEgressPattern(p, host, port));
  if (!allowed) return { allowed: false, reason: `${shown} is not in the sandbox's network allow-list` };
  return { allowed: true, rule: allowed.source, explicitAddress: allowed.kind === "ip" };
}

/** Whether a secret scoped to `hosts` may be sent to `host:port` (same grammar as the allow-list). */
export function secretAppliesTo(hosts: readonly EgressPattern[], rawHost: string, port: number): boolean {
  const host = normalise(rawHost);
  return hosts.some((p) => matchesEgressPattern(p, host, port));
}
