/**
 * `WEB_TOOLS_DEBUG=true` → one JSON file per tool set, `logs/web_tools_debug_<uuid>.json`
 * (mode 0600), rewritten after every call with that call's parameters, backend, sizes,
 * compression, errors and timings. API keys never reach it: known key values and anything
 * that looks like a credential are redacted before writing.
 */
import { randomUUID } from "node:crypto";
import { chmod, mkdir, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { scrubSecrets } from "./retry.js";

/** Options of {@link createWebDebugLog}. */
export interface WebDebugOptions {
  /** Default: `env.WEB_TOOLS_DEBUG === "true"`. */
  enabled?: boolean;
  /** Directory for the log file. Default `./logs`, resolved when the tools are created. */
  dir?: string;
  /** Most recent calls kept in the file. Default 500. */
  maxCalls?: number;
}

/** Per-URL figures of a `web_extract` call. */
export interface DebugUrlRecord {
  url: string;
  error: string | null;
  blocked_by_policy?: unknown;
  raw_chars: number;
  returned_chars: number;
  summarized?: boolean;
  /** returned / raw, when summarised. */
  compression_ratio?: number;
}

export interface DebugCallRecord {
  tool: string;
  started_at: string;
  duration_ms: number;
  parameters: Record<string, unknown>;
  backend: string | null;
  backend_reason?: string;
  result_count?: number;
  urls?: DebugUrlRecord[];
  error?: string;
}

export interface WebDebugLog {
  /** Absolute path of the log file. */
  readonly path: string;
  /** Appends a call and rewrites the file; never throws (a failing debug log must not fail a tool). */
  record(call: DebugCallRecord): Promise<void>;
}

/** The log, or `undefined` when debugging is off. `secrets` are the configured API keys. */
export function createWebDebugLog(
  options: WebDebugOptions,
  env: Record<string, string | undefined>,
  secrets: readonly (string | undefined)[],
): WebDebugLog | undefined {
  const enabled = options.enabled ?? env.WEB_TOOLS_DEBUG?.trim().toLowerCase() === "true";
  if (!enabled) return undefined;
  const maxCalls = options.maxCalls ?? 500;
  if (!Number.isInteger(maxCalls) || maxCalls < 1) throw new RangeError("debug.maxCalls must be a positive integer");
  const sessionId = randomUUID();
  const dir = path.resolve(options.dir ?? "logs");
  const file = path.join(dir, `web_tools_debug_${sessionId}.json`);
  const startedAt = new Date().toISOString();
  const calls: DebugCallRecord[] = [];
  // Writes are chained so concurrent calls never interleave partial files.
  let queue: Promise<void> = Promise.resolve();

  async function flush(): Promise<void> {
    const body = JSON.stringify({ session_id: sessionId, started_at: startedAt, calls }, null, 2);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, scrubSecrets(body, secrets), { mode: 0o600 });
    // writeFile's mode is filtered by the umask; the log must stay owner-only whatever it is.
    await chmod(tmp, 0o600);
    await rename(tmp, file);
  }

  return {
    path: file,
    record(call) {
      calls.push(call);
      if (calls.length > maxCalls) calls.splice(0, calls.length - maxCalls);
      queue = queue.then(flush).catch(() => undefined);
      return queue;
    },
  };
}
