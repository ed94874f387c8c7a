/**
 * Which backend answers: explicit option, else config, else `WEB_SEARCH_BACKEND` /
 * `WEB_EXTRACT_BACKEND`, else the first vendor with credentials (firecrawl > parallel > tavily >
 * exa), else — for extraction only — the keyless `fetch` backend.
 */
import type { WebsitePolicy } from "../guards/policy.js";
import type { UrlSafetyOptions } from "../guards/url.js";
import type { VendorOptions } from "./common.js";
import { createExaBackend } from "./vendors/exa.js";
import { createFetchBackend, type FetchBackendOptions } from "./fetchBackend.js";
import { createFirecrawlBackend, type FirecrawlBackendOptions } from "./vendors/firecrawl.js";
import { createParallelBackend, type ParallelBackendOptions } from "./vendors/parallel.js";
import { createTavilyBackend } from "./vendors/tavily.js";
import type { WebBackend, WebBackendName } from "./types.js";

export type WebTask = "search" | "extract";

/** Backends that can search (the keyless fetch backend cannot). */
export const SEARCH_BACKENDS = ["firecrawl", "parallel", "tavily", "exa"] as const;
export const EXTRACT_BACKENDS = [...SEARCH_BACKENDS, "fetch"] as const;

/** Environment variables each vendor is configured from. */
export const BACKEND_ENV = {
  firecrawl: { key: "FIRECRAWL_API_KEY", baseUrl: "FIRECRAWL_API_URL" },
  parallel: { key: "PARALLEL_API_KEY", baseUrl: "PARALLEL_BASE_URL" },
  tavily: { key: "TAVILY_API_KEY", baseUrl: "TAVILY_BASE_URL" },
  exa: { key: "EXA_API_KEY", baseUrl: "EXA_BASE_URL" },
} as const;

export type Env = Record<string, string | undefined>;

export interface SelectionInput {
  /** `createWebTools({ searchBackend })` / `extractBackend`, or a call-site override. */
  configured?: string;
  env: Env;
}

export type Selection = { name: WebBackendName; reason: string } | { error: string };

function isConfigured(name: (typeof SEARCH_BACKENDS)[number], env: Env): boolean {
  const vars = BACKEND_ENV[name];
  if (env[vars.key]?.trim()) return true;
  // A self-hosted Firecrawl needs no key.
  return name === "firecrawl" && Boolean(env[vars.baseUrl]?.trim());
}

function validName(task: WebTask, raw: string): WebBackendName | undefined {
  const name = raw.trim().toLowerCase();
  const allowed: readonly string[] = task === "search" ? SEARCH_BACKENDS : EXTRACT_BACKENDS;
  return allowed.includes(name) ? (name as WebBackendName) : undefined;
}

/** What to set, for the "nothing configured" message. */
export function setupHint(task: WebTask): string {
  const vars = SEARCH_BACKENDS.map((n) => BACKEND_ENV[n].key).join(", ");
  const envVar = task === "search" ? "WEB_SEARCH_BACKEND" : "WEB_EXTRACT_BACKEND";
  return `set one of ${vars} (or FIRECRAWL_API_URL for a self-hosted Firecrawl), or choose a backend with ${envVar} / the ${task}Backend option`;
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
    return { name, reason: source };
  }
  for (const name of SEARCH_BACKENDS) {
    if (isConfigured(name, env)) return { name, reason: `credentials found (${BACKEND_ENV[name].key})` };
  }
  if (task === "extract") return { name: "fetch", reason: "no vendor configured; keyless fetch" };
  return { error: `No web search backend is configured: ${setupHint("search")}.` };
}

/** Per-backend settings; unset keys and base URLs come from the environment (see {@link BACKEND_ENV}). */
export interface WebBackendsConfig {
  tavily?: VendorOptions;
  exa?: VendorOptions;
  firecrawl?: FirecrawlBackendOptions;
  parallel?: ParallelBackendOptions;
  /** The keyless backend; URL safety and the website policy are supplied by the tools. */
  fetch?: Omit<FetchBackendOptions, "urlSafety" | "policy">;
}

/** Guards the keyless fetch backend applies to every redirect hop itself. */
export interface FetchGuards {
  urlSafety: UrlSafetyOptions;
  policy: WebsitePolicy;
}

/** The vendor options with the key and base URL filled from `env` where not given. */
export function vendorOptions<N extends keyof typeof BACKEND_ENV>(
  name: N,
  config: WebBackendsConfig,
  env: Env,
): NonNullable<WebBackendsConfig[N]> {
  const given = (config[name] ?? {}) as VendorOptions;
  return {
    ...given,
    apiKey: given.apiKey ?? env[BACKEND_ENV[name].key],
    baseUrl: given.baseUrl ?? env[BACKEND_ENV[name].baseUrl],
  } as NonNullable<WebBackendsConfig[N]>;
}

/** Constructs the named backend; throws a configuration error naming what to set. */
export function buildBackend(name: WebBackendName, config: WebBackendsConfig, env: Env, guards: FetchGuards): WebBackend {
  switch (name) {
    case "tavily":
      return createTavilyBackend(vendorOptions("tavily", config, env));
    case "exa":
      return createExaBackend(vendorOptions("exa", config, env));
    case "firecrawl":
      return createFirecrawlBackend(vendorOptions("firecrawl", config, env));
    case "parallel":
      return createParallelBackend(vendorOptions("parallel", config, env));
    case "fetch":
      return createFetchBackend({ ...config.fetch, urlSafety: guards.urlSafety, policy: guards.policy });
  }
}

/** Every configured API key, so logs and messages can scrub them. */
export function configuredSecrets(config: WebBackendsConfig, env: Env): string[] {
  return SEARCH_BACKENDS.map((n) => vendorOptions(n, config, env).apiKey).filter((k): k is string => Boolean(k));
}
