/**
 * One loopback HTTP server speaking the wire formats of Tavily, Exa, Firecrawl (v2) and Parallel
 * (v1), so the real SDKs can be tested end to end. Each vendor lives under its own prefix
 * (`/tavily`, `/exa`, `/firecrawl`, `/parallel`) because Tavily and Exa share `/search`; the
 * recorded `path` is the vendor path without the prefix.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach } from "node:test";

export type Vendor = "tavily" | "exa" | "firecrawl" | "parallel";
export const VENDORS: readonly Vendor[] = ["tavily", "exa", "firecrawl", "parallel"];

export interface RecordedRequest {
  vendor: Vendor;
  method: string;
  /** Vendor path, e.g. `/v2/scrape`. */
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

/** A scripted response replacing the normal one for the next `times` matching requests. */
export interface Fault {
  status?: number;
  headers?: Record<string, string>;
  /** JSON body (object) or raw text. */
  body?: unknown;
  /** Sends `{"results": [` — truncated JSON with a JSON content type. */
  malformed?: boolean;
  /** Wait before answering (the normal answer when only this is set). */
  delayMs?: number;
  /** How many requests it applies to. Default 1. */
  times?: number;
}

/** Keys the fake accepts; anything else gets the vendor's 401. */
export const FAKE_KEYS: Record<Vendor, string> = {
  tavily: "tvly-dev-fakekey0000000000000000001",
  exa: "2f8b7c1e-0000-4000-8000-00000000e3a1",
  firecrawl: "fc-fakekey00000000000000000000001",
  parallel: "par-fakekey0000000000000000000001",
};

const AUTH_ERROR: Record<Vendor, unknown> = {
  tavily: { detail: { error: "Unauthorized: missing or invalid API key." } },
  exa: { requestId: "req-401", error: "Invalid API key", tag: "INVALID_API_KEY" },
  firecrawl: { success: false, error: "Unauthorized: Invalid token" },
  parallel: { error: { message: "Invalid API key provided", ref_id: "ref-401" } },
};

export interface FakePage {
  title: string;
  content: string;
}

export class FakeVendors {
  readonly requests: RecordedRequest[] = [];
  /** Per-URL content; unknown URLs get a generated page. */
  readonly pages = new Map<string, FakePage>();
  /** URLs the vendor fails to fetch (per-URL failure in each vendor's own format). */
  readonly failing = new Map<string, string>();
  /** Final URLs reported for redirected pages (Firecrawl `metadata.url`). */
  readonly redirects = new Map<string, string>();
  /** Added to every successful answer, per request (a batched request waits once). */
  delayMs = 0;
  /** Firecrawl self-hosted mode: requests without Authorization are accepted. */
  firecrawlKeyless = false;
  private readonly faults = new Map<string, Fault[]>();
  private readonly sockets = new Set<import("node:net").Socket>();

  private constructor(
    private readonly server: Server,
    readonly origin: string,
  ) {
    server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
  }

  static async start(): Promise<FakeVendors> {
    const holder: { fake?: FakeVendors } = {};
    const server = createServer((req, res) => {
      void holder.fake!.handle(req, res);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    holder.fake = new FakeVendors(server, `http://127.0.0.1:${port}`);
    return holder.fake;
  }

  baseUrl(vendor: Vendor): string {
    return `${this.origin}/${vendor}`;
  }

  /** Queues a fault for `vendor` requests to `path` (e.g. `/v2/scrape`). */
  fault(vendor: Vendor, path: string, fault: Fault): void {
    const key = `${vendor} ${path}`;
    const list = this.faults.get(key) ?? [];
    list.push({ times: 1, ...fault });
    this.faults.set(key, list);
  }

  requestsFor(vendor: Vendor, path?: string): RecordedRequest[] {
    return this.requests.filter((r) => r.vendor === vendor && (path === undefined || r.path === path));
  }

  reset(): void {
    this.requests.length = 0;
    this.pages.clear();
    this.failing.clear();
    this.redirects.clear();
    this.faults.clear();
    this.delayMs = 0;
    this.firecrawlKeyless = false;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  page(url: string): FakePage {
    return this.pages.get(url) ?? { title: `Title of ${url}`, content: `# Page ${url}\n\nThe content of ${url}.` };
  }

  private takeFault(vendor: Vendor, path: string): Fault | undefined {
    const list = this.faults.get(`${vendor} ${path}`);
    const fault = list?.[0];
    if (!fault) return undefined;
    fault.times = (fault.times ?? 1) - 1;
    if (fault.times <= 0) list!.shift();
    return fault;
  }

  private async handle(req: import("node:http").IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = raw;
    }
    const [, prefix, ...rest] = (req.url ?? "/").split("?")[0]!.split("/");
    const vendor = prefix as Vendor;
    const path = `/${rest.join("/")}`;
    if (!VENDORS.includes(vendor)) return send(res, 404, { error: "unknown vendor prefix" });
    this.requests.push({ vendor, method: req.method ?? "", path, headers: req.headers, body });

    if (!this.authorised(vendor, req.headers)) return send(res, 401, AUTH_ERROR[vendor]);
    const fault = this.takeFault(vendor, path);
    const delay = fault?.delayMs ?? this.delayMs;
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    if (fault?.malformed) {
      res.writeHead(fault.status ?? 200, { "content-type": "application/json", ...fault.headers });
      return void res.end('{"results": [');
    }
    if (fault && (fault.status !== undefined || fault.body !== undefined)) {
      return send(res, fault.status ?? 200, fault.body ?? {}, fault.headers);
    }
    const answer = this.answer(vendor, path, body);
    if (!answer) return send(res, 404, { error: `no such endpoint ${path}` });
    return send(res, answer.status ?? 200, answer.body);
  }

  private authorised(vendor: Vendor, headers: IncomingHttpHeaders): boolean {
    if (vendor === "exa" || vendor === "parallel") return headers["x-api-key"] === FAKE_KEYS[vendor];
    if (vendor === "firecrawl" && this.firecrawlKeyless && headers.authorization === undefined) return true;
    return headers.authorization === `Bearer ${FAKE_KEYS[vendor]}`;
  }

  private searchHits(query: string, n: number): Array<{ url: string; title: string; snippet: string }> {
    return Array.from({ length: Math.max(0, Math.min(n, 25)) }, (_, i) => ({
      url: `https://example.com/${encodeURIComponent(query)}/${i + 1}`,
      title: `Result ${i + 1} for ${query}`,
      snippet: `Snippet ${i + 1} about ${query}.`,
    }));
  }

  private answer(vendor: Vendor, path: string, body: any): { status?: number; body: unknown } | undefined {
    const key = `${vendor} ${path}`;
    switch (key) {
      case "tavily /search":
        return {
          body: {
            query: body.query,
            results: this.searchHits(body.query, body.max_results ?? 5).map((h, i) => ({
              title: h.title, url: h.url, content: h.snippet, score: 0.9 - i * 0.01, raw_content: null,
            })),
            images: [],
            response_time: 0.42,
            request_id: "tavily-req-1",
          },
        };
      case "tavily /extract": {
        const urls: string[] = body.urls ?? [];
        return {
          body: {
            results: urls.filter((u) => !this.failing.has(u)).map((u) => ({ url: u, title: this.page(u).title, raw_content: this.page(u).content, images: [] })),
            failed_results: urls.filter((u) => this.failing.has(u)).map((u) => ({ url: u, error: this.failing.get(u) })),
            response_time: 0.9,
            request_id: "tavily-req-2",
          },
        };
      }
      case "exa /search":
        return {
          body: {
            requestId: "exa-req-1",
            resolvedSearchType: "neural",
            results: this.searchHits(body.query, body.numResults ?? 10).map((h) => ({
              id: h.url, url: h.url, title: h.title, highlights: [h.snippet, "Second highlight."], highlightScores: [0.8, 0.5],
            })),
          },
        };
      case "exa /contents": {
        const urls: string[] = body.urls ?? [];
        return {
          body: {
            requestId: "exa-req-2",
            results: urls.filter((u) => !this.failing.has(u)).map((u) => ({ id: u, url: u, title: this.page(u).title, text: this.page(u).content })),
            statuses: urls.map((u) =>
              this.failing.has(u)
                ? { id: u, status: "error", source: "crawl", error: { tag: this.failing.get(u), httpStatusCode: 404 } }
                : { id: u, status: "success", source: "cached" },
            ),
          },
        };
      }
      case "firecrawl /v2/search":
        return {
          body: {
            success: true,
            data: { web: this.searchHits(body.query, body.limit ?? 5).map((h, i) => ({ url: h.url, title: h.title, description: h.snippet, position: i + 1 })) },
            creditsUsed: 1,
          },
        };
      case "firecrawl /v2/scrape": {
        const url: string = body.url;
        if (this.failing.has(url)) {
          return {
            body: { success: true, data: { markdown: "", metadata: { sourceURL: url, url, statusCode: 404, error: this.failing.get(url) } } },
          };
        }
        const final = this.redirects.get(url) ?? url;
        return {
          body: {
            success: true,
            data: { markdown: this.page(url).content, metadata: { title: this.page(url).title, sourceURL: url, url: final, statusCode: 200 } },
          },
        };
      }
      case "parallel /v1/search":
        return {
          body: {
            search_id: "search_1",
            session_id: "session_1",
            results: this.searchHits(body.search_queries?.[0] ?? "", body.advanced_settings?.max_results ?? 10).map((h) => ({
              url: h.url, title: h.title, excerpts: [h.snippet], publish_date: null,
            })),
          },
        };
      case "parallel /v1/extract": {
        const urls: string[] = body.urls ?? [];
        return {
          body: {
            extract_id: "extract_1",
            session_id: "session_1",
            results: urls.filter((u) => !this.failing.has(u)).map((u) => ({ url: u, title: this.page(u).title, full_content: this.page(u).content, excerpts: [] })),
            errors: urls.filter((u) => this.failing.has(u)).map((u) => ({ url: u, error_type: this.failing.get(u), http_status_code: 404, content: null })),
          },
        };
      }
      default:
        return undefined;
    }
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(text);
}

/**
 * The env that points every vendor at the fake (keys and base URLs), and keeps axios off any
 * proxy. Pass it as `createWebTools({ env })`; tests never rely on the real process env.
 */
export function fakeVendorEnv(fake: FakeVendors, vendors: readonly Vendor[] = VENDORS): Record<string, string> {
  const env: Record<string, string> = {};
  const vars: Record<Vendor, [string, string]> = {
    tavily: ["TAVILY_API_KEY", "TAVILY_BASE_URL"],
    exa: ["EXA_API_KEY", "EXA_BASE_URL"],
    firecrawl: ["FIRECRAWL_API_KEY", "FIRECRAWL_API_URL"],
    parallel: ["PARALLEL_API_KEY", "PARALLEL_BASE_URL"],
  };
  for (const v of vendors) {
    env[vars[v][0]] = FAKE_KEYS[v];
    env[vars[v][1]] = fake.baseUrl(v);
  }
  return env;
}

/** Public-looking DNS for test URLs (`example.com` and friends), so the SSRF guard can pass them without real DNS. */
export async function fakePublicLookup(host: string): Promise<string[]> {
  if (host === "localhost") return ["127.0.0.1"];
  return ["93.184.215.14"];
}

/**
 * Starts one fake server for the enclosing suite (or file), closes it after, and clears its
 * recorded requests and scripted faults before each test. `use` receives the running server.
 */
export function useFakeVendors(use: (fake: FakeVendors) => void): void {
  let fake: FakeVendors | undefined;
  before(async () => {
    fake = await FakeVendors.start();
    use(fake);
  });
  after(async () => {
    await fake?.close();
  });
  beforeEach(() => fake?.reset());
}
