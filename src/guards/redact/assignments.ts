/**
 * `key = value` assignments whose key names a secret (dotenv, YAML, JSON, INI, code, flags): the
 * value is masked unless it is a placeholder, a code expression or (for weak keys) a plain word.
 */
import { keyStrength } from "./keyNames.js";
import { REDACTION_MARKER_PREFIX } from "./markers.js";
import { isKeyChar, isKeyStartChar, lineEnd } from "./text.js";
import type { TextScan } from "./scan.js";
import type { RedactOptions, SecretSpan } from "./types.js";
import { CODE_EXPRESSION_RE, ENV_LOOKUP_RE, TYPE_ANNOTATION_RE, isCodeValue, isPlaceholder, looksLikeCredential } from "./values.js";

/**
 * `KEY=value`, `KEY: value`, `"key": "value"`, `key := "value"`, `key => 'value'`, `export KEY=value`,
 * `--password=x`. Group 1: lead; 2: key; 3: space before the operator; 4: operator; 5: space after; 6: value.
 */
const ASSIGNMENT_RE =
  /()["'`]?([A-Za-z_][\w.-]*)["'`]?([ \t]*)(::?=|:=|=>|\?=|\.=|\+=|=|:)([ \t]*)("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`|\$\{\{[^}\n]*\}\}|\$\{[^}\n]*\}|(?:[^\s"'`,;&}\])\\]|\\(?![nrt0])|&(?![\w.-]+=))+)/y;

/** Substrings every secret key name contains: assignments are only parsed where one occurs. */
const KEY_HINT_TEST_RE = /pass|pw|secret|token|key|auth|cred|bearer|sess|cookie|sig|salt|otp|dsn|pat/i;
/**
 * The first two letters of every hint (lower case, by `c0 * 128 + c1`): a key without one of
 * these pairs holds no hint, checked on the text before the key is cut out and matched.
 */
const HINT_PAIRS = new Uint8Array(128 * 128);
for (const h of KEY_HINT_TEST_RE.source.split("|")) HINT_PAIRS[h.charCodeAt(0) * 128 + h.charCodeAt(1)] = 1;

/** Do the code units `[start, end)` (key characters, ASCII) hold a pair of {@link HINT_PAIRS}? */
function mayHoldHint(codes: Uint16Array, start: number, end: number): boolean {
  let prev = codes[start]! | 32;
  for (let i = start + 1; i < end; i++) {
    const c = codes[i]! | 32;
    if (HINT_PAIRS[prev * 128 + c] === 1) return true;
    prev = c;
  }
  return false;
}

function assignmentSpan(text: string, match: RegExpExecArray, keyLength: number, keyIsStrength: Strength): SecretSpan | undefined {
  const [whole, lead, key, spaceBefore, op, spaceAfter, value] = match as unknown as [string, string, string, string, string, string, string];
  // (the key the operator was traced back to, unless the match took another)
  const strength = key.length === keyLength ? keyIsStrength : keyStrength(key);
  if (!strength) return undefined;
  const q0 = value.charCodeAt(0);
  const quote = (q0 === 34 || q0 === 39 || q0 === 96) && value.length >= 2 && value.endsWith(value[0]!) ? value[0]! : "";
  const valueStart = match.index + whole.length - value.length;
  let inner = quote ? value.slice(1, -1) : value;
  let start = quote ? valueStart + 1 : valueStart;
  const trimmed = inner.trim();
  if (isPlaceholder(trimmed) || trimmed.toLowerCase() === key.toLowerCase() || trimmed.includes(REDACTION_MARKER_PREFIX)) return undefined;
  if (trimmed.length < 3 && !/\d/.test(trimmed)) return undefined; // `PASSWORD=x` in docs and tests
  if (quote === "`" && trimmed.includes("${")) return undefined; // a template literal is code
  if (!quote && /^\/[\\^[(]/.test(trimmed)) return undefined; // a regex literal
  if (!quote && op === ":" && TYPE_ANNOTATION_RE.test(trimmed)) return undefined;
  if (!quote) {
    // `token == x`, `token => x`, `a::b`, `x = [` / `{`: comparisons, paths and structures, not values.
    if (/^[=>:[{(]/.test(value)) return undefined;
    if (isCodeValue(inner)) return undefined;
    if (ENV_LOOKUP_RE.test(inner)) return undefined;
    const isExpression = CODE_EXPRESSION_RE.test(inner);
    if (isExpression && /[.([]|::|->/.test(inner) && !/^[\w.-]+$/.test(inner)) return undefined;
    if (isExpression && /[.]/.test(inner) && !/\d/.test(inner)) return undefined; // `token = self.token`, `pw = cfg.db.password`
    // `api_key = api_key` (code) vs `API_KEY=abc` (dotenv) vs `aws_secret_access_key = wJalr…` (INI).
    if (isExpression && op !== ":" && (spaceBefore !== "" || spaceAfter !== "") && !looksLikeCredential(inner)) return undefined;
    // `token: string` (a type annotation) vs `token: hunter2` (YAML).
    if (isExpression && op === ":" && !/\d/.test(inner) && inner.length < 12 && !(strength === "strong" && lineStartsAt(text, match.index + lead.length))) return undefined;
    // A dotenv/YAML line: the value is the rest of the line (a password may hold `,` `;` `]`).
    if ((op === "=" || op === ":") && !/["'`]/.test(text[match.index + lead.length] ?? "") && lineStartsAt(text, match.index + lead.length)) {
      const eol = lineEnd(text, valueStart);
      const rest = text.slice(valueStart, eol).replace(/&[\w.-]+=.*$/, "").replace(/\s+#.*$/, "").replace(/\s+$/, "");
      if (rest.length > inner.length && !/^["'`[{]/.test(rest)) inner = rest;
    }
  }
  if (strength === "weak" && (!looksLikeCredential(inner.trim()) || /\s/.test(inner.trim()))) return undefined;
  if (strength === "weak-key" && !(inner.trim().length >= 20 && /\d/.test(inner) && /[A-Za-z]/.test(inner) && !/\s/.test(inner.trim()))) return undefined;
  // Trim surrounding spaces inside quotes.
  const lead2 = inner.length - inner.trimStart().length;
  start += lead2;
  inner = inner.trim();
  if (inner === "") return undefined;
  return { start, end: start + inner.length };
}

type Strength = ReturnType<typeof keyStrength>;

/** `[A-Za-z0-9_.-]` by char code (0 for every code ≥ 128): the key scan's table. */
const KEY_CHAR = new Uint8Array(65536);
for (let c = 0; c < 128; c++) KEY_CHAR[c] = isKeyChar(c) ? 1 : 0;

/**
 * The strength of each key seen lately ({@link keyStrength}, undefined also when the key holds
 * no hint), in a direct-mapped table looked up by a hash of the key's characters in the text:
 * an assignment-heavy file repeats its keys, and cutting each key out of the text, testing it
 * with a regex and hashing it again in a `Map` cost more than the rest of the detector.
 */
const KEY_SLOTS = 4096;
const slotKeys: Array<string | undefined> = new Array<string | undefined>(KEY_SLOTS).fill(undefined);
const slotStrengths: Strength[] = new Array<Strength>(KEY_SLOTS).fill(undefined);

function keyStrengthAt(text: string, codes: Uint16Array, start: number, end: number): Strength {
  let h = end - start;
  for (let i = start; i < end; i++) h = Math.imul(h ^ codes[i]!, 0x01000193);
  const slot = (h >>> 20) & (KEY_SLOTS - 1);
  const known = slotKeys[slot];
  if (known !== undefined && known.length === end - start && text.startsWith(known, start)) return slotStrengths[slot];
  const key = text.slice(start, end);
  const strength = KEY_HINT_TEST_RE.test(key) ? keyStrength(key) : undefined;
  slotKeys[slot] = key;
  slotStrengths[slot] = strength;
  return strength;
}

/** `\w` by char code (a regex test per key cost more than the rest of the key check). */
function isWordChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
}

function lineStartsAt(text: string, pos: number): boolean {
  let i = pos - 1;
  while (i >= 0 && (text[i] === " " || text[i] === "\t")) i--;
  if (i < 0 || text[i] === "\n") return true;
  // `export KEY=…`, `set KEY=…`, `ENV KEY=…`, `- KEY=…`
  const lineStart = text.lastIndexOf("\n", i) + 1;
  return /^\s*(?:export|set|setenv|ENV|ARG|declare(?:\s+-x)?|-)\s+$/.test(text.slice(lineStart, pos));
}


/**
 * `key = value` assignments whose key holds a secret word: found from the operators (`:` and `=`,
 * located with `indexOf`) back to the key before each, so the key-name rule costs one cheap check
 * per operator; the assignment is then matched at the key (sticky) only when the key holds a hint.
 */
function assignmentSpans(text: string, c: Uint16Array, spans: SecretSpan[]): void {
  let colon = text.indexOf(":");
  let equals = text.indexOf("=");
  let doneUntil = -1;
  while (colon !== -1 || equals !== -1) {
    let op: number;
    if (equals === -1 || (colon !== -1 && colon < equals)) {
      op = colon;
      colon = text.indexOf(":", op + 1);
    } else {
      op = equals;
      equals = text.indexOf("=", op + 1);
    }
    // Back over `?` of `?=`, blanks and a closing quote to the end of the key.
    let q = op - 1;
    if (c[op]! === 61 && c[q]! === 63) q--;
    // PHP `$key .= "…"`, `+=`: the operator's first character is not part of the key.
    else if (c[op]! === 61 && (c[q]! === 46 || c[q]! === 43) && c[q - 1]! === 32) q--;
    while (q >= 0 && (c[q]! === 32 || c[q]! === 9)) q--;
    const cq = c[q]!;
    if (cq === 34 || cq === 39 || cq === 96) q--;
    if (q < 0 || !isKeyChar(c[q]!)) continue;
    const keyEnd = q + 1;
    if (keyEnd <= doneUntil) continue;
    doneUntil = keyEnd;
    let start = q;
    while (start > 0 && KEY_CHAR[c[start - 1]!] === 1) start--;
    while (start < keyEnd && !isKeyStartChar(c[start]!)) start++; // `--password`, `.token`
    if (start === keyEnd || !mayHoldHint(c, start, keyEnd)) continue;
    const strength = keyStrengthAt(text, c, start, keyEnd);
    if (!strength) continue;
    const before = start > 0 ? text[start - 1]! : "";
    // `$TOKEN`, `${password}` are references; `$password = "…"` (PHP, Perl) assigns a literal.
    if (before === "$" && !/^[ \t]*[.+]?=[ \t]*["']/.test(text.slice(keyEnd, keyEnd + 16))) continue;
    if (before === "{" && text[start - 2] === "$") continue; // `${VAR:?message}`, `${VAR:-default}`
    const at = before === '"' || before === "'" || before === "`" ? start - 1 : start;
    if (at > 0 && isWordChar(c[at - 1]!)) continue;
    ASSIGNMENT_RE.lastIndex = at;
    const m = ASSIGNMENT_RE.exec(text);
    if (!m) continue;
    const span = assignmentSpan(text, m, keyEnd - start, strength);
    if (span) spans.push(span);
  }
}


/** The assignment detector. */
export function detectAssignments(text: string, _opts: RedactOptions, scan: TextScan): SecretSpan[] {
  const spans: SecretSpan[] = [];
  assignmentSpans(text, scan.codes(), spans);
  return spans;
}
