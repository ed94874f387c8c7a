/**
 * Secrets recognisable by the text around them: auth headers, `Bearer …`, JWTs, PHP `define`,
 * XML elements, command-line passwords, `.netrc`, signed-URL parameters.
 */
import { escapeRegExp } from "../regexp.js";
import { XML_TAG_LEAD, anchoredMatches, type Anchor } from "./anchored.js";
import { REDACTION_MARKER_PREFIX } from "./markers.js";
import { registerAnchorLiterals, type TextScan } from "./scan.js";
import { indexOfGroup } from "./text.js";
import type { RedactOptions, SecretSpan } from "./types.js";
import { isCodeValue, isPlaceholder } from "./values.js";

/** How the parameters of the signed-URL rule start (its anchors follow a `?` or `&`). */
const SIGNED_URL_PARAM_STARTS = ["sig", "x-amz-", "x-goog-", "token", "access_token", "api_key", "apikey", "key", "code", "client_secret", "password"];

interface ContextRule {
  re: RegExp;
  /** Index of the capture group holding the secret. */
  group: number;
  label?: string;
  /** Lower-case literals, one of which every match contains: the rule is skipped without them. */
  needles: string[];
  /** Where every match starts (./anchored.ts): the rule then runs only there (implies `needles`). */
  anchor?: Anchor;
}

const CONTEXT_RULES: Array<ContextRule & { needleRes: RegExp[] }> = (<ContextRule[]>[
  // `Authorization: Bearer x`, `Proxy-Authorization: Basic x`, `"Authorization": "Token x"`
  { re: /\b((?:proxy-)?authorization(?:["'`]?[ \t]*[:=]|["'`][ \t]*,)[ \t]*["'`]?(?:(?:bearer|basic|token|digest|apikey|bot|sso-key|key|otp)\s+)?)([^\s"'`,;]{4,})/gi, group: 2, needles: ["authorization"], anchor: { needles: ["authorization"], back: "proxy-".length } },
  // `x-api-key: x`, `PRIVATE-TOKEN: x`
  {
    re: /\b((?:x-api-key|x-auth-token|x-api-token|x-auth-key|api-key|x-goog-api-key|x-access-token|private-token|x-gitlab-token|x-vault-token|x-figma-token|x-shopify-access-token|ocp-apim-subscription-key|x-functions-key)(?:["'`]?[ \t]*[:=]|["'`][ \t]*,)[ \t]*["'`]?)([^\s"'`,;]{6,})/gi,
    group: 2,
    needles: ["-key", "-token"],
    // (the farthest needle from the start: `ocp-apim-subscription` before `-key`)
    anchor: { needles: ["-key", "-token"], back: "ocp-apim-subscription".length },
  },
  // `Bearer <token>` anywhere (logs, curl lines, docs)
  { re: /\b(bearer\s+)([A-Za-z0-9._~+/-]{12,}=*)(?![\w$-])/gi, group: 2, needles: ["bearer"], anchor: { needles: ["bearer"], back: 0 } },
  // JWTs (two or three parts; `alg: none` tokens end with a dot)
  { re: /(?<![A-Za-z0-9_-])(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?)/g, group: 1, label: "jwt", needles: ["eyj"], anchor: { needles: ["eyj"], back: 0 } },
  // PHP `define('DB_PASSWORD', 'x')`
  { re: /\bdefine\s*\(\s*(["'])([A-Z0-9_]*(?:PASSWORD|PASS|PWD|SECRET|TOKEN|_KEY|SALT)[A-Z0-9_]*)\1\s*,\s*(["'])((?:(?!\3)[^\\\n]|\\.)+)\3/g, group: 4, needles: ["define"], anchor: { needles: ["define"], back: 0 } },
  // XML `<password>x</password>`, `<add key="Password" value="x"/>`
  { re: /<((?:[A-Za-z_:][\w.:-]*)?(?:password|passwd|secret|token|apikey|api-key|api_key|credential)[\w.:-]*)>([^<\n]{1,512})<\/\1>/gi, group: 2, needles: ["</"], anchor: { lead: XML_TAG_LEAD, at: "start" } },
  { re: /\bkey\s*=\s*"[^"\n]*(?:password|secret|token|apikey|api[_.-]key)[^"\n]*"\s+value\s*=\s*"([^"\n]+)"/gi, group: 1, needles: ["value"], anchor: { needles: ["key"], back: 0 } },
  // `mysql -pSECRET`, `mysqldump -u root -pSECRET`
  { re: /\b(?:mysql\w*|mariadb\w*)\b[^\n|;]*?\s-p(?!\s)([^\s'"`]+|'[^'\n]*'|"[^"\n]*")/g, group: 1, needles: ["mysql", "mariadb"], anchor: { needles: ["mysql", "mariadb"], back: 0 } },
  // `--password x`, `--token=x`, `--api-key x`, `--client-secret x`
  { re: /(?<![\w-])--(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|access-token|auth-token)(?:=|[ \t]+)(?!-)("[^"\n]{3,}"|'[^'\n]{3,}'|[^\s"'`|;&,)]{3,})/gi, group: 1,
    needles: ["--"],
    anchor: { needles: ["--pass", "--token", "--api-key", "--apikey", "--secret", "--client-secret", "--access-token", "--auth-token"], back: 0 },
  },
  // `curl -u user:pass`, `--user user:pass`, `-u :token`
  // (anchored on the dash, the blank before it checked behind, instead of trying every blank)
  { re: /-(?<=(?:^|\s)-)(?:u|-user)(?:=|\s+)["']?[^\s:"']*:([^\s"'@]+)/g, group: 1, needles: ["-u", "--user"], anchor: { needles: ["-u"], back: 1 } },
  // .netrc: `machine h login u password p`
  { re: /\b(?:machine|login)\b[^\n]*?\bpassword\s+(\S+)/g, group: 1, needles: ["password"], anchor: { needles: ["machine", "login"], back: 0 } },
  // Basic-auth blobs in Docker configs and headers: `"auth": "dXNl…"` is caught by the assignment rule.
  // Azure SAS / signed URLs: `sig=…`, `X-Amz-Signature=…`, `X-Goog-Signature=…`
  { re: /[?&](?:sig|signature|x-amz-signature|x-goog-signature|x-amz-security-token|token|access_token|api_key|apikey|key|code|client_secret|password)=([A-Za-z0-9%+/._~-]{12,})/gi, group: 1,
    needles: ["?", "&"],
    anchor: { needles: ["?", "&"].flatMap((c) => SIGNED_URL_PARAM_STARTS.map((p) => c + p)), back: 0 },
  },
]).map((rule) => ({
  ...rule,
  // Case-insensitive tests instead of lower-casing the whole text (which costs more than the rules).
  needleRes: rule.needles.map((n) => new RegExp(escapeRegExp(n), "i")),
}));

registerAnchorLiterals(CONTEXT_RULES.flatMap((r) => (r.anchor && "needles" in r.anchor ? r.anchor.needles : [])));

/** `Authorization: "Bearer " + token`: the scheme, not a value. */
const SCHEME_WORD_RE = /^(?:bearer|basic|token|digest|negotiate|ntlm|authentication|auth)$/i;

/** The context-rule detector. */
export function detectContextRules(text: string, _opts: RedactOptions, scan: TextScan): SecretSpan[] {
  const spans: SecretSpan[] = [];
  for (const rule of CONTEXT_RULES) {
    let matches: Iterable<RegExpExecArray>;
    if (rule.anchor) matches = anchoredMatches(text, scan, rule.re, rule.anchor);
    else if (!rule.needleRes.some((re) => re.test(text))) continue;
    else {
      rule.re.lastIndex = 0;
      matches = text.matchAll(rule.re) as Iterable<RegExpExecArray>;
    }
    for (const m of matches) {
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
