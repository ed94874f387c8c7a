/**
 * The HTML → Markdown quality set and its score. 79 real documentation pages found on the
 * machine (the Rust toolchain's offline docs — mdBook books and rustdoc API pages — and
 * Texinfo/Sphinx pages under /usr/share/doc and pyenv), picked deterministically, each with a
 * known main-content element for its generator. The reference is that element's text; the
 * boilerplate is the rest of the body's text (sidebars, menus, headers, footers).
 */
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { parseHTML } from "linkedom";

/** The slice of linkedom's DOM used here (the project compiles without the DOM lib). */
interface El {
  textContent: string | null;
  innerHTML: string;
  remove(): void;
  getAttribute(name: string): string | null;
  closest(selector: string): El | null;
  querySelector(selector: string): El | null;
  querySelectorAll(selector: string): ArrayLike<El>;
}

function dom(html: string): { document: El & { body: El } } {
  return parseHTML(html) as unknown as { document: El & { body: El } };
}

export interface QualityPage {
  file: string;
  family: "mdbook" | "rustdoc" | "texinfo" | "sphinx" | "site";
  html: string;
}

/** What a family's main content is (selector), and what inside it is never content. */
const MAIN: Record<QualityPage["family"], { selector: string; drop: string[] }> = {
  mdbook: { selector: "main", drop: [] },
  rustdoc: { selector: "#main-content", drop: ["rustdoc-toolbar", ".out-of-band", "button"] },
  texinfo: { selector: "body", drop: [".header", ".nav-panel", "hr"] },
  sphinx: { selector: "[role=main]", drop: [".headerlink"] },
  site: { selector: "#entry-body", drop: [] },
};

const NOISE = "script,style,noscript,template,iframe,svg,canvas,form,button";

async function htmlFiles(dir: string, minBytes = 3_000, maxBytes = 1_500_000): Promise<string[]> {
  let entries: string[];
  try {
    entries = (await readdir(dir, { recursive: true })) as string[];
  } catch {
    return [];
  }
  const picked: string[] = [];
  for (const entry of entries.sort()) {
    if (!entry.endsWith(".html") || /(^|\/)(print|toc|404|index|all|searchindex)\.html$/.test(entry)) continue;
    const full = path.join(dir, entry);
    const size = (await stat(full)).size;
    if (size >= minBytes && size <= maxBytes) picked.push(full);
  }
  return picked;
}

/** `count` entries spread evenly over a sorted list. */
function spread<T>(list: T[], count: number): T[] {
  if (list.length <= count) return list;
  return Array.from({ length: count }, (_, i) => list[Math.floor((i * list.length) / count)]!);
}

async function rustDocs(): Promise<string | undefined> {
  const base = path.join(process.env.RUSTUP_HOME ?? "/root/.rustup", "toolchains");
  try {
    const chains = (await readdir(base)).filter((n) => n.startsWith("stable")).sort();
    return chains[0] ? path.join(base, chains[0], "share/doc/rust/html") : undefined;
  } catch {
    return undefined;
  }
}

/** The 79 pages (fewer when the machine lacks some of the docs; the caller reports the count). */
export async function loadQualitySet(): Promise<QualityPage[]> {
  const pages: Array<{ file: string; family: QualityPage["family"] }> = [];
  const rust = await rustDocs();
  if (rust) {
    const books: Array<[string, number]> = [
      ["book", 8],
      ["reference", 5],
      ["nomicon", 4],
      ["cargo", 5],
      ["rust-by-example", 5],
      ["edition-guide", 3],
      ["embedded-book", 3],
      ["rustc", 3],
      ["unstable-book", 2],
      ["rustdoc", 2],
    ];
    for (const [book, n] of books) {
      for (const file of spread(await htmlFiles(path.join(rust, book)), n)) pages.push({ file, family: "mdbook" });
    }
    const apis: Array<[string, number]> = [
      ["std", 17],
      ["alloc", 6],
      ["core", 4],
      ["proc_macro", 2],
    ];
    for (const [crate, n] of apis) {
      const files = (await htmlFiles(path.join(rust, crate))).filter((f) => /\/(struct|trait|enum|fn|macro|primitive)\.[^/]+\.html$/.test(f));
      for (const file of spread(files, n)) pages.push({ file, family: "rustdoc" });
    }
  }
  for (const file of spread(await htmlFiles("/usr/share/doc/libffi8/html", 2_000), 9)) pages.push({ file, family: "texinfo" });
  const pyenv = "/root/.pyenv/versions";
  try {
    const versions = (await readdir(pyenv)).sort().reverse();
    for (const v of versions) {
      const major = v.split(".").slice(0, 2).join(".");
      const help = path.join(pyenv, v, `lib/python${major}/idlelib/help.html`);
      if (await stat(help).catch(() => undefined)) {
        pages.push({ file: help, family: "sphinx" });
        break;
      }
    }
  } catch {
    // No pyenv: the set is one page short.
  }
  return Promise.all(pages.map(async (p) => ({ ...p, html: await readFile(p.file, "utf8") })));
}

/** Lower-cased word tokens (letters/digits), Markdown syntax and link targets ignored. */
function tokens(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) counts.set(m[0], (counts.get(m[0]) ?? 0) + 1);
  return counts;
}

function total(bag: Map<string, number>): number {
  let n = 0;
  for (const v of bag.values()) n += v;
  return n;
}

function overlap(a: Map<string, number>, b: Map<string, number>): number {
  let n = 0;
  for (const [k, v] of a) n += Math.min(v, b.get(k) ?? 0);
  return n;
}

function minus(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of a) {
    const left = v - (b.get(k) ?? 0);
    if (left > 0) out.set(k, left);
  }
  return out;
}

export interface Reference {
  main: Map<string, number>;
  boilerplate: Map<string, number>;
  structure: { headings: number; links: number; code: number; tables: number };
}

/** The reference for one page: main-content tokens, boilerplate tokens, structure counts. */
export function referenceOf(page: QualityPage): Reference {
  const { document } = dom(page.html);
  for (const n of Array.from(document.querySelectorAll(NOISE))) n.remove();
  const spec = MAIN[page.family];
  const main = document.querySelector(spec.selector) ?? document.body;
  for (const sel of spec.drop) for (const n of Array.from(main.querySelectorAll(sel))) n.remove();
  const mainBag = tokens(main.textContent ?? "");
  const bodyBag = tokens(document.body?.textContent ?? "");
  const count = (sel: string) => main.querySelectorAll(sel).length;
  return {
    main: mainBag,
    boilerplate: minus(bodyBag, mainBag),
    structure: {
      headings: count("h1,h2,h3,h4,h5,h6"),
      // Markdown has no links inside code blocks: those are not expected.
      links: Array.from(main.querySelectorAll("a[href]")).filter(
        (a) => (a.textContent ?? "").trim() && !a.getAttribute("href")!.startsWith("#") && !a.closest("pre"),
      ).length,
      code: count("pre"),
      tables: count("table"),
    },
  };
}

export interface Score {
  /** Share of the reference main-content tokens present in the Markdown. */
  recall: number;
  /** Share of the boilerplate-only tokens that leaked into the Markdown. */
  leak: number;
  /** Mean over headings/links/code blocks/tables present in the reference of min(found/expected, 1). */
  structure: number;
}

/** Scores one converter's Markdown against a page's reference. */
export function scoreMarkdown(markdown: string, ref: Reference): Score {
  // Link and image targets are URLs, not page text: score only what a reader sees.
  const visible = markdown.replace(/\]\((?:[^()]|\([^()]*\))*\)/g, "]").replace(/<https?:[^>\s]*>/g, "");
  const out = tokens(visible);
  const mainTotal = total(ref.main);
  const boilerTotal = total(ref.boilerplate);
  const recall = mainTotal ? overlap(ref.main, out) / mainTotal : 1;
  const leak = boilerTotal ? overlap(ref.boilerplate, minus(out, ref.main)) / boilerTotal : 0;
  const found = {
    headings: (markdown.match(/^#{1,6} \S/gm) ?? []).length,
    links: (markdown.match(/\[[^\]\n]+\]\((?!#)[^)\s]+/g) ?? []).length,
    code: Math.floor((markdown.match(/^\s*(```|~~~)/gm) ?? []).length / 2),
    tables: (markdown.match(/^\s*\|?\s*:?-{3,}:?\s*\|/gm) ?? []).length,
  };
  const parts: number[] = [];
  for (const key of ["headings", "links", "code", "tables"] as const) {
    const expected = ref.structure[key];
    if (expected > 0) parts.push(Math.min(found[key] / expected, 1));
  }
  return { recall, leak, structure: parts.length ? parts.reduce((a, b) => a + b, 0) / parts.length : 1 };
}

/** One number to rank by: main text kept, boilerplate kept out, structure kept (weights 2:1:1). */
export function overall(s: Score): number {
  return (2 * s.recall + (1 - s.leak) + s.structure) / 4;
}

/** Words for the site chrome: menus, footers, teasers. */
const CHROME_WORDS =
  "home news sport weather business culture travel opinion podcasts newsletter subscribe login account privacy cookies terms contact careers advertise help archive about team press partners events shop gift offers deals trending popular latest most read watch listen follow share tweet email print comment reply report".split(
    " ",
  );

function chrome(seed: number, words: number): string {
  let x = seed * 2654435761;
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    x = (x ^ (x >>> 13)) * 1274126177;
    out.push(CHROME_WORDS[Math.abs(x) % CHROME_WORDS.length]!);
  }
  return out.join(" ");
}

function links(seed: number, n: number, words = 2): string {
  return Array.from({ length: n }, (_, i) => `<li><a href="/s/${seed}/${i}">${chrome(seed * 31 + i, words)}</a></li>`).join("");
}

/**
 * The same 79 main contents, each placed in a news/blog-style page: header and menu, cookie
 * banner, share bar, related-articles sidebar, comments and a link-heavy footer. Three layouts
 * rotate: HTML5 landmarks, class/id names only (older sites), and ARIA roles. The reference main
 * content is the original page's main element (`#entry-body`), the boilerplate everything else.
 */
export function sitePages(pages: QualityPage[]): QualityPage[] {
  return pages.map((page, i) => {
    const { document } = dom(page.html);
    const spec = MAIN[page.family];
    const main = document.querySelector(spec.selector) ?? document.body;
    for (const sel of spec.drop) for (const n of Array.from(main.querySelectorAll(sel))) n.remove();
    const title = (document.querySelector("title")?.textContent ?? "Article").trim();
    const body = `<div id="entry-body">${main.innerHTML}</div>`;
    const cookie = `<div class="cookie-banner" id="consent"><p>We use cookies to ${chrome(i + 7, 25)}.</p><a href="/privacy">Privacy</a></div>`;
    const share = `<div class="share-bar"><a href="/share/x">Share on X</a> <a href="/share/mail">Email</a> <span>${chrome(i + 3, 4)}</span></div>`;
    const comments = `<div id="comments" class="comments"><h3>Comments</h3>${Array.from({ length: 4 }, (_, c) => `<div class="comment"><p><b>user${c}</b> ${chrome(i * 5 + c, 30)}</p><a href="/reply">Reply</a></div>`).join("")}</div>`;
    const related = `<h3>Related</h3><ul>${links(i + 11, 8, 6)}</ul><h3>Most read</h3><ol>${links(i + 13, 5, 7)}</ol>`;
    const footer = `<ul>${links(i + 17, 24)}</ul><p>© 2026 ${chrome(i + 19, 12)}</p>`;
    const menu = `<ul>${links(i, 14)}</ul>`;
    let html: string;
    if (i % 3 === 0) {
      html = `<header><a href="/">Site</a><nav>${menu}</nav></header>${cookie}<main><article><h1>${title}</h1>${share}${body}</article><section>${comments}</section></main><aside>${related}</aside><footer>${footer}</footer>`;
    } else if (i % 3 === 1) {
      html = `<div id="header" class="site-header"><div class="logo"><a href="/">Site</a></div><div class="menu main-nav">${menu}</div></div>${cookie}<div id="wrapper"><div id="content" class="content"><div class="post"><h1 class="post-title">${title}</h1>${share}<div class="post-content entry-content">${body}</div></div>${comments}</div><div id="sidebar" class="sidebar widget-area">${related}</div></div><div id="footer" class="site-footer">${footer}</div>`;
    } else {
      html = `<div role="banner"><a href="/">Site</a><div role="navigation">${menu}</div></div>${cookie}<div role="main"><div class="story"><h1>${title}</h1>${share}${body}</div>${comments}</div><div role="complementary">${related}</div><div role="contentinfo">${footer}</div>`;
    }
    return {
      file: `site:${page.file}`,
      family: "site" as const,
      html: `<!doctype html><html><head><title>${title}</title><script>var tracking = "${chrome(i, 20)}";</script><style>.x{}</style></head><body>${html}<script>window.ads = 1;</script></body></html>`,
    };
  });
}
