// The real vendor SDKs against the loopback fake: requests they send, normalised outputs,
// per-URL failures, auth errors, retries, timeouts, malformed bodies, SSRF and policy blocking.
process.env.NO_PROXY = "127.0.0.1,localhost";
process.env.no_proxy = "127.0.0.1,localhost";

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { StructuredTool } from "@langchain/core/tools";
import { createWebTools, type WebToolsOptions } from "../tools/webTools.js";
import { FAKE_KEYS, FakeVendors, VENDORS, fakePublicLookup, fakeVendorEnv, type Vendor, useFakeVendors } from "./helpers/fakeVendors.js";

let fake: FakeVendors;
useFakeVendors((f) => (fake = f));

const FAST_RETRY = { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 };

const SEARCH_PATH: Record<Vendor, string> = { tavily: "/search", exa: "/search", firecrawl: "/v2/search", parallel: "/v1/search" };
const EXTRACT_PATH: Record<Vendor, string> = { tavily: "/extract", exa: "/contents", firecrawl: "/v2/scrape", parallel: "/v1/extract" };

function toolsFor(vendor: Vendor, extra: Partial<WebToolsOptions> = {}, env: Record<string, string | undefined> = {}) {
  const tools = createWebTools({
    env: { ...fakeVendorEnv(fake, [vendor]), ...env },
    urlSafety: { lookup: fakePublicLookup },
    policy: { respectRobots: "off" },
    summarizer: false,
    backends: { [vendor]: { retry: FAST_RETRY, timeoutMs: 5_000 } },
    ...extra,
  });
  return { search: tools[0] as StructuredTool, extract: tools[1] as StructuredTool };
}

async function call(t: StructuredTool, args: unknown): Promise<any> {
  return JSON.parse((await t.invoke(args)) as string);
}

/** URLs the vendor was asked to extract, across its extract requests. */
function urlsSent(vendor: Vendor): string[] {
  return fake.requestsFor(vendor, EXTRACT_PATH[vendor]).flatMap((r) => (vendor === "firecrawl" ? [r.body.url] : r.body.urls));
}

function assertAuth(vendor: Vendor, headers: Record<string, unknown>) {
  if (vendor === "exa" || vendor === "parallel") assert.equal(headers["x-api-key"], FAKE_KEYS[vendor]);
  else assert.equal(headers.authorization, `Bearer ${FAKE_KEYS[vendor]}`);
}

for (const vendor of VENDORS) {
  describe(`${vendor} through its SDK`, () => {
    test("web_search sends the vendor's request and returns the normalised shape", async () => {
      const { search } = toolsFor(vendor);
      const out = await call(search, { query: "zod schemas", limit: 3 });
      assert.equal(out.success, true);
      assert.equal(out.backend, vendor);
      assert.equal(out.data.web.length, 3);
      assert.deepEqual(out.data.web[0], {
        title: "Result 1 for zod schemas",
        url: "https://example.com/zod%20schemas/1",
        description: vendor === "exa" ? "Snippet 1 about zod schemas. … Second highlight." : "Snippet 1 about zod schemas.",
        position: 1,
      });
      assert.deepEqual(out.data.web.map((r: any) => r.position), [1, 2, 3]);

      const [req] = fake.requestsFor(vendor);
      assert.ok(req);
      assert.equal(req.method, "POST");
      assert.equal(req.path, SEARCH_PATH[vendor]);
      assertAuth(vendor, req.headers);
      const body = req.body;
      if (vendor === "tavily") assert.deepEqual([body.query, body.max_results], ["zod schemas", 3]);
      if (vendor === "exa") assert.deepEqual([body.query, body.numResults, body.contents], ["zod schemas", 3, { highlights: true }]);
      if (vendor === "firecrawl") assert.deepEqual([body.query, body.limit], ["zod schemas", 3]);
      if (vendor === "parallel") {
        assert.deepEqual(body.search_queries, ["zod schemas"]);
        assert.equal(body.objective, "zod schemas");
        assert.equal(body.mode, "fast");
        assert.deepEqual(body.advanced_settings, { max_results: 3 });
      }
    });

    test("web_extract keeps each URL independent and reports vendor per-URL failures", async () => {
      const { extract } = toolsFor(vendor);
      fake.pages.set("https://docs.example.com/a", { title: "Doc A", content: "# A\n\nAlpha ![x](data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==) text" });
      fake.failing.set("https://docs.example.com/missing", "CRAWL_NOT_FOUND");
      const out = await call(extract, { urls: ["https://docs.example.com/a", "https://docs.example.com/missing"] });
      assert.equal(out.backend, vendor);
      const [a, missing] = out.results;
      assert.equal(a.url, "https://docs.example.com/a");
      assert.equal(a.title, "Doc A");
      assert.equal(a.error, null);
      assert.match(a.content, /Alpha/);
      assert.doesNotMatch(a.content, /base64/, "inline base64 images are stripped");
      assert.equal(missing.url, "https://docs.example.com/missing");
      assert.equal(missing.content, "");
      assert.match(missing.error, new RegExp(`^${vendor} could not extract this URL: CRAWL_NOT_FOUND`));

      const reqs = fake.requestsFor(vendor, EXTRACT_PATH[vendor]);
      for (const r of reqs) {
        assert.equal(r.method, "POST");
        assertAuth(vendor, r.headers);
      }
      if (vendor === "firecrawl") {
        assert.equal(reqs.length, 2, "one scrape per URL");
        for (const r of reqs) assert.deepEqual(r.body.formats, ["markdown"]);
      } else {
        assert.equal(reqs.length, 1, "one batched request");
        assert.deepEqual(reqs[0]!.body.urls, ["https://docs.example.com/a", "https://docs.example.com/missing"]);
        if (vendor === "exa") assert.equal(reqs[0]!.body.text, true);
        if (vendor === "parallel") assert.deepEqual(reqs[0]!.body.advanced_settings, { full_content: true });
        if (vendor === "tavily") assert.equal(reqs[0]!.body.format, "markdown");
      }
    });

    test("a rejected key gives a one-line error without the key", async () => {
      const wrongKey = vendor === "exa" ? "99999999-aaaa-4bbb-8ccc-dddddddddddd" : `${vendor}-wrong-key-1234567890abcdef`;
      const keyVar = { tavily: "TAVILY_API_KEY", exa: "EXA_API_KEY", firecrawl: "FIRECRAWL_API_KEY", parallel: "PARALLEL_API_KEY" }[vendor];
      const { search, extract } = toolsFor(vendor, {}, { [keyVar]: wrongKey });
      const s = await call(search, { query: "anything" });
      assert.equal(s.success, false);
      assert.match(s.error, new RegExp(`^${vendor} search failed`));
      assert.doesNotMatch(s.error, /\n/);
      assert.ok(!s.error.includes(wrongKey), s.error);
      if (vendor !== "tavily") assert.match(s.error, /HTTP 401/);
      const e = await call(extract, { urls: ["https://example.com/x"] });
      assert.equal(e.results[0].content, "");
      assert.ok(!e.results[0].error.includes(wrongKey));
      assert.equal(fake.requestsFor(vendor, SEARCH_PATH[vendor]).length, 1, "401 is not retried");
    });

    test("429 is retried and then succeeds", async () => {
      const { search } = toolsFor(vendor);
      const headers: Record<string, string> = vendor === "parallel" ? { "retry-after-ms": "1" } : { "retry-after": "0" };
      fake.fault(vendor, SEARCH_PATH[vendor], { status: 429, headers, body: vendor === "tavily" ? { detail: { error: "Rate limit exceeded" } } : { error: "Rate limit exceeded" } });
      const out = await call(search, { query: "retry me" });
      assert.equal(out.success, true, JSON.stringify(out));
      assert.equal(fake.requestsFor(vendor, SEARCH_PATH[vendor]).length, 2);
    });

    test("persistent 500 stops after the bounded attempts with a one-line error", async () => {
      const { extract } = toolsFor(vendor);
      const headers: Record<string, string> = vendor === "parallel" ? { "retry-after-ms": "1" } : {};
      fake.fault(vendor, EXTRACT_PATH[vendor], { status: 500, headers, body: { error: "internal error" }, times: 10 });
      const out = await call(extract, { urls: ["https://example.com/one"] });
      const err: string = out.results[0].error;
      assert.ok(err, "error reported");
      assert.doesNotMatch(err, /\n/);
      assert.equal(fake.requestsFor(vendor, EXTRACT_PATH[vendor]).length, FAST_RETRY.attempts);
    });

    test("a malformed JSON body becomes a per-URL error, not an exception", async () => {
      const { extract } = toolsFor(vendor, { backends: { [vendor]: { retry: { attempts: 1 } } } });
      fake.fault(vendor, EXTRACT_PATH[vendor], { malformed: true });
      const out = await call(extract, { urls: ["https://example.com/m"] });
      assert.equal(out.results.length, 1);
      assert.equal(out.results[0].content, "");
      assert.match(out.results[0].error, new RegExp(`^${vendor}`));
      assert.doesNotMatch(out.results[0].error, /\n/);
    });

    if (vendor !== "firecrawl") {
      test("a batch rejected as a whole (400) is retried URL by URL", async () => {
        const { extract } = toolsFor(vendor);
        const body = vendor === "tavily" ? "Bad Request" : vendor === "parallel" ? { error: { message: "invalid url in batch" } } : { error: "invalid url in batch" };
        fake.fault(vendor, EXTRACT_PATH[vendor], { status: 400, body });
        const out = await call(extract, { urls: ["https://example.com/1", "https://example.com/2"] });
        assert.deepEqual(out.results.map((r: any) => r.error), [null, null]);
        assert.deepEqual(fake.requestsFor(vendor, EXTRACT_PATH[vendor]).map((r) => r.body.urls.length), [2, 1, 1]);
      });
    }

    test("a slow vendor times out within the configured timeout", async () => {
      const { search } = toolsFor(vendor, { backends: { [vendor]: { timeoutMs: 300, retry: { attempts: 1 } } } });
      fake.fault(vendor, SEARCH_PATH[vendor], { delayMs: 1_600 });
      const out = await call(search, { query: "slow" });
      assert.equal(out.success, false);
      assert.match(out.error, /time(d)? ?out/i);
    });

    test("SSRF targets and blocklisted hosts never reach the vendor", async () => {
      const { extract } = toolsFor(vendor, { policy: { respectRobots: "off", blocklist: { domains: ["*.blocked.example"] } } });
      const out = await call(extract, {
        urls: ["http://169.254.169.254/latest/meta-data/", "https://cdn.blocked.example/page", "https://ok.example.org/page", "file:///etc/passwd"],
      });
      const [meta, blocked, ok, file] = out.results;
      assert.match(meta.error, /^URL refused: .*metadata/);
      assert.equal(meta.blocked_by_policy, undefined);
      assert.match(blocked.error, /blocked by website policy/);
      assert.deepEqual(blocked.blocked_by_policy, { host: "cdn.blocked.example", rule: "*.blocked.example", source: "options" });
      assert.equal(ok.error, null);
      assert.match(file.error, /only http and https/);
      assert.deepEqual(urlsSent(vendor), ["https://ok.example.org/page"]);
    });

    test("only blocked URLs: the vendor is not called at all", async () => {
      const { extract } = toolsFor(vendor);
      const out = await call(extract, { urls: ["http://169.254.169.254/"] });
      assert.match(out.results[0].error, /URL refused/);
      assert.equal(fake.requests.length, 0);
    });

    test("a base URL with a trailing slash still hits the right path", async () => {
      const baseVar = { tavily: "TAVILY_BASE_URL", exa: "EXA_BASE_URL", firecrawl: "FIRECRAWL_API_URL", parallel: "PARALLEL_BASE_URL" }[vendor];
      const { search } = toolsFor(vendor, {}, { [baseVar]: `${fake.baseUrl(vendor)}/` });
      const out = await call(search, { query: "slash" });
      assert.equal(out.success, true, JSON.stringify(out));
      assert.equal(fake.requests[0]!.path, SEARCH_PATH[vendor]);
    });
  });
}

describe("firecrawl specifics", () => {
  test("a redirect reported by Firecrawl to a metadata address is refused", async () => {
    const { extract } = toolsFor("firecrawl");
    fake.redirects.set("https://short.example/x", "http://169.254.169.254/latest/meta-data/iam");
    fake.pages.set("https://short.example/x", { title: "creds", content: "AKIA-secret-stuff" });
    const out = await call(extract, { urls: ["https://short.example/x"] });
    assert.equal(out.results[0].content, "");
    assert.match(out.results[0].error, /^redirected to http:\/\/169\.254\.169\.254\/latest\/meta-data\/iam, which is refused/);
  });

  test("a redirect to a blocklisted host is refused with blocked_by_policy", async () => {
    const { extract } = toolsFor("firecrawl", { policy: { respectRobots: "off", blocklist: { domains: ["tracker.example"] } } });
    fake.redirects.set("https://short.example/y", "https://www.tracker.example/landing");
    const out = await call(extract, { urls: ["https://short.example/y"] });
    assert.equal(out.results[0].content, "");
    assert.equal(out.results[0].blocked_by_policy.rule, "tracker.example");
  });

  test("self-hosted without a key: FIRECRAWL_API_URL alone selects it and no Authorization is sent", async () => {
    fake.firecrawlKeyless = true;
    const [search, extract] = createWebTools({
      env: { FIRECRAWL_API_URL: fake.baseUrl("firecrawl") },
      urlSafety: { lookup: fakePublicLookup },
      policy: { respectRobots: "off" },
      summarizer: false,
    }) as StructuredTool[];
    const s = await call(search!, { query: "self hosted" });
    assert.equal(s.backend, "firecrawl");
    const e = await call(extract!, { urls: ["https://example.com/a"] });
    assert.equal(e.results[0].error, null);
    for (const r of fake.requestsFor("firecrawl")) assert.equal(r.headers.authorization, undefined);
  });
});

describe("parallel specifics", () => {
  test("the SDK's own retries are used, not doubled: attempts stay at the policy's count", async () => {
    const { search } = toolsFor("parallel", { backends: { parallel: { retry: { attempts: 2 } } } });
    fake.fault("parallel", "/v1/search", { status: 503, headers: { "retry-after-ms": "1" }, body: { error: { message: "busy" } }, times: 10 });
    const out = await call(search, { query: "busy" });
    assert.equal(out.success, false);
    assert.match(out.error, /HTTP 503/);
    assert.equal(fake.requestsFor("parallel", "/v1/search").length, 2);
  });
});
