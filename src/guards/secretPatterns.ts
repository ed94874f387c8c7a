/**
 * Vendor token formats: a token that is recognisable by its prefix and shape alone, anywhere in
 * text. The list of vendors and their prefixes follows the public gitleaks rule set
 * (github.com/gitleaks/gitleaks, `config/gitleaks.toml`, MIT) and the vendors' own docs; the
 * expressions are written for this module: linear (no nested quantifiers), anchored on a literal
 * prefix, and tolerant on length (vendors grow their tokens), because a missed key costs more
 * than masking a look-alike. Tokens that are only recognisable next to a vendor's name
 * (`DATADOG_KEY=<40 hex>`) are the job of the assignment rule in redact.ts, not of this list.
 */

export interface VendorPattern {
  /** The literal start of the token, used to find tokens split by a line break. */
  prefix: string;
  /** Global regex matching the whole token. */
  re: RegExp;
  /** A literal every match contains: the regex is skipped when the text lacks it (defaults to `prefix`). */
  needle?: string;
  /**
   * The secret starts this many characters before the match (a regex anchored on a later
   * literal), or as far back as a run of these characters goes (a variable-length start).
   */
  back?: number | { run: RegExp; max: number };
  /** Marker label: the public prefix (never a character of the secret part), or how to take it from the match. */
  label: string | ((match: string) => string);
  /**
   * A global regex whose matches' last characters include every position a match can start at
   * (found far faster than the pattern's own anchor): the pattern is tried only there.
   */
  lead?: RegExp;
}

/** Not preceded by a token character: `task-sk-…` and `risk-assessment-…` are not keys. */
const B = "(?<![A-Za-z0-9_-])";
/** Not followed by a token character (fixed-length formats). */
const E = "(?![A-Za-z0-9_-])";

function v(prefix: string, body: string, label = prefix + "…", flags = "g"): VendorPattern {
  return { prefix, re: new RegExp(B + body, flags), label };
}

export const VENDOR_PATTERNS: VendorPattern[] = [
  // AI providers
  v("sk-ant-", "sk-ant-[A-Za-z0-9_-]{20,}"),
  v("sk-", "sk-(?:proj-|svcacct-|admin-|or-v1-|lf-)?[A-Za-z0-9_-]{20,}"),
  v("gsk_", "gsk_[A-Za-z0-9]{20,}"),
  v("xai-", "xai-[A-Za-z0-9]{20,}"),
  v("pplx-", "pplx-[A-Za-z0-9]{20,}"),
  v("r8_", "r8_[A-Za-z0-9]{20,}"),
  v("hf_", "hf_[A-Za-z0-9]{30,}"),
  v("api_org_", "api_org_[A-Za-z0-9]{30,}"),
  v("fw_", "fw_[A-Za-z0-9]{20,}"),
  v("csk-", "csk-[a-z0-9]{30,}"),
  v("lsv2_", "lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{6,}"),
  v("tvly-", "tvly-(?:dev-|prod-)?[A-Za-z0-9_-]{20,}"),
  v("fc-", "fc-[A-Za-z0-9]{20,}" + E),
  v("nvapi-", "nvapi-[A-Za-z0-9_-]{40,}"),
  // fal.ai: "<key id uuid>:<32 hex secret>"
  // (anchored on a literal so the scan is fast, as below; `back` widens the span over the key id)
  { prefix: "", re: /:(?<=(?<![A-Za-z0-9_-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:)[0-9a-f]{32}(?![A-Za-z0-9])/g, label: "fal-key", back: 36 },
  // Code hosting and CI
  v("github_pat_", "github_pat_[A-Za-z0-9_]{22,}"),
  { prefix: "gh", re: new RegExp(B + "gh[pousr]_[A-Za-z0-9]{30,}", "g"), label: (m) => `${m.slice(0, 4)}…` },
  { prefix: "gl", re: new RegExp(B + "gl(?:pat|dt|rt|rtr|ptt|cbt|ft|imt|agent|oas|soat|ffct|wt)-[A-Za-z0-9_.-]{20,}", "g"), label: (m) => `${m.slice(0, m.indexOf("-") + 1)}…` },
  v("glc_", "glc_[A-Za-z0-9+/]{32,}={0,3}"),
  v("glsa_", "glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
  v("GR1348941", "GR1348941[A-Za-z0-9_-]{20,}"),
  v("ATBB", "ATBB[A-Za-z0-9]{28,}"),
  v("ATATT3", "ATATT3[A-Za-z0-9_=-]{100,}"),
  v("npm_", "npm_[A-Za-z0-9]{36,}"),
  v("pypi-", "pypi-[A-Za-z0-9_-]{40,}"),
  v("rubygems_", "rubygems_[a-f0-9]{40,}"),
  v("oy2", "oy2[a-z0-9]{43}" + E),
  v("dckr_pat_", "dckr_pat_[A-Za-z0-9_-]{20,}"),
  v("CLOJARS_", "CLOJARS_[A-Za-z0-9]{40,}"),
  v("sntrys_", "sntrys_[A-Za-z0-9+/=_]{40,}"),
  v("sntryu_", "sntryu_[a-f0-9]{64}"),
  v("pnu_", "pnu_[A-Za-z0-9]{30,}"),
  v("rdme_", "rdme_[a-z0-9]{60,}"),
  v("PMAK-", "PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}"),
  v("sgp_", "sgp_(?:[a-fA-F0-9]{16}_)?[a-fA-F0-9]{40}"),
  // Chat
  { prefix: "xox", re: new RegExp(B + "xox[abposre]-[A-Za-z0-9-]{10,}", "g"), label: (m) => `${m.slice(0, 5)}…` },
  v("xoxe.xox", "xoxe\\.xox[bp]-\\d-[A-Za-z0-9]{100,}"),
  v("xapp-", "xapp-\\d-[A-Za-z0-9-]{10,}"),
  // Telegram bot token: "<bot id>:<35 chars starting with AA>", also inside `/bot<token>/` URLs.
  // (anchored on `:AA`, the bot id found by the look-behind and by `back`, so digits elsewhere cost nothing)
  { prefix: "", re: /:AA(?<=(?<![0-9:])\d{6,12}:AA)[A-Za-z0-9_-]{30,}/g, label: "telegram-bot", needle: ":AA", back: { run: /[0-9]/, max: 12 } },
  // Discord bot token: base64(user id).timestamp.hmac
  // (anchored on its first dot, as above)
  { prefix: "", re: /\.(?<=(?<![A-Za-z0-9_.-])[MNO][A-Za-z0-9_-]{23,27}\.)[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])/g, label: "discord-bot", back: { run: /[A-Za-z0-9_-]/, max: 28 },
    // The token's first part (its first dot is the match's start), led by a rare capital.
    lead: /[MNO][A-Za-z0-9_-]{23,27}\./g },
  // Cloud
  // One pattern per prefix (here and below): each is matched only where its literal occurs.
  ...["AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"].map((pre) => ({
    prefix: pre,
    re: new RegExp(`(?<![A-Za-z0-9])${pre}[A-Z0-9]{16}(?![A-Za-z0-9])`, "g"),
    label: (m: string) => `${m.slice(0, 4)}…`,
  })),
  { prefix: "A3T", re: /(?<![A-Za-z0-9])A3T[A-Z0-9]{17}(?![A-Za-z0-9])/g, label: (m) => `${m.slice(0, 4)}…` },
  v("AIza", "AIza[0-9A-Za-z_-]{35}" + E),
  v("GOCSPX-", "GOCSPX-[A-Za-z0-9_-]{24,}"),
  v("ya29.", "ya29\\.[A-Za-z0-9_-]{30,}"),
  v("1//0", "1//0[A-Za-z0-9_-]{40,}"),
  // Azure AD client secret: 3 chars, a digit, "Q~", 31-34 chars
  { prefix: "", re: /Q~(?<=(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~)[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])/g, label: "azure-secret", needle: "Q~", back: 4 },
  ...["dop_v1_", "doo_v1_", "dor_v1_"].map((pre) => v(pre, `${pre}[a-f0-9]{40,}`, "do…_v1_…")),
  v("HRKU-", "HRKU-[A-Za-z0-9_-]{40,}"),
  v("fo1_", "fo1_[A-Za-z0-9_-]{40,}", "fly-token"),
  ...["fm1_", "fm2_", "fm1a_", "fm1r_", "fm2a_", "fm2r_"].map((pre) => v(pre, `${pre}[A-Za-z0-9+/]{60,}={0,3}`, "fly-token")),
  ...["hvs.", "hvb.", "hvr."].map((pre) => v(pre, `${pre.replace(".", "\\.")}[A-Za-z0-9_-]{60,}`, "hv…")),
  { prefix: "", re: /\.atlasv1\.(?<=(?<![A-Za-z0-9_-])[A-Za-z0-9]{14}\.atlasv1\.)[A-Za-z0-9_=-]{60,}/g, label: "atlasv1", needle: ".atlasv1.", back: 14 },
  v("tskey-", "tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9_-]{20,}"),
  v("dapi", "dapi[a-f0-9]{32}(?:-\\d)?" + E),
  v("dt0c01.", "dt0c01\\.[A-Za-z0-9]{24}\\.[A-Za-z0-9]{64}"),
  ...["NRAK-", "NRII-", "NRJS-"].map((pre) => v(pre, `${pre}[A-Za-z0-9-]{19,}`, "NR…-…")),
  v("pscale_", "pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.-]{32,}"),
  v("sbp_", "sbp_[a-f0-9]{40}"),
  v("sb_secret_", "sb_secret_[A-Za-z0-9_-]{20,}"),
  v("pul-", "pul-[a-f0-9]{40}"),
  ...["pt", "st", "sa", "ct", "scim", "audit"].map((kind) => v(`dp.${kind}.`, `dp\\.${kind}\\.[A-Za-z0-9]{40,}`, "dp.…")),
  v("v1.0-", "v1\\.0-[a-f0-9]{24}-[a-f0-9]{100,}"),
  v("sha256~", "sha256~[A-Za-z0-9_-]{43}"),
  v("ops_eyJ", "ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
  v("A3-", "A3-[A-Z0-9]{6}-[A-Z0-9]{5,11}-[A-Z0-9-]{11,24}" + E),
  // Amazon Bedrock API keys (long-term `ABSK…`, short-term `bedrock-api-key-…`): not in the gitleaks set yet.
  v("ABSK", "ABSK[A-Za-z0-9+/]{100,}={0,2}", "ABSK…"),
  v("bedrock-api-key-", "bedrock-api-key-[A-Za-z0-9+/]{100,}={0,2}"),
  v("nfp_", "nfp_[A-Za-z0-9]{36,}"),
  // Twitter/X app bearer token: 21+ `A`s, then URL-encoded base64.
  v("AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAA[A-Za-z0-9%]{60,}", "twitter-bearer"),
  v("AGE-SECRET-KEY-1", "AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", "age-key"),
  // Payments and commerce
  ...["sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"].map((pre) => ({
    prefix: pre,
    re: new RegExp(`${B}${pre}[0-9A-Za-z]{16,}`, "g"),
    label: (m: string) => `${m.slice(0, m.indexOf("_", 3) + 1)}…`,
  })),
  v("whsec_", "whsec_[0-9A-Za-z+/=]{20,}"),
  v("shp", "shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", "shp…_…"),
  v("sq0", "sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}", "sq0…"),
  v("EAAA", "EAAA[A-Za-z0-9_-]{60,}"),
  v("EAA", "EAA[CM][A-Za-z0-9]{80,}", "EAA…"),
  v("shippo_", "shippo_(?:live|test)_[a-fA-F0-9]{40}"),
  v("duffel_", "duffel_(?:live|test)_[A-Za-z0-9_=-]{40,}"),
  v("FLWSECK", "FLWSECK(?:_TEST)?-[a-hA-H0-9]{12,}(?:-X)?", "FLWSECK…"),
  ...["EZAK", "EZTK"].map((pre) => v(pre, `${pre}[A-Za-z0-9]{50,}`, "EZ…K…")),
  // Email, messaging, productivity
  v("SG.", "SG\\.[A-Za-z0-9_-]{16,}\\.[A-Za-z0-9_-]{16,}"),
  v("xkeysib-", "xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
  v("key-", "key-[a-f0-9]{32}" + E),
  { prefix: "", re: /-us\d{1,2}(?<=(?<![A-Za-z0-9_-])[a-f0-9]{32}-us\d{1,2})(?![A-Za-z0-9])/g, label: "mailchimp", needle: "-us", back: 32 },
  { prefix: "SK", re: /(?<![A-Za-z0-9_-])SK[0-9a-f]{32}(?![A-Za-z0-9])/g, label: "twilio" },
  v("lin_api_", "lin_api_[A-Za-z0-9]{40}"),
  v("ntn_", "ntn_[A-Za-z0-9]{40,}"),
  v("secret_", "secret_[A-Za-z0-9]{43}" + E, "notion"),
  v("pat", "pat[A-Za-z0-9]{14}\\.[a-f0-9]{64}", "airtable"),
  v("fio-u-", "fio-u-[A-Za-z0-9_=-]{64}"),
  v("API-", "API-[A-Z0-9]{26}" + E),
  v("ico-", "ico-[A-Za-z0-9]{32}" + E),
  v("sm_", "sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}" + E, "sm_…"),
];

/** Webhook URLs whose path is the credential (the host stays visible). */
export const WEBHOOK_PATTERNS: Array<{ re: RegExp; label: string; /** The literal every match starts with. */ host: string }> = [
  { re: /(hooks\.slack\.com\/(?:services|workflows|triggers)\/)([A-Za-z0-9+/_-]{20,})/g, label: "slack-webhook", host: "hooks.slack.com/" },
  { re: /((?:discord(?:app)?\.com)\/api\/webhooks\/)(\d{5,}\/[A-Za-z0-9_-]{20,})/g, label: "discord-webhook", host: "discord" },
  { re: /(\.webhook\.office\.com\/webhookb2\/)([A-Za-z0-9@/-]{40,})/g, label: "teams-webhook", host: ".webhook.office.com/" },
  { re: /(api\.telegram\.org\/bot)(\d{6,12}:[A-Za-z0-9_-]{30,})/g, label: "telegram-bot", host: "api.telegram.org/bot" },
];
