/**
 * Credential and internal files that read_file (and search_files) must not show to a model.
 * Matching is by name, not content, so it is cheap and works before a file is opened.
 */
import path from "node:path";

/** A pattern: a RegExp tested against the `/`-separated path, or a glob on the base name (`*`, `?`). */
export type CredentialPattern = string | RegExp;

interface NamedPattern {
  test: (normalPath: string, base: string) => boolean;
  /** What the model should do instead. */
  suggestion: string;
}

/** `.env` templates are meant to be read: they document the variables without their values. */
const ENV_TEMPLATES = new Set([".env.example", ".env.sample", ".env.template", ".env.dist", ".env.defaults"]);

const ENV_SUGGESTION =
  "It holds environment secrets. Read `.env.example` (or ask the user which variable names exist) instead of the real values.";
const KEY_SUGGESTION = "It holds a private key or certificate secret. Refer to it by path; never copy its contents.";
const AUTH_SUGGESTION = "It holds registry or login credentials. Ask the user for the setting you need (without the token).";
const LOG_SUGGESTION = "It is one of this tool set's own debug logs, which may contain raw request data.";

const PRIVATE_KEY_BASENAMES = /^(id_(rsa|dsa|ecdsa|ed25519)(_sk)?|.*\.(pem|key|p12|pfx|jks|keystore|ppk|asc|gpg))$/i;
const PUBLIC_HALVES = /\.(pub|crt|cer)$/i;

/** The default list (exported so callers can show or extend it). */
export const DEFAULT_CREDENTIAL_PATTERNS: readonly NamedPattern[] = [
  {
    test: (_p, base) => (base === ".env" || /^\.env\./i.test(base) || /\.env$/i.test(base)) && !ENV_TEMPLATES.has(base.toLowerCase()),
    suggestion: ENV_SUGGESTION,
  },
  {
    // direnv (`.envrc`, `.envrc.local`), its cache dir, and env files named after a stage (`prod.env`, `env.local`).
    test: (p, base) =>
      /^\.envrc(\..+)?$/i.test(base) || /(^|\/)\.direnv\//.test(p) || /^env\.(local|prod|production|dev|development|staging|test)$/i.test(base),
    suggestion: ENV_SUGGESTION,
  },
  { test: (_p, base) => PRIVATE_KEY_BASENAMES.test(base) && !PUBLIC_HALVES.test(base), suggestion: KEY_SUGGESTION },
  {
    test: (_p, base) => [".npmrc", ".netrc", "_netrc", ".git-credentials", ".pypirc", ".pgpass", ".htpasswd"].includes(base.toLowerCase()),
    suggestion: AUTH_SUGGESTION,
  },
  { test: (p) => /(^|\/)\.aws\/credentials$/.test(p) || /(^|\/)\.docker\/config\.json$/.test(p) || /(^|\/)\.kube\/config$/.test(p), suggestion: AUTH_SUGGESTION },
  { test: (p) => /(^|\/)\.ssh\/[^/]+$/.test(p) && !/\.pub$|known_hosts$|\/config$/.test(p), suggestion: KEY_SUGGESTION },
  { test: (p, base) => /(^|\/)logs\/web_tools_debug_[^/]*\.json$/.test(p) || /^workbench-debug.*\.log$/i.test(base), suggestion: LOG_SUGGESTION },
];

/** A glob as a RegExp; a glob with a `/` matches a trailing part of the path (`b/*.json`). */
function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]");
  return new RegExp(glob.includes("/") ? `(^|/)${body.replace(/^\//, "")}$` : `^${body}$`, "i");
}

function normalise(p: string): { normalPath: string; base: string } {
  const normalPath = p.replace(/\\/g, "/");
  return { normalPath, base: path.posix.basename(normalPath) };
}

function matchesExtra(normalPath: string, base: string, extra: readonly CredentialPattern[]): boolean {
  return extra.some((pat) => {
    if (pat instanceof RegExp) {
      pat.lastIndex = 0;
      return pat.test(normalPath);
    }
    return globToRegExp(pat).test(pat.includes("/") ? normalPath : base);
  });
}

/**
 * Why a path counts as a credential file, as guidance a model can act on; `undefined` when it
 * does not. `extraPatterns` add to the defaults (globs match the base name unless they contain
 * a `/`; RegExps are tested against the whole `/`-separated path).
 */
export function credentialPathReason(filePath: string, extraPatterns: readonly CredentialPattern[] = []): string | undefined {
  if (typeof filePath !== "string" || filePath === "") return undefined;
  const { normalPath, base } = normalise(filePath);
  for (const pattern of DEFAULT_CREDENTIAL_PATTERNS) {
    if (pattern.test(normalPath, base)) return pattern.suggestion;
  }
  if (extraPatterns.length > 0 && matchesExtra(normalPath, base, extraPatterns)) {
    return "It matches the configured list of protected files.";
  }
  return undefined;
}

/** True when `filePath` names a credential or internal file (see {@link credentialPathReason}). */
export function isCredentialPath(filePath: string, extraPatterns?: readonly CredentialPattern[]): boolean {
  return credentialPathReason(filePath, extraPatterns) !== undefined;
}
