import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { convertHtml, finishMarkdown, loadDomHtmlLibraries, loadHtmlLibraries } from "../src/web/htmlConvert.js";
import { htmlToMarkdown } from "../src/web/htmlToMarkdown.js";
import { HtmlConversionPool } from "../src/web/htmlWorkerPool.js";
import { isolateMainContent } from "../src/web/mainContent.js";

const WORDS = "Readable article words that make up a real paragraph of text. ".repeat(12);

const RICH = `<!doctype html><html><head><title>Rich &amp; Structured</title>
<style>.secret-style { color: red }</style><script>window.trackingScript = 1</script></head><body>
<header class="site-header"><a href="/">Logo</a><nav><a href="/news">News menu</a></nav></header>
<div class="cookie-banner">We use cookies banner</div>
<main>
<h1>Main Title</h1>
<p>${WORDS}<a href="docs/page.html">relative link</a> and <strong>bold</strong> and <code>inline()</code>.</p>
<h2>Second Level</h2>
<ul><li>first item</li><li>second item<ul><li>nested item</li></ul></li></ul>
<ol><li>step one</li><li>step two</li></ol>
<pre><code class="language-ts">const answer: number = 42;</code></pre>
<blockquote>quoted words</blockquote>
<table><thead><tr><th>Name</th><th>Value</th></tr></thead><tbody><tr><td>alpha</td><td>1</td></tr></tbody></table>
<noscript>Enable JavaScript noscript</noscript><template><p>template text</p></template>
<script>document.write("inline script text")</script>
<div id="comments"><p>Comment section text</p></div>
</main>
<aside>Related sidebar text</aside>
<footer>Footer copyright text</footer>
</body></html>`;

function assertStructure(markdown: string, label: string): void {
  // Readability (the fallback) lifts the page's h1 into the title, so the h1 is checked by the fast-path test.
  assert.match(markdown, /^## Second Level$/m, `${label}: h2`);
  assert.match(markdown, /^[-*] +first item$/m, `${label}: list item`);
  assert.match(markdown, /^\s+[-*] +nested item$/m, `${label}: nested list`);
  assert.match(markdown, /^1\. +step one$/m, `${label}: ordered list`);
  assert.match(markdown, /```(ts)?\nconst answer: number = 42;\n```/, `${label}: fenced code`);
  assert.match(markdown, /^> quoted words$/m, `${label}: blockquote`);
  assert.match(markdown, /\| Name \| Value \|\n\| --- \| --- \|\n\| alpha \| 1 \|/, `${label}: table`);
  assert.match(markdown, /\[relative link\]\(https:\/\/example\.com\/blog\/docs\/page\.html\)/, `${label}: absolute link`);
  assert.match(markdown, /\*\*bold\*\*/, `${label}: bold`);
  assert.match(markdown, /`inline\(\)`/, `${label}: inline code`);
  assert.doesNotMatch(markdown, /trackingScript|secret-style|inline script text|noscript|template text/, `${label}: scripts, styles, noscript, template dropped`);
}

describe("HTML → Markdown", () => {
  it("uses the WebAssembly converter here", () => {
    assert.ok(loadHtmlLibraries().mdream, "mdream's WebAssembly module loads on this machine");
  });

  it("keeps headings, lists, code, quotes, tables and links; drops scripts, styles and site chrome", () => {
    const page = htmlToMarkdown(RICH, "https://example.com/blog/post");
    assert.equal(page.title, "Rich & Structured");
    assertStructure(page.markdown, "fast path");
    assert.match(page.markdown, /^# Main Title$/m, "h1");
    assert.doesNotMatch(page.markdown, /News menu|cookies banner|Related sidebar|Footer copyright|Comment section|Logo/, "chrome dropped");
  });

  it("falls back to Readability + Turndown with the same structure", () => {
    const page = finishMarkdown(convertHtml(loadDomHtmlLibraries(), RICH, "https://example.com/blog/post", undefined));
    assert.equal(page.title, "Rich & Structured");
    assertStructure(page.markdown, "fallback");
  });

  it("converts a page without landmarks whole, chrome still dropped", () => {
    const page = htmlToMarkdown(`<html><head><title>T</title></head><body><div class="menu">Menu words</div><h1>Heading</h1><p>Body text</p><footer>foot</footer></body></html>`);
    assert.equal(page.markdown, "# Heading\n\nBody text");
    assert.equal(page.title, "T");
  });

  it("takes the title from the first heading when the page has none", () => {
    assert.equal(htmlToMarkdown("<h2>From &lt;heading&gt;</h2><p>x</p>").title, "From <heading>");
  });
});

describe("main-content isolation", () => {
  const filler = "<p>" + "main words ".repeat(60) + "</p>";

  it("cuts out the single <main>, role=main element or <article>", () => {
    assert.equal(isolateMainContent(`<nav>n</nav><main id="m">${filler}</main><footer>f</footer>`), `<main id="m">${filler}</main>`);
    const roleMain = `<div role="main"><div><div>${filler}</div></div><div>tail</div></div>`;
    assert.equal(isolateMainContent(`<div class="nav"><div>menu</div></div>${roleMain}<div>footer</div>`), roleMain);
    assert.equal(isolateMainContent(`<div>x</div><article>${filler}</article><div>y</div>`), `<article>${filler}</article>`);
  });

  it("keeps the whole page when the landmark is missing, repeated, tiny or unclosed", () => {
    for (const html of [
      `<div>${filler}</div>`,
      `<article>${filler}</article><article>${filler}</article>`,
      `<main>tiny</main><div>${filler}</div>`,
      `<div role="main">${filler}`,
    ]) {
      assert.equal(isolateMainContent(html), html, html.slice(0, 40));
    }
  });

  it("ignores tag-like text inside scripts and styles", () => {
    const html = `<script>var s = "<main>fake</main>";</script><style>/* <article> */</style><main>${filler}</main>`;
    assert.equal(isolateMainContent(html), `<main>${filler}</main>`);
  });
});

describe("hostile HTML", () => {
  const invalidUtf8 = new TextDecoder("utf-8").decode(new Uint8Array([0x3c, 0x70, 0x3e, 0xff, 0xfe, 0xc3, 0x28, 0x61, 0x3c, 0x2f, 0x70, 0x3e]));
  const cases: Array<[string, string, RegExp | undefined]> = [
    ["100,000 nested divs", "<div>".repeat(100_000) + "deep text" + "</div>".repeat(100_000), /deep text/],
    ["100,000 unclosed inline tags", "<b><i>".repeat(50_000) + "unclosed text", /unclosed text/],
    ["50,000 nested lists and tables", "<ul><li><table><tr><td>".repeat(12_500) + "nested cell", /nested cell/],
    ["a 5 MB attribute", `<p title="${"a".repeat(5_000_000)}">after attribute</p>`, /after attribute/],
    ["a 2 MB href", `<p><a href="${"/x".repeat(1_000_000)}">long link</a></p>`, /long link/],
    ["invalid UTF-8 (decoded to U+FFFD) and lone surrogates", `${invalidUtf8}<p>\ud800 surrogate \udfff</p>`, /surrogate/],
    ["a 5 MB page", `<html><head><title>Big</title></head><body><main>${"<p>big page paragraph <a href='/x'>link</a></p>".repeat(110_000)}</main></body></html>`, /big page paragraph/],
    ["an unterminated comment and CDATA", `<p>before</p><!-- never closed <p>hidden</p><![CDATA[ x`, /before/],
  ];

  it("converts each in a worker within the pool's deadline, or fails only that page", async () => {
    const pool = new HtmlConversionPool({ size: 1, inlineBelowChars: 0, timeoutMs: 30_000 });
    try {
      for (const [label, html, expected] of cases) {
        const outcome = await pool.convert(html, "https://example.com/").then(
          (page) => ({ page }),
          (error: Error) => ({ error }),
        );
        if ("error" in outcome) {
          assert.match(outcome.error.message, /took longer than 30000 ms and was stopped|conversion failed/, `${label}: a page error, not a crash`);
          continue;
        }
        assert.equal(typeof outcome.page.markdown, "string", label);
        if (expected) assert.match(outcome.page.markdown, expected, `${label}: text kept`);
      }
      // The pool is still usable after every hostile page.
      assert.equal((await pool.convert("<p>still <b>working</b></p>".repeat(1_000))).markdown.slice(0, 17), "still **working**");
    } finally {
      await pool.close();
    }
  });

  it("stops a page that overruns a short deadline without stopping the process", async () => {
    const pool = new HtmlConversionPool({ size: 1, inlineBelowChars: 0, timeoutMs: 50 });
    try {
      const big = "<div>".repeat(200_000) + "x" + "</div>".repeat(200_000);
      await assert.rejects(pool.convert(big + big + big), /took longer than 50 ms and was stopped/);
    } finally {
      await pool.close();
    }
  });
});
