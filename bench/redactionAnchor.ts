/**
 * The anchor for bench/redaction.bench.ts: `redactSecrets` exactly as it was on main before the
 * span engine (commit ce01907), so recall, false positives and throughput are compared in one run.
 * Not used by the package.
 */
/* eslint-disable */

/** Opening of every marker. */
const REDACTION_MARKER_PREFIX = "«redacted";

/** The marker for a secret of kind `label` (e.g. `sk-…`, `jwt`, `private-key`). */
function redactionMarker(label?: string): string {
  return label ? `«redacted:${label}»` : "«redacted»";
}

const MARKER_RE = /«redacted(?::[^»\n]{0,60})?»/;

/** True when `text` contains a redaction marker (content that came from a redacted read). */
function containsRedactionMarker(text: string): boolean {
  return typeof text === "string" && text.includes(REDACTION_MARKER_PREFIX) && MARKER_RE.test(text);
}

interface VendorRule {
  re: RegExp;
  label: (match: string) => string;
}

const fixed = (label: string) => () => label;

/**
 * Vendor key formats. Each starts at a word boundary that is not part of a longer identifier
 * (`(?<![\w-])`), so `risk-assessment-…` or `task_live_…` are not touched.
 */
const VENDOR_RULES: VendorRule[] = [
  { re: /(?<![\w-])sk-ant-(?:api|admin)\d{0,2}-[A-Za-z0-9_-]{20,}/g, label: fixed("sk-ant-…") },
  { re: /(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}/g, label: fixed("sk-ant-…") },
  { re: /(?<![\w-])sk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_-]{20,}/g, label: fixed("sk-…") },
  { re: /(?<![\w-])github_pat_[A-Za-z0-9_]{22,}/g, label: fixed("github_pat_…") },
  { re: /(?<![\w-])gh[pousr]_[A-Za-z0-9]{30,}/g, label: (m) => `${m.slice(0, 4)}…` },
  { re: /(?<![\w-])xox[abposre]-[A-Za-z0-9-]{10,}/g, label: (m) => `${m.slice(0, 5)}…` },
  { re: /(?<![\w-])xapp-\d-[A-Za-z0-9-]{10,}/g, label: fixed("xapp-…") },
  { re: /(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}(?![A-Za-z0-9])/g, label: (m) => `${m.slice(0, 4)}…` },
  { re: /(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])/g, label: fixed("AIza…") },
  { re: /(?<![\w-])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}/g, label: (m) => `${m.slice(0, 8)}…` },
  { re: /(?<![\w-])whsec_[0-9A-Za-z]{20,}/g, label: fixed("whsec_…") },
  { re: /(?<![\w-])tvly-(?:dev-|prod-)?[A-Za-z0-9_-]{20,}/g, label: fixed("tvly-…") },
  { re: /(?<![\w-])fc-[A-Za-z0-9]{20,}(?![\w-])/g, label: fixed("fc-…") },
  { re: /(?<![\w-])hf_[A-Za-z0-9]{30,}/g, label: fixed("hf_…") },
  { re: /(?<![\w-])npm_[A-Za-z0-9]{36,}/g, label: fixed("npm_…") },
  { re: /(?<![\w-])pypi-[A-Za-z0-9_-]{40,}/g, label: fixed("pypi-…") },
  { re: /(?<![\w-])gl(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_-]{20,}/g, label: (m) => `${m.slice(0, m.indexOf("-") + 1)}…` },
  { re: /(?<![\w-])gsk_[A-Za-z0-9]{30,}/g, label: fixed("gsk_…") },
  { re: /(?<![\w-])xai-[A-Za-z0-9]{30,}/g, label: fixed("xai-…") },
  { re: /(?<![\w-])pplx-[A-Za-z0-9]{30,}/g, label: fixed("pplx-…") },
  { re: /(?<![\w-])r8_[A-Za-z0-9]{30,}/g, label: fixed("r8_…") },
  { re: /(?<![\w-])dop_v1_[a-f0-9]{40,}/g, label: fixed("dop_v1_…") },
  { re: /(?<![\w-])SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}/g, label: fixed("SG.…") },
];

const JWT_RE = /(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;

const PEM_BLOCK_RE = /(-----BEGIN ([A-Z0-9 ]*?)PRIVATE KEY( BLOCK)?-----)[\s\S]*?(-----END \2PRIVATE KEY\3-----|$)/g;
/** The tail of a key whose BEGIN line lies before the window being shown. */
const PEM_TAIL_RE = /^(?:[ \t]*[A-Za-z0-9+/=]{16,}[ \t]*\r?\n)+(?=[ \t]*-----END [A-Z0-9 ]*PRIVATE KEY)/;

/** `Authorization: Bearer x`, `Proxy-Authorization: Basic x`, `x-api-key: x`, `api-key: x`. */
const AUTH_HEADER_RE =
  /\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token|digest|apikey|bot)\s+)?([^\s"',;]{4,})/gi;
const KEY_HEADER_RE = /\b((?:x-api-key|x-auth-token|api-key|x-goog-api-key|x-access-token)["']?\s*[:=]\s*["']?)([^\s"',;]{6,})/gi;

/** `scheme://user:password@host` — the user name stays, the password goes. */
const URL_CREDENTIALS_RE = /\b([a-z][a-z0-9+.-]{1,20}:\/\/)([^\s:/@"'<>]{1,128}):([^\s@/"'<>]{1,256})@/gi;

/** Words that make an assignment's key a secret, and words that make it metadata about one. */
const SECRET_WORDS = new Set([
  "secret", "secrets", "token", "password", "passwd", "pwd", "passphrase", "credential", "credentials",
  "apikey", "auth", "privatekey", "accesskey", "secretkey", "pat", "dsn",
]);
const KEY_QUALIFIERS = new Set(["api", "access", "private", "secret", "signing", "encryption", "master", "session", "client", "account", "service", "license", "webhook"]);
const METADATA_WORDS = new Set([
  "length", "len", "size", "count", "limit", "limits", "max", "min", "type", "name", "names", "id", "file", "path", "dir",
  "url", "uri", "env", "var", "header", "field", "prefix", "suffix", "ttl", "timeout", "expiry", "expires", "expiration",
  "at", "endpoint", "mode", "enabled", "required", "regex", "pattern", "kind", "hint", "label", "format", "version",
  "policy", "provider", "method", "scheme", "location", "ref", "arn", "hash", "algorithm", "alg", "rotation",
]);

function keyWords(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

/** Does this assignment key name a secret? Word-bounded: `KEYBOARD`, `MONKEY`, `TOKENIZER` do not. */
function isSecretKeyName(key: string): boolean {
  const words = keyWords(key);
  if (words.length === 0) return false;
  const last = words[words.length - 1]!;
  if (METADATA_WORDS.has(last)) return false;
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (SECRET_WORDS.has(w)) return true;
    if (w === "key" && i > 0 && KEY_QUALIFIERS.has(words[i - 1]!)) return true;
  }
  return false;
}

const PLACEHOLDER_RE = /^(?:<[^>]*>|\{\{[^}]*\}\}|\$\{[^}]*\}|\$[A-Za-z_]\w*|%[A-Za-z_]\w*%|x{3,}|\*{3,}|\.{3}|…|changeme|change-me|your[-_].*|example|placeholder|none|null|nil|undefined|true|false|yes|no|on|off|required|optional|todo|tbd)$/i;

function isPlaceholder(value: string): boolean {
  return value === "" || PLACEHOLDER_RE.test(value) || /^-?\d+(\.\d+)?$/.test(value);
}

/** A code expression (variable, call, member access): `api_key = api_key`, `token = os.environ["T"]`. */
const CODE_EXPRESSION_RE = /^[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*(?:\(.*|\[.*)?$/;

/**
 * `KEY=value`, `KEY: value`, `"key": "value"`, `key := "value"`, `key => 'value'`, `export KEY=value`.
 * Group 1: prefix up to the value; group 2: the key; group 3: operator with spacing; group 4: value.
 */
const ASSIGNMENT_RE =
  /(^|[^\w$.-])((?:["'`]?)([A-Za-z_][\w.-]*)(?:["'`]?)(\s*)(:=|=>|=|:)(\s*))("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`|\$\{[^}\n]*\}|[^\s"'`,;}\])]+)/gm;

function redactAssignment(whole: string, lead: string, head: string, key: string, spaceBefore: string, op: string, spaceAfter: string, value: string): string {
  if (!isSecretKeyName(key) || value.includes(REDACTION_MARKER_PREFIX)) return whole;
  const quote = /^["'`]/.test(value) ? value[0]! : "";
  const inner = quote ? value.slice(1, -1) : value;
  if (isPlaceholder(inner.trim()) || inner.trim().toLowerCase() === key.toLowerCase()) return whole;
  if (!quote) {
    // `token == x`, `token => x` in code: comparisons and arrows, not configuration.
    if (value.startsWith("=") || value.startsWith(">")) return whole;
    if (/^(?:process\.env|os\.environ|env\[|ENV\[|getenv|System\.getenv)/.test(inner)) return whole;
    const isExpression = CODE_EXPRESSION_RE.test(inner);
    if (isExpression && /[.([]|::|->/.test(inner)) return whole;
    // `api_key = api_key` (code) vs `API_KEY=abc` (dotenv, no spaces).
    if (isExpression && op !== ":" && (spaceBefore !== "" || spaceAfter !== "")) return whole;
    // `token: string` (a type annotation) vs `token: hunter2` (YAML).
    if (isExpression && op === ":" && !/\d/.test(inner) && inner.length < 12) return whole;
  }
  return `${lead}${head}${quote}${redactionMarker()}${quote}`;
}

/**
 * Masks secrets in `text` (see the module comment for what is and is not touched). Linear in
 * the text; safe to call on partial windows of a file (a private key cut by the window is
 * still masked).
 */
export function anchorRedactSecrets(text: string): string {
  if (typeof text !== "string" || text.length === 0) return text;
  let out = text;
  out = out.replace(PEM_BLOCK_RE, (_m, begin: string, _kind: string, _block: string | undefined, end: string) =>
    end ? `${begin}\n${redactionMarker("private-key")}\n${end}` : `${begin}\n${redactionMarker("private-key")}`,
  );
  out = out.replace(PEM_TAIL_RE, `${redactionMarker("private-key")}\n`);
  out = out.replace(URL_CREDENTIALS_RE, (_m, scheme: string, user: string) => `${scheme}${user}:${redactionMarker()}@`);
  out = out.replace(AUTH_HEADER_RE, (m, head: string, scheme: string | undefined, value: string) =>
    value.startsWith(REDACTION_MARKER_PREFIX) || isPlaceholder(value) ? m : `${head}${scheme ?? ""}${redactionMarker()}`,
  );
  out = out.replace(KEY_HEADER_RE, (m, head: string, value: string) =>
    value.startsWith(REDACTION_MARKER_PREFIX) || isPlaceholder(value) ? m : `${head}${redactionMarker()}`,
  );
  out = out.replace(JWT_RE, redactionMarker("jwt"));
  for (const rule of VENDOR_RULES) {
    out = out.replace(rule.re, (m) => redactionMarker(rule.label(m)));
  }
  out = out.replace(ASSIGNMENT_RE, (whole, lead: string, head: string, key: string, sb: string, op: string, sa: string, value: string) =>
    redactAssignment(whole, lead, head, key, sb, op, sa, value),
  );
  return out;
}
