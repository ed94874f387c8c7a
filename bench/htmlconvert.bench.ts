/**
 * HTML → Markdown converters compared on speed (against linkedom's bare DOM parse of the same
 * page, measured in the same run) and on main-content quality over the 79-page set of
 * ./htmlQuality.ts, shown twice: as the pages ship and inside a news-site template.
 *
 * Candidates: the previous pipeline (Readability on linkedom + Turndown, now the fallback), the
 * chosen one (main landmark cut from the HTML text + chrome selectors + mdream's WebAssembly
 * converter), the same isolation with the native @kreuzberg/html-to-markdown-node, and each
 * converter on the whole page without isolation.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parseHTML } from "linkedom";
import { convertHtml, finishMarkdown, loadDomHtmlLibraries, loadHtmlLibraries, type HtmlLibraries } from "../src/web/htmlConvert.js";
import { CHROME_SELECTORS, isolateMainContent } from "../src/web/mainContent.js";
import { loadQualitySet, overall, referenceOf, scoreMarkdown, sitePages, type QualityPage } from "./htmlQuality.js";
import { htmlPageOf } from "./fixtures.js";

const require = createRequire(import.meta.url);

interface Candidate {
  label: string;
  convert(html: string): string;
  /** Too slow for the 158-page quality pass on this machine (see the note under the table). */
  speedOnly?: boolean;
}

function candidates(): Candidate[] {
  const dom = loadDomHtmlLibraries();
  const fast = loadHtmlLibraries();
  if (!fast.mdream) throw new Error("mdream's WebAssembly module did not load");
  const kz = require("@kreuzberg/html-to-markdown-node") as { convert(html: string, options: object): { content?: string } };
  const mdream = fast.mdream;
  const { NodeHtmlMarkdown } = require("node-html-markdown") as { NodeHtmlMarkdown: { translate(html: string): string } };
  const run = (libs: HtmlLibraries) => (html: string) => finishMarkdown(convertHtml(libs, html, "https://example.com/", undefined)).markdown;
  return [
    { label: "Readability + Turndown (previous; now the fallback)", convert: run(dom) },
    { label: "**isolation + mdream WebAssembly (chosen)**", convert: run(fast) },
    {
      label: "isolation + @kreuzberg/html-to-markdown-node (native)",
      convert: (html) => kz.convert(isolateMainContent(html), { extractMetadata: false, excludeSelectors: [...CHROME_SELECTORS, "title"] }).content ?? "",
    },
    { label: "mdream, whole page", convert: (html) => mdream.htmlToMarkdownResult(html, {}).markdown ?? "" },
    { label: "@kreuzberg/html-to-markdown-node, whole page", convert: (html) => kz.convert(html, { extractMetadata: false }).content ?? "" },
    { label: "node-html-markdown, whole page", convert: (html) => NodeHtmlMarkdown.translate(html), speedOnly: true },
  ];
}


function time(fn: () => unknown, runs: number): number {
  fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

function speedRows(list: Candidate[], vec: QualityPage | undefined): { header: string; rows: string[] } {
  const pages: Array<[string, string]> = [
    ["0.1 MB synthetic", htmlPageOf(100_000)],
    ["0.9 MB synthetic", htmlPageOf(900_000)],
  ];
  if (vec) pages.push([`${(vec.html.length / 1e6).toFixed(2)} MB real (rustdoc \`Vec\`)`, vec.html]);
  const runs = 3;
  const anchors = pages.map(([, html]) => time(() => parseHTML(html), runs));
  const rows = list.map((c) => {
    const cells = pages.map(([, html], i) => {
      // node-html-markdown is quadratic on big pages: minutes per page on this shared machine.
      if (c.speedOnly && html.length > 200_000) return "not run";
      const ms = time(() => c.convert(html), runs);
      return `${fmt(ms)} (${(ms / anchors[i]!).toFixed(2)}×)`;
    });
    return `| ${c.label} | ${cells.join(" | ")} |`;
  });
  return {
    header: `| converter | ${pages.map(([label]) => label).join(" | ")} |\n|---|${pages.map(() => "---:").join("|")}|\n| DOM parse (anchor) | ${anchors.map(fmt).join(" | ")} |`,
    rows,
  };
}

function qualityRows(list: Candidate[], pages: QualityPage[]): string[] {
  const refs = pages.map(referenceOf);
  return list
    .filter((c) => !c.speedOnly)
    .map((c) => {
      let recall = 0;
      let leak = 0;
      let structure = 0;
      let score = 0;
      let ms = 0;
      pages.forEach((page, i) => {
        const t0 = performance.now();
        const markdown = c.convert(page.html);
        ms += performance.now() - t0;
        const s = scoreMarkdown(markdown, refs[i]!);
        recall += s.recall;
        leak += s.leak;
        structure += s.structure;
        score += overall(s);
      });
      const n = pages.length;
      const pct = (x: number) => `${((100 * x) / n).toFixed(1)}%`;
      return `| ${c.label} | ${pct(recall)} | ${pct(leak)} | ${pct(structure)} | **${(score / n).toFixed(3)}** | ${fmt(ms)} |`;
    });
}

export async function run(): Promise<string> {
  const list = candidates();
  const docs = await loadQualitySet();
  const site = sitePages(docs);
  const vec = docs.find((p) => p.file.endsWith("/struct.Vec.html"));
  const speed = speedRows(list, vec ?? (await loadVec()));
  const families = Object.entries(
    docs.reduce<Record<string, number>>((acc, p) => ({ ...acc, [p.family]: (acc[p.family] ?? 0) + 1 }), {}),
  )
    .map(([family, n]) => `${n} ${family}`)
    .join(", ");
  const qualityHeader = "| converter | main text kept | boilerplate leaked | structure kept | score | CPU time, all pages |\n|---|---:|---:|---:|---:|---:|";
  return [
    "## HTML → Markdown converters",
    "",
    "Synchronous CPU time per page, median of 3 runs after a warm-up; in brackets the ratio to the anchor, linkedom's",
    "bare DOM parse of the same HTML measured in the same run. Target for the chosen converter: ≤ 1× on the 0.1 and 0.9 MB pages.",
    "",
    speed.header,
    ...speed.rows,
    "",
    `### Quality on the ${docs.length}-page set (${families})`,
    "",
    "Reference per page: the text of the main-content element its generator writes (`main`, `#main-content`, Texinfo body",
    "without its navigation, Sphinx `[role=main]`); boilerplate: the body text outside it. *Main text kept*: share of the",
    "reference's word tokens found in the Markdown; *boilerplate leaked*: share of the boilerplate-only tokens found in",
    "the Markdown beyond the main text; *structure kept*: for headings, links (outside code), code blocks and tables",
    "present in the reference, min(found / expected, 1), averaged. *Score* = (2 × kept + (1 − leaked) + structure) / 4.",
    "Means over pages. The previous pipeline loses text on API pages (Readability drops whole sections).",
    "",
    qualityHeader,
    ...qualityRows(list, docs),
    "",
    `### The same ${site.length} main contents inside a news-site template`,
    "",
    "Each main content wrapped in a header with menu, cookie banner, share bar, comments, related-articles sidebar and a",
    "link-heavy footer (three layouts in turn: HTML5 landmarks, class/id names only, ARIA roles). Caveat: the template and",
    "the chrome selector list were written by the same hand; real sites name their chrome in more ways than these.",
    "",
    qualityHeader,
    ...qualityRows(list, site),
    "",
    "node-html-markdown is left out of the quality pass: on this machine it took 408 s for the 79 pages (quadratic on",
    "the big API pages); one earlier full pass scored main text kept 98.3%, boilerplate leaked 79.1%, structure 96.8%.",
    "The native Kreuzberg converter segfaults the whole process on 30,000 nested `<div>`s (no JavaScript error to",
    "catch, worker thread or not) and is quadratic in nesting depth (10,000 levels: 2 s); mdream's WebAssembly build",
    "converts 100,000 levels in 0.3 s and can only throw. See tests/html-convert.test.ts for the hostile pages.",
  ].join("\n");
}

async function loadVec(): Promise<QualityPage | undefined> {
  const rust = (await loadQualitySet()).find((p) => p.family === "rustdoc")?.file;
  if (!rust) return undefined;
  const file = rust.replace(/\/(std|alloc|core|proc_macro)\/.*$/, "/std/vec/struct.Vec.html");
  try {
    return { file, family: "rustdoc", html: readFileSync(file, "utf8") };
  } catch {
    return undefined;
  }
}

function fmt(ms: number): string {
  return ms >= 100 ? `${Math.round(ms)} ms` : `${ms.toFixed(1)} ms`;
}
