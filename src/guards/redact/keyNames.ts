/** Does an assignment key name a secret? Word-bounded: `KEYBOARD`, `MONKEY`, `TOKENIZER` do not. */


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

