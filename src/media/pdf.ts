/**
 * PDF text extraction with unpdf (PDF.js), loaded on first use so a run that never reads a PDF
 * never pays for it. Only the pages asked for are parsed for text.
 */

/** A PDF that cannot be read (damaged, encrypted); `message` is guidance for the model, without a path. */
export class PdfReadError extends Error {
  override readonly name = "PdfReadError";
}

export interface PdfPages {
  totalPages: number;
  /** Text of pages `first ..` in order; a page without a text layer is the empty string. */
  pages: { page: number; text: string }[];
}

type UnpdfModule = typeof import("unpdf");
let unpdf: Promise<UnpdfModule> | undefined;

function loadUnpdf(): Promise<UnpdfModule> {
  unpdf ??= import("unpdf").catch((err: unknown) => {
    unpdf = undefined;
    throw new PdfReadError(`PDF support is not available here (the "unpdf" package could not be loaded: ${(err as Error).message}).`);
  });
  return unpdf;
}

interface TextItemLike {
  str?: string;
  hasEOL?: boolean;
}

function pageText(items: readonly unknown[]): string {
  let out = "";
  for (const item of items as TextItemLike[]) {
    if (typeof item.str !== "string") continue;
    out += item.str;
    if (item.hasEOL) out += "\n";
  }
  return out.replace(/[ \t]+\n/g, "\n").trimEnd();
}

/**
 * Text of pages `first .. first+count-1` (1-based; clamped to the document). Stops early once
 * `maxChars` is reached (the page that crosses it is included whole; callers cut it).
 */
export async function extractPdfPages(bytes: Uint8Array, window: { first: number; count: number; maxChars?: number }): Promise<PdfPages> {
  const { getDocumentProxy } = await loadUnpdf();
  let doc: Awaited<ReturnType<UnpdfModule["getDocumentProxy"]>>;
  try {
    // A copy: PDF.js may transfer (detach) the buffer it is given.
    doc = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0, isEvalSupported: false, useSystemFonts: false, disableFontFace: true, stopAtErrors: false });
  } catch (err) {
    const name = (err as Error)?.name;
    if (name === "PasswordException") throw new PdfReadError("is a password-protected PDF; its text cannot be extracted. Ask the user for an unprotected copy.");
    throw new PdfReadError(`could not be read as a PDF (${(err as Error)?.message ?? "damaged file"}). Ask for a repaired copy, or use a command-line PDF tool if one is available.`);
  }
  try {
    const totalPages = doc.numPages;
    const first = Math.max(1, Math.floor(window.first));
    const last = Math.min(totalPages, first + Math.max(0, Math.floor(window.count)) - 1);
    const pages: PdfPages["pages"] = [];
    let chars = 0;
    for (let n = first; n <= last; n++) {
      let text = "";
      try {
        const page = await doc.getPage(n);
        text = pageText((await page.getTextContent()).items);
        page.cleanup();
      } catch {
        text = "[this page could not be read]";
      }
      pages.push({ page: n, text });
      chars += text.length;
      if (window.maxChars !== undefined && chars >= window.maxChars) break;
    }
    return { totalPages, pages };
  } finally {
    await doc.destroy().catch(() => undefined);
  }
}
