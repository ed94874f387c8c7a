/** PEM private keys: the body lines between BEGIN and END (or the window's edge). */
import { anchoredMatches } from "./anchored.js";
import { registerAnchorLiterals, type TextScan } from "./scan.js";
import { lineAt } from "./text.js";
import type { RedactOptions, SecretSpan } from "./types.js";

const PEM_BEGIN_RE = /-----BEGIN ([A-Z0-9 ]*?)PRIVATE KEY( BLOCK)?-----/g;
const PEM_END_RE = /-----END [A-Z0-9 ]*?PRIVATE KEY(?: BLOCK)?-----/g;
/** Where the BEGIN and END lines start (tried only there: ./anchored.ts). */
const BEGIN_ANCHOR = { needles: ["-----BEGIN "], back: 0 };
const END_ANCHOR = { needles: ["-----END "], back: 0 };
registerAnchorLiterals([...BEGIN_ANCHOR.needles, ...END_ANCHOR.needles]);
/** A PEM body line (or an RFC 1421 header line such as `Proc-Type: 4,ENCRYPTED`). */
const PEM_BODY_LINE_RE = /^[ \t]*(?:[A-Za-z0-9+/=]{16,100}|[A-Za-z-]+: [^\n]*)[ \t]*\r?$/;

const isBodyLine = (line: string) => PEM_BODY_LINE_RE.test(line) || line.trim() === "";


/** End offset of the run of key-body lines starting at `from` (a line start), or `from` when there is none. */
function bodyRunForward(text: string, from: number): number {
  let pos = from;
  let end = from;
  while (pos < text.length) {
    const [, e] = lineAt(text, pos);
    const line = text.slice(pos, e);
    if (!isBodyLine(line)) break;
    if (line.trim() !== "") end = e;
    pos = e + 1;
  }
  return end;
}

/** Start offset of the run of key-body lines ending just before the line that starts at `to`. */
function bodyRunBackward(text: string, to: number): number {
  let start = to;
  let pos = to - 1; // the newline before `to`
  while (pos > 0) {
    const [s] = lineAt(text, pos);
    const line = text.slice(s, pos);
    if (!isBodyLine(line)) break;
    if (line.trim() !== "") start = s;
    pos = s - 1;
  }
  if (pos === 0 && to > 0 && isBodyLine(text.slice(0, lineAt(text, 0)[1]))) start = 0;
  return start;
}

/**
 * Spans covering PEM key bodies: BEGIN…END, BEGIN…(end of text), (start of text)…END. Only
 * key-body lines (base64, RFC 1421 headers) are covered, so a BEGIN line quoted in code does not
 * mask the code after it; a key written inline with `\n` escapes is masked up to its END.
 */
export function detectPem(text: string, opts: RedactOptions, scan: TextScan): SecretSpan[] {
  const out: SecretSpan[] = [];
  const label = "private-key";
  let covered = false;
  if (text.includes("PRIVATE KEY")) {
    for (const b of anchoredMatches(text, scan, PEM_BEGIN_RE, BEGIN_ANCHOR)) {
      covered = true;
      const after = b.index + b[0].length;
      if (text.startsWith("\\n", after)) {
        // Inline: "-----BEGIN … KEY-----\nMIIE…\n-----END … KEY-----" on one line.
        const [, eol] = lineAt(text, after);
        // Searched on this line only: an END further on cannot stop it, and a search of the rest
        // of the text per inline BEGIN would make many of them quadratic.
        const line = text.slice(after, eol);
        const endAt = line.indexOf("-----END");
        const quoteAt = line.search(/["'`]/);
        const stop = after + (endAt !== -1 ? endAt : quoteAt !== -1 ? quoteAt : line.length);
        if (/[A-Za-z0-9+/=]{16}/.test(text.slice(after, stop))) out.push({ start: after, end: stop, label });
        continue;
      }
      const nl = text.indexOf("\n", after);
      if (nl === -1) continue;
      const bodyEnd = bodyRunForward(text, nl + 1);
      if (bodyEnd > nl + 1) out.push({ start: nl + 1, end: bodyEnd, label });
    }
    for (const e of anchoredMatches(text, scan, PEM_END_RE, END_ANCHOR)) {
      covered = true;
      const [lineStart] = lineAt(text, e.index);
      const bodyStart = bodyRunBackward(text, lineStart);
      if (bodyStart < lineStart) out.push({ start: bodyStart, end: Math.max(bodyStart, lineStart - 1), label });
    }
  }
  if (opts.startsMidFile && !covered) {
    // No BEGIN/END in view: leading base64 lines may be the middle of a key.
    let pos = 0;
    let lines = 0;
    while (pos < text.length) {
      const eol = text.indexOf("\n", pos);
      const line = text.slice(pos, eol === -1 ? text.length : eol);
      if (!PEM_BODY_LINE_RE.test(line) || line.trim().length < 40 || /: /.test(line)) break;
      lines++;
      pos = eol === -1 ? text.length : eol + 1;
    }
    if (lines > 0) out.push({ start: 0, end: Math.max(0, pos - 1), label });
  }
  return out;
}
