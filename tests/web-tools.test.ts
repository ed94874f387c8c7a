// web_search / web_extract behaviour around the backends: input validation, summarisation,
// progress events through a real agent stream, the debug log, and the retry/error helpers.
process.env.NO_PROXY = "127.0.0.1,localhost";
process.env.no_proxy = "127.0.0.1,localhost";

import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { AIMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import type { StructuredTool } from "@langchain/core/tools";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import {
  backoffDelay,
  describeFailure,
  errorMessage,
  parseRetryAfter,
  resolveRetryPolicy,
  withRetries,
} from "../src/web/retry.js";
import { createWebTools, type WebProgressEvent, type WebToolsOptions } from "../tools/webTools.js";
import { FAKE_KEYS, FakeVendors, fakePublicLookup, fakeVendorEnv, useFakeVendors } from "./helpers/fakeVendors.js";

let fake: FakeVendors;
let tmp: string;
useFakeVendors((f) => (fake = f));
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "web-tools-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

function tools(extra: Partial<WebToolsOptions> = {}, env: Record<string, string> = {}): [StructuredTool, StructuredTool] {
  const [search, extract] = createWebTools({
    env: { ...fakeVendorEnv(fake, ["tavily"]), ...env },
    urlSafety: { lookup: fakePublicLookup },
    policy: { respectRobots: "off" },
    summarizer: false,
    backends: { tavily: { retry: { attempts: 1 } } },
    ...extra,
  });
  return [search!, extract!];
}

async function call(t: StructuredTool, args: unknown): Promise<any> {
  return JSON.parse((await t.invoke(args)) as string);
}

describe("input validation returns guidance, never throws", () => {
  test("web_search: empty query and out-of-range limits", async () => {
    const [search] = tools();
    assert.match((await call(search, { query: "   " })).error, /query is empty/);
    for (const limit of [0, 21, 2.5]) {
      const out = await call(search, { query: "x", limit });
      assert.equal(out.success, false);
      assert.match(out.error, /limit must be an integer from 1 to 20/);
    }
    assert.equal(fake.requests.length, 0);
    const ok = await call(search, { query: "x", limit: 20 });
    assert.equal(ok.data.web.length, 20);
  });

  test("web_extract: zero or too many URLs; maxUrls is configurable", async () => {
    const [, extract] = tools();
    assert.match((await call(extract, { urls: [] })).error, /1 to 10 URLs \(got 0\)/);
    const eleven = Array.from({ length: 11 }, (_, i) => `https://example.com/${i}`);
    assert.match((await call(extract, { urls: eleven })).error, /split longer lists/);
    const [, wide] = tools({ maxUrls: 20 });
    assert.equal((await call(wide, { urls: eleven })).results.length, 11);
  });

  test("invalid URLs fail alone", async () => {
    const [, extract] = tools();
    const out = await call(extract, { urls: ["not a url", "https://example.com/fine"] });
    assert.match(out.results[0].error, /not a valid absolute URL/);
    assert.equal(out.results[1].error, null);
  });
});

describe("robustness", () => {
  test("a misbehaving custom backend yields error results, never an exception", async () => {
    const broken = {
      name: "tavily" as const,
      async search(): Promise<never> {
        throw new TypeError("boom");
      },
      async extract() {
        return undefined as never;
      },
    };
    const [search, extract] = tools({ searchBackend: broken, extractBackend: broken });
    const s = await call(search, { query: "q" });
    assert.equal(s.success, false);
    assert.match(s.error, /boom/);
    const e = await call(extract, { urls: ["https://example.com/a"] });
    assert.match(e.results[0].error, /returned no result list/);

    let armed = false;
    const cursed = {
      get name(): string {
        if (armed) throw new Error("cursed getter");
        return "tavily";
      },
      async extract() {
        return [];
      },
    };
    const [, extract2] = tools({ extractBackend: cursed as never });
    armed = true;
    const e2 = await call(extract2, { urls: ["https://example.com/a"] });
    assert.equal(e2.success, false);
    assert.match(e2.error, /^internal error: cursed getter/);
  });
});

describe("keyless fetch backend through the tool", () => {
  test("the blocklist and the SSRF guard apply before the fetch backend connects", async () => {
    const seen: string[] = [];
    const site = createServer((req, res) => {
      seen.push(`${req.headers.host}${req.url}`);
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><head><title>Local</title></head><body><article><h1>Local page</h1><p>Readable text here.</p></article></body></html>");
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    const { port } = site.address() as AddressInfo;
    try {
      // No search backend configured: web_search is left out, web_extract is keyless.
      const extract = (createWebTools({
        env: {},
        searchBackend: false,
        urlSafety: { lookup: fakePublicLookup, allowHosts: ["127.0.0.1", "localhost"] },
        policy: { respectRobots: "off", blocklist: { domains: ["localhost"] } },
        summarizer: false,
      }) as StructuredTool[]).find((t) => t.name === "web_extract");
      const out = await call(extract!, {
        urls: [`http://127.0.0.1:${port}/ok`, `http://localhost:${port}/blocked`, "http://169.254.169.254/latest/meta-data/"],
      });
      assert.equal(out.backend, "fetch");
      const [ok, blocked, meta] = out.results;
      assert.equal(ok.error, null);
      assert.match(ok.content, /Local page/);
      assert.equal(blocked.blocked_by_policy.rule, "localhost");
      assert.match(meta.error, /URL refused/);
      assert.deepEqual(seen, [`127.0.0.1:${port}/ok`]);
    } finally {
      site.closeAllConnections();
      await new Promise<void>((resolve) => site.close(() => resolve()));
    }
  });
});

describe("summarisation", () => {
  const long = `# Big page\n\n${"Lorem ipsum dolor sit amet. ".repeat(300)}`;

  test("long pages are summarised with the compression ratio; short pages and summarize:false stay raw", async () => {
    const model = fakeModel().respond(new AIMessage("A short summary of the big page."));
    const [, extract] = tools({ summarizer: model, summary: { retries: 0 } });
    fake.pages.set("https://example.com/big", { title: "Big", content: long });
    fake.pages.set("https://example.com/small", { title: "Small", content: "tiny page" });
    const out = await call(extract, { urls: ["https://example.com/big", "https://example.com/small"] });
    const [big, small] = out.results;
    assert.equal(big.summarized, true);
    assert.equal(big.content, "A short summary of the big page.");
    assert.equal(big.original_chars, long.length);
    assert.ok(big.compression_ratio > 100, String(big.compression_ratio));
    assert.equal(small.content, "tiny page");
    assert.equal(small.summarized, undefined);
    assert.equal(model.calls.length, 1, "only the long page went to the model");

    const raw = await call(extract, { urls: ["https://example.com/big"], summarize: false });
    assert.equal(raw.results[0].content, long);
    assert.equal(model.calls.length, 1);
  });

  test("a failing summariser returns the truncated raw page with a note", async () => {
    const model = fakeModel().alwaysThrow(new Error("model down"));
    const [, extract] = tools({ summarizer: model, summary: { retries: 0 } });
    fake.pages.set("https://example.com/big", { title: "Big", content: long });
    const out = await call(extract, { urls: ["https://example.com/big"] });
    const r = out.results[0];
    assert.equal(r.error, null);
    assert.ok(r.content.length > 0 && r.content.length <= 5_500, String(r.content.length));
    assert.ok(long.startsWith(r.content.slice(0, 100)));
    assert.match(r.warning, /summarisation failed/);
  });

  test("without summarisation, oversized pages are cut at maxContentChars with a warning", async () => {
    const [, extract] = tools({ maxContentChars: 1_000 });
    fake.pages.set("https://example.com/big", { title: "Big", content: long });
    const r = (await call(extract, { urls: ["https://example.com/big"] })).results[0];
    assert.equal(r.content, long.slice(0, 1_000));
    assert.equal(r.original_chars, long.length);
    assert.match(r.warning, /cut to the first 1000 of/);
  });

  test("summarize:true without a summariser says how to configure one", async () => {
    const [, extract] = tools();
    const out = await call(extract, { urls: ["https://example.com/a"], summarize: true });
    assert.match(out.results[0].warning, /WORKBENCH_SUMMARY_MODEL/);
  });
});

describe("progress events", () => {
  test("web_extract progress reaches a real agent's custom stream", async () => {
    const [search, extract] = tools();
    fake.failing.set("https://example.com/bad", "CRAWL_NOT_FOUND");
    const model = fakeModel()
      .respondWithTools([{ name: "web_extract", args: { urls: ["https://example.com/a", "https://example.com/bad", "http://169.254.169.254/"] }, id: "call_1" }])
      .respond(new AIMessage("done"));
    const agent = createAgent({ model, tools: [search, extract], checkpointer: new MemorySaver() });
    const events: WebProgressEvent[] = [];
    const stream = await agent.stream(
      { messages: [{ role: "user", content: "read these" }] },
      { configurable: { thread_id: "progress" }, streamMode: "custom" },
    );
    for await (const chunk of stream) events.push(chunk as WebProgressEvent);

    assert.ok(events.length > 0, "custom events were streamed");
    for (const e of events) {
      assert.equal(e.type, "web_progress");
      assert.equal(e.tool, "web_extract");
      assert.equal(e.total, 3);
    }
    const stagesOf = (url: string) => events.filter((e) => e.url === url).map((e) => e.stage);
    assert.deepEqual(stagesOf("https://example.com/a"), ["checking", "fetching", "fetched", "done"]);
    assert.deepEqual(stagesOf("https://example.com/bad"), ["checking", "fetching", "fetched", "failed"]);
    assert.deepEqual(stagesOf("http://169.254.169.254/"), ["checking", "blocked"]);
    const finals = events.filter((e) => ["done", "failed", "blocked"].includes(e.stage)).map((e) => e.done);
    assert.deepEqual(finals.sort(), [1, 2, 3]);
  });
});

describe("debug log", () => {
  test("WEB_TOOLS_DEBUG=true writes logs/web_tools_debug_<uuid>.json, mode 0600, keys redacted", async () => {
    const dir = path.join(tmp, "logs");
    const [search, extract] = tools({ debug: { dir } }, { WEB_TOOLS_DEBUG: "true" });
    fake.failing.set("https://example.com/bad", "CRAWL_NOT_FOUND");
    await call(search, { query: "debug me", limit: 2 });
    await call(extract, { urls: [`https://example.com/a?api_key=${FAKE_KEYS.tavily}`, "https://example.com/bad", "http://169.254.169.254/"] });

    const files = await readdir(dir);
    assert.equal(files.length, 1);
    assert.match(files[0]!, /^web_tools_debug_[0-9a-f-]{36}\.json$/);
    const file = path.join(dir, files[0]!);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    const text = await readFile(file, "utf8");
    assert.ok(!text.includes(FAKE_KEYS.tavily), "the API key never reaches the log");
    const log = JSON.parse(text);
    assert.equal(log.calls.length, 2);
    const [s, e] = log.calls;
    assert.equal(s.tool, "web_search");
    assert.deepEqual(s.parameters, { query: "debug me", limit: 2 });
    assert.equal(s.backend, "tavily");
    assert.equal(s.result_count, 2);
    assert.equal(typeof s.duration_ms, "number");
    assert.ok(Date.parse(s.started_at));
    assert.equal(e.tool, "web_extract");
    assert.equal(e.backend, "tavily");
    assert.equal(e.urls.length, 3);
    assert.ok(e.urls[0].raw_chars > 0);
    assert.equal(e.urls[0].returned_chars, e.urls[0].raw_chars);
    assert.match(e.urls[1].error, /CRAWL_NOT_FOUND/);
    assert.match(e.urls[2].error, /URL refused/);
  });

  test("off by default", async () => {
    const dir = path.join(tmp, "nolog");
    const [search] = tools({ debug: { dir } });
    await call(search, { query: "q" });
    await assert.rejects(readdir(dir), { code: "ENOENT" });
  });
});

describe("retry and error helpers", () => {
  const policy = resolveRetryPolicy({ attempts: 4, baseDelayMs: 100, maxDelayMs: 5_000 });

  test("retry-after: seconds and HTTP dates; capped by maxDelayMs", () => {
    assert.equal(parseRetryAfter("3"), 3_000);
    assert.ok((parseRetryAfter(new Date(Date.now() + 10_000).toUTCString()) ?? 0) > 8_000);
    assert.equal(parseRetryAfter("soon"), undefined);
    assert.equal(backoffDelay(policy, 1, { status: 429, retryAfterMs: 2_000 }), 2_000);
    assert.equal(backoffDelay(policy, 1, { status: 429, retryAfterMs: 60_000 }), 5_000);
    const d = backoffDelay(policy, 3, { status: 503 });
    assert.ok(d >= 320 && d <= 480, String(d));
  });

  test("withRetries waits what retry-after says, retries 429/5xx only, and stops at the bound", async () => {
    const waits: number[] = [];
    const wait = async (ms: number) => void waits.push(ms);
    let n = 0;
    const rateLimited = Object.assign(new Error("slow down"), { status: 429, headers: new Headers({ "retry-after": "2" }) });
    const value = await withRetries(async () => (++n < 3 ? Promise.reject(rateLimited) : "ok"), policy, undefined, wait);
    assert.equal(value, "ok");
    assert.deepEqual(waits, [2_000, 2_000]);

    n = 0;
    await assert.rejects(withRetries(async () => (n++, Promise.reject(Object.assign(new Error("bad"), { status: 400 }))), policy, undefined, wait));
    assert.equal(n, 1, "400 is not retried");

    n = 0;
    await assert.rejects(withRetries(async () => (n++, Promise.reject(Object.assign(new Error("down"), { statusCode: 502 }))), policy, undefined, wait));
    assert.equal(n, 4, "bounded by attempts");
  });

  test("SDK error shapes are understood", () => {
    assert.equal(describeFailure(new Error('429 Error: {"detail":"x"}')).status, 429);
    assert.equal(describeFailure(new Error("Rate limit exceeded. Please retry after 35s, resets at noon")).retryAfterMs, 35_000);
    assert.equal(describeFailure({ response: { status: 503, headers: { "retry-after": "1" } } }).retryAfterMs, 1_000);
    assert.equal(describeFailure(Object.assign(new Error("socket hang up"), { code: "ECONNRESET" })).transient, true);
  });

  test("errorMessage is one line, names the status, and scrubs keys", () => {
    const key = "tvly-dev-abcdefghijklmnopqrstuvwxyz012345";
    const err = Object.assign(new Error(`Unauthorized\nkey ${key} rejected; Authorization: Bearer ${key}`), { status: 401 });
    const msg = errorMessage("tavily", "search", err, [key]);
    assert.match(msg, /^tavily search failed: HTTP 401 \(invalid or missing API key\)/);
    assert.doesNotMatch(msg, /\n/);
    assert.ok(!msg.includes(key), msg);
  });
});
