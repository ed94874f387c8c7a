/**
 * Secret redaction for text shown to a model (read_file, search_files, patch diffs, the
 * deepagents backend).
 *
 * Secrets are replaced by a marker such as `«redacted:sk-…»`: guillemets never occur in a key,
 * so the marker cannot be mistaken for (or written back as) a real value, and write_file refuses
 * content that contains one ({@link containsRedactionMarker}).
 *
 * How: every rule reports the span of a secret *value* in the raw text (vendor token formats from
 * ./secretPatterns.ts, JWTs, PEM private keys, URL credentials, auth headers, webhook URLs,
 * command-line passwords, and `key = value` assignments whose key names a secret); the spans are
 * merged and replaced line by line, so the output has exactly the lines of the input (callers add
 * `N|` gutters afterwards). The same spans give {@link secretValues}: output *derived* from a file
 * (a diff, a "did you mean" quote, search context) is masked with the values found in the file's
 * raw content by {@link redactDerived}, so editing neighbouring text or the case of a key never
 * prints a secret that a read would have masked.
 *
 * Ordinary code stays intact: `api_key = api_key`, `MAX_TOKENS=100`, `KEYBOARD=us`, env lookups
 * (`$TOKEN`, `process.env.TOKEN`), placeholders (`<your-key>`, `${{ secrets.X }}`, `changeme`) and
 * plain words under generic keys (`runtime.token=local`, `{"token": "CPU"}`) are kept.
 * Everything here is linear in the text and never throws.
 */
import { diffLines } from "diff";
import { escapeRegExp } from "./regexp.js";
import { VENDOR_PATTERNS, WEBHOOK_PATTERNS, type VendorPattern } from "./secretPatterns.js";

/** Opening of every marker. */
export const REDACTION_MARKER_PREFIX = "«redacted";

/** The marker for a secret of kind `label` (e.g. `sk-…`, `jwt`, `private-key`). */
export function redactionMarker(label?: string): string {
  return label ? `«redacted:${label}»` : "«redacted»";
}

const MARKER_RE = /«redacted(?::[^»\n]{0,60})?»/;

/** True when `text` contains a redaction marker (content that came from a redacted read). */
export function containsRedactionMarker(text: string): boolean {
  return typeof text === "string" && text.includes(REDACTION_MARKER_PREFIX) && MARKER_RE.test(text);
}

export interface RedactOptions {
  /**
   * The text is a window that may start in the middle of a file (read_file with an offset,
   * search context): leading lines that look like the body of a PEM key (base64 only, 40–80
   * characters) are masked too, since their BEGIN line may lie before the window.
   */
  startsMidFile?: boolean;
}

/** A secret found in a text: `[start, end)` of the value, and the marker label. */
export interface SecretSpan {
  start: number;
  end: number;
  label?: string;
}

// ── key names ────────────────────────────────────────────────────────────────────────────────

/** Key words whose value is always a secret (unless a placeholder or code). */
const STRONG_WORDS = new Set([
  "secret", "secrets", "password", "passwd", "passphrase", "pwd", "credential", "credentials", "creds", "apikey", "privatekey",
  "secretkey", "accesskey", "dsn", "bearer", "pat",
]);
/** Key words whose value is a secret only when it looks like one (has a digit, symbol, or length). */
const WEAK_WORDS = new Set(["token", "auth", "authtoken", "accesstoken", "refreshtoken", "session", "sessionid", "cookie", "sig", "signature", "salt", "otp"]);
/** Suffixes that make a glued word a secret word: `PGPASSWORD`, `mysqlpwd`, `csrftoken`. */
const STRONG_SUFFIXES = ["password", "passwd", "secret", "apikey", "privatekey", "secretkey"];
const KEY_QUALIFIERS = new Set([
  "api", "access", "private", "secret", "signing", "encryption", "master", "session", "client", "account", "service", "license",
  "webhook", "auth", "app", "admin", "root", "shared", "hmac", "jwt", "crypto", "cipher", "decryption", "storage", "subscription",
]);
/** `PRIMARY_KEY`, `SORT_KEY`, `public_key`: keys that are not secrets. */
const BENIGN_KEY_QUALIFIERS = new Set([
  "primary", "foreign", "public", "pub", "sort", "partition", "cache", "unique", "composite", "hash", "range", "row", "lookup", "map",
  "object", "idempotency", "shortcut", "hot", "dedup", "routing", "index", "cursor", "sequence", "natural", "schema", "bucket",
  "group", "message", "translation", "i18n", "react", "list", "dict", "sqs", "s3", "ssh", "gpg", "pgp", "host", "known", "kms", "foreign",
]);
const METADATA_WORDS = new Set([
  "length", "len", "size", "count", "limit", "limits", "max", "min", "type", "types", "name", "names", "id", "ids", "file", "files",
  "path", "paths", "dir", "url", "uri", "env", "var", "header", "field", "prefix", "suffix", "ttl", "timeout", "expiry", "expires",
  "expiration", "at", "endpoint", "mode", "enabled", "disabled", "required", "regex", "pattern", "kind", "hint", "label", "format",
  "version", "policy", "provider", "method", "scheme", "location", "ref", "arn", "hash", "algorithm", "alg", "rotation", "store",
  "manager", "source", "strategy", "usage", "used", "lifetime", "duration", "age", "rule", "rules", "validation", "validator",
  "strength", "complexity", "reset", "changed", "confirm", "confirmation", "placeholder", "help", "description", "desc", "title",
  "text", "error", "errors", "message", "msg", "input", "button", "icon", "class", "style", "key", "keys", "id", "generator",
  "helper", "service", "handler", "storage", "backend", "class", "factory", "module", "spec", "test", "tests", "mock",
  "validators", "validator", "hashers", "hasher", "fields", "params", "options", "settings", "config", "schema", "enabled",
  "re", "rx", "regexp", "basenames", "basename", "names", "char", "chars", "suggestion", "node", "providers", "endpoint", "endpoints",
  "reset", "hint", "hints", "marker", "markers", "refusal", "words", "word", "qualifiers", "set", "list", "rule", "rules",
]);

const keyWordCache = new Map<string, string[]>();

function keyWords(key: string): string[] {
  const known = keyWordCache.get(key);
  if (known) return known;
  if (keyWordCache.size > 4096) keyWordCache.clear();
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
  keyWordCache.set(key, words);
  return words;
}

/** How strongly an assignment key names a secret: always, only for credential-looking values, or not. */
const strengthCache = new Map<string, ReturnType<typeof computeKeyStrength>>();

export function keyStrength(key: string): "strong" | "weak" | "weak-key" | undefined {
  if (strengthCache.has(key)) return strengthCache.get(key);
  if (strengthCache.size > 4096) strengthCache.clear();
  const strength = computeKeyStrength(key);
  strengthCache.set(key, strength);
  return strength;
}

function computeKeyStrength(key: string): "strong" | "weak" | "weak-key" | undefined {
  const words = keyWords(key);
  if (words.length === 0) return undefined;
  const last = words[words.length - 1]!;
  // `KEY_MATERIAL`, `PASSWORD_HASH`? `…_KEY` ends in a metadata word ("key") only when qualified below.
  if (last !== "key" && last !== "keys" && METADATA_WORDS.has(last) && !(last === "material" || last === "value")) return undefined;
  let weak = false;
  if (words.length === 1 && (last === "key" || last === "keys")) return "weak-key";
  if (words.length === 1 && (last === "pass" || last === "pw")) return "weak";
  // `credential-provider-node`, `password_reset_url`, `token_endpoint_auth`: metadata about a secret.
  const firstSecret = words.findIndex((w) => STRONG_WORDS.has(w) || WEAK_WORDS.has(w));
  if (firstSecret >= 0 && words.slice(firstSecret + 1).some((w) => METADATA_WORDS.has(w) && w !== "key" && w !== "keys")) return undefined;
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (STRONG_WORDS.has(w) || STRONG_SUFFIXES.some((s) => w.length > s.length && w.endsWith(s))) return "strong";
    if ((w === "pass" || w === "pw") && i === words.length - 1) return "strong";
    if (w === "key" || w === "keys") {
      const prev = i > 0 ? words[i - 1]! : undefined;
      const next = words[i + 1];
      if (next === "material") return "strong";
      if (prev && KEY_QUALIFIERS.has(prev)) return "strong";
      if (prev && BENIGN_KEY_QUALIFIERS.has(prev)) continue;
      if (i === words.length - 1) weak = true;
      continue;
    }
    if (WEAK_WORDS.has(w) || (w.length > 5 && w.endsWith("token"))) weak = true;
  }
  return weak ? "weak" : undefined;
}

/** Does this assignment key name a secret? Word-bounded: `KEYBOARD`, `MONKEY`, `TOKENIZER` do not. */
export function isSecretKeyName(key: string): boolean {
  return keyStrength(key) !== undefined;
}

// ── values ───────────────────────────────────────────────────────────────────────────────────

const PLACEHOLDER_RE =
  /^(?:<.*>|[<>=~^]=?\d[\w.]*(?:\s+[<>=~^]+\d[\w.]*)*|\{\{.*\}\}|\$\{\{.*\}\}|\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_]\w*|%[A-Za-z_]\w*%|%\([\w.]+\)s|@[A-Za-z_]+@|[xX*#•.]{3,}|\.{3}|…|changeme|change[-_]me|changeit|your[-_ ].*|my[-_ ]?(?:secret|password|token|key).*|example|sample|dummy|placeholder|redacted|none|null|nil|undefined|true|false|yes|no|on|off|required|optional|todo|tbd|secret|password|pass|passwd|pw|pwd|user|username|token|string|str|bool|await|new|typeof|function|lambda|async|require|import|int|number|any|object|env|vault|secretref|secretkeyref|keyref|\[\]|\{\}|"|'|~|[\w-]*(?:\.\.\.|…))$/i;

/** An absolute or relative file path (`PWD=/srv/app`), never a password in practice. */
const PATH_VALUE_RE = /^(?:~|\.{1,2})?\/[A-Za-z][\w.@-]*(?:\/[\w.@-]+)*\/?$/;

function isPlaceholder(value: string): boolean {
  return value === "" || PLACEHOLDER_RE.test(value) || /^-?\d+(\.\d+)?$/.test(value) || PATH_VALUE_RE.test(value);
}

/** A value that looks like a credential rather than a word: digits, symbols, mixed case, or length. */
function looksLikeCredential(value: string): boolean {
  if (value.length < 6) return false;
  const hasDigit = /\d/.test(value);
  const hasLetter = /[A-Za-z]/.test(value);
  if (value.length >= 16 && (hasDigit || /[A-Z]/.test(value) && /[a-z]/.test(value))) return true;
  if (hasDigit && hasLetter) return true;
  if (/^[a-z]+(?:[-_.][a-z]+)*$/i.test(value)) return false; // words: local, cpu, my-service.default
  return value.length >= 10 && /[^A-Za-z0-9]/.test(value) && hasLetter;
}

/** A code expression (variable, call, member access): `api_key = api_key`, `token = os.environ["T"]`. */
const CODE_EXPRESSION_RE = /^[A-Za-z_$][\w$]*(?:(?:\.|::|->|\?\.)[A-Za-z_$][\w$]*)*(?:\(.*|\[.*)?$/;
const ENV_LOOKUP_RE = /^(?:process\.env|os\.environ|os\.getenv|env\[|ENV\[|ENV\.fetch|getenv|System\.getenv|Deno\.env|import\.meta\.env|config\.|settings\.|secrets\.|vars\.|self\.|this\.)/;

/** `secrets: readonly string[]`, `token: Promise<string>`: a type annotation, not a value. */
const TYPE_ANNOTATION_RE = /^(?:readonly|string|number|boolean|bigint|unknown|any|never|void|object|symbol|null|undefined|Array|ReadonlyArray|Record|Promise|Map|Set|Partial|Readonly|Required|Buffer|Uint8Array|Option|Optional|Vec|String|str|int|bytes|dict|list)\b/;

/** `process.env.X`, `self.token`, `getToken()`, `Option<String>`: code, not a value. */
function isCodeValue(value: string): boolean {
  return (
    ENV_LOOKUP_RE.test(value) ||
    (CODE_EXPRESSION_RE.test(value) && /[.(]/.test(value) && !/\d/.test(value)) ||
    /^[A-Za-z_][\w.]*<[\w<>, .[\]]*>?[,;]?$/.test(value) ||
    /^\$\{?[A-Za-z_][\w.]*\}?$/.test(value)
  );
}

/**
 * `KEY=value`, `KEY: value`, `"key": "value"`, `key := "value"`, `key => 'value'`, `export KEY=value`,
 * `--password=x`. Group 1: lead; 2: key; 3: space before the operator; 4: operator; 5: space after; 6: value.
 */
const ASSIGNMENT_RE =
  /()["'`]?([A-Za-z_][\w.-]*)["'`]?([ \t]*)(:=|=>|\?=|=|:)([ \t]*)("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`|\$\{\{[^}\n]*\}\}|\$\{[^}\n]*\}|(?:[^\s"'`,;&}\])\\]|\\(?![nrt0])|&(?![\w.-]+=))+)/y;

/** Substrings every secret key name contains: assignments are only parsed where one occurs. */
const KEY_HINT_TEST_RE = /pass|pw|secret|token|key|auth|cred|bearer|sess|cookie|sig|salt|otp|dsn|pat/i;
/** `[A-Za-z0-9_.-]` by char code (this loop runs for every hint). */
function isKeyChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 46 || c === 45;
}

function assignmentSpan(text: string, match: RegExpExecArray): SecretSpan | undefined {
  const [whole, lead, key, spaceBefore, op, spaceAfter, value] = match as unknown as [string, string, string, string, string, string, string];
  const strength = keyStrength(key);
  if (!strength) return undefined;
  const quote = /^["'`]/.test(value) && value.length >= 2 && value.endsWith(value[0]!) ? value[0]! : "";
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

function lineStartsAt(text: string, pos: number): boolean {
  let i = pos - 1;
  while (i >= 0 && (text[i] === " " || text[i] === "\t")) i--;
  if (i < 0 || text[i] === "\n") return true;
  // `export KEY=…`, `set KEY=…`, `ENV KEY=…`, `- KEY=…`
  const lineStart = text.lastIndexOf("\n", i) + 1;
  return /^\s*(?:export|set|setenv|ENV|ARG|declare(?:\s+-x)?|-)\s+$/.test(text.slice(lineStart, pos));
}

function lineEnd(text: string, pos: number): number {
  const nl = text.indexOf("\n", pos);
  const end = nl === -1 ? text.length : nl;
  return end > pos && text[end - 1] === "\r" ? end - 1 : end;
}

// ── context rules (spans of the value group) ────────────────────────────────────────────────

interface ContextRule {
  re: RegExp;
  /** Index of the capture group holding the secret. */
  group: number;
  label?: string;
  /** Lower-case literals, one of which every match contains: the rule is skipped without them. */
  needles: string[];
}

const CONTEXT_RULES: Array<ContextRule & { needleRes: RegExp[] }> = (<ContextRule[]>[
  // `Authorization: Bearer x`, `Proxy-Authorization: Basic x`, `"Authorization": "Token x"`
  { re: /\b((?:proxy-)?authorization(?:["'`]?[ \t]*[:=]|["'`][ \t]*,)[ \t]*["'`]?(?:(?:bearer|basic|token|digest|apikey|bot|sso-key|key|otp)\s+)?)([^\s"'`,;]{4,})/gi, group: 2, needles: ["authorization"] },
  // `x-api-key: x`, `PRIVATE-TOKEN: x`
  {
    re: /\b((?:x-api-key|x-auth-token|x-api-token|x-auth-key|api-key|x-goog-api-key|x-access-token|private-token|x-gitlab-token|x-vault-token|x-figma-token|x-shopify-access-token|ocp-apim-subscription-key|x-functions-key)(?:["'`]?[ \t]*[:=]|["'`][ \t]*,)[ \t]*["'`]?)([^\s"'`,;]{6,})/gi,
    group: 2,
    needles: ["-key", "-token"],
  },
  // `Bearer <token>` anywhere (logs, curl lines, docs)
  { re: /\b(bearer\s+)([A-Za-z0-9._~+/-]{12,}=*)(?![\w$-])/gi, group: 2, needles: ["bearer"] },
  // JWTs (two or three parts; `alg: none` tokens end with a dot)
  { re: /(?<![A-Za-z0-9_-])(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?)/g, group: 1, label: "jwt", needles: ["eyj"] },
  // PHP `define('DB_PASSWORD', 'x')`
  { re: /\bdefine\s*\(\s*(["'])([A-Z0-9_]*(?:PASSWORD|PASS|PWD|SECRET|TOKEN|_KEY|SALT)[A-Z0-9_]*)\1\s*,\s*(["'])((?:(?!\3)[^\\\n]|\\.)+)\3/g, group: 4, needles: ["define"] },
  // XML `<password>x</password>`, `<add key="Password" value="x"/>`
  { re: /<((?:[A-Za-z_:][\w.:-]*)?(?:password|passwd|secret|token|apikey|api-key|api_key|credential)[\w.:-]*)>([^<\n]{1,512})<\/\1>/gi, group: 2, needles: ["</"] },
  { re: /\bkey\s*=\s*"[^"\n]*(?:password|secret|token|apikey|api[_.-]key)[^"\n]*"\s+value\s*=\s*"([^"\n]+)"/gi, group: 1, needles: ["value"] },
  // `mysql -pSECRET`, `mysqldump -u root -pSECRET`
  { re: /\b(?:mysql\w*|mariadb\w*)\b[^\n|;]*?\s-p(?!\s)([^\s'"`]+|'[^'\n]*'|"[^"\n]*")/g, group: 1, needles: ["mysql", "mariadb"] },
  // `--password x`, `--token=x`, `--api-key x`, `--client-secret x`
  { re: /(?<![\w-])--(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|access-token|auth-token)(?:=|[ \t]+)(?!-)("[^"\n]{3,}"|'[^'\n]{3,}'|[^\s"'`|;&,)]{3,})/gi, group: 1, needles: ["--"] },
  // `curl -u user:pass`, `--user user:pass`, `-u :token`
  { re: /(?:^|\s)(?:-u|--user)(?:=|\s+)["']?[^\s:"']*:([^\s"'@]+)/g, group: 1, needles: ["-u", "--user"] },
  // .netrc: `machine h login u password p`
  { re: /\b(?:machine|login)\b[^\n]*?\bpassword\s+(\S+)/g, group: 1, needles: ["password"] },
  // Basic-auth blobs in Docker configs and headers: `"auth": "dXNl…"` is caught by the assignment rule.
  // Azure SAS / signed URLs: `sig=…`, `X-Amz-Signature=…`, `X-Goog-Signature=…`
  { re: /[?&](?:sig|signature|x-amz-signature|x-goog-signature|x-amz-security-token|token|access_token|api_key|apikey|key|code|client_secret|password)=([A-Za-z0-9%+/._~-]{12,})/gi, group: 1, needles: ["?", "&"] },
]).map((rule) => ({
  ...rule,
  // Case-insensitive tests instead of lower-casing the whole text (which costs more than the rules).
  needleRes: rule.needles.map((n) => new RegExp(escapeRegExp(n), "i")),
}));

/** `Authorization: "Bearer " + token`: the scheme, not a value. */
const SCHEME_WORD_RE = /^(?:bearer|basic|token|digest|negotiate|ntlm|authentication|auth)$/i;

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
    for (let from = Math.max(doneUntil, sep - 21); from <= sep - 2; from++) {
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

/** A user-only URL credential that is a token, not a login name (`git`, `deploy`, `alice.smith`). */
function tokenLikeUser(user: string): boolean {
  return user.length >= 16 && /\d/.test(user) && /[A-Za-z]/.test(user);
}

// ── PEM private keys ────────────────────────────────────────────────────────────────────────

const PEM_BEGIN_RE = /-----BEGIN ([A-Z0-9 ]*?)PRIVATE KEY( BLOCK)?-----/g;
const PEM_END_RE = /-----END [A-Z0-9 ]*?PRIVATE KEY(?: BLOCK)?-----/g;
/** A PEM body line (or an RFC 1421 header line such as `Proc-Type: 4,ENCRYPTED`). */
const PEM_BODY_LINE_RE = /^[ \t]*(?:[A-Za-z0-9+/=]{16,100}|[A-Za-z-]+: [^\n]*)[ \t]*\r?$/;

const isBodyLine = (line: string) => PEM_BODY_LINE_RE.test(line) || line.trim() === "";

/** Lines of `text` as [start, end) offsets (end excludes the newline). */
function lineAt(text: string, pos: number): [number, number] {
  const start = text.lastIndexOf("\n", pos - 1) + 1;
  const nl = text.indexOf("\n", pos);
  return [start, nl === -1 ? text.length : nl];
}

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
function pemSpans(text: string, opts: RedactOptions, out: SecretSpan[]): void {
  const label = "private-key";
  let covered = false;
  if (text.includes("PRIVATE KEY")) {
    PEM_BEGIN_RE.lastIndex = 0;
    for (const b of text.matchAll(PEM_BEGIN_RE)) {
      covered = true;
      const after = b.index + b[0].length;
      if (text.startsWith("\\n", after)) {
        // Inline: "-----BEGIN … KEY-----\nMIIE…\n-----END … KEY-----" on one line.
        const [, eol] = lineAt(text, after);
        const endAt = text.indexOf("-----END", after);
        const quoteAt = text.slice(after, eol).search(/["'`]/);
        const stop = endAt !== -1 && endAt < eol ? endAt : quoteAt !== -1 ? after + quoteAt : eol;
        if (/[A-Za-z0-9+/=]{16}/.test(text.slice(after, stop))) out.push({ start: after, end: stop, label });
        continue;
      }
      const nl = text.indexOf("\n", after);
      if (nl === -1) continue;
      const bodyEnd = bodyRunForward(text, nl + 1);
      if (bodyEnd > nl + 1) out.push({ start: nl + 1, end: bodyEnd, label });
    }
    PEM_END_RE.lastIndex = 0;
    for (const e of text.matchAll(PEM_END_RE)) {
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
}

// ── tokens split by zero-width characters, ANSI escapes or line breaks ─────────────────────

const INVISIBLE_RE = /[\u200B-\u200D\u2060\uFEFF\u00AD]|\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]/g;
const TOKEN_CHAR = /[A-Za-z0-9_+/=.-]/;

/**
 * Vendor tokens hidden by characters a terminal or editor does not show, or wrapped onto the
 * next line: matched on a folded copy of the surrounding region (invisible characters removed, a
 * line break between two token characters joined), mapped back to the original positions. Only
 * regions around an invisible character or a vendor prefix at a line end are folded.
 */
function foldedVendorSpans(text: string, direct: SecretSpan[], out: SecretSpan[]): void {
  const regions: Array<[number, number]> = [];
  INVISIBLE_RE.lastIndex = 0;
  for (const m of text.matchAll(INVISIBLE_RE)) regions.push([Math.max(0, m.index - 300), Math.min(text.length, m.index + m[0].length + 300)]);
  for (const at of wrappedPrefixes(text)) {
    const nextLine = text.indexOf("\n", at) + 1;
    regions.push([at, Math.min(text.length, lineEnd(text, nextLine) + 1, nextLine + 400)]);
  }
  if (regions.length === 0) return;
  regions.sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const r of regions) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1]) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  const directEnds = new Map(direct.map((s) => [s.start, s.end]));
  for (const [from, to] of merged) foldRegion(text, from, to, directEnds, out);
}

function foldRegion(text: string, from: number, to: number, directEnds: Map<number, number>, out: SecretSpan[]): void {
  const map: number[] = [];
  const removedAfter: boolean[] = [];
  const chars: string[] = [];
  let i = from;
  while (i < to) {
    const c = text[i]!;
    if (c === "\x1b" || (c >= "\u200B" && c <= "\u200D") || c === "\u2060" || c === "\uFEFF" || c === "\u00AD") {
      INVISIBLE_RE.lastIndex = i;
      const m = INVISIBLE_RE.exec(text);
      if (m && m.index === i) {
        i += m[0].length;
        if (removedAfter.length) removedAfter[removedAfter.length - 1] = true;
        continue;
      }
    }
    if ((c === "\n" || (c === "\r" && text[i + 1] === "\n")) && i > from && TOKEN_CHAR.test(text[i - 1]!)) {
      const next = c === "\r" ? i + 2 : i + 1;
      if (next < to && TOKEN_CHAR.test(text[next]!)) {
        i = next;
        if (removedAfter.length) removedAfter[removedAfter.length - 1] = true;
        continue;
      }
    }
    map.push(i);
    removedAfter.push(false);
    chars.push(c);
    i++;
  }
  const folded = chars.join("");
  const present = presentNeedles(folded);
  for (const p of VENDOR_PATTERNS) {
    if (!mayMatch(p, present)) continue;
    p.re.lastIndex = 0;
    for (const m of folded.matchAll(p.re)) {
      const fs = m.index;
      const fe = fs + m[0].length;
      let crosses = false;
      for (let k = fs; k < fe - 1 && !crosses; k++) crosses = removedAfter[k]!;
      if (!crosses) continue;
      const start = map[Math.max(0, fs - (p.back ?? 0))]!;
      const directEnd = directEnds.get(start);
      // A complete token at the end of a line continues onto the next only if that line is nothing but token characters.
      if (directEnd !== undefined && !continuesOnNextLine(text, directEnd)) continue;
      out.push({ start, end: map[fe - 1]! + 1, label: vendorLabel(p, m[0]) });
    }
  }
}

const needleOf = (p: VendorPattern) => p.needle ?? p.prefix;
const NEEDLES = [...new Set(VENDOR_PATTERNS.map(needleOf).filter((n) => n.length >= 2))].sort((a, b) => b.length - a.length);
const NEEDLE_RE = new RegExp(NEEDLES.map(escapeRegExp).join("|"), "g");
/** For each needle, the shorter needles it starts with (`sk-ant-` → `sk-`): found together. */
const NEEDLE_PREFIXES = new Map(NEEDLES.map((n) => [n, NEEDLES.filter((m) => n.startsWith(m))]));

/** The vendor needles present in `text`, in one scan instead of one `includes` per pattern. */
function presentNeedles(text: string): Set<string> {
  const found = new Set<string>();
  NEEDLE_RE.lastIndex = 0;
  for (const m of text.matchAll(NEEDLE_RE)) {
    if (found.has(m[0])) continue;
    for (const n of NEEDLE_PREFIXES.get(m[0]) ?? [m[0]]) found.add(n);
  }
  return found;
}

/** Needles by their first character, to find needles that start inside a longer needle's match. */
const NEEDLES_BY_FIRST = new Map<string, string[]>();
for (const n of NEEDLES) NEEDLES_BY_FIRST.set(n[0]!, [...(NEEDLES_BY_FIRST.get(n[0]!) ?? []), n]);

/** Characters of a vendor token and of the context its look-behind needs (`[A-Za-z0-9_.+/=~-]`). */
const RUN_CHAR = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+/=~-") RUN_CHAR[c.charCodeAt(0)] = 1;
/** The shortest run of token characters a needle-anchored pattern can match in (`xoxb-` + 10). */
const MIN_TOKEN_RUN = 15;

/**
 * Every position where a needle starts (overlaps included), by needle, inside runs of token
 * characters long enough to hold a token: ordinary words and code are skipped by one char loop
 * instead of trying the needle alternation at every position.
 */
function needlePositions(text: string): Map<string, number[]> {
  const at = new Map<string, number[]>();
  const len = text.length;
  let i = 0;
  while (i < len) {
    const c = text.charCodeAt(i);
    if (c >= 128 || RUN_CHAR[c] === 0) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < len) {
      const d = text.charCodeAt(j);
      if (d >= 128 || RUN_CHAR[d] === 0) break;
      j++;
    }
    if (j - i >= MIN_TOKEN_RUN) runNeedles(text.slice(i, j), i, at);
    i = j + 1;
  }
  return at;
}

function runNeedles(run: string, offset: number, at: Map<string, number[]>): void {
  NEEDLE_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = NEEDLE_RE.exec(run)) !== null) {
    const end = m.index + m[0].length;
    for (let k = m.index; k < end; k++) {
      for (const n of NEEDLES_BY_FIRST.get(run[k]!) ?? []) {
        if (!run.startsWith(n, k)) continue;
        const list = at.get(n);
        if (list) list.push(offset + k);
        else at.set(n, [offset + k]);
      }
    }
  }
}

const BOUNDARY_SRC = "(?<![A-Za-z0-9_-])";

/**
 * Patterns whose every match starts with their needle: matched (sticky) only where a needle
 * starts, instead of scanning the whole text once per pattern; the others scan the text when
 * their needle occurs (or always, without one).
 */
const STICKY = new Map<VendorPattern, RegExp>();
for (const p of VENDOR_PATTERNS) {
  const needle = needleOf(p);
  if (needle.length < 2) continue;
  const src = p.re.source.startsWith(BOUNDARY_SRC) ? p.re.source.slice(BOUNDARY_SRC.length) : p.re.source;
  const lit = escapeRegExp(needle);
  if (src.startsWith(lit)) STICKY.set(p, new RegExp(p.re.source, p.re.flags.replace("g", "") + "y"));
}

/** The vendor-pattern spans of `text`, in pattern order (as a scan per pattern would push them). */
function vendorSpans(text: string, spans: SecretSpan[]): void {
  const positions = needlePositions(text);
  for (const p of VENDOR_PATTERNS) {
    const needle = needleOf(p);
    const sticky = STICKY.get(p);
    // A pattern that scans the whole text runs when its needle occurs anywhere.
    if (needle.length >= 2 && !(sticky ? positions.has(needle) : text.includes(needle))) continue;
    if (sticky) {
      let doneUntil = 0;
      for (const pos of positions.get(needle)!) {
        if (pos < doneUntil) continue;
        sticky.lastIndex = pos;
        const m = sticky.exec(text);
        if (!m) continue;
        spans.push({ start: Math.max(0, m.index - (p.back ?? 0)), end: m.index + m[0].length, label: vendorLabel(p, m[0]) });
        doneUntil = m.index + Math.max(1, m[0].length);
      }
      continue;
    }
    p.re.lastIndex = 0;
    for (const m of text.matchAll(p.re)) spans.push({ start: Math.max(0, m.index - (p.back ?? 0)), end: m.index + m[0].length, label: vendorLabel(p, m[0]) });
  }
}

function mayMatch(p: VendorPattern, present: Set<string>): boolean {
  const needle = needleOf(p);
  return needle.length < 2 || present.has(needle);
}

function continuesOnNextLine(text: string, end: number): boolean {
  let i = end;
  if (text[i] === "\r") i++;
  if (text[i] !== "\n") return false;
  const next = text.slice(i + 1, lineEnd(text, i + 1));
  return /^[A-Za-z0-9_-]+$/.test(next);
}

const WRAPPED_PREFIX_RE = new RegExp(
  "(?<![A-Za-z0-9_-])(?:" +
    [...new Set(VENDOR_PATTERNS.map((p) => p.prefix).filter((p) => p.length >= 2))]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp)
      .join("|") +
    ")[A-Za-z0-9_+/=.-]{4,120}\\r?\\n[A-Za-z0-9_+/=.-]{4}",
  "g",
);

/** Characters of a vendor prefix and of the token body after it. */
function isWrapChar(c: number): boolean {
  return isKeyChar(c) || c === 43 || c === 47 || c === 61 || c === 126; // + / = ~
}

/**
 * Starts of {@link WRAPPED_PREFIX_RE} matches, found from the line breaks (between two token
 * characters) instead of by trying the alternation at every position of the text: only the token
 * run before such a break is matched, one line break per candidate.
 */
function wrappedPrefixes(text: string): number[] {
  const out: number[] = [];
  let doneUntil = 0;
  for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", nl + 1)) {
    const last = text[nl - 1] === "\r" ? nl - 2 : nl - 1;
    if (last < 0 || !isWrapChar(text.charCodeAt(last)) || nl + 4 >= text.length) continue;
    let ok = true;
    for (let k = nl + 1; k <= nl + 4 && ok; k++) ok = isWrapChar(text.charCodeAt(k));
    if (!ok) continue;
    // A match starts at most prefix (16) + body (120) + "\r" characters before the break.
    let from = last;
    while (from > 0 && from > nl - 140 && isWrapChar(text.charCodeAt(from - 1))) from--;
    from = Math.max(from, doneUntil);
    // One character of context before the run keeps the regex's look-behind exact.
    const base = Math.max(0, from - 1);
    WRAPPED_PREFIX_RE.lastIndex = from - base;
    const m = WRAPPED_PREFIX_RE.exec(text.slice(base, nl + 5));
    if (!m) continue;
    out.push(base + m.index);
    doneUntil = base + m.index + m[0].length;
  }
  return out;
}

function vendorLabel(p: VendorPattern, match: string): string {
  return typeof p.label === "string" ? p.label : p.label(match);
}

// ── the engine ──────────────────────────────────────────────────────────────────────────────

function collectSpans(text: string, opts: RedactOptions): SecretSpan[] {
  const spans: SecretSpan[] = [];
  pemSpans(text, opts, spans);
  vendorSpans(text, spans);
  const direct = spans.slice();
  foldedVendorSpans(text, direct, spans);
  for (const w of WEBHOOK_PATTERNS) {
    w.re.lastIndex = 0;
    for (const m of text.matchAll(w.re)) {
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
  for (const rule of CONTEXT_RULES) {
    if (!rule.needleRes.some((re) => re.test(text))) continue;
    rule.re.lastIndex = 0;
    for (const m of text.matchAll(rule.re)) {
      let value = m[rule.group];
      if (value === undefined) continue;
      let offset = m.index + indexOfGroup(m, rule.group);
      if (/^["']/.test(value) && value.length >= 2 && value.endsWith(value[0]!)) {
        value = value.slice(1, -1);
        offset++;
      }
      if (value.includes(REDACTION_MARKER_PREFIX)) continue;
      if (isPlaceholder(value) || isCodeValue(value) || SCHEME_WORD_RE.test(value) || /^[A-Z][A-Z0-9_]*[A-Z]$/.test(value)) continue;
      spans.push({ start: offset, end: offset + value.length, label: rule.label });
    }
  }
  assignmentSpans(text, spans);
  return spans;
}

/**
 * `key = value` assignments whose key holds a secret word: found from the operators (`:` and `=`,
 * located with `indexOf`) back to the key before each, so the key-name rule costs one cheap check
 * per operator; the assignment is then matched at the key (sticky) only when the key holds a hint.
 */
function assignmentSpans(text: string, spans: SecretSpan[]): void {
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
    if (text.charCodeAt(op) === 61 && text.charCodeAt(q) === 63) q--;
    while (q >= 0 && (text.charCodeAt(q) === 32 || text.charCodeAt(q) === 9)) q--;
    const cq = text.charCodeAt(q);
    if (cq === 34 || cq === 39 || cq === 96) q--;
    if (q < 0 || !isKeyChar(text.charCodeAt(q))) continue;
    const keyEnd = q + 1;
    if (keyEnd <= doneUntil) continue;
    doneUntil = keyEnd;
    let start = q;
    while (start > 0 && isKeyChar(text.charCodeAt(start - 1))) start--;
    while (start < keyEnd && !isKeyStartChar(text.charCodeAt(start))) start++; // `--password`, `.token`
    if (start === keyEnd) continue;
    const key = text.slice(start, keyEnd);
    if (!KEY_HINT_TEST_RE.test(key)) continue;
    const before = start > 0 ? text[start - 1]! : "";
    if (before === "$") continue; // `$TOKEN`, `${password}`
    const at = before === '"' || before === "'" || before === "`" ? start - 1 : start;
    if (at > 0 && /[\w$]/.test(text[at - 1]!)) continue;
    if (!keyStrength(key)) continue;
    ASSIGNMENT_RE.lastIndex = at;
    const m = ASSIGNMENT_RE.exec(text);
    if (!m) continue;
    const span = assignmentSpan(text, m);
    if (span) spans.push(span);
  }
}

/** `[A-Za-z_]`: the first character of a key. */
function isKeyStartChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
}

/** Start of capture group `g` inside the whole match (the value is the match's last occurrence). */
function indexOfGroup(m: RegExpMatchArray, g: number): number {
  const whole = m[0];
  const value = m[g]!;
  // Groups in these rules end at or near the end of the match: search from the right.
  const at = whole.lastIndexOf(value);
  return at === -1 ? 0 : at;
}

/** Sorted, merged spans; a labelled span wins over an unlabelled one it overlaps. */
function mergeSpans(spans: SecretSpan[]): SecretSpan[] {
  const sorted = spans.filter((s) => s.end > s.start).sort((a, b) => a.start - b.start || b.end - a.end);
  const out: SecretSpan[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s.start < last.end) {
      if (s.end > last.end) last.end = s.end;
      if (!last.label && s.label) last.label = s.label;
    } else {
      out.push({ ...s });
    }
  }
  return out;
}

/** The merged secret spans of `text` (exported for tests and tools that must not edit inside one). */
export function findSecrets(text: string, opts: RedactOptions = {}): SecretSpan[] {
  if (typeof text !== "string" || text.length === 0) return [];
  try {
    return mergeSpans(collectSpans(text, opts));
  } catch {
    return [{ start: 0, end: text.length }];
  }
}

/** Replaces each span by its marker, line by line: the result has the lines of `text`. */
function applySpans(text: string, spans: SecretSpan[]): string {
  if (spans.length === 0) return text;
  const parts: string[] = [];
  let pos = 0;
  for (const s of spans) {
    parts.push(text.slice(pos, s.start));
    const marker = redactionMarker(s.label);
    const value = text.slice(s.start, s.end);
    if (!value.includes("\n")) parts.push(marker);
    else {
      parts.push(
        value
          .split("\n")
          .map((piece) => (piece.trim() === "" ? piece : marker + (piece.endsWith("\r") ? "\r" : "")))
          .join("\n"),
      );
    }
    pos = s.end;
  }
  parts.push(text.slice(pos));
  return parts.join("");
}

/**
 * Masks secrets in `text` (see the module comment). Keeps the line structure; linear in the
 * text; never throws (on an internal error every line is masked).
 */
export function redactSecrets(text: string, opts: RedactOptions = {}): string {
  if (typeof text !== "string" || text.length === 0) return text;
  try {
    return applySpans(text, mergeSpans(collectSpans(text, opts)));
  } catch {
    return text.replace(/[^\n]+/g, redactionMarker());
  }
}

// ── value-aware masking of derived output ───────────────────────────────────────────────────

/** Values shorter than this are only masked where a rule finds them, never by value. */
const MIN_VALUE_CHARS = 4;

/**
 * The exact secret substrings {@link redactSecrets} would mask in `text` (one entry per line of
 * a multi-line secret such as a PEM body), longest first, without duplicates.
 */
export function secretValues(text: string, opts: RedactOptions = {}): string[] {
  const found = new Set<string>();
  for (const s of findSecrets(text, opts)) {
    for (const piece of text.slice(s.start, s.end).split("\n")) {
      const v = piece.replace(/\r$/, "").trim();
      if (v.length >= MIN_VALUE_CHARS && !v.includes(REDACTION_MARKER_PREFIX)) found.add(v);
    }
  }
  return [...found].sort((a, b) => b.length - a.length);
}

/**
 * Masks every occurrence of the given secret values in `text`, case-insensitively and also by
 * their body without the vendor prefix (`sk-abc…` shown as `SK-abc…` or `abc…`), keeping lines.
 */
export function maskValues(text: string, values: readonly string[]): string {
  if (typeof text !== "string" || text.length === 0 || values.length === 0) return text;
  try {
    const needles = new Set<string>();
    for (const v of values) {
      if (typeof v !== "string" || v.length < MIN_VALUE_CHARS) continue;
      needles.add(v);
      // The body after a vendor prefix (`sk-proj-`, `ghp_`, `xoxb-123-`): long enough to be unique.
      const body = v.replace(/^[A-Za-z0-9]{1,12}[-_.](?:[A-Za-z0-9]{1,8}[-_.])?/, "");
      if (body !== v && body.length >= 16) needles.add(body);
    }
    if (needles.size === 0) return text;
    const re = new RegExp([...needles].sort((a, b) => b.length - a.length).map(escapeRegExp).join("|"), "gi");
    return text.replace(re, (m) => (m.includes("\n") ? m.replace(/[^\n]+/g, redactionMarker()) : redactionMarker()));
  } catch {
    return text.replace(/[^\n]+/g, redactionMarker());
  }
}

/**
 * The one call for output derived from file contents (diffs, "did you mean" quotes, search
 * context, edit results): pattern redaction of `output`, then masking of every secret value found
 * in the raw `sources` (the file before and after the change), so a change of neighbouring text,
 * of a key's case or of its prefix never prints a value a read would have masked.
 */
export function redactDerived(output: string, sources: ReadonlyArray<string | null | undefined>, opts: RedactOptions = {}): string {
  if (typeof output !== "string" || output.length === 0) return output;
  const values = new Set<string>();
  for (const src of sources) if (typeof src === "string") for (const v of secretValues(src)) values.add(v);
  return maskValues(redactSecrets(output, opts), [...values]);
}

/** Lines of context around a change in which secrets are looked for (a key's BEGIN line, an assignment). */
const CHANGE_MARGIN_LINES = 100;

/** `[start, end)` of `text` widened from `[from, to)` by `lines` whole lines on each side. */
function lineWindow(text: string, from: number, to: number, lines: number): [number, number] {
  let start = from;
  for (let i = 0; i <= lines && start > 0; i++) start = text.lastIndexOf("\n", start - 2) + 1;
  let end = to;
  for (let i = 0; i < lines && end < text.length; i++) {
    const nl = text.indexOf("\n", end);
    end = nl === -1 ? text.length : nl + 1;
  }
  return [Math.max(0, start), Math.min(text.length, end)];
}

/**
 * The parts of `before` and `after` a diff between them can show (each changed hunk with
 * {@link CHANGE_MARGIN_LINES} lines around it): the sources for {@link redactDerived} of that
 * diff, so a one-line patch of a large file does not redact the whole file twice.
 */
export function changeExcerpts(before: string, after: string): string[] {
  if (typeof before !== "string" || typeof after !== "string") return [];
  try {
    const changes = diffLines(before, after, { timeout: 2000 });
    if (!changes) return [before, after];
    const out: string[] = [];
    let posBefore = 0;
    let posAfter = 0;
    for (const change of changes) {
      const len = change.value.length;
      if (change.removed) {
        const [s, e] = lineWindow(before, posBefore, posBefore + len, CHANGE_MARGIN_LINES);
        out.push(before.slice(s, e));
        posBefore += len;
      } else if (change.added) {
        const [s, e] = lineWindow(after, posAfter, posAfter + len, CHANGE_MARGIN_LINES);
        out.push(after.slice(s, e));
        posAfter += len;
      } else {
        posBefore += len;
        posAfter += len;
      }
    }
    return out;
  } catch {
    return [before, after];
  }
}

/** The refusal {@link secretEditReason} gives; callers answer with the masked view's error instead when quoting it would be an oracle. */
export const SECRET_EDIT_REFUSAL =
  "The change would rewrite a line that holds a masked secret («redacted…»). Lines with secrets can only be kept unchanged or deleted whole: anchor the edit on other lines, and ask the user to change secret values.";

/**
 * Refusal reason when a change from `before` to `after` rewrites a line holding a secret (a case
 * change, a cut prefix, an inserted separator, a guessed first character): the diff, a later read
 * of the altered value, or merely the success of an edit anchored inside the secret would reveal
 * a value the model was never given. Whole-line deletions are allowed; compares line hunks, so a
 * secret on an untouched neighbouring line is fine.
 */
export function secretEditReason(before: string, after: string): string | undefined {
  if (typeof before !== "string" || typeof after !== "string" || before === after) return undefined;
  try {
    const changes = diffLines(before, after, { timeout: 2000 });
    // Too different to diff in time: every secret must survive verbatim.
    if (!changes) return findSecrets(before).some((s) => !after.includes(before.slice(s.start, s.end))) ? SECRET_EDIT_REFUSAL : undefined;
    // Secrets are looked up in a window around each changed hunk, not in the whole (possibly huge) file.
    const overlapsSecret = (from: number, to: number) => {
      const [ws, we] = lineWindow(before, from, to, CHANGE_MARGIN_LINES);
      return findSecrets(before.slice(ws, we), { startsMidFile: ws > 0 }).some((s) => s.start + ws < to && s.end + ws > from);
    };
    let pos = 0;
    let removedFrom = -1;
    let removedTo = -1;
    let added = false;
    // Any rewrite of a line holding a secret (even one that keeps the value, `PASSWORD=h` → `PASSWORD=hh`)
    // would tell whether old_string guessed part of it: only whole-line deletions pass.
    const flush = (): boolean => {
      const bad = added && removedFrom >= 0 && overlapsSecret(removedFrom, removedTo);
      removedFrom = removedTo = -1;
      added = false;
      return bad;
    };
    for (const change of changes) {
      if (change.added) {
        added = true;
        continue;
      }
      if (change.removed) {
        if (removedFrom < 0) removedFrom = pos;
        pos += change.value.length;
        removedTo = pos;
        continue;
      }
      if (flush()) return SECRET_EDIT_REFUSAL;
      pos += change.value.length;
    }
    return flush() ? SECRET_EDIT_REFUSAL : undefined;
  } catch {
    return SECRET_EDIT_REFUSAL;
  }
}
