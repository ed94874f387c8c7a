/**
 * Matching runs on LF text without a BOM; results go back in the file's own conventions, so an
 * edit never flips a Windows file to LF (or the reverse) as a side effect.
 */
export interface TextConventions {
  bom: boolean;
  eol: "\n" | "\r\n";
}

/** LF text plus the conventions to restore. Mixed files are written back in their dominant style. */
export function toLf(content: string): { text: string; conventions: TextConventions } {
  const bom = content.charCodeAt(0) === 0xfeff;
  const body = bom ? content.slice(1) : content;
  const crlf = countOf(body, "\r\n");
  const lf = countOf(body, "\n") - crlf;
  return { text: body.replace(/\r\n/g, "\n"), conventions: { bom, eol: crlf > 0 && crlf >= lf ? "\r\n" : "\n" } };
}

/** Reverses {@link toLf}. */
export function fromLf(text: string, conventions: TextConventions): string {
  const body = conventions.eol === "\r\n" ? text.replace(/\n/g, "\r\n") : text;
  return conventions.bom ? `\uFEFF${body}` : body;
}

/** Model-supplied strings may carry CRLF when copied from a Windows file: match them as LF. */
export function normaliseEol(s: string): string {
  return s.replace(/\r\n/g, "\n");
}

function countOf(s: string, needle: string): number {
  let n = 0;
  for (let i = s.indexOf(needle); i !== -1; i = s.indexOf(needle, i + needle.length)) n++;
  return n;
}
