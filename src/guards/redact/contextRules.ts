/**
 * Secrets recognisable by the text around them: auth headers, `Bearer …`, JWTs, PHP `define`,
 * XML elements, command-line passwords, `.netrc`, signed-URL parameters.
 */
import { escapeRegExp } from "../regexp.js";
import { REDACTION_MARKER_PREFIX } from "./markers.js";
import { indexOfGroup } from "./text.js";
import type { SecretSpan } from "./types.js";
import { isCodeValue, isPlaceholder } from "./values.js";

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
  // (anchored on the dash, the blank before it checked behind, instead of trying every blank)
  { re: /-(?<=(?:^|\s)-)(?:u|-user)(?:=|\s+)["']?[^\s:"']*:([^\s"'@]+)/g, group: 1, needles: ["-u", "--user"] },
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

/** The context-rule detector. */
export function detectContextRules(text: string): SecretSpan[] {
  const spans: SecretSpan[] = [];
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
  return spans;
}
