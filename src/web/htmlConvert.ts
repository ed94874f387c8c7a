/**
 * The HTML → Markdown conversion behind `htmlToMarkdown`, written so it can also run in a worker
 * thread (see ./htmlWorkerPool.ts): the libraries are loaded lazily and handed in.
 */
import { createRequire } from "node:module";
import type { Readability } from "@mozilla/readability";
import type { parseHTML } from "linkedom";
import type TurndownService from "turndown";

export interface MarkdownPage {
  title: string;
  markdown: string;
}

export interface HtmlToMarkdownOptions {
  /** Pages longer than this (HTML characters) skip Readability and convert the whole body. Default 1,000,000. */
  readabilityMaxChars?: number;
}

/** The three libraries the conversion runs on, handed in so the same code can run in a worker thread. */
export interface HtmlLibraries {
  parseHTML: typeof parseHTML;
  Readability: typeof Readability;
  TurndownService: typeof TurndownService;
}

/**
 * Where each library's CommonJS entry lives. Resolved (not imported) so that importing the
 * package costs nothing — linkedom, Readability and Turndown together take about 2 s to load —
 * and so a worker thread can `require` them by absolute path from any build (tsx, ESM, CJS).
 */
export function htmlLibraryPaths(): { linkedom: string; readability: string; turndown: string } {
  const load = localRequire();
  return {
    linkedom: load.resolve("linkedom"),
    readability: load.resolve("@mozilla/readability"),
    turndown: load.resolve("turndown"),
  };
}

let libraries: HtmlLibraries | undefined;

/** Loads the libraries on first use (synchronously, so {@link htmlToMarkdown} stays synchronous). */
export function loadHtmlLibraries(): HtmlLibraries {
  if (libraries) return libraries;
  const load = localRequire();
  const paths = htmlLibraryPaths();
  libraries = {
    parseHTML: (load(paths.linkedom) as { parseHTML: typeof parseHTML }).parseHTML,
    Readability: (load(paths.readability) as { Readability: typeof Readability }).Readability,
    TurndownService: load(paths.turndown) as typeof TurndownService,
  };
  return libraries;
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
 * The conversion itself, returning Turndown's raw output (pass it through {@link finishMarkdown}).
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

  // Elements that never carry readable text, removed in one document walk rather than one per tag.
  const NOISE = "script,style,noscript,template,iframe,svg,canvas,form,button";
  // Readability is by far the slowest step (super-linear on big documents), so it only runs on
  // pages up to this size and gives up past this many elements; bigger pages use the whole body.
  const READABILITY_MAX_HTML_CHARS = 1_000_000;
  const READABILITY_MAX_ELEMENTS = 20_000;

  // linkedom mis-nests fragments that lack an <html> element, so give them one.
  const source = /<html[\s>]/i.test(html) ? html : `<!doctype html><html><head></head><body>${html}</body></html>`;
  const parse = (): DomDocument => {
    const document = libs.parseHTML(source).document as unknown as DomDocument;
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
      article = new libs.Readability(document as unknown as ConstructorParameters<typeof Readability>[0], {
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
    const service = new libs.TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
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
