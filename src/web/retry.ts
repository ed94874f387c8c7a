/**
 * Bounded retries, timeouts and one-line error messages for the vendor adapters.
 *
 * The vendor SDKs surface failures differently (ExaError.statusCode, Firecrawl SdkError.status,
 * Tavily plain `Error("429 Error: …")`, Parallel APIError with headers), so the helpers here read
 * any of those shapes instead of each adapter re-implementing the same checks.
 */
import { redactionMarker, redactSecrets } from "../guards/redact.js";
import { WorkbenchError } from "../workbenchError.js";

/** How many times to try, and how long to wait in between. */
export interface RetryPolicy {
  /** Total attempts including the first (1 = no retry). Default 3. */
  attempts: number;
  /** First backoff delay; doubles each retry (with ±20 % jitter). Default 500 ms. */
  baseDelayMs: number;
  /** Upper bound for any single wait, `retry-after` included. Default 10 s. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 3, baseDelayMs: 500, maxDelayMs: 10_000 };

/** What the retry loop needs to know about a failure. */
export interface FailureInfo {
  status?: number;
  retryAfterMs?: number;
  /** Timeouts and connection errors: retryable like a 5xx. */
  transient?: boolean;
}

/** Raised by {@link withTimeout}; always retryable. */
export class TimeoutError extends WorkbenchError {
  readonly code = "TIMEOUT";
  override readonly name = "TimeoutError";
  constructor(readonly ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

/** Validates a partial policy from user options and fills the defaults. */
export function resolveRetryPolicy(partial?: Partial<RetryPolicy>): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...partial };
  if (!Number.isInteger(policy.attempts) || policy.attempts < 1 || policy.attempts > 10) {
    throw new RangeError("retry.attempts must be an integer from 1 to 10");
  }
  if (!(policy.baseDelayMs >= 0) || !(policy.maxDelayMs >= 0)) {
    throw new RangeError("retry.baseDelayMs and retry.maxDelayMs must be >= 0");
  }
  return policy;
}

/** `retry-after` is either delta-seconds or an HTTP date. */
export function parseRetryAfter(value: unknown, now = Date.now()): number | undefined {
  if (typeof value !== "string" || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function headerValue(headers: unknown, name: string): unknown {
  if (!headers || typeof headers !== "object") return undefined;
  const h = headers as { get?: (n: string) => unknown } & Record<string, unknown>;
  if (typeof h.get === "function") return h.get(name) ?? undefined;
  return h[name] ?? h[name.toLowerCase()];
}

/** Reads status, `retry-after` and transience from whichever SDK error shape it is given. */
export function describeFailure(err: unknown): FailureInfo {
  if (err instanceof TimeoutError) return { transient: true };
  if (!err || typeof err !== "object") return {};
  const e = err as Record<string, any>;
  const statusCandidate = e.status ?? e.statusCode ?? e.response?.status;
  let status = typeof statusCandidate === "number" ? statusCandidate : undefined;
  // Tavily rethrows axios errors as plain Errors: "429 Error: {…}" is all that is left.
  const message = typeof e.message === "string" ? e.message : "";
  if (status === undefined) {
    const m = /^(\d{3}) Error\b/.exec(message);
    if (m) status = Number(m[1]);
    // …or only the vendor's text, when the body had an error message.
    else if (/rate limit|too many requests|excessive requests/i.test(message)) status = 429;
  }
  // The Tavily, Exa and Firecrawl SDKs drop response headers from their errors; Firecrawl's
  // rate-limit text still says "retry after 35s", so that is read too.
  const inText = /retry after (\d+(?:\.\d+)?)\s*s/i.exec(message);
  const retryAfter =
    parseRetryAfter(headerValue(e.headers, "retry-after")) ??
    parseRetryAfter(headerValue(e.response?.headers, "retry-after")) ??
    (inText ? Number(inText[1]) * 1000 : undefined);
  const code = typeof e.code === "string" ? e.code : "";
  const transient =
    /^(ECONNRESET|ECONNREFUSED|ETIMEDOUT|ECONNABORTED|EPIPE|EAI_AGAIN|UND_ERR_\w+)$/.test(code) ||
    /timed out|timeout|socket hang up|fetch failed|network/i.test(message);
  return { status, retryAfterMs: retryAfter, transient };
}

/** 408, 429 and 5xx, plus timeouts and dropped connections. */
export function isRetryable(info: FailureInfo): boolean {
  if (info.status !== undefined) return info.status === 408 || info.status === 429 || info.status >= 500;
  return info.transient === true;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error("aborted"));
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(timer);
      reject(signal?.reason ?? new Error("aborted"));
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The wait before retry number `retry` (1-based): `retry-after` when given, else jittered backoff. */
export function backoffDelay(policy: RetryPolicy, retry: number, info: FailureInfo): number {
  if (info.retryAfterMs !== undefined) return Math.min(info.retryAfterMs, policy.maxDelayMs);
  const base = policy.baseDelayMs * 2 ** (retry - 1);
  const jitter = 0.8 + Math.random() * 0.4;
  return Math.min(base * jitter, policy.maxDelayMs);
}

/**
 * Runs `fn` up to `policy.attempts` times while failures are retryable; rethrows the last error.
 * Aborting `signal` stops between attempts. `wait` is injectable so tests can observe delays.
 */
export async function withRetries<T>(
  fn: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  signal?: AbortSignal,
  wait: (ms: number, signal?: AbortSignal) => Promise<void> = sleep,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      const info = describeFailure(err);
      if (attempt >= policy.attempts || !isRetryable(info) || signal?.aborted) throw err;
      await wait(backoffDelay(policy, attempt, info), signal);
    }
  }
}

/**
 * Rejects with {@link TimeoutError} when `promise` has not settled in `ms`. For SDKs without a
 * timeout of their own (Exa); the underlying request may finish later and is then ignored.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(ms)), ms);
    timer.unref?.();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const STATUS_HINTS: Record<number, string> = {
  400: "the vendor rejected the request",
  401: "invalid or missing API key",
  402: "the account is out of credits",
  403: "the API key is not allowed to do this",
  404: "not found",
  408: "the vendor timed out",
  429: "rate limited; try again later",
};

/** Replaces every occurrence of the given secrets, then anything else that looks like one. */
export function scrubSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join(redactionMarker("api-key"));
  }
  return redactSecrets(out);
}

/**
 * A one-line, key-free message for a vendor failure, e.g.
 * `tavily extract failed: HTTP 401 (invalid or missing API key): Unauthorized`.
 */
export function errorMessage(
  backend: string,
  action: string,
  err: unknown,
  secrets: readonly (string | undefined)[] = [],
): string {
  const info = describeFailure(err);
  const raw = err instanceof Error ? err.message : String(err);
  const detail = scrubSecrets(raw, secrets).replace(/\s+/g, " ").trim().slice(0, 300);
  let head = `${backend} ${action} failed`;
  if (err instanceof TimeoutError) head += " (timeout)";
  else if (info.status !== undefined) {
    const hint = STATUS_HINTS[info.status] ?? (info.status >= 500 ? "vendor server error; try again later" : undefined);
    head += `: HTTP ${info.status}${hint ? ` (${hint})` : ""}`;
  }
  return detail ? `${head}: ${detail}` : head;
}
