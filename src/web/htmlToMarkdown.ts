import { convertHtml, finishMarkdown, loadHtmlLibraries, type HtmlToMarkdownOptions, type MarkdownPage } from "./htmlConvert.js";

export { stripDataImages, type HtmlToMarkdownOptions, type MarkdownPage } from "./htmlConvert.js";

/**
 * HTML → readable Markdown: the main article found by Readability (on a linkedom DOM), falling
 * back to the whole body when Readability finds none or the page is too big for it; relative
 * links made absolute against `baseUrl`; base64 images removed. Runs on the calling thread:
 * the fetch backend uses {@link HtmlConversionPool} (./htmlWorkerPool.ts) to keep big pages off
 * the event loop.
 */
export function htmlToMarkdown(html: string, baseUrl?: string, options: HtmlToMarkdownOptions = {}): MarkdownPage {
  return finishMarkdown(convertHtml(loadHtmlLibraries(), html, baseUrl, options.readabilityMaxChars));
}

