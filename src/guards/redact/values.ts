/** Values that are not secrets: placeholders, templates, code expressions, paths, words. */

const PLACEHOLDER_RE =
  /^(?:<.*>|[<>=~^]=?\d[\w.]*(?:\s+[<>=~^]+\d[\w.]*)*|\{\{.*\}\}|\$\{\{.*\}\}|\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_]\w*|%[A-Za-z_]\w*%|%\([\w.]+\)s|@[A-Za-z_]+@|[xX*#•.]{3,}|\.{3}|…|changeme|change[-_]me|changeit|your[-_ ].*|my[-_ ]?(?:secret|password|token|key).*|example|sample|dummy|placeholder|redacted|none|null|nil|undefined|true|false|yes|no|on|off|required|optional|todo|tbd|secret|password|pass|passwd|pw|pwd|user|username|token|string|str|bool|await|new|typeof|function|lambda|async|require|import|int|number|any|object|env|vault|secretref|secretkeyref|keyref|\[\]|\{\}|"|'|~|[\w-]*(?:\.\.\.|…))$/i;

/** An absolute or relative file path (`PWD=/srv/app`), never a password in practice. */
const PATH_VALUE_RE = /^(?:~|\.{1,2})?\/[A-Za-z][\w.@-]*(?:\/[\w.@-]+)*\/?$/;

export function isPlaceholder(value: string): boolean {
  return value === "" || PLACEHOLDER_RE.test(value) || /^-?\d+(\.\d+)?$/.test(value) || PATH_VALUE_RE.test(value);
}

/** A value that looks like a credential rather than a word: digits, symbols, mixed case, or length. */
export function looksLikeCredential(value: string): boolean {
  if (value.length < 6) return false;
  const hasDigit = /\d/.test(value);
  const hasLetter = /[A-Za-z]/.test(value);
  if (value.length >= 16 && (hasDigit || /[A-Z]/.test(value) && /[a-z]/.test(value))) return true;
  if (hasDigit && hasLetter) return true;
  if (/^[a-z]+(?:[-_.][a-z]+)*$/i.test(value)) return false; // words: local, cpu, my-service.default
  return value.length >= 10 && /[^A-Za-z0-9]/.test(value) && hasLetter;
}

/** A code expression (variable, call, member access): `api_key = api_key`, `token = os.environ["T"]`. */
export const CODE_EXPRESSION_RE = /^[A-Za-z_$][\w$]*(?:(?:\.|::|->|\?\.)[A-Za-z_$][\w$]*)*(?:\(.*|\[.*)?$/;
export const ENV_LOOKUP_RE = /^(?:process\.env|os\.environ|os\.getenv|env\[|ENV\[|ENV\.fetch|getenv|System\.getenv|Deno\.env|import\.meta\.env|config\.|settings\.|secrets\.|vars\.|self\.|this\.)/;

/** `secrets: readonly string[]`, `token: Promise<string>`: a type annotation, not a value. */
export const TYPE_ANNOTATION_RE = /^(?:readonly|string|number|boolean|bigint|unknown|any|never|void|object|symbol|null|undefined|Array|ReadonlyArray|Record|Promise|Map|Set|Partial|Readonly|Required|Buffer|Uint8Array|Option|Optional|Vec|String|str|int|bytes|dict|list)\b/;

/** `process.env.X`, `self.token`, `getToken()`, `Option<String>`: code, not a value. */
export function isCodeValue(value: string): boolean {
  return (
    ENV_LOOKUP_RE.test(value) ||
    (CODE_EXPRESSION_RE.test(value) && /[.(]/.test(value) && !/\d/.test(value)) ||
    /^[A-Za-z_][\w.]*<[\w<>, .[\]]*>?[,;]?$/.test(value) ||
    /^\$\{?[A-Za-z_][\w.]*\}?$/.test(value)
  );
}


/** Runs of at least this many characters, each one more than the last (`0123`, `abcd`), count as counting. */
const SEQUENCE_RUN = 4;

/**
 * A token-shaped value that is a placeholder: mostly one repeated character (`ghp_xxxx…`,
 * `AKIAXXXXXXXXXXXXXXXX`, zeros), a counting sequence (`1234567890abcdef`, `abcdefghijkl…`), or a
 * template (`${VAR:?required}`, `{{ .Token }}`, `%s`, `{USER}`, `$1`). `sequences: false` for a
 * token with a vendor's prefix: `sk-proj-abcdef…0123…` is how fixtures and docs spell a real key.
 */
export function isPlaceholderToken(value: string, sequences = true): boolean {
  if (value.length < 8 && !value.includes("%") && !value.includes("$") && !value.includes("{")) return false;
  if (TEMPLATE_RE.test(value)) return true;
  // Letters and digits only, case-folded, counted by code.
  let n = 0;
  let most = 0;
  let distinct = 0;
  let inRuns = 0;
  let run = 1;
  let prev = -2;
  COUNTS.fill(0);
  for (let i = 0; i < value.length; i++) {
    let c = value.charCodeAt(i);
    const lower = c >= 97 && c <= 122;
    if (!(lower || (c >= 65 && c <= 90) || (c >= 48 && c <= 57))) continue;
    // Counting runs (`0123456789`, `abcdef…`) use the original codes.
    if (c === prev + 1) run++;
    else {
      if (run >= SEQUENCE_RUN) inRuns += run;
      run = 1;
    }
    prev = c;
    if (c >= 65 && c <= 90) c += 32;
    n++;
    const k = ++COUNTS[c]!;
    if (k === 1) distinct++;
    if (k > most) most = k;
  }
  if (run >= SEQUENCE_RUN) inRuns += run;
  if (n < 8) return false;
  if (most * 2 >= n || (n >= 16 && distinct <= 3)) return true;
  return sequences && n >= 16 && inRuns * 5 >= n * 3;
}

const TEMPLATE_RE = /\$\{|\{\{|^%\(|%[sdq](?![A-Za-z0-9])|%\([\w.]+\)[sd]|^\{[A-Za-z_]\w*\}$|\$\d(?!\d)|<[A-Za-z_][\w-]*>/;
const COUNTS = new Uint16Array(128);
