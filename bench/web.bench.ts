/**
 * `web_extract` of 20 URLs whose responses take 200 ms each, against one URL, for every backend
 * (the real SDKs against the loopback fake vendor server; the fetch backend against a loopback
 * site). Target: 20 URLs ≤ 1.5× one URL. Batched vendors (Tavily, Exa, Parallel) answer the 20
 * URLs in one 200 ms request; Firecrawl and fetch issue one request per URL, so their figure
 * depends on the concurrency setting — shown at the default and at 20.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { StructuredTool } from "@langchain/core/tools";
import { HtmlConversionPool } from "../src/web/htmlWorkerPool.js";
import { createWebTools, type WebToolsOptions } from "../tools/webTools.js";
import { FakeVendors, fakePublicLookup, fakeVendorEnv, type Vendor } from "../tests/helpers/fakeVendors.js";
import { fmt, median, timeRuns } from "./fixtures.js";

const DELAY_MS = 200;
const URLS = 20;
/** The big-page table: this many pages of about BIG_PAGE_CHARS characters of HTML each. */
const BIG_URLS = 10;
const BIG_PAGE_CHARS = 100_000;

function bigPage(title: string): string {
  const block =
    "<h2>Section</h2><p>Some article text with <a href='/docs/x'>links</a>, <b>bold</b> words and figures like 42 ms. " +
    "It goes on for a while to look like a real paragraph of documentation.</p>\n" +
    "<pre><code>const x = await fetch(url);</code></pre>\n<ul><li>one</li><li>two</li></ul>\n";
  return `<!doctype html><html><head><title>${title}</title></head><body><nav>${"<a href='/m'>menu</a> ".repeat(50)}</nav><article>${block.repeat(
    Math.ceil(BIG_PAGE_CHARS / block.length),
  )}</article></body></html>`;
}

interface Case {
  label: string;
  vendor?: Vendor;
  options: Partial<WebToolsOptions>;
}

async function startSlowSite(): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    setTimeout(() => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      if (req.url?.startsWith("/big/")) return void res.end(bigPage(`Page ${req.url}`));
      res.end(`<!doctype html><html><head><title>Page ${req.url}</title></head><body><article><h1>Page ${req.url}</h1><p>${"Some readable text. ".repeat(40)}</p></article></body></html>`);
    }, DELAY_MS);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  process.env.NO_PROXY = "127.0.0.1,localhost";
  const runs = quick ? 3 : 7;
  const fake = await FakeVendors.start();
  const site = await startSlowSite();
  fake.delayMs = DELAY_MS;
  const cases: Case[] = [
    { label: "tavily", vendor: "tavily", options: {} },
    { label: "exa", vendor: "exa", options: {} },
    { label: "parallel", vendor: "parallel", options: {} },
    { label: "firecrawl (default concurrency 20)", vendor: "firecrawl", options: {} },
    { label: "firecrawl (concurrency 10)", vendor: "firecrawl", options: { backends: { firecrawl: { concurrency: 10 } } } },
    { label: "fetch (default concurrency 20)", options: {} },
    { label: "fetch (concurrency 5)", options: { backends: { fetch: { concurrency: 5 } } } },
  ];
  const rows: string[] = [];
  const bigRows: string[] = [];
  try {
    for (const c of cases) {
      const tools = createWebTools({
        env: c.vendor ? fakeVendorEnv(fake, [c.vendor]) : {},
        urlSafety: { lookup: fakePublicLookup, allowHosts: ["127.0.0.1"] },
        policy: { respectRobots: "off" },
        summarizer: false,
        maxUrls: URLS,
        ...c.options,
      });
      const extract = tools[1] as StructuredTool;
      const base = c.vendor ? "https://example.com" : site.origin;
      const urls = Array.from({ length: URLS }, (_, i) => `${base}/page/${i}`);
      const once = async (list: string[]) => {
        const out = JSON.parse((await extract.invoke({ urls: list })) as string);
        const failed = out.results.filter((r: { error: string | null }) => r.error);
        if (failed.length) throw new Error(`${c.label}: ${failed.length} URLs failed: ${failed[0].error}`);
      };
      const one = median(await timeRuns(() => once(urls.slice(0, 1)), runs));
      const twenty = median(await timeRuns(() => once(urls), runs));
      const ratio = twenty / one;
      rows.push(`| ${c.label} | ${fmt(one)} | ${fmt(twenty)} | ${ratio.toFixed(2)}× | ${ratio <= 1.5 ? "yes" : "no"} |`);
    }
    bigRows.push(...(await bigPageRows(site.origin, runs)));
  } finally {
    await fake.close();
    await site.close();
  }
  return [
    "## Web extraction: 20 URLs vs 1 URL",
    "",
    `Each fake response takes ${DELAY_MS} ms (one batched request for Tavily/Exa/Parallel, one request per URL`,
    "for Firecrawl and fetch). Real SDKs against loopback servers; median of " + runs + " runs after a warm-up;",
    "the anchor is one URL through the same backend in the same run. Target: ratio ≤ 1.5×.",
    "",
    "| backend | 1 URL (ms) | 20 URLs (ms) | ratio | ≤ 1.5× |",
    "|---|---:|---:|---:|:---:|",
    ...rows,
    "",
    `### fetch: ${BIG_URLS} pages of ${BIG_PAGE_CHARS.toLocaleString("en")} HTML characters, HTML → Markdown in-thread vs worker pool`,
    "",
    "Same site and delay. The event-loop stall is the longest gap between ticks of a 5 ms interval timer during",
    "one call: how long every other tool, stream and timer of the agent can be kept waiting.",
    "Anchor: the same call with conversion on the main thread, in the same run.",
    "",
    "| conversion | wall (ms) | wall / anchor | max event-loop stall (ms) | stall / anchor |",
    "|---|---:|---:|---:|---:|",
    ...bigRows,
  ].join("\n");
}

/** Wall time and worst event-loop stall of one `web_extract` of the big pages, in-thread and pooled. */
async function bigPageRows(origin: string, runs: number): Promise<string[]> {
  const urls = Array.from({ length: BIG_URLS }, (_, i) => `${origin}/big/${i}`);
  const pools = {
    "in-thread (anchor)": new HtmlConversionPool({ inlineBelowChars: Number.MAX_SAFE_INTEGER }),
    "worker pool (default)": new HtmlConversionPool(),
  };
  const measured: Array<{ label: string; wall: number; stall: number }> = [];
  try {
    for (const [label, htmlPool] of Object.entries(pools)) {
      const extract = createWebTools({
        env: {},
        urlSafety: { lookup: fakePublicLookup, allowHosts: ["127.0.0.1"] },
        policy: { respectRobots: "off" },
        summarizer: false,
        maxUrls: BIG_URLS,
        backends: { fetch: { htmlPool } },
      })[1] as StructuredTool;
      const stalls: number[] = [];
      const walls = await timeRuns(async () => {
        let last = performance.now();
        let worst = 0;
        const ticker = setInterval(() => {
          const now = performance.now();
          worst = Math.max(worst, now - last);
          last = now;
        }, 5);
        const out = JSON.parse((await extract.invoke({ urls })) as string);
        clearInterval(ticker);
        stalls.push(Math.max(worst, performance.now() - last));
        if (out.results.some((r: { error: string | null }) => r.error)) throw new Error(`${label}: a big page failed`);
      }, runs);
      measured.push({ label, wall: median(walls), stall: median(stalls.slice(1)) });
    }
  } finally {
    await pools["worker pool (default)"].close();
  }
  const anchor = measured[0]!;
  return measured.map(
    (m) => `| ${m.label} | ${fmt(m.wall)} | ${(m.wall / anchor.wall).toFixed(2)}× | ${fmt(m.stall)} | ${(m.stall / anchor.stall).toFixed(2)}× |`,
  );
}
