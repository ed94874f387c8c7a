import type { LookupAddress } from "node:dns";
import { isIP } from "node:net";
import type { Agent } from "undici";
import { checkUrlSafety, type UrlSafetyOptions } from "../guards/url.js";
import { WorkbenchError } from "../workbenchError.js";

/** Package version sent in the user agent; a test keeps it equal to package.json (no JSON import at load time). */
export const WORKBENCH_VERSION = "0.1.0";

/** The user agent every workbench HTTP client sends unless told otherwise. */
export const WORKBENCH_USER_AGENT = `langgraph-workbench/${WORKBENCH_VERSION} (+https://github.com/langgraph-workbench/langgraph-workbench)`;

export const DEFAULT_FETCH_MAX_BYTES = 5 * 1024 * 1024;
export const DEFAULT_FETCH_TIMEOUT_MS = 20_000;
export const DEFAULT_FETCH_MAX_REDIRECTS = 5;

/** Extra per-hop veto (e.g. the website policy); return a reason to stop before connecting. */
export type HopCheck = (url: string) => Promise<string | undefined>;

/** Options of {@link safeFetch}. */
export interface SafeFetchOptions {
  /** Body size cap in bytes; the download is aborted past it. Default 5 MB. */
  maxBytes?: number;
  /** Whole-request deadline (all hops and the body), in ms. Default 20 s. */
  timeoutMs?: number;
  /** Redirects followed, each re-checked. Default 5. */
  maxRedirects?: number;
  /** `User-Agent` header. Default {@link WORKBENCH_USER_AGENT}. */
  userAgent?: string;
  /** Passed to {@link checkUrlSafety} for every hop. */
  urlSafety?: UrlSafetyOptions;
  /** Checked for every hop after URL safety, before connecting. */
  checkHop?: HopCheck;
  /** Extra request headers (e.g. `accept`). */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Observes each hop right before connecting, with the vetted addresses it is pinned to. */
  onHop?: (url: string, addresses: string[]) => void;
}

export interface SafeFetchResponse {
  /** Final URL after redirects. */
  url: string;
  status: number;
  /** Lower-cased `content-type`, `""` when absent. */
  contentType: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Every URL visited, the final one last. */
  hops: string[];
}

export type SafeFetchErrorCode = "blocked" | "policy" | "too_large" | "timeout" | "too_many_redirects" | "network";

/** A one-line, key-free failure of {@link safeFetch}; `code` tells callers what went wrong. */
export class SafeFetchError extends WorkbenchError {
  override readonly name = "SafeFetchError";
  constructor(
    readonly code: SafeFetchErrorCode,
    readonly url: string,
    message: string,
  ) {
    super(message);
  }
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

// undici takes about a second to load: only the first fetch pays for it, not `import` of the package.
let undici: Promise<typeof import("undici")> | undefined;
const loadUndici = () => (undici ??= import("undici"));

/**
 * GET over undici with the SSRF guard on every hop: each URL (the first and every redirect
 * target) is vetted by {@link checkUrlSafety} and `checkHop`, and its socket is pinned to the
 * vetted addresses, so a DNS answer that changes after the check (rebinding) is never used.
 * Ignores `HTTP_PROXY` (a proxy would connect on our behalf to unvetted addresses).
 */
export async function safeFetch(url: string, options: SafeFetchOptions = {}): Promise<SafeFetchResponse> {
  const maxBytes = positiveInt(options.maxBytes, DEFAULT_FETCH_MAX_BYTES, "maxBytes");
  const timeoutMs = positiveInt(options.timeoutMs, DEFAULT_FETCH_TIMEOUT_MS, "timeoutMs");
  const maxRedirects = nonNegativeInt(options.maxRedirects, DEFAULT_FETCH_MAX_REDIRECTS, "maxRedirects");
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;

  const hops: string[] = [];
  let current = url;
  for (;;) {
    hops.push(current);
    // DNS and robots.txt lookups count against the deadline too.
    const verdict = await beforeDeadline(checkUrlSafety(current, options.urlSafety), current, signal, deadline, timeoutMs);
    if (!verdict.safe) throw new SafeFetchError("blocked", current, `blocked by URL safety: ${verdict.reason}`);
    const vetoed = options.checkHop && (await beforeDeadline(options.checkHop(current), current, signal, deadline, timeoutMs));
    if (vetoed) throw new SafeFetchError("policy", current, vetoed);
    options.onHop?.(current, verdict.addresses ?? []);

    const { Agent, request } = await loadUndici();
    const agent = pinnedAgent(Agent, verdict.addresses ?? [], timeoutMs);
    try {
      const response = await request(current, {
        method: "GET",
        dispatcher: agent,
        signal,
        headers: { "user-agent": options.userAgent ?? WORKBENCH_USER_AGENT, accept: "*/*", ...options.headers },
      }).catch((error: unknown) => {
        throw toFetchError(error, current, signal, deadline, timeoutMs);
      });
      const location = response.headers.location;
      if (REDIRECT_STATUSES.has(response.statusCode) && location) {
        await response.body.dump().catch(() => undefined);
        if (hops.length > maxRedirects) {
          throw new SafeFetchError("too_many_redirects", url, `more than ${maxRedirects} redirects, stopped at ${current}`);
        }
        const target = Array.isArray(location) ? location[0]! : location;
        try {
          current = new URL(target, current).toString();
        } catch {
          throw new SafeFetchError("network", current, `redirected to an invalid URL: ${target.slice(0, 200)}`);
        }
        continue;
      }
      const body = await readCapped(response.body, response.headers["content-length"], maxBytes, current).catch(
        (error: unknown) => {
          throw toFetchError(error, current, signal, deadline, timeoutMs);
        },
      );
      const type = response.headers["content-type"];
      return {
        url: current,
        status: response.statusCode,
        contentType: ((Array.isArray(type) ? type[0] : type) ?? "").toLowerCase(),
        headers: response.headers,
        body,
        hops,
      };
    } finally {
      agent.destroy().catch(() => undefined);
    }
  }
}

function beforeDeadline<T>(
  work: Promise<T>,
  url: string,
  signal: AbortSignal,
  deadline: AbortSignal,
  timeoutMs: number,
): Promise<T> {
  if (signal.aborted) return Promise.reject(toFetchError(signal.reason, url, signal, deadline, timeoutMs));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(toFetchError(signal.reason, url, signal, deadline, timeoutMs));
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** An agent whose sockets can only reach the vetted addresses, whatever DNS says later. */
function pinnedAgent(AgentClass: typeof Agent, addresses: string[], timeoutMs: number): Agent {
  const vetted: LookupAddress[] = addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  return new AgentClass({
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: {
      timeout: timeoutMs,
      lookup: (_hostname: string, opts: { all?: boolean }, callback: (...args: any[]) => void) => {
        if (vetted.length === 0) return callback(Object.assign(new Error("no vetted address"), { code: "ENOTFOUND" }));
        if (opts?.all) return callback(null, vetted);
        callback(null, vetted[0]!.address, vetted[0]!.family);
      },
    },
  });
}

async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(error?: Error): unknown },
  contentLength: string | string[] | undefined,
  maxBytes: number,
  url: string,
): Promise<Buffer> {
  const tooLarge = () =>
    new SafeFetchError("too_large", url, `response larger than the ${maxBytes}-byte cap (maxBytes); download aborted`);
  const declared = Number(Array.isArray(contentLength) ? contentLength[0] : contentLength);
  if (Number.isFinite(declared) && declared > maxBytes) {
    body.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

function toFetchError(
  error: unknown,
  url: string,
  signal: AbortSignal,
  deadline: AbortSignal,
  timeoutMs: number,
): SafeFetchError {
  if (error instanceof SafeFetchError) return error;
  const code = (error as { code?: unknown })?.code;
  if (deadline.aborted || code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT") {
    return new SafeFetchError("timeout", url, `timed out after ${timeoutMs} ms`);
  }
  if (signal.aborted) return new SafeFetchError("network", url, "request aborted");
  const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
  return new SafeFetchError("network", url, `request failed: ${typeof code === "string" ? `${code} ` : ""}${message}`);
}

function positiveInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

function nonNegativeInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  return value;
}
