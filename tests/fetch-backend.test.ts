import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, symlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { WebsitePolicy } from "../src/guards/policy.js";
import { createFetchBackend } from "../src/web/fetchBackend.js";
import { htmlToMarkdown, stripDataImages } from "../src/web/htmlToMarkdown.js";
import { HtmlConversionPool } from "../src/web/htmlWorkerPool.js";
import { SafeFetchError, WORKBENCH_VERSION, safeFetch } from "../src/web/safeFetch.js";
import { ARTICLE_HTML, startSiteServer, type SiteServer } from "./helpers/siteServer.js";

const run = promisify(execFile);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

let site: SiteServer;
let other: SiteServer;
/** The site itself is on loopback, so tests open exactly 127.0.0.1 (and nothing else). */
const urlSafety = { allowPrivate: false, allowHosts: ["127.0.0.1"] };

before(async () => {
  site = await startSiteServer();
  other = await startSiteServer();
});
after(async () => {
  await site.close();
  await other.close();
});

const backend = (extra: Parameters<typeof createFetchBackend>[0] = {}) =>
  createFetchBackend({ urlSafety, timeoutMs: 3_000, ...extra });

describe("fetch backend: content", () => {
  it("is named fetch and cannot search", () => {
    const b = backend();
    assert.equal(b.name, "fetch");
    assert.equal(b.search, undefined);
  });

  it("turns an HTML article into readable Markdown with its title", async () => {
    const [result] = await backend().extract([site.url("/article")], {});
    assert.equal(result!.error, null);
    assert.equal(result!.title, "Guarded Fetching");
    const md = result!.content;
    assert.match(md, /pinned to the vetted address/);
    assert.match(md, /```\nconst verdict = await checkUrlSafety\(url\);\n```/);
    assert.match(md, /\| Range \| Blocked \|\n\| --- \| --- \|\n\| 10\.0\.0\.0\/8 \| yes \|/);
    assert.match(md, new RegExp(`\\[safety model\\]\\(${site.origin}/docs/safety\\)`));
    assert.doesNotMatch(md, /base64|iVBORw0KGgo/);
    assert.doesNotMatch(md, /window\.tracking|color: red/);
  });

  it("sends the workbench user agent", async () => {
    await backend().extract([site.url("/plain")], {});
    const request = site.requests.findLast((r) => r.path === "/plain");
    assert.match(String(request?.headers["user-agent"]), /^langgraph-workbench\/\d+\.\d+\.\d+ \(\+https:\/\/github\.com\//);
    const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    assert.equal(WORKBENCH_VERSION, pkg.version, "the user agent carries the package version");
  });

  it("passes text/plain and JSON through, decoding the declared charset", async () => {
    const [plain, json, latin1] = await backend().extract([site.url("/plain"), site.url("/data.json"), site.url("/latin1")], {});
    assert.equal(plain!.content, "plain text body\nsecond line");
    assert.deepEqual(JSON.parse(json!.content), { ok: true, items: [1, 2] });
    assert.equal(latin1!.content, "café");
  });

  it("sniffs HTML served without a content type", async () => {
    const [result] = await backend().extract([site.url("/untyped-html")], {});
    assert.equal(result!.title, "Untyped");
    assert.match(result!.content, /untyped page/);
  });

  it("refuses PDFs (declared or sniffed) and binaries with a clear per-URL error", async () => {
    const [pdf, sneaky, binary] = await backend().extract([site.url("/doc.pdf"), site.url("/sneaky-pdf"), site.url("/binary")], {});
    assert.match(pdf!.error ?? "", /PDF documents are not supported by the keyless fetch backend/);
    assert.match(sneaky!.error ?? "", /PDF/);
    assert.match(binary!.error ?? "", /unsupported content type application\/octet-stream/);
    assert.equal(pdf!.content, "");
  });

  it("keeps every URL independent and in input order", async () => {
    const urls = [site.url("/missing"), site.url("/article"), "http://169.254.169.254/", "ftp://x/", site.url("/plain")];
    const done: string[] = [];
    const results = await backend().extract(urls, { onUrlDone: (url) => done.push(url) });
    assert.deepEqual(
      results.map((r) => r.url),
      urls,
    );
    assert.match(results[0]!.error ?? "", /HTTP 404/);
    assert.equal(results[1]!.error, null);
    assert.match(results[2]!.error ?? "", /blocked by URL safety: .*metadata/);
    assert.match(results[3]!.error ?? "", /only http and https/);
    assert.equal(results[4]!.error, null);
    assert.deepEqual([...done].sort(), [...urls].sort());
  });

  it("keeps the article and drops navigation and footer at any size", () => {
    for (const page of [htmlToMarkdown(ARTICLE_HTML, "http://example.com/"), htmlToMarkdown(ARTICLE_HTML, "http://example.com/", { readabilityMaxChars: 100 })]) {
      assert.equal(page.title, "Guarded Fetching");
      assert.match(page.markdown, /\| 10\.0\.0\.0\/8 \| yes \|/);
      assert.doesNotMatch(page.markdown, /Site menu entries|Copyright footer/, "site chrome is dropped");
      assert.doesNotMatch(page.markdown, /base64|window\.tracking/);
    }
  });

  it("resolves relative links against the page's <base href>", () => {
    const page = htmlToMarkdown('<html><head><base href="https://cdn.example.com/v2/"></head><body><a href="api">API</a></body></html>', "https://example.com/a/b");
    assert.equal(page.markdown, "[API](https://cdn.example.com/v2/api)");
  });

  it("stops when the caller aborts", async () => {
    const controller = new AbortController();
    const pending = backend().extract([site.url("/slow")], { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const [result] = await pending;
    assert.match(result!.error ?? "", /request aborted/);
  });

  it("strips base64 images from text as well", () => {
    assert.equal(stripDataImages("a ![x](data:image/gif;base64,R0lGOD==) b"), "a  b");
    assert.equal(stripDataImages("src=data:image/png;base64,AAAA rest"), "src=[inline data removed] rest");
    assert.equal(htmlToMarkdown("<p>only <b>this</b></p>").markdown, "only **this**");
  });
});

describe("fetch backend: limits", () => {
  it("aborts a streamed body past maxBytes", async () => {
    const [result] = await backend({ maxBytes: 64 * 1024 }).extract([site.url("/huge")], {});
    assert.match(result!.error ?? "", /larger than the 65536-byte cap/);
  });

  it("refuses a declared content-length past maxBytes without reading it", async () => {
    const [result] = await backend({ maxBytes: 1024 }).extract([site.url("/huge-declared")], {});
    assert.match(result!.error ?? "", /larger than the 1024-byte cap/);
  });

  it("times out a slow page", async () => {
    const [result] = await backend({ timeoutMs: 200 }).extract([site.url("/slow")], {});
    assert.match(result!.error ?? "", /timed out after 200 ms/);
  });

  it("counts a hanging DNS lookup against the deadline", async () => {
    const never = () => new Promise<string[]>(() => undefined);
    const error = await safeFetch("http://hang.test/", { timeoutMs: 100, urlSafety: { lookup: never } }).catch((e) => e);
    assert.equal(error.code, "timeout");
  });

  it("reports a redirect to an unparsable URL", async () => {
    const [result] = await backend().extract([site.url(`/redirect/to?target=${encodeURIComponent("http://[bad")}`)], {});
    assert.match(result!.error ?? "", /redirected to an invalid URL: http:\/\/\[bad/);
  });

  it("rejects invalid options early", async () => {
    assert.throws(() => createFetchBackend({ concurrency: 0 }), RangeError);
    await assert.rejects(safeFetch(site.url("/plain"), { urlSafety, maxBytes: -1 }), RangeError);
  });
});

describe("fetch backend: redirects", () => {
  it("follows a redirect on the same site", async () => {
    const [result] = await backend().extract([site.url("/redirect/article")], {});
    assert.equal(result!.error, null);
    assert.equal(result!.title, "Guarded Fetching");
    assert.equal((result as { finalUrl?: string }).finalUrl, site.url("/article"));
  });

  it("follows a redirect to an allowed host on another port", async () => {
    const target = other.url("/plain");
    const [result] = await backend().extract([site.url(`/redirect/to?target=${encodeURIComponent(target)}`)], {});
    assert.equal(result!.error, null);
    assert.ok(other.paths().includes("/plain"));
  });

  it("re-checks each hop: a redirect from an allowed name to bare 127.0.0.1 is blocked", async () => {
    const before = other.requests.length;
    const target = other.url("/plain");
    const [result] = await createFetchBackend({
      urlSafety: { allowPrivate: false, allowHosts: ["site.test"], lookup: async () => ["127.0.0.1"] },
    }).extract([`http://site.test:${site.port}/redirect/to?target=${encodeURIComponent(target)}`], {});
    assert.match(result!.error ?? "", /blocked by URL safety: 127\.0\.0\.1 .*loopback/);
    assert.equal(other.requests.length, before, "the blocked hop was never requested");
  });

  it("blocks a redirect to the metadata address before connecting", async () => {
    const hops: string[] = [];
    const error = await safeFetch(site.url("/redirect/metadata"), { urlSafety, onHop: (url) => hops.push(url) }).catch((e) => e);
    assert.ok(error instanceof SafeFetchError);
    assert.equal(error.code, "blocked");
    assert.equal(error.url, "http://169.254.169.254/latest/meta-data/");
    assert.match(error.message, /cloud metadata address, always blocked/);
    // Only the first hop got as far as a connection.
    assert.deepEqual(hops, [site.url("/redirect/metadata")]);
  });

  it("follows at most maxRedirects redirects", async () => {
    const ok = await safeFetch(site.url("/redirect/chain/5"), { urlSafety });
    assert.equal(ok.body.toString(), "end of chain");
    assert.equal(ok.hops.length, 6);
    const error = await safeFetch(site.url("/redirect/chain/6"), { urlSafety }).catch((e) => e);
    assert.equal(error.code, "too_many_redirects");
    const [result] = await backend({ maxRedirects: 1 }).extract([site.url("/redirect/chain/2")], {});
    assert.match(result!.error ?? "", /more than 1 redirects/);
  });

  it("re-checks the website policy on every hop", async () => {
    const policy = new WebsitePolicy({ blocklist: { domains: ["blocked.test"] }, respectRobots: "off" });
    const lookup = async () => ["127.0.0.1"];
    const target = `http://www.blocked.test:${other.port}/plain`;
    const before = other.requests.length;
    const [result] = await createFetchBackend({
      urlSafety: { allowPrivate: false, allowHosts: ["127.0.0.1", "www.blocked.test"], lookup },
      policy,
    }).extract(
      [site.url(`/redirect/to?target=${encodeURIComponent(target)}`)],
      {},
    );
    assert.match(result!.error ?? "", /blocked by website policy: blocked\.test matches blocked\.test \(options\)/);
    assert.equal(other.requests.length, before);
  });
});

describe("fetch backend: connection pinning", () => {
  it("connects to the vetted address, never asking DNS again (DNS rebinding)", async () => {
    const answers = ["127.0.0.1", "169.254.169.254", "10.0.0.1"];
    let lookups = 0;
    const lookup = async () => [answers[Math.min(lookups++, answers.length - 1)]!];
    const response = await safeFetch(`http://rebind.test:${site.port}/plain`, {
      urlSafety: { allowPrivate: false, allowHosts: ["rebind.test"], lookup },
    });
    assert.equal(response.status, 200);
    assert.equal(response.body.toString(), "plain text body\nsecond line");
    assert.equal(lookups, 1, "only the guard resolved the name");
    // rebind.test does not resolve anywhere: the request arrived only because the socket was pinned.
    const request = site.requests.findLast((r) => r.path === "/plain");
    assert.equal(request?.headers.host, `rebind.test:${site.port}`);
  });

  it("ignores HTTP_PROXY", async () => {
    const saved = process.env.HTTP_PROXY;
    process.env.HTTP_PROXY = "http://127.0.0.1:9";
    try {
      const response = await safeFetch(site.url("/plain"), { urlSafety });
      assert.equal(response.status, 200);
    } finally {
      if (saved === undefined) delete process.env.HTTP_PROXY;
      else process.env.HTTP_PROXY = saved;
    }
  });
});

describe("HTML conversion in worker threads", () => {
  // "-&gt;" becomes two text nodes in linkedom; the Markdown must still read "a -> b", not "a -\> b".
  const ARROW_HTML = `<html><head><title>Arrows</title></head><body><article><h1>Arrows</h1><p>${"Readable words here. ".repeat(40)}</p><p>a -&gt; b</p></article></body></html>`;

  it("gives exactly the in-thread result while the event loop keeps turning", async () => {
    const pool = new HtmlConversionPool({ size: 2, inlineBelowChars: 0 });
    try {
      let ticks = 0;
      const tick = () => {
        ticks++;
        timer = setImmediate(tick);
      };
      let timer = setImmediate(tick);
      const pages = await Promise.all([ARTICLE_HTML, ARROW_HTML, "<p>only <b>this</b></p>"].map((html) => pool.convert(html, "http://example.com/")));
      clearImmediate(timer);
      assert.ok(pool.threads >= 1, "a worker thread did the conversion");
      assert.ok(ticks > 0, "the event loop ran while pages were converted");
      assert.deepEqual(pages, [ARTICLE_HTML, ARROW_HTML, "<p>only <b>this</b></p>"].map((html) => htmlToMarkdown(html, "http://example.com/")));
      assert.match(pages[1]!.markdown, /a -> b/);
      const whole = await pool.convert(ARTICLE_HTML, "http://example.com/", { readabilityMaxChars: 100 });
      assert.deepEqual(whole, htmlToMarkdown(ARTICLE_HTML, "http://example.com/", { readabilityMaxChars: 100 }));
    } finally {
      await pool.close();
    }
  });

  it("is what the fetch backend converts with, with the same content as in-thread", async () => {
    const pool = new HtmlConversionPool({ size: 1, inlineBelowChars: 0 });
    try {
      const [viaWorker] = await backend({ htmlPool: pool }).extract([site.url("/article")], {});
      assert.equal(pool.threads, 1);
      const [inline] = await backend({ htmlPool: new HtmlConversionPool({ inlineBelowChars: 1_000_000 }) }).extract([site.url("/article")], {});
      assert.equal(viaWorker!.error, null);
      assert.deepEqual(viaWorker, inline);
    } finally {
      await pool.close();
    }
  });

  it("fails only the page that overruns its deadline, and keeps converting", async () => {
    // 1 ms cannot cover a worker's start, so the first page always overruns.
    const pool = new HtmlConversionPool({ size: 1, inlineBelowChars: 0, timeoutMs: 1 });
    try {
      await assert.rejects(pool.convert(ARTICLE_HTML, "http://example.com/"), /took longer than 1 ms and was stopped/);
      assert.equal(pool.threads, 0, "the overrunning worker was stopped");
    } finally {
      await pool.close();
    }
    const [result] = await backend({ htmlPool: new HtmlConversionPool({ size: 1, inlineBelowChars: 0, timeoutMs: 1 }) }).extract([site.url("/article")], {});
    assert.match(result!.error ?? "", /took longer than 1 ms/, "the backend reports it as that URL's error");
  });

  it("validates its options", () => {
    assert.throws(() => new HtmlConversionPool({ size: 0 }), RangeError);
    assert.throws(() => new HtmlConversionPool({ inlineBelowChars: -1 }), RangeError);
    assert.throws(() => new HtmlConversionPool({ timeoutMs: 0 }), RangeError);
  });
});

describe("HTML conversion from the tsup build", () => {
  let tmp = "";
  before(async () => {
    // The project's own bundler and output formats (ESM and CJS, split chunks, tree-shaken), built
    // into a temp dir that sees the project's node_modules, as an installed package would.
    tmp = await mkdtemp(path.join(os.tmpdir(), "wb-htmlpool-"));
    await symlink(path.join(repo, "node_modules"), path.join(tmp, "node_modules"), "dir");
    const tsup = path.join(repo, "node_modules", "tsup", "dist", "cli-default.js");
    const args = [tsup, "src/web/index.ts", "--format", "esm,cjs", "--splitting", "--treeshake", "--target", "node20", "--no-config"];
    await run(process.execPath, [...args, "--out-dir", path.join(tmp, "dist")], { cwd: repo, timeout: 120_000 });
  });
  after(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  const script = (load: string) => `
    ${load}
    const html = ${JSON.stringify(ARTICLE_HTML)};
    const pool = new HtmlConversionPool({ size: 1, inlineBelowChars: 0 });
    pool.convert(html, "http://example.com/").then(async (page) => {
      const same = JSON.stringify(page) === JSON.stringify(htmlToMarkdown(html, "http://example.com/"));
      console.log(JSON.stringify({ same, threads: pool.threads, title: page.title }));
      await pool.close();
    });`;

  for (const [format, args] of [
    ["ESM", ["--input-type=module", "-e", script(`import { HtmlConversionPool, htmlToMarkdown } from "./dist/index.js";`)]],
    ["CJS", ["-e", script(`const { HtmlConversionPool, htmlToMarkdown } = require("./dist/index.cjs");`)]],
  ] as const) {
    it(`runs a worker conversion from dist/ (${format})`, async () => {
      const { stdout } = await run(process.execPath, [...args], { cwd: tmp, timeout: 60_000 });
      assert.deepEqual(JSON.parse(stdout.trim()), { same: true, threads: 1, title: "Guarded Fetching" });
    });
  }
});
