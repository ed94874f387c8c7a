/**
 * Generates tests/fixtures/redact-field-corpus.json: secrets in many formats placed in many
 * context shapes, and benign look-alikes (placeholders, templates, identifiers, hashes,
 * credential-free URLs) in the same shapes. Deterministic (seeded PRNG):
 *
 *   node --import tsx scripts/gen-redact-corpus.ts
 *
 * Formats are written here from the vendors' documented token shapes (prefix, alphabet, length);
 * they are not taken from any rule list, so the corpus tests the rules rather than restating them.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SEED = 0x5eed1234;
let seed = SEED;
function rand(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const ALPHA: Record<string, string> = {
  A: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
  a: "abcdefghijklmnopqrstuvwxyz0123456789",
  U: "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
  h: "0123456789abcdef",
  H: "0123456789ABCDEF",
  d: "0123456789",
  b: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
  B: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
  p: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#%^*-_+",
  g: "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
};
/** `{A:20}` → 20 random characters of alphabet A. */
function fill(template: string): string {
  return template.replace(/\{(\w):(\d+)\}/g, (_, a: string, n: string) => {
    let s = "";
    for (let i = 0; i < Number(n); i++) s += ALPHA[a]![Math.floor(rand() * ALPHA[a]!.length)];
    return s;
  });
}

/** [format, key name, template]: prefixed tokens first, then tokens known only by their key name. */
const FORMATS: Array<[string, string, string]> = [
  ["openai-project", "OPENAI_API_KEY", "sk-proj-{b:48}T3BlbkFJ{b:48}"], ["openai-legacy", "OPENAI_API_KEY", "sk-{A:20}T3BlbkFJ{A:20}"],
  ["anthropic", "ANTHROPIC_API_KEY", "sk-ant-api03-{b:93}AA"], ["groq", "GROQ_API_KEY", "gsk_{A:52}"], ["xai", "XAI_API_KEY", "xai-{A:80}"],
  ["perplexity", "PERPLEXITY_API_KEY", "pplx-{h:48}"], ["replicate", "REPLICATE_API_TOKEN", "r8_{A:37}"], ["huggingface", "HF_TOKEN", "hf_{A:34}"],
  ["huggingface-org", "HF_ORG_TOKEN", "api_org_{A:34}"], ["fireworks", "FIREWORKS_API_KEY", "fw_{A:24}"], ["cerebras", "CEREBRAS_API_KEY", "csk-{a:48}"],
  ["langsmith", "LANGSMITH_API_KEY", "lsv2_pt_{h:32}_{h:10}"], ["tavily", "TAVILY_API_KEY", "tvly-dev-{A:32}"], ["nvidia", "NVIDIA_API_KEY", "nvapi-{b:64}"],
  ["fal", "FAL_KEY", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}:{h:32}"], ["github-pat", "GITHUB_TOKEN", "ghp_{A:36}"], ["github-fine", "GITHUB_TOKEN", "github_pat_11{U:20}_{A:59}"],
  ["github-oauth", "GH_OAUTH_TOKEN", "gho_{A:36}"], ["github-server", "GITHUB_APP_TOKEN", "ghs_{A:36}"], ["github-user", "GH_USER_TOKEN", "ghu_{A:36}"],
  ["github-refresh", "GH_REFRESH_TOKEN", "ghr_{A:76}"], ["gitlab-pat", "GITLAB_TOKEN", "glpat-{b:20}"], ["gitlab-deploy", "GITLAB_DEPLOY_TOKEN", "gldt-{b:20}"],
  ["gitlab-runner", "RUNNER_TOKEN", "glrt-{b:20}"], ["gitlab-feed", "GITLAB_FEED_TOKEN", "glft-{b:20}"], ["gitlab-trigger", "GITLAB_TRIGGER_TOKEN", "glptt-{h:40}"],
  ["gitlab-cicd", "CI_JOB_TOKEN", "glcbt-{h:5}_{b:20}"], ["gitlab-oauth", "GITLAB_OAUTH_SECRET", "gloas-{h:64}"], ["grafana-cloud", "GRAFANA_CLOUD_TOKEN", "glc_{B:40}"],
  ["grafana-sa", "GRAFANA_SA_TOKEN", "glsa_{A:32}_{h:8}"], ["gitlab-runner-reg", "REGISTRATION_TOKEN", "GR1348941{b:20}"], ["bitbucket-app", "BITBUCKET_APP_PASSWORD", "ATBB{A:32}"],
  ["atlassian", "ATLASSIAN_API_TOKEN", "ATATT3{b:180}={H:8}"], ["npm", "NPM_TOKEN", "npm_{A:36}"], ["pypi", "PYPI_TOKEN", "pypi-AgEIcHlwaS5vcmc{b:70}"],
  ["rubygems", "GEM_HOST_API_KEY", "rubygems_{h:48}"], ["nuget", "NUGET_API_KEY", "oy2{a:43}"], ["docker-pat", "DOCKER_TOKEN", "dckr_pat_{b:27}"],
  ["clojars", "CLOJARS_TOKEN", "CLOJARS_{a:60}"], ["sentry-org", "SENTRY_AUTH_TOKEN", "sntrys_eyJpYXQiO{B:100}"], ["sentry-user", "SENTRY_TOKEN", "sntryu_{h:64}"],
  ["prefect", "PREFECT_API_KEY", "pnu_{A:36}"], ["readme", "README_API_KEY", "rdme_{a:70}"], ["postman", "POSTMAN_API_KEY", "PMAK-{h:24}-{h:34}"],
  ["sourcegraph", "SRC_ACCESS_TOKEN", "sgp_{h:16}_{h:40}"], ["slack-bot", "SLACK_BOT_TOKEN", "xoxb-{d:12}-{d:13}-{A:24}"], ["slack-user", "SLACK_USER_TOKEN", "xoxp-{d:12}-{d:12}-{d:13}-{h:32}"],
  ["slack-app", "SLACK_APP_TOKEN", "xapp-1-{U:11}-{d:13}-{h:64}"], ["slack-config", "SLACK_CONFIG_TOKEN", "xoxe.xoxp-1-{A:150}"], ["telegram", "TELEGRAM_BOT_TOKEN", "{d:10}:AA{b:33}"],
  ["discord-bot", "DISCORD_BOT_TOKEN", "MT{A:24}.{b:6}.{b:38}"], ["aws-akid", "AWS_ACCESS_KEY_ID", "AKIA{U:16}"], ["aws-sts", "AWS_SESSION_KEY_ID", "ASIA{U:16}"],
  ["aws-secret", "AWS_SECRET_ACCESS_KEY", "{B:40}"], ["google-api", "GOOGLE_API_KEY", "AIza{b:35}"], ["google-oauth-secret", "GOOGLE_CLIENT_SECRET", "GOCSPX-{b:28}"],
  ["google-access", "GOOGLE_ACCESS_TOKEN", "ya29.{b:120}"], ["google-refresh", "GOOGLE_REFRESH_TOKEN", "1//0{b:60}"], ["azure-ad-secret", "AZURE_CLIENT_SECRET", "{A:3}8Q~{b:34}"],
  ["digitalocean-pat", "DIGITALOCEAN_TOKEN", "dop_v1_{h:64}"], ["digitalocean-oauth", "DO_OAUTH_TOKEN", "doo_v1_{h:64}"], ["digitalocean-refresh", "DO_REFRESH_TOKEN", "dor_v1_{h:64}"],
  ["heroku", "HEROKU_API_KEY", "HRKU-AA{b:58}"], ["fly", "FLY_API_TOKEN", "fo1_{b:43}"], ["vault-service", "VAULT_TOKEN", "hvs.{b:90}"],
  ["vault-batch", "VAULT_BATCH_TOKEN", "hvb.{b:130}"], ["terraform-cloud", "TFE_TOKEN", "{A:14}.atlasv1.{b:67}"], ["tailscale", "TS_AUTHKEY", "tskey-auth-{A:12}-{A:32}"],
  ["databricks", "DATABRICKS_TOKEN", "dapi{h:32}"], ["dynatrace", "DT_API_TOKEN", "dt0c01.{U:24}.{A:64}"], ["newrelic-user", "NEW_RELIC_API_KEY", "NRAK-{U:27}"],
  ["newrelic-insert", "NEW_RELIC_INSERT_KEY", "NRII-{b:32}"], ["newrelic-browser", "NEW_RELIC_BROWSER_KEY", "NRJS-{h:19}"], ["planetscale", "PLANETSCALE_TOKEN", "pscale_tkn_{b:43}"],
  ["planetscale-pw", "PLANETSCALE_PASSWORD", "pscale_pw_{b:43}"], ["supabase", "SUPABASE_ACCESS_TOKEN", "sbp_{h:40}"], ["supabase-secret", "SUPABASE_SECRET_KEY", "sb_secret_{b:31}"],
  ["pulumi", "PULUMI_ACCESS_TOKEN", "pul-{h:40}"], ["doppler", "DOPPLER_TOKEN", "dp.pt.{A:43}"], ["openshift", "OPENSHIFT_TOKEN", "sha256~{b:43}"],
  ["1password-sa", "OP_SERVICE_ACCOUNT_TOKEN", "ops_eyJ{B:260}"], ["age", "AGE_KEY", "AGE-SECRET-KEY-1{g:58}"], ["stripe-live", "STRIPE_SECRET_KEY", "sk_live_{A:99}"],
  ["stripe-test", "STRIPE_SECRET_KEY", "sk_test_{A:99}"], ["stripe-restricted", "STRIPE_RESTRICTED_KEY", "rk_live_{A:99}"], ["stripe-webhook", "STRIPE_WEBHOOK_SECRET", "whsec_{A:32}"],
  ["shopify-access", "SHOPIFY_ACCESS_TOKEN", "shpat_{h:32}"], ["shopify-custom", "SHOPIFY_CUSTOM_TOKEN", "shpca_{h:32}"], ["shopify-private", "SHOPIFY_PRIVATE_TOKEN", "shppa_{h:32}"],
  ["shopify-secret", "SHOPIFY_SHARED_SECRET", "shpss_{h:32}"], ["square-access", "SQUARE_ACCESS_TOKEN", "EAAA{b:60}"], ["square-oauth", "SQUARE_OAUTH_SECRET", "sq0csp-{b:43}"],
  ["square-app", "SQUARE_TOKEN", "sq0atp-{b:22}"], ["facebook", "FACEBOOK_ACCESS_TOKEN", "EAAC{A:100}"], ["shippo", "SHIPPO_API_TOKEN", "shippo_live_{h:40}"],
  ["duffel", "DUFFEL_TOKEN", "duffel_live_{b:43}"], ["flutterwave", "FLW_SECRET_KEY", "FLWSECK_TEST-{h:32}-X"], ["easypost", "EASYPOST_API_KEY", "EZAK{A:54}"],
  ["sendgrid", "SENDGRID_API_KEY", "SG.{b:22}.{b:43}"], ["sendinblue", "BREVO_API_KEY", "xkeysib-{h:64}-{A:16}"], ["mailgun", "MAILGUN_API_KEY", "key-{h:32}"],
  ["mailchimp", "MAILCHIMP_API_KEY", "{h:32}-us{d:2}"], ["twilio-key", "TWILIO_API_KEY", "SK{h:32}"], ["linear", "LINEAR_API_KEY", "lin_api_{A:40}"],
  ["notion-new", "NOTION_TOKEN", "ntn_{A:46}"], ["notion-legacy", "NOTION_API_KEY", "secret_{A:43}"], ["airtable-pat", "AIRTABLE_TOKEN", "pat{A:14}.{h:64}"],
  ["frameio", "FRAMEIO_TOKEN", "fio-u-{b:64}"], ["octopus", "OCTOPUS_API_KEY", "API-{U:26}"], ["intra42", "INTRA_SECRET", "s-s4t2ud-{h:64}"],
  ["jfrog", "JFROG_API_KEY", "AKCp{A:69}"], ["clickhouse", "CLICKHOUSE_SECRET", "4b1d{A:38}"], ["alibaba", "ALIBABA_ACCESS_KEY_ID", "LTAI{A:20}"],
  ["adobe-secret", "ADOBE_CLIENT_SECRET", "p8e-{h:32}"], ["dropbox", "DROPBOX_TOKEN", "sl.{b:135}"], ["mapbox", "MAPBOX_TOKEN", "pk.eyJ1Ijoi{b:40}.{b:22}"],
  ["netlify", "NETLIFY_AUTH_TOKEN", "nfp_{A:36}"], ["linkedin", "LINKEDIN_CLIENT_SECRET", "{A:16}"], ["twitter-bearer", "TWITTER_BEARER_TOKEN", "AAAAAAAAAAAAAAAAAAAAA{A:80}"],
  ["jwt", "SESSION_JWT", "eyJhbGciOiJIUzI1NiJ9.eyJ{b:40}.{b:43}"], ["bedrock", "AWS_BEARER_TOKEN_BEDROCK", "ABSK{B:120}"], ["algolia", "ALGOLIA_API_KEY", "{h:32}"],
  ["datadog-api", "DATADOG_API_KEY", "{h:32}"], ["datadog-app", "DD_APP_KEY", "{h:40}"], ["cloudflare", "CLOUDFLARE_API_TOKEN", "{b:40}"],
  ["cloudflare-global", "CLOUDFLARE_API_KEY", "{h:37}"], ["heroku-legacy", "HEROKU_API_KEY", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"], ["okta", "OKTA_API_TOKEN", "00{b:40}"],
  ["pagerduty", "PAGERDUTY_TOKEN", "{A:20}"], ["mongodb-atlas", "ATLAS_PRIVATE_KEY", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"], ["contentful", "CONTENTFUL_ACCESS_TOKEN", "{b:43}"],
  ["circleci", "CIRCLE_TOKEN", "{h:40}"], ["travis", "TRAVIS_TOKEN", "{A:22}"], ["codecov", "CODECOV_TOKEN", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"],
  ["snyk", "SNYK_TOKEN", "{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"], ["sonar", "SONAR_TOKEN", "squ_{h:40}"], ["zendesk", "ZENDESK_API_TOKEN", "{A:40}"],
  ["hubspot", "HUBSPOT_ACCESS_TOKEN", "pat-na1-{h:8}-{h:4}-{h:4}-{h:4}-{h:12}"], ["intercom", "INTERCOM_ACCESS_TOKEN", "dG9rOj{B:54}"], ["asana", "ASANA_ACCESS_TOKEN", "1/{d:16}:{h:32}"],
  ["discord-client", "DISCORD_CLIENT_SECRET", "{b:32}"], ["twitch", "TWITCH_CLIENT_SECRET", "{a:30}"], ["spotify", "SPOTIFY_CLIENT_SECRET", "{h:32}"],
  ["azure-storage", "AZURE_STORAGE_KEY", "{B:86}=="], ["azure-sas-sig", "AZURE_SAS_SIGNATURE", "{B:43}%3D"], ["mysql-password", "MYSQL_PASSWORD", "{p:20}"],
  ["postgres-password", "POSTGRES_PASSWORD", "{p:24}"], ["redis-password", "REDIS_PASSWORD", "{A:32}"], ["django-secret", "DJANGO_SECRET_KEY", "django-insecure-{p:50}"],
  ["rails-master", "RAILS_MASTER_KEY", "{h:32}"], ["jwt-secret", "JWT_SECRET", "{B:64}"], ["session-secret", "SESSION_SECRET", "{A:48}"],
  ["encryption-key", "ENCRYPTION_KEY", "{B:44}"], ["webhook-secret", "WEBHOOK_SECRET", "{h:40}"], ["smtp-password", "SMTP_PASSWORD", "{p:16}"],
  ["ldap-password", "LDAP_BIND_PASSWORD", "{p:18}"], ["admin-password", "ADMIN_PASSWORD", "{p:14}"], ["client-secret", "CLIENT_SECRET", "{b:40}"],
  ["private-key-b64", "PRIVATE_KEY", "{B:64}"], ["signing-key", "SIGNING_KEY", "{h:64}"], ["api-secret", "API_SECRET", "{A:40}"],
  ["license-key", "LICENSE_KEY", "{U:5}-{U:5}-{U:5}-{U:5}"], ["master-key", "MASTER_KEY", "{b:32}"], ["access-token", "ACCESS_TOKEN", "{A:40}"],
  ["refresh-token", "REFRESH_TOKEN", "{b:64}"], ["auth-token", "AUTH_TOKEN", "{h:48}"], ["db-password", "DB_PASSWORD", "{p:22}"],
];

/** [shape, (key, value) → text]. Header-style shapes use an X-…-Key header name. */
const SHAPES: Array<[string, (key: string, value: string) => string]> = [
  ["dotenv", (k, v) => `${k}=${v}`],
  ["export", (k, v) => `export ${k}="${v}"`],
  ["yaml", (k, v) => `  ${k.toLowerCase()}: ${v}`],
  ["json", (k, v) => `{"${camel(k)}": "${v}", "region": "eu-west-1"}`],
  ["python", (k, v) => `${k.toLowerCase()} = "${v}"`],
  ["js-const", (k, v) => `const ${camel(k)} = '${v}';`],
  ["java-setProperty", (k, v) => `System.setProperty("${k.toLowerCase().replace(/_/g, ".")}", "${v}");`],
  ["k8s-env", (k, v) => `        - name: ${k}\n          value: "${v}"`],
  ["postman-header", (k, v) => `{"key": "${header(k)}", "value": "${v}", "type": "text"}`],
  ["go-header-set", (k, v) => `req.Header.Set("${header(k)}", "${v}")`],
  ["python-setdefault", (k, v) => `os.environ.setdefault("${k}", "${v}")`],
  ["positional-client", (k, v) => `client = ${pascal(k.replace(/_(?:API_)?(?:KEY|TOKEN|SECRET|PASSWORD).*$/, ""))}Client("${v}")`],
  ["xml-multiline", (k, v) => `<${camel(k)}>\n    ${v}\n</${camel(k)}>`],
  ["php-append", (k, v) => `$${camel(k)} .= "${v}";`],
  ["makefile", (k, v) => `${k} ::= ${v}`],
  ["go-var", (k, v) => `var ${camel(k)} string = "${v}"`],
  ["toml", (k, v) => `${k.toLowerCase()} = "${v}"`],
  ["curl-header", (k, v) => `curl -s -H "${header(k)}: ${v}" https://api.example.com/v1/items`],
];

function camel(k: string): string {
  return k.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
function pascal(k: string): string {
  const c = camel(k);
  return c.charAt(0).toUpperCase() + c.slice(1);
}
function header(k: string): string {
  return /TOKEN/.test(k) ? "X-Auth-Token" : "X-Api-Key";
}

/** Benign look-alikes: values a redactor must keep, by kind. */
const BENIGN_VALUES: Array<[string, string[]]> = [
  ["placeholder-x", ["ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "AKIAXXXXXXXXXXXXXXXX", "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "xoxb-XXXXXXXXXXXX-XXXXXXXXXXXXX-XXXXXXXXXXXXXXXXXXXXXXXX", "glpat-xxxxxxxxxxxxxxxxxxxx", "SG.xxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "npm_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx"]],
  ["zeros", ["00000000000000000000000000000000", "0000000000000000000000000000000000000000", "AKIA0000000000000000", "ghp_000000000000000000000000000000000000"]],
  ["sequence", ["1234567890abcdef1234567890abcdef", "abcdefghijklmnopqrstuvwxyz012345", "0123456789012345678901234567890123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"]],
  ["template", ["${API_KEY}", "${API_KEY:?must be set}", "{{ .Values.apiKey }}", "{{ secrets.TOKEN }}", "%s", "%(token)s", "{TOKEN}", "$1", "<your-api-key>", "${{ secrets.GITHUB_TOKEN }}"]],
  ["reference", ["process.env.API_KEY", "os.environ['API_KEY']", "config.apiKey", "settings.SECRET_KEY", "getenv(\"TOKEN\")"]],
  ["word", ["changeme", "your-token-here", "placeholder", "redacted", "none", "example", "dummy"]],
];

const BENIGN_LINES = [
  "mongodb://localhost:27017/app", "postgres://localhost:5432/app_dev", "redis://127.0.0.1:6379/0", "amqp://rabbitmq:5672/", "mysql://db.internal:3306/shop",
  "https://example.com/path?page=2&sort=desc", "git@github.com:org/repo.git", "https://user@github.com/org/repo.git",
  "curl -u $USER:$PASS https://api.example.com", "curl -u {USER}:{PASS} https://api.example.com", "sed -e 's/$1:$2/x/'", "printf 'token=%s\\n' \"$TOKEN\"",
  ": \"${API_TOKEN:?API_TOKEN is required}\"", "password_reset_url = \"https://example.com/reset\"", "token_endpoint: https://oauth2.googleapis.com/token",
  "MAX_TOKENS=4096", "KEYBOARD=us", "primary_key = \"id\"", "sort_key: created_at", "public_key_path = \"~/.ssh/id_ed25519.pub\"",
  "commit 3f786850e387550fdab836ed7e6dc881de23001b", "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "\"integrity\": \"sha512-abc\"",
  "id: 550e8400-e29b-41d4-a716-446655440000", "request_id=7f3c2a9e-8b1d-4c5e-9f0a-1b2c3d4e5f60", "const tokenizer = new Tokenizer(vocab);",
  "if (apiKey === undefined) throw new Error(\"API key missing\");", "api_key = api_key", "token = get_token()", "password = getpass.getpass()",
  "System.setProperty(\"java.awt.headless\", \"true\");", "os.environ.setdefault(\"DJANGO_SETTINGS_MODULE\", \"mysite.settings\")",
  "req.Header.Set(\"Content-Type\", \"application/json\")", "req.Header.Set(\"Accept\", \"application/vnd.github+json\")",
  "        - name: LOG_LEVEL\n          value: \"debug\"", "{\"key\": \"Content-Type\", \"value\": \"application/json\", \"type\": \"text\"}",
  "<timeout>\n    30000\n</timeout>", "var apiVersion string = \"2023-10-16\"", "CFLAGS ::= -O2 -Wall", "$output .= \"<li>\";",
  "client = HttpClient(\"https://api.example.com\")", "client = OpenAIClient(\"gpt-4o-mini\")",
];

export interface GeneratedCorpus {
  generatedBy: string;
  secrets: Array<{ format: string; shape: string; text: string; secret: string }>;
  benign: Array<{ kind: string; text: string }>;
}

/** The corpus, the same on every call (the PRNG is reseeded). */
export function buildCorpus(): GeneratedCorpus {
  seed = SEED;
  const secrets: Array<{ format: string; shape: string; text: string; secret: string }> = [];
  FORMATS.forEach(([format, key, template], i) => {
    // Each format in seven shapes (rotating through all), so every shape holds many formats.
    for (let j = 0; j < 7; j++) {
      const [shape, render] = SHAPES[(i + j * 5) % SHAPES.length]!;
      const secret = fill(template);
      secrets.push({ format, shape, text: render(key, secret), secret });
    }
  });
  const benign: Array<{ kind: string; text: string }> = [];
  const keys = ["API_KEY", "GITHUB_TOKEN", "AWS_ACCESS_KEY_ID", "SECRET_KEY", "DB_PASSWORD", "STRIPE_SECRET_KEY", "SLACK_BOT_TOKEN"];
  for (const [kind, values] of BENIGN_VALUES) {
    values.forEach((v, i) => {
      for (let j = 0; j < SHAPES.length; j++) {
        const [shape, render] = SHAPES[j]!;
        // A reference is code, not a value: only where it stands unquoted.
        if (kind === "reference" && !["dotenv", "yaml", "makefile"].includes(shape)) continue;
        benign.push({ kind: `${kind}/${shape}`, text: render(keys[(i + j) % keys.length]!, v) });
      }
    });
  }
  for (const text of BENIGN_LINES) benign.push({ kind: "line", text });
  return { generatedBy: "scripts/gen-redact-corpus.ts", secrets, benign };
}

/** Where the corpus is written. */
export const CORPUS_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "tests/fixtures/redact-field-corpus.json");

/** The file's exact text for a corpus. */
export function corpusText(corpus: GeneratedCorpus): string {
  return JSON.stringify(corpus, null, 1) + "\n";
}

function main(): void {
  const corpus = buildCorpus();
  writeFileSync(CORPUS_PATH, corpusText(corpus));
  const formats = new Set(corpus.secrets.map((s) => s.format)).size;
  process.stderr.write(`wrote ${CORPUS_PATH}: ${corpus.secrets.length} secrets, ${formats} formats, ${SHAPES.length} shapes, ${corpus.benign.length} benign\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
