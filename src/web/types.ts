import type { VendorName } from "./vendors/index.js";

/** Normalised shapes every web backend returns, whatever the vendor. */
export interface WebSearchResult {
  title: string;
  url: string;
  description: string;
  /** 1-based rank. */
  position: number;
}

export interface WebExtractResult {
  url: string;
  title: string;
  content: string;
  /** One line, no API keys; `null` on success. */
  error: string | null;
}

export interface WebSearchOptions {
  limit: number;
  signal?: AbortSignal;
}

export interface WebExtractOptions {
  signal?: AbortSignal;
  /** Called as each URL finishes, for progress events. */
  onUrlDone?: (url: string) => void;
}

/** One adapter per vendor (tavily, exa, firecrawl, parallel) plus the keyless `fetch`. */
export interface WebBackend {
  readonly name: WebBackendName;
  /** Absent when the backend cannot search (the keyless fetch backend). */
  search?(query: string, options: WebSearchOptions): Promise<WebSearchResult[]>;
  /** One result per input URL, in input order; per-URL failures go in `error`, never thrown. */
  extract(urls: string[], options: WebExtractOptions): Promise<WebExtractResult[]>;
}

/** A vendor from the table in `vendors/index.ts`, or the keyless `fetch`. */
export type WebBackendName = VendorName | "fetch";
