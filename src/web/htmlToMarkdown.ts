import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";

/** The slice of the DOM this module touches (the project compiles without the DOM lib). */
interface DomElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  remove(): void;
  querySelectorAll(selector: string): ArrayLike<DomElement>;
}

function all(root: { querySelectorAll(selector: string): ArrayLike<DomElement> }, selector: string): DomElement[] {
  return Array.from(root.querySelectorAll(selector));
}

export interface MarkdownPage {
  title: string;
  markdown: string;
}

/** Elements that never carry readable text. */
const NOISE = ["script", "style", "noscript", "template", "iframe", "svg", "canvas", "form", "button"];

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

/**
 * Readability is by far the slowest step (super-linear on big documents), so it only runs on
 * pages up to this size and gives up past this many elements; bigger pages use the whole body.
 */
const READABILITY_MAX_HTML_CHARS = 1_000_000;
const READABILITY_MAX_ELEMENTS = 20_000;

export interface HtmlToMarkdownOptions {
  /** Pages longer than this (HTML characters) skip Readability and convert the whole body. Default 1,000,000. */
  readabilityMaxChars?: number;
}

/**
 * HTML → readable Markdown: the main article found by Readability (on a linkedom DOM), falling
 * back to the whole body when Readability finds none or the page is too big for it; relative
 * links made absolute against `baseUrl`; base64 images removed.
 */
export function htmlToMarkdown(html: string, baseUrl?: string, options: HtmlToMarkdownOptions = {}): MarkdownPage {
  // linkedom mis-nests fragments that lack an <html> element, so give them one.
  const { document } = parseHTML(/<html[\s>]/i.test(html) ? html : `<!doctype html><html><head></head><body>${html}</body></html>`);
  for (const selector of NOISE) all(document, selector).forEach((node) => node.remove());
  for (const img of all(document, "img")) {
    if ((img.getAttribute("src") ?? "").trim().toLowerCase().startsWith("data:")) img.remove();
  }
  const base = resolveBase(document.querySelector("base")?.getAttribute("href"), baseUrl);
  if (base) absolutise(document, base);

  const pageTitle = (document.querySelector("title")?.textContent ?? "").trim();
  const h1 = (document.querySelector("h1")?.textContent ?? "").trim();
  const root = document.body ?? document.documentElement;
  let content: string | DomElement = root as unknown as DomElement;
  let article: { title?: string | null; content?: string | null } | null = null;
  if (html.length <= (options.readabilityMaxChars ?? READABILITY_MAX_HTML_CHARS)) {
    // Serialised first: Readability rewrites the document it reads, and a failed run leaves it mangled.
    const bodyHtml: string = root?.innerHTML ?? html;
    try {
      article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], {
        charThreshold: 200,
        maxElemsToParse: READABILITY_MAX_ELEMENTS,
      }).parse();
    } catch {
      article = null;
    }
    content = article?.content && article.content.trim() ? article.content : bodyHtml;
  }
  // Turndown takes a DOM node as well as a string; the node spares a serialise-and-reparse on big pages.
  const markdown = stripDataImages(turndown().turndown(content as unknown as string))
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return { title: pageTitle || article?.title?.trim() || h1, markdown };
}

function turndown(): TurndownService {
  const service = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
  service.remove(["script", "style", "noscript"]);
  // Turndown's core drops table structure; summaries and agents need the rows and columns.
  service.addRule("table", { filter: "table", replacement: (_content, node) => tableToMarkdown(node as unknown as DomElement) });
  return service;
}

function tableToMarkdown(table: DomElement): string {
  const rows = all(table, "tr").map((row) =>
    all(row, "th,td").map((cell) =>
      (cell.textContent ?? "").replace(/\s+/g, " ").trim().replace(/\|/g, "\\|"),
    ),
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

function absolutise(document: { querySelectorAll(selector: string): ArrayLike<DomElement> }, baseUrl: string): void {
  for (const [selector, attribute] of [
    ["a[href]", "href"],
    ["img[src]", "src"],
  ] as const) {
    all(document, selector).forEach((element) => {
      const value = element.getAttribute(attribute);
      if (!value || value.startsWith("#") || /^[a-z][a-z0-9+.-]*:/i.test(value)) return;
      try {
        element.setAttribute(attribute, new URL(value, baseUrl).toString());
      } catch {
        // An unparsable link stays as written.
      }
    });
  }
}
