import { lookup as dnsLookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";

/** Options of {@link checkUrlSafety}. */
export interface UrlSafetyOptions {
  /**
   * Allow private, loopback, CGNAT, IPv6 unique-local and IPv6 link-local targets (intranet
   * use, tests). Default: `process.env.WORKBENCH_ALLOW_PRIVATE_URLS === "true"`. Cloud metadata
   * hosts/addresses and the whole IPv4 link-local range 169.254/16 stay blocked regardless.
   */
  allowPrivate?: boolean;
  /**
   * Targets allowed even when private: exact host names or IP literals (`"127.0.0.1"`,
   * `"intranet.local"`, matched against the URL host, case-insensitive) or CIDRs
   * (`"10.1.0.0/16"`, matched against every resolved address). Metadata stays blocked.
   */
  allowHosts?: string[];
  /** DNS resolver returning every address of `host`; defaults to `dns.promises.lookup(host, { all: true })`. */
  lookup?: (host: string) => Promise<string[]>;
}

/** Verdict of {@link checkUrlSafety}. `addresses` are the vetted IPs to connect to (when safe). */
export interface UrlSafetyResult {
  safe: boolean;
  reason?: string;
  addresses?: string[];
}

/** Hosts that serve cloud credentials; blocked even when private targets are allowed. */
const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata.goog", "metadata"]);

/**
 * Cloud metadata addresses (GCP/AWS/Azure, ECS task role, Alibaba, AWS IPv6 IMDS) and Azure's
 * WireServer 168.63.129.16 (a public-range address that serves VM extension config and certificates).
 */
const METADATA_ADDRESSES = new Set(["169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254", "168.63.129.16"]);

/**
 * Local-use NAT64 (RFC 8215): the operator picks the prefix length inside it, so where the IPv4
 * address sits (and which host a translator reaches) cannot be known from outside.
 */
const LOCAL_NAT64 = ipaddr.parseCIDR("64:ff9b:1::/48") as [ipaddr.IPv6, number];

/** Ranges an explicit allowance (allowPrivate/allowHosts) may open; every other non-unicast range stays shut. */
const OPENABLE_RANGES = new Set(["private", "loopback", "carrierGradeNat", "uniqueLocal", "linkLocal"]);

type Verdict = { kind: "public" } | { kind: "openable"; range: string } | { kind: "never"; why: string };

/**
 * Decides whether `url` may be fetched: http/https only, a non-empty host, not a metadata host,
 * and every DNS answer (or the literal IP) a public unicast address, unless explicitly allowed.
 * IPv4-mapped/-compatible IPv6, well-known NAT64 (64:ff9b::/96) and 6to4 addresses are judged by
 * the IPv4 address they embed; local-use NAT64 (64:ff9b:1::/48) is always blocked. Never throws.
 */
export async function checkUrlSafety(url: string, options: UrlSafetyOptions = {}): Promise<UrlSafetyResult> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { safe: false, reason: `not a valid absolute URL: ${truncate(url)}` };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return { safe: false, reason: `only http and https URLs are allowed, not ${parsed.protocol}` };
  }
  const host = normaliseHost(parsed.hostname);
  if (host === "") return { safe: false, reason: "the URL has an empty host" };
  if (isMetadataHost(host)) return { safe: false, reason: `${host} is a cloud metadata host and is always blocked` };

  const allowPrivate = options.allowPrivate ?? process.env.WORKBENCH_ALLOW_PRIVATE_URLS === "true";
  const allowHosts = (options.allowHosts ?? []).map((h) => h.trim().toLowerCase()).filter(Boolean);
  const hostAllowed = allowHosts.some((entry) => !entry.includes("/") && normaliseHost(entry) === host);
  const cidrs = allowHosts.filter((entry) => entry.includes("/")).flatMap(parseCidr);

  let addresses: string[];
  const literal = parseIp(host);
  if (literal) {
    addresses = [literal.toString()];
  } else {
    try {
      addresses = await (options.lookup ?? defaultLookup)(host);
    } catch (error) {
      return { safe: false, reason: `DNS lookup of ${host} failed (${describeDnsError(error)}); the URL is blocked` };
    }
    if (addresses.length === 0) return { safe: false, reason: `DNS lookup of ${host} returned no address` };
  }

  for (const address of addresses) {
    const ip = parseIp(address);
    if (!ip) return { safe: false, reason: `${host} resolved to an unparsable address ${truncate(address)}` };
    const verdict = judge(ip);
    if (verdict.kind === "public") continue;
    if (verdict.kind === "never") return { safe: false, reason: `${host} resolves to ${address}: ${verdict.why}` };
    const opened = allowPrivate || hostAllowed || cidrs.some(([net, bits]) => sameKind(ip, net) && ip.match(net, bits));
    if (!opened) {
      return {
        safe: false,
        reason:
          `${host} resolves to ${address} (${verdict.range} range); private targets are blocked ` +
          `(allow them with allowHosts or WORKBENCH_ALLOW_PRIVATE_URLS=true)`,
      };
    }
  }
  return { safe: true, addresses };
}

/** Lower-case, without IPv6 brackets or trailing dots (so `metadata.goog.` cannot slip through). */
export function normaliseHost(hostname: string): string {
  let host = hostname.trim().toLowerCase();
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  return host.replace(/\.+$/, "");
}

function isMetadataHost(host: string): boolean {
  for (const blocked of METADATA_HOSTS) {
    if (host === blocked || host.endsWith(`.${blocked}`)) return true;
  }
  return false;
}

async function defaultLookup(host: string): Promise<string[]> {
  const answers = await dnsLookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

/**
 * Parses an IP literal in any form ipaddr.js knows (including legacy decimal/octal/hex/short
 * IPv4 forms, in case a caller passes a host the WHATWG parser did not normalise).
 */
function parseIp(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const candidate = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (ipaddr.IPv6.isValid(candidate)) return ipaddr.IPv6.parse(candidate);
  if (ipaddr.IPv4.isValid(candidate)) return ipaddr.IPv4.parse(candidate);
  return undefined;
}

function parseCidr(entry: string): Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> {
  try {
    return [ipaddr.parseCIDR(entry)];
  } catch {
    return [];
  }
}

function sameKind(a: ipaddr.IPv4 | ipaddr.IPv6, b: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return a.kind() === b.kind();
}

/** Classifies one address; IPv6 forms that carry an IPv4 address are judged by that address. */
function judge(ip: ipaddr.IPv4 | ipaddr.IPv6): Verdict {
  if (ip.kind() === "ipv6") {
    const v6 = ip as ipaddr.IPv6;
    if (METADATA_ADDRESSES.has(v6.toString())) return { kind: "never", why: "cloud metadata address, always blocked" };
    if (v6.match(LOCAL_NAT64)) return { kind: "never", why: "local-use NAT64 (64:ff9b:1::/48) with an operator-chosen IPv4 embedding, never a valid fetch target" };
    const embedded = embeddedIPv4(v6);
    if (embedded) return judge(embedded);
    return classify(v6.range());
  }
  const v4 = ip as ipaddr.IPv4;
  if (METADATA_ADDRESSES.has(v4.toString())) return { kind: "never", why: "cloud metadata address, always blocked" };
  const range = v4.range();
  // Link-local IPv4 hosts metadata/credential endpoints on every major cloud beyond the listed ones.
  if (range === "linkLocal") return { kind: "never", why: "IPv4 link-local (169.254/16), always blocked" };
  return classify(range);
}

function classify(range: string): Verdict {
  if (range === "unicast") return { kind: "public" };
  if (OPENABLE_RANGES.has(range)) return { kind: "openable", range };
  return { kind: "never", why: `${range} address range, never a valid fetch target` };
}

/** The IPv4 address inside mapped, compatible, SIIT, NAT64 and 6to4 IPv6 forms. */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = ip.parts;
  const fromParts = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  const range = ip.range();
  if (range === "ipv4Mapped" || range === "rfc6145" || range === "rfc6052") return fromParts(p[6]!, p[7]!);
  if (range === "6to4") return fromParts(p[1]!, p[2]!);
  // IPv4-compatible (::a.b.c.d, deprecated) still routes to the IPv4 host on some stacks.
  if (p.slice(0, 6).every((part) => part === 0) && (p[6] !== 0 || p[7]! > 1)) return fromParts(p[6]!, p[7]!);
  return undefined;
}

function describeDnsError(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === "string") return code;
  return error instanceof Error ? error.message.split("\n")[0]! : String(error);
}

function truncate(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
