/**
 * The HTML → Markdown conversion behind `htmlToMarkdown`, written so it can also run in a worker
 * thread (see ./htmlWorkerPool.ts): the libraries are loaded lazily and handed in.
 *
 * Fast path: the page's main landmark is cut out of the HTML text ({@link isolateMainContent}),
 * site chrome is dropped by selector, and mdream's WebAssembly converter writes the Markdown —
 * about half the cost of a bare DOM parse, where Readability + Turndown cost 7×. WebAssembly
 * rather than a native addon: a hostile page can make it throw, never crash the process, and
 * there is no per-platform binary to go missing. Fallback when mdream cannot load (an old Node
 * without `require` of ES modules, a bundle without it): Readability on a linkedom DOM + Turndown.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import type { Readability } from "@mozilla/readability";
import type { parseHTML } from "linkedom";
import type TurndownService from "turndown";
import { CHROME_SELECTORS, isolateMainContent } from "./mainContent.js";

export interface MarkdownPage {
  title: string;
  markdown: string;
}

export interface HtmlToMarkdownOptions {
  /** Pages longer than this (HTML characters) skip Readability and convert the whole body (fallback path only). Default 1,000,000. */
  readabilityMaxChars?: number;
}

/** The slice of mdream's WebAssembly module used here. */
export interface MdreamWasm {
  htmlToMarkdownResult(html: string, options: unknown): { markdown?: string };
  /** Takes the module's bytes or a compiled `WebAssembly.Module`. */
  initSync(init: { module: Uint8Array | object }): unknown;
}

/** The libraries the conversion runs on, handed in so the same code can run in a worker thread. */
export interface HtmlLibraries {
  /** The fast path; when absent, the three DOM libraries below are used. */
  mdream?: MdreamWasm;
  isolate: typeof isolateMainContent;
  chrome: readonly string[];
  parseHTML?: typeof parseHTML;
  Readability?: typeof Readability;
  TurndownService?: typeof TurndownService;
}

export interface HtmlLibraryPaths {
  mdream?: string;
  mdreamWasm?: string;
  linkedom: string;
  readability: string;
  turndown: string;
}

/**
 * Where each library's entry lives. Resolved (not imported) so that importing the package costs
 * nothing, and so a worker thread can load them by absolute path from any build (tsx, ESM, CJS).
 */
export function htmlLibraryPaths(): HtmlLibraryPaths {
  const load = localRequire();
  let mdream: string | undefined;
  let mdreamWasm: string | undefined;
  try {
    mdream = load.resolve("mdream/wasm");
    mdreamWasm = load.resolve("mdream/wasm/mdream_edge_bg.wasm");
  } catch {
    mdream = mdreamWasm = undefined;
  }
  return {
    mdream,
    mdreamWasm,
    linkedom: load.resolve("linkedom"),
    readability: load.resolve("@mozilla/readability"),
    turndown: load.resolve("turndown"),
  };
}

let libraries: HtmlLibraries | undefined;

/** Loads the libraries on first use (synchronously, so {@link htmlToMarkdown} stays synchronous). */
export function loadHtmlLibraries(): HtmlLibraries {
  if (libraries) return libraries;
  const paths = htmlLibraryPaths();
  let mdream: MdreamWasm | undefined;
  if (paths.mdream && paths.mdreamWasm) {
    try {
      mdream = localRequire()(paths.mdream) as MdreamWasm;
      mdream.initSync({ module: readFileSync(paths.mdreamWasm) });
    } catch {
      mdream = undefined;
    }
  }
  return (libraries = mdream ? fastLibraries(mdream) : loadDomHtmlLibraries(paths));
}

/** {@link loadHtmlLibraries} with the WebAssembly read and compiled off the event loop. */
export async function loadHtmlLibrariesAsync(): Promise<HtmlLibraries> {
  if (libraries) return libraries;
  const paths = htmlLibraryPaths();
  let mdream: MdreamWasm | undefined;
  if (paths.mdream && paths.mdreamWasm) {
    try {
      const glue = (await import(pathToFileURL(paths.mdream).href)) as MdreamWasm;
      // The project compiles without the DOM lib, where the WebAssembly globals are declared.
      const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<object> } }).WebAssembly;
      const module = await wasm.compile(await readFile(paths.mdreamWasm));
      glue.initSync({ module });
      mdream = glue;
    } catch {
      mdream = undefined;
    }
  }
  return (libraries ??= mdream ? fastLibraries(mdream) : loadDomHtmlLibraries(paths));
}

function fastLibraries(mdream: MdreamWasm): HtmlLibraries {
  return { mdream, isolate: isolateMainContent, chrome: CHROME_SELECTORS };
}

/** The fallback libraries (Readability on linkedom + Turndown), also used on their own by tests. */
export function loadDomHtmlLibraries(paths: HtmlLibraryPaths = htmlLibraryPaths()): HtmlLibraries {
  const load = localRequire();
  return {
    isolate: isolateMainContent,
    chrome: CHROME_SELECTORS,
    parseHTML: (load(paths.linkedom) as { parseHTML: typeof parseHTML }).parseHTML,
    Readability: (load(paths.readability) as { Readability: typeof Readability }).Readability,
    TurndownService: load(paths.turndown) as typeof TurndownService,
  };
}

function localRequire(): NodeJS.Require {
  // The CJS build has a real `require` (and no `import.meta.url`); ESM and tsx have the reverse.
  // The ESM build's bundler shim is a `require` without `resolve`, hence the second test.
  return typeof require === "function" && typeof require.resolve === "function" ? require : createRequire(import.meta.url);
}

/** Markdown/HTML images whose source is inlined base64, and bare base64 data URIs. */
const DATA_IMAGE_MARKDOWN = /!\[[^\]]*\]\(\s*data:[^)]*\)/gi;
const DATA_URI = /data:[a-z0-9.+-]+\/[a-z0-9.+-]+(?:;[a-z0-9=.+-]+)*;base64,[a-z0-9+/=]+/gi;

/**
 * Removes inlined base64 images (Markdown image syntax and bare `data:` URIs): they cost many
 * tokens and carry nothing a model can read. Safe on any text.
 */
export function stripDataImages(text: string): string {
  return text.replace(DATA_IMAGE_MARKDOWN, "").replace(DATA_URI, "[inline data removed]");
}

/** Turndown output → the Markdown returned: base64 images gone, blank-line runs collapsed. */
export function finishMarkdown(page: MarkdownPage): MarkdownPage {
  return { title: page.title, markdown: stripDataImages(page.markdown).replace(/\n{3,}/g, "\n\n").trim() };
}

/**
 * The conversion itself, returning the converter's raw output (pass it through {@link finishMarkdown}).
 * It must stay self-contained — it uses only its parameters and what it
 * declares inside — because the worker pool ships its source text (`convertHtml.toString()`)
 * to worker threads.
 */
export function convertHtml(libs: HtmlLibraries, html: string, baseUrl: string | undefined, readabilityMaxChars: number | undefined): MarkdownPage {
  /** The slice of the DOM used here (the project compiles without the DOM lib). */
  interface DomElement {
    textContent: string | null;
    innerHTML: string;
    getAttribute(name: string): string | null;
    setAttribute(name: string, value: string): void;
    remove(): void;
    querySelector(selector: string): DomElement | null;
    querySelectorAll(selector: string): ArrayLike<DomElement>;
  }
  interface DomDocument extends DomElement {
    body: DomElement | null;
    documentElement: DomElement;
  }
  const all = (root: DomElement, selector: string): DomElement[] => Array.from(root.querySelectorAll(selector));

  if (libs.mdream) {
    const baseHref = /<base\s[^>]*?href\s*=\s*["']?([^"'\s>]+)/i.exec(html)?.[1];
    const markdown =
      libs.mdream.htmlToMarkdownResult(libs.isolate(html), {
        origin: resolveBase(baseHref && decodeEntities(baseHref), baseUrl),
        plugins: { filter: { exclude: ["title", ...libs.chrome] } },
      }).markdown ?? "";
    const title = decodeEntities(/<title[^>]*>([\s\S]*?)<\/title\s*>/i.exec(html)?.[1] ?? "").replace(/\s+/g, " ").trim();
    const heading = (/^#{1,6} +(.+)$/m.exec(markdown)?.[1] ?? "").replace(/\\([\\`*_{}[\]()#+\-.!<>|~])/g, "$1").trim();
    return { title: title || heading, markdown };
  }
  const { parseHTML: parseDom, Readability: ReadabilityClass, TurndownService: Turndown } = libs;
  if (!parseDom || !ReadabilityClass || !Turndown) throw new Error("HTML libraries missing");

  // Elements that never carry readable text, removed in one document walk rather than one per tag.
  const NOISE = "script,style,noscript,template,iframe,svg,canvas,form,button";
  // Readability is by far the slowest step (super-linear on big documents), so it only runs on
  // pages up to this size and gives up past this many elements; bigger pages use the whole body.
  const READABILITY_MAX_HTML_CHARS = 1_000_000;
  const READABILITY_MAX_ELEMENTS = 20_000;

  // linkedom mis-nests fragments that lack an <html> element, so give them one.
  const source = /<html[\s>]/i.test(html) ? html : `<!doctype html><html><head></head><body>${html}</body></html>`;
  const parse = (): DomDocument => {
    const document = parseDom(source).document as unknown as DomDocument;
    all(document, NOISE).forEach((node) => node.remove());
    for (const img of all(document, "img")) {
      if ((img.getAttribute("src") ?? "").trim().toLowerCase().startsWith("data:")) img.remove();
    }
    const base = resolveBase(document.querySelector("base")?.getAttribute("href"), baseUrl);
    if (base) absolutise(document, base);
    return document;
  };
  const bodyOf = (document: DomDocument): DomElement => document.body ?? document.documentElement;

  let document = parse();
  const pageTitle = (document.querySelector("title")?.textContent ?? "").trim();
  const h1 = (document.querySelector("h1")?.textContent ?? "").trim();
  // Turndown takes a DOM node as well as a string; the node spares a serialise-and-reparse on big pages.
  let content: DomElement | string = bodyOf(document);
  type Article = { title?: string | null; content?: string | null } | null;
  let article: Article = null;
  if (html.length <= (readabilityMaxChars ?? READABILITY_MAX_HTML_CHARS)) {
    try {
      article = new ReadabilityClass(document as unknown as ConstructorParameters<typeof Readability>[0], {
        charThreshold: 200,
        maxElemsToParse: READABILITY_MAX_ELEMENTS,
      }).parse();
    } catch {
      article = null;
    }
    // Readability rewrites the document it reads, so a failed run leaves it mangled: parse again
    // (rare) rather than serialise every page's body up front just in case. Handing Turndown the
    // article element instead of its HTML (skipping Turndown's own re-parse) was tried: it needs a
    // text-node merge to keep the same output, and gave no measurable gain.
    content = article?.content && article.content.trim() ? article.content : bodyOf((document = parse())).innerHTML;
  }
  // Base64 images and blank-line runs are cleaned by finishMarkdown, on the calling thread.
  const markdown = turndown().turndown(content as unknown as string);
  return { title: pageTitle || article?.title?.trim() || h1, markdown };

  function turndown(): TurndownService {
    const service = new Turndown!({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
    service.remove(["script", "style", "noscript"]);
    // Turndown's core drops table structure; summaries and agents need the rows and columns.
    service.addRule("table", { filter: "table", replacement: (_content, node) => tableToMarkdown(node as unknown as DomElement) });
    return service;
  }

  function tableToMarkdown(table: DomElement): string {
    const rows = all(table, "tr").map((row) =>
      all(row, "th,td").map((cell) => (cell.textContent ?? "").replace(/\s+/g, " ").trim().replace(/\|/g, "\\|")),
    );
    const nonEmpty = rows.filter((cells) => cells.length > 0);
    if (nonEmpty.length === 0) return "";
    const width = Math.max(...nonEmpty.map((cells) => cells.length));
    const line = (cells: string[]) => `| ${Array.from({ length: width }, (_, i) => cells[i] ?? "").join(" | ")} |`;
    const [head, ...body] = nonEmpty;
    return `\n\n${[line(head!), line(Array(width).fill("---")), ...body.map(line)].join("\n")}\n\n`;
  }

  function decodeEntities(text: string): string {
    const named: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };
    return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (entity, code: string) => {
      if (code[0] !== "#") return named[code.toLowerCase()] ?? entity;
      const point = code[1] === "x" || code[1] === "X" ? parseInt(code.slice(2), 16) : parseInt(code.slice(1), 10);
      return point > 0 && point <= 0x10ffff ? String.fromCodePoint(point) : entity;
    });
  }

  /** A page's own `<base href>` wins over the URL it was fetched from, as in a browser. */
  function resolveBase(baseHref: string | null | undefined, pageUrl: string | undefined): string | undefined {
    if (!baseHref) return pageUrl;
    try {
      return new URL(baseHref, pageUrl).toString();
    } catch {
      return pageUrl;
    }
  }

  function absolutise(root: DomElement, base: string): void {
    for (const [selector, attribute] of [
      ["a[href]", "href"],
      ["img[src]", "src"],
    ] as const) {
      all(root, selector).forEach((element) => {
        const value = element.getAttribute(attribute);
        if (!value || value.startsWith("#") || /^[a-z][a-z0-9+.-]*:/i.test(value)) return;
        try {
          element.setAttribute(attribute, new URL(value, base).toString());
        } catch {
          // An unparsable link stays as written.
        }
      });
    }
  }
}
