// Backend selection: option > config > env switch > first key (firecrawl > parallel > tavily > exa)
// > keyless fetch (extraction only) > a clear error. Env is passed explicitly, never read from
// the real process environment.
process.env.NO_PROXY = "127.0.0.1,localhost";
process.env.no_proxy = "127.0.0.1,localhost";

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { StructuredTool } from "@langchain/core/tools";
import { selectBackend } from "../src/web/select.js";
import type { WebBackend } from "../src/web/types.js";
import { createWebTools } from "../tools/webTools.js";
import { FakeVendors, fakePublicLookup, fakeVendorEnv, useFakeVendors } from "./helpers/fakeVendors.js";

describe("selectBackend", () => {
  const keys = { FIRECRAWL_API_KEY: "fc-x", PARALLEL_API_KEY: "p", TAVILY_API_KEY: "t", EXA_API_KEY: "e" };

  test("first key present wins, in the order firecrawl > parallel > tavily > exa", () => {
    assert.equal(pick("search", keys), "firecrawl");
    assert.equal(pick("search", { ...keys, FIRECRAWL_API_KEY: undefined }), "parallel");
    assert.equal(pick("search", { TAVILY_API_KEY: "t", EXA_API_KEY: "e" }), "tavily");
    assert.equal(pick("search", { EXA_API_KEY: "e" }), "exa");
    assert.equal(pick("extract", { EXA_API_KEY: "e", PARALLEL_API_KEY: "p" }), "parallel");
  });

  test("a self-hosted Firecrawl URL counts as configured without a key", () => {
    assert.equal(pick("search", { FIRECRAWL_API_URL: "http://firecrawl.internal:3002", EXA_API_KEY: "e" }), "firecrawl");
  });

  test("blank keys are ignored", () => {
    assert.equal(pick("search", { FIRECRAWL_API_KEY: "  ", EXA_API_KEY: "e" }), "exa");
  });

  test("the configured name beats the env switch, which beats the keys; search and extract are separate", () => {
    assert.equal(pick("search", { ...keys, WEB_SEARCH_BACKEND: "exa" }), "exa");
    assert.equal(pick("extract", { ...keys, WEB_SEARCH_BACKEND: "exa" }), "firecrawl");
    assert.equal(pick("extract", { ...keys, WEB_EXTRACT_BACKEND: "Tavily" }), "tavily");
    assert.equal(pick("search", { ...keys, WEB_SEARCH_BACKEND: "exa" }, "parallel"), "parallel");
  });

  test("extraction falls back to the keyless fetch backend; search gives an error naming the env vars", () => {
    assert.equal(pick("extract", {}), "fetch");
    const s = selectBackend("search", { env: {} });
    assert.ok("error" in s);
    for (const v of ["FIRECRAWL_API_KEY", "FIRECRAWL_API_URL", "PARALLEL_API_KEY", "TAVILY_API_KEY", "EXA_API_KEY", "WEB_SEARCH_BACKEND"]) {
      assert.ok(s.error.includes(v), `${v} in: ${s.error}`);
    }
  });

  test("unknown names and fetch-for-search are rejected with the allowed list", () => {
    const bad = selectBackend("search", { env: { WEB_SEARCH_BACKEND: "bing" } });
    assert.ok("error" in bad && /bing.*firecrawl, parallel, tavily, exa/.test(bad.error));
    const fetchSearch = selectBackend("search", { configured: "fetch", env: {} });
    assert.ok("error" in fetchSearch);
    assert.equal(pick("extract", {}, "fetch"), "fetch");
  });

  function pick(task: "search" | "extract", env: Record<string, string | undefined>, configured?: string): string {
    const s = selectBackend(task, { env, configured });
    assert.ok("name" in s, JSON.stringify(s));
    return s.name;
  }
});

describe("createWebTools backend selection (real SDKs against the fake)", () => {
  let fake: FakeVendors;
  useFakeVendors((f) => (fake = f));

  const common = { urlSafety: { lookup: fakePublicLookup }, policy: { respectRobots: "off" as const }, summarizer: false as const };

  async function call(t: StructuredTool, args: unknown): Promise<any> {
    return JSON.parse((await t.invoke(args)) as string);
  }

  test("env with every vendor: firecrawl answers both tools, and reports it", async () => {
    const [search, extract] = createWebTools({ env: fakeVendorEnv(fake), ...common }) as StructuredTool[];
    assert.equal((await call(search!, { query: "q" })).backend, "firecrawl");
    assert.equal((await call(extract!, { urls: ["https://example.com/a"] })).backend, "firecrawl");
    assert.deepEqual([...new Set(fake.requests.map((r) => r.vendor))], ["firecrawl"]);
  });

  test("Tavily search with self-hosted Firecrawl extraction (separate backends from config)", async () => {
    const [search, extract] = createWebTools({
      env: fakeVendorEnv(fake, ["tavily", "firecrawl"]),
      searchBackend: "tavily",
      extractBackend: "firecrawl",
      ...common,
    }) as StructuredTool[];
    assert.equal((await call(search!, { query: "q" })).backend, "tavily");
    assert.equal((await call(extract!, { urls: ["https://example.com/a"] })).backend, "firecrawl");
    assert.deepEqual(fake.requests.map((r) => `${r.vendor} ${r.path}`), ["tavily /search", "firecrawl /v2/scrape"]);
  });

  test("WEB_SEARCH_BACKEND / WEB_EXTRACT_BACKEND pick per tool", async () => {
    const env = { ...fakeVendorEnv(fake), WEB_SEARCH_BACKEND: "exa", WEB_EXTRACT_BACKEND: "parallel" };
    const [search, extract] = createWebTools({ env, ...common }) as StructuredTool[];
    assert.equal((await call(search!, { query: "q" })).backend, "exa");
    assert.equal((await call(extract!, { urls: ["https://example.com/a"] })).backend, "parallel");
  });

  test("an explicit backend object beats config and env", async () => {
    const mine: WebBackend = {
      name: "tavily",
      async search() {
        return [{ title: "mine", url: "https://mine.example", description: "", position: 1 }];
      },
      async extract(urls) {
        return urls.map((url) => ({ url, title: "t", content: "from mine", error: null }));
      },
    };
    const [search, extract] = createWebTools({ env: fakeVendorEnv(fake), searchBackend: mine, extractBackend: mine, ...common }) as StructuredTool[];
    assert.equal((await call(search!, { query: "q" })).data.web[0].title, "mine");
    assert.equal((await call(extract!, { urls: ["https://example.com/a"] })).results[0].content, "from mine");
    assert.equal(fake.requests.length, 0);
  });

  test("no keys: web_search is left out with one build-time warning naming what to set; web_extract uses the keyless fetch backend", async () => {
    const warnings: string[] = [];
    const original = console.warn;
    console.warn = (...args: unknown[]) => void warnings.push(args.map(String).join(" "));
    let tools: StructuredTool[];
    try {
      tools = createWebTools({ env: {}, ...common }) as StructuredTool[];
    } finally {
      console.warn = original;
    }
    assert.deepEqual(tools.map((t) => t.name), ["web_extract"], "web_search is not offered to the model");
    assert.equal(warnings.length, 1, "one warning");
    assert.match(warnings[0]!, /TAVILY_API_KEY/);
    const [extract] = tools;
    // The fetch backend answers; the metadata URL is refused before any connection.
    const e = await call(extract!, { urls: ["http://169.254.169.254/"] });
    assert.equal(e.backend, "fetch");
    assert.match(e.results[0].error, /URL refused/);
  });

  test("a backend named in config without its key fails the build, naming the variable", () => {
    assert.throws(() => createWebTools({ env: {}, searchBackend: "exa", ...common }), /exa backend .* is not usable.*EXA_API_KEY/);
  });
});
