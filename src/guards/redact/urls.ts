/** Credentials inside URLs: `scheme://user:password@host`, a token as the user, webhook URLs whose path is the key. */
import { WEBHOOK_PATTERNS } from "../secretPatterns.js";
import { anchoredMatches } from "./anchored.js";
import { registerAnchorLiterals, type TextScan } from "./scan.js";
import type { RedactOptions, SecretSpan } from "./types.js";
import { isPlaceholder } from "./values.js";

registerAnchorLiterals(WEBHOOK_PATTERNS.map((w) => w.host));

/** `scheme://user:password@host`, `scheme://:password@host`, `scheme://TOKEN@host`. */
const URL_USERINFO_RE = /\b[a-z][a-z0-9+.-]{1,20}:\/\/([^\s:/@"'<>]{0,128})(?::([^\s@/"'<>]{1,256}))?@(?=[A-Za-z0-9[])/gi;

const URL_USERINFO_STICKY_RE = new RegExp(URL_USERINFO_RE.source, "iy");

/**
 * The matches of {@link URL_USERINFO_RE} (leftmost, not overlapping), tried only where a scheme
 * can start before a `://` (at most 21 characters back) instead of at every position.
 */
function urlUserinfoMatches(text: string): RegExpExecArray[] {
  const out: RegExpExecArray[] = [];
  let doneUntil = 0;
  for (let sep = text.indexOf("://"); sep !== -1; sep = text.indexOf("://", sep + 1)) {
    // A scheme is a run of scheme characters ending at the `://`: starts before that run would
    // reach an earlier `://`, already tried.
    let run = sep;
    while (run > sep - 21 && run > 0 && isSchemeChar(text.charCodeAt(run - 1))) run--;
    for (let from = Math.max(doneUntil, run); from <= sep - 2; from++) {
      URL_USERINFO_STICKY_RE.lastIndex = from;
      const m = URL_USERINFO_STICKY_RE.exec(text);
      if (!m) continue;
      out.push(m);
      doneUntil = m.index + m[0].length;
      break;
    }
  }
  return out;
}

/** `[a-z0-9+.-]`, either case. */
function isSchemeChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 43 || c === 46 || c === 45;
}

/** A user-only URL credential that is a token, not a login name (`git`, `deploy`, `alice.smith`). */
function tokenLikeUser(user: string): boolean {
  return user.length >= 16 && /\d/.test(user) && /[A-Za-z]/.test(user);
}

/** The URL detector. */
export function detectUrlSecrets(text: string, _opts: RedactOptions, scan: TextScan): SecretSpan[] {
  const spans: SecretSpan[] = [];
  for (const w of WEBHOOK_PATTERNS) {
    for (const m of anchoredMatches(text, scan, w.re, { needles: [w.host], back: 0 })) {
      const start = m.index + m[1]!.length;
      spans.push({ start, end: start + m[2]!.length, label: w.label });
    }
  }
  for (const m of urlUserinfoMatches(text)) {
    const user = m[1] ?? "";
    const password = m[2];
    const userStart = m.index + m[0].indexOf("://") + 3;
    if (password !== undefined && !isPlaceholder(password)) {
      const start = userStart + user.length + 1;
      spans.push({ start, end: start + password.length });
    } else if (password === undefined && tokenLikeUser(user)) {
      spans.push({ start: userStart, end: userStart + user.length });
    }
  }
  return spans;
}
