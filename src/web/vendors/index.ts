/**
 * The vendor table: every hosted web backend, in selection order (the first with credentials
 * wins). A new vendor is one adapter file in this folder plus one row here; selection, env
 * variables, the `backends` config type and secret scrubbing all read this table.
 */
import type { VendorOptions } from "../common.js";
import type { WebBackend } from "../types.js";
import { createExaBackend } from "./exa.js";
import { createFirecrawlBackend, type FirecrawlBackendOptions } from "./firecrawl.js";
import { createParallelBackend, type ParallelBackendOptions } from "./parallel.js";
import { createTavilyBackend } from "./tavily.js";

/** One hosted web backend. */
export interface VendorRow<Name extends string = string, Options extends VendorOptions = VendorOptions> {
  name: Name;
  /** Environment variable holding the API key. */
  envKey: string;
  /** Environment variable holding the base URL (self-hosting, proxies, tests). */
  baseUrlEnv: string;
  /** Usable without a key when a base URL is set (a self-hosted instance). */
  keylessWithBaseUrl?: boolean;
  /** Builds the adapter; throws a TypeError naming `envKey` when the key is missing. */
  create(options: Options): WebBackend;
}

function row<const Name extends string, Options extends VendorOptions>(spec: VendorRow<Name, Options>): VendorRow<Name, Options> {
  return spec;
}

/** Selection order: firecrawl > parallel > tavily > exa. */
export const VENDOR_TABLE = [
  row({ name: "firecrawl", envKey: "FIRECRAWL_API_KEY", baseUrlEnv: "FIRECRAWL_API_URL", keylessWithBaseUrl: true, create: (o: FirecrawlBackendOptions) => createFirecrawlBackend(o) }),
  row({ name: "parallel", envKey: "PARALLEL_API_KEY", baseUrlEnv: "PARALLEL_BASE_URL", create: (o: ParallelBackendOptions) => createParallelBackend(o) }),
  row({ name: "tavily", envKey: "TAVILY_API_KEY", baseUrlEnv: "TAVILY_BASE_URL", create: (o: VendorOptions) => createTavilyBackend(o) }),
  row({ name: "exa", envKey: "EXA_API_KEY", baseUrlEnv: "EXA_BASE_URL", create: (o: VendorOptions) => createExaBackend(o) }),
] as const;

type Rows = (typeof VENDOR_TABLE)[number];

/** A hosted vendor's name. */
export type VendorName = Rows["name"];

/** Per-vendor options, keyed by name (the `backends` option of `createWebTools`). */
export type VendorConfigs = { [R in Rows as R["name"]]?: Parameters<R["create"]>[0] };

/** The row of `name`, if it is a vendor. */
export function vendorRow(name: string): VendorRow | undefined {
  return (VENDOR_TABLE as readonly VendorRow<string, never>[]).find((r) => r.name === name) as VendorRow | undefined;
}
