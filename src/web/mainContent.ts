/**
 * Main-content isolation on the HTML text, without building a DOM: the fast HTML → Markdown path
 * converts only the page's one `<main>`, `role="main"` or `<article>` element when the page has
 * exactly one, and drops the site chrome listed in {@link CHROME_SELECTORS} wherever it is.
 * A DOM parse plus Readability cost 7× the parse alone; this is a few linear scans.
 *
 * Self-contained (uses only its parameters and what it declares inside) because the worker pool
 * ships its source text to worker threads.
 */
export function isolateMainContent(html: string): string {
  // A landmark smaller than this is more likely a widget than the article: keep the whole page.
  const MIN_MAIN_CHARS = 500;
  // Script and style bodies may contain tag-like text; blank them (same length) before scanning.
  const scan = html.replace(/<(script|style|template|noscript)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, (m) => " ".repeat(m.length));

  const only = (pattern: RegExp): RegExpExecArray | undefined => {
    const first = pattern.exec(scan);
    if (!first) return undefined;
    return pattern.exec(scan) ? undefined : first;
  };
  // The element starting at `start` with tag `name`, up to its matching close tag (nesting counted).
  const element = (start: number, name: string): string | undefined => {
    const tags = new RegExp(`<(/?)${name}(?=[\\s/>])[^>]*>`, "gi");
    tags.lastIndex = start;
    let depth = 0;
    for (let m = tags.exec(scan); m; m = tags.exec(scan)) {
      if (m[1]) depth--;
      else if (!m[0].endsWith("/>")) depth++;
      if (depth === 0) return html.slice(start, m.index + m[0].length);
    }
    return undefined;
  };
  const pick = (pattern: RegExp): string | undefined => {
    const found = only(pattern);
    if (!found) return undefined;
    const name = /^<([a-z][a-z0-9-]*)/i.exec(found[0])?.[1];
    const slice = name ? element(found.index, name) : undefined;
    return slice && slice.length >= MIN_MAIN_CHARS ? slice : undefined;
  };
  const main = pick(/<main(?=[\s>])[^>]*>/gi) ?? pick(/<[a-z][a-z0-9-]*\s[^>]*\brole\s*=\s*["']?main\b[^>]*>/gi) ?? pick(/<article(?=[\s>])[^>]*>/gi);
  return main ?? html;
}

/**
 * Site chrome dropped with everything inside it: landmarks and the class/id words sites use for
 * menus, banners, sidebars, share bars, comments and ads. Word matches (`~=`), not substrings, so
 * content such as a code comment's `class="comment"` span is kept.
 */
export const CHROME_SELECTORS: readonly string[] = [
  "nav",
  "aside",
  "footer",
  "form",
  "button",
  "svg",
  "iframe",
  "[role=navigation]",
  "[role=banner]",
  "[role=contentinfo]",
  "[role=complementary]",
  "[role=search]",
  "[role=dialog]",
  "[aria-hidden=true]",
  "#header",
  "#footer",
  "#sidebar",
  "#comments",
  "#masthead",
  "#consent",
  "[class~=site-header]",
  "[class~=site-footer]",
  "[class~=sidebar]",
  "[class~=navbar]",
  "[class~=menu]",
  "[class~=breadcrumb]",
  "[class~=breadcrumbs]",
  "[class~=comments]",
  "[class~=share-bar]",
  "[class~=social-share]",
  "[class~=related-posts]",
  "[class~=newsletter]",
  "[class~=cookie-banner]",
  "[class~=cookie-consent]",
  "[class~=advert]",
  "[class~=ad-slot]",
  "[class~=widget-area]",
];
