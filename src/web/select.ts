/**
 * Which backend answers: explicit option, else config, else `WEB_SEARCH_BACKEND` /
 * `WEB_EXTRACT_BACKEND`, else the first vendor with credentials (the order of the vendor table),
 * else — for extraction only — the keyless `fetch` backend.
 */
import type { WebsitePolicy } from "../guards/policy.js";
import type { UrlSafetyOptions } from "../guards/url.js";
import type { VendorOptions } from "./common.js";
import { createFetchBackend, type FetchBackendOptions } from "./fetchBackend.js";
import type { WebBackend, WebBackendName } from "./types.js";
import { VENDOR_TABLE, vendorRow, type VendorConfigs, type VendorName, type VendorRow } from "./vendors/index.js";

export type WebTask = "search" | "extract";

/** Backends that can search (every vendor; the keyless fetch backend cannot). */
export const SEARCH_BACKENDS: readonly VendorName[] = VENDOR_TABLE.map((r) => r.name);
export const EXTRACT_BACKENDS: readonly WebBackendName[] = [...SEARCH_BACKENDS, "fetch"];

/** Environment variables each vendor is configured from. */
export const BACKEND_ENV = Object.fromEntries(VENDOR_TABLE.map((r) => [r.name, { key: r.envKey, baseUrl: r.baseUrlEnv }])) as Record<
  VendorName,
  { key: string; baseUrl: string }
>;

/** The SDK each vendor runs on: optional peer dependencies, installed by consumers who use that vendor. */
export const BACKEND_PACKAGE = {
  firecrawl: "@mendable/firecrawl-js",
  parallel: "parallel-web",
  tavily: "@tavily/core",
  exa: "exa-js",
} as const;

export type Env = Record<string, string | undefined>;

export interface SelectionInput {
  /** `createWebTools({ searchBackend })` / `extractBackend`, or a call-site override. */
  configured?: string;
  env: Env;
}

/** `explicit`: named by the operator (option or env switch), so a missing key is their error. */
export type Selection = { name: WebBackendName; reason: string; explicit: boolean } | { error: string };

function isConfigured(row: VendorRow, env: Env): boolean {
  if (env[row.envKey]?.trim()) return true;
  return row.keylessWithBaseUrl === true && Boolean(env[row.baseUrlEnv]?.trim());
}

function validName(task: WebTask, raw: string): WebBackendName | undefined {
  const name = raw.trim().toLowerCase();
  const allowed: readonly string[] = task === "search" ? SEARCH_BACKENDS : EXTRACT_BACKENDS;
  return allowed.includes(name) ? (name as WebBackendName) : undefined;
}

/** What to set, for the "nothing configured" message. */
export function setupHint(task: WebTask): string {
  const vars = VENDOR_TABLE.map((r) => r.envKey).join(", ");
  const keyless = VENDOR_TABLE.filter((r) => r.keylessWithBaseUrl).map((r) => `${r.baseUrlEnv} for a self-hosted ${r.name}`);
  const envVar = task === "search" ? "WEB_SEARCH_BACKEND" : "WEB_EXTRACT_BACKEND";
  return `set one of ${vars}${keyless.length ? ` (or ${keyless.join(", ")})` : ""}, or choose a backend with ${envVar} / the ${task}Backend option`;
}

/** Picks the backend for `task`; never throws. */
export function selectBackend(task: WebTask, { configured, env }: SelectionInput): Selection {
  const envVar = task === "search" ? "WEB_SEARCH_BACKEND" : "WEB_EXTRACT_BACKEND";
  const choices: Array<[string | undefined, string]> = [
    [configured, `${task}Backend option`],
    [env[envVar], `env ${envVar}`],
  ];
  for (const [raw, source] of choices) {
    if (raw === undefined || raw.trim() === "") continue;
    const name = validName(task, raw);
    if (!name) {
      const allowed = (task === "search" ? SEARCH_BACKENDS : EXTRACT_BACKENDS).join(", ");
      return { error: `Unknown ${task} backend "${raw}" from ${source}; use one of: ${allowed}` };
    }
    return { name, reason: source, explicit: true };
  }
  for (const row of VENDOR_TABLE) {
    if (isConfigured(row, env)) return { name: row.name, reason: `credentials found (${row.envKey})`, explicit: false };
  }
  if (task === "extract") return { name: "fetch", reason: "no vendor configured; keyless fetch", explicit: false };
  return { error: `No web search backend is configured: ${setupHint("search")}.` };
}

/** Per-backend settings; unset keys and base URLs come from the environment (see {@link BACKEND_ENV}). */
export interface WebBackendsConfig extends VendorConfigs {
  /** The keyless backend; URL safety and the website policy are supplied by the tools. */
  fetch?: Omit<FetchBackendOptions, "urlSafety" | "policy">;
}

/** Guards the keyless fetch backend applies to every redirect hop itself. */
export interface FetchGuards {
  urlSafety: UrlSafetyOptions;
  policy: WebsitePolicy;
}

/** The vendor options with the key and base URL filled from `env` where not given. */
export function vendorOptions(row: VendorRow, config: WebBackendsConfig, env: Env): VendorOptions {
  const given = ((config as Record<string, VendorOptions | undefined>)[row.name] ?? {}) as VendorOptions;
  return { ...given, apiKey: given.apiKey ?? env[row.envKey], baseUrl: given.baseUrl ?? env[row.baseUrlEnv] };
}

/** Constructs the named backend; throws a configuration error naming what to set. */
export function buildBackend(name: WebBackendName, config: WebBackendsConfig, env: Env, guards: FetchGuards): WebBackend {
  if (name === "fetch") return createFetchBackend({ ...config.fetch, urlSafety: guards.urlSafety, policy: guards.policy });
  const row = vendorRow(name);
  if (!row) throw new TypeError(`Unknown web backend "${name}"; use one of: ${EXTRACT_BACKENDS.join(", ")}`);
  return row.create(vendorOptions(row, config, env));
}

/** Every configured API key, so logs and messages can scrub them. */
export function configuredSecrets(config: WebBackendsConfig, env: Env): string[] {
  return VENDOR_TABLE.map((r) => vendorOptions(r, config, env).apiKey).filter((k): k is string => Boolean(k));
}
