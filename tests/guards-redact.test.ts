import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { containsRedactionMarker, isSecretKeyName, redactionMarker, redactSecrets } from "../src/guards/redact.js";

// Built at runtime so this file itself holds no real-looking key.
const tail = (n: number, alphabet = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz") => Array.from({ length: n }, (_, i) => alphabet[(i * 7) % alphabet.length]).join("");

const secrets: Array<[string, string, string]> = [
  ["OpenAI project key", `sk-proj-${tail(40)}`, "«redacted:sk-…»"],
  ["OpenAI legacy key", `sk-${tail(48)}`, "«redacted:sk-…»"],
  ["Anthropic key", `sk-ant-api03-${tail(60)}`, "«redacted:sk-ant-…»"],
  ["GitHub classic token", `ghp_${tail(36)}`, "«redacted:ghp_…»"],
  ["GitHub OAuth token", `gho_${tail(36)}`, "«redacted:gho_…»"],
  ["GitHub fine-grained PAT", `github_pat_${tail(22)}_${tail(59)}`, "«redacted:github_pat_…»"],
  ["Slack bot token", `xoxb-1234567890-${tail(24)}`, "«redacted:xoxb-…»"],
  ["Slack user token", `xoxp-1234567890-${tail(24)}`, "«redacted:xoxp-…»"],
  ["AWS access key id", `AKIA${"IOSFODNN7EXAMPLE"}`, "«redacted:AKIA…»"],
  ["Google API key", `AIza${tail(35)}`, "«redacted:AIza…»"],
  ["Stripe live secret", `sk_live_${tail(24)}`, "«redacted:sk_live_…»"],
  ["Stripe restricted", `rk_live_${tail(24)}`, "«redacted:rk_live_…»"],
  ["Tavily key", `tvly-dev-${tail(32)}`, "«redacted:tvly-…»"],
  ["Firecrawl key", `fc-${tail(32, "0123456789abcdef")}`, "«redacted:fc-…»"],
  ["Hugging Face token", `hf_${tail(34)}`, "«redacted:hf_…»"],
  ["npm token", `npm_${tail(36)}`, "«redacted:npm_…»"],
  ["PyPI token", `pypi-AgEIcHlwaS5vcmc${tail(60)}`, "«redacted:pypi-…»"],
  ["GitLab PAT", `glpat-${tail(20)}`, "«redacted:glpat-…»"],
  ["JWT", `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.${tail(43)}`, "«redacted:jwt»"],
];

describe("redactSecrets: vendor key formats", () => {
  for (const [name, secret, marker] of secrets) {
    it(`masks a ${name} on its own and inside text`, () => {
      assert.equal(redactSecrets(secret), marker);
      const out = redactSecrets(`client = Client(key="${secret}")  # ${name}`);
      assert.ok(!out.includes(secret), out);
      assert.ok(out.includes("«redacted"), out);
    });
  }
});

describe("redactSecrets: contexts", () => {
  it("masks Authorization headers but keeps the scheme", () => {
    assert.equal(redactSecrets("Authorization: Bearer abc.def-123456"), "Authorization: Bearer «redacted»");
    assert.equal(redactSecrets("proxy-authorization: Basic dXNlcjpwYXNz"), "proxy-authorization: Basic «redacted»");
    assert.equal(redactSecrets(`headers: {"Authorization": "Token 9f8e7d6c5b4a"}`), `headers: {"Authorization": "Token «redacted»"}`);
  });
  it("masks Exa-style UUID keys only in a secret context", () => {
    const uuid = "1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9";
    assert.equal(redactSecrets(`EXA_API_KEY=${uuid}`), "EXA_API_KEY=«redacted»");
    assert.equal(redactSecrets(`x-api-key: ${uuid}`), "x-api-key: «redacted»");
    assert.equal(redactSecrets(`request_id = "${uuid}"`), `request_id = "${uuid}"`);
  });
  it("masks the password of URL credentials, keeps the user and host", () => {
    assert.equal(redactSecrets("postgres://admin:s3cr3t@db.internal:5432/app"), "postgres://admin:«redacted»@db.internal:5432/app");
    assert.equal(redactSecrets("https://user:p%40ss@example.com/x"), "https://user:«redacted»@example.com/x");
    assert.equal(redactSecrets("see https://example.com:8080/path"), "see https://example.com:8080/path");
  });
  it("masks PEM private keys, also when the window cut the BEGIN or END line", () => {
    const body = "MIIEowIBAAKCAQEA7Vx\nQ2hJb3NpZGVyaW5nIHRo\n";
    const full = `-----BEGIN RSA PRIVATE KEY-----\n${body}-----END RSA PRIVATE KEY-----`;
    // One marker per body line: the output keeps the lines of the input (gutters are added after).
    assert.equal(redactSecrets(full), "-----BEGIN RSA PRIVATE KEY-----\n«redacted:private-key»\n«redacted:private-key»\n-----END RSA PRIVATE KEY-----");
    assert.ok(!redactSecrets(`-----BEGIN OPENSSH PRIVATE KEY-----\n${body}`).includes("MIIEow"));
    assert.ok(!redactSecrets(`b3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n${"A".repeat(40)}\n-----END OPENSSH PRIVATE KEY-----`).includes("b3Blbn"));
    const cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
    assert.equal(redactSecrets(cert), cert);
  });
  it("masks KEY=value assignments whose key names a secret, in many syntaxes", () => {
    const cases: Array<[string, string]> = [
      ["PASSWORD=hunter2", "PASSWORD=«redacted»"],
      ["export GITHUB_TOKEN=abc123", "export GITHUB_TOKEN=«redacted»"],
      ['DB_PASSWORD="correct horse"', 'DB_PASSWORD="«redacted»"'],
      ["client_secret: s3cr3tvalue", "client_secret: «redacted»"],
      ['{"api_key": "abc123def"}', '{"api_key": "«redacted»"}'],
      ["apiKey = 'k-123'", "apiKey = '«redacted»'"],
      ["SECRET_KEY := \"x9\"", 'SECRET_KEY := "«redacted»"'],
      ["aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key = «redacted»"],
    ];
    for (const [input, expected] of cases) assert.equal(redactSecrets(input), expected, input);
  });
});

describe("redactSecrets: ordinary code is left alone", () => {
  const untouched = [
    "api_key = api_key",
    "MAX_TOKENS=100",
    "KEYBOARD=us",
    "MONKEY=banana",
    "TOKENIZER=bpe",
    "token: string",
    "password = self.password",
    "const apiKey = process.env.API_KEY;",
    "token = os.environ['TOKEN']",
    "if (token == other) {}",
    "PASSWORD=",
    "API_KEY=${API_KEY}",
    "API_KEY=<your-key-here>",
    "SECRET_NAME=prod-db",
    "TOKEN_LIMIT=5",
    "PASSWORD_FILE=/run/secrets/db",
    "task-sk-abcdefghijklmnopqrstuvwxyz12",
    "risk-assessment-abcdefghijklmnopqrstuvwxyz",
    "the sk- prefix marks OpenAI keys",
    "const skipList = ['a']",
    "function authenticate(user, password) { return check(password); }",
  ];
  for (const text of untouched) {
    it(`keeps ${JSON.stringify(text)}`, () => assert.equal(redactSecrets(text), text));
  }
  it("is idempotent (markers are never re-masked or mangled)", () => {
    const once = redactSecrets(`TOKEN=abc123\nkey: ${secrets[0]![1]}`);
    assert.equal(redactSecrets(once), once);
  });
});

describe("redaction markers", () => {
  it("are recognised, and only in marker form", () => {
    assert.equal(redactionMarker("sk-…"), "«redacted:sk-…»");
    assert.ok(containsRedactionMarker("A=«redacted»"));
    assert.ok(containsRedactionMarker(redactSecrets(`x ${secrets[3]![1]}`)));
    assert.ok(!containsRedactionMarker("the word redacted is fine"));
    assert.ok(!containsRedactionMarker("«quoted»"));
  });
  it("isSecretKeyName is word-bounded", () => {
    assert.ok(isSecretKeyName("OPENAI_API_KEY"));
    assert.ok(isSecretKeyName("dbPassword"));
    assert.ok(!isSecretKeyName("KEYBOARD_LAYOUT"));
    assert.ok(!isSecretKeyName("MAX_TOKENS"));
    assert.ok(!isSecretKeyName("PRIMARY_KEY"));
  });
});

describe("redactSecrets: formats an earlier pattern set missed", () => {
  const jwt2 = `eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.`;
  const cases: Array<[string, string, string]> = [
    ["token-only URL credentials", `git remote add origin https://${tail(40)}@github.com/acme/app.git`, tail(40)],
    ["ssh token user", `ssh://${tail(32)}@git.example.com/repo.git`, tail(32)],
    ["empty-user URL password", "redis://:Xy7pass-word9@cache:6379/0", "Xy7pass-word9"],
    ["Slack webhook URL", `https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEFGH2/${tail(24)}`, tail(24)],
    ["lowercase aws_secret_access_key", `aws_secret_access_key = ${tail(40)}`, tail(40)],
    ["_PASS", "SMTP_PASS=Summer2026!", "Summer2026!"],
    ["_PW", "LDAP_BIND_PW=Gx9-secret", "Gx9-secret"],
    ["_PWD", "MYSQL_PWD=Gx9-secret", "Gx9-secret"],
    ["_KEY without API", `ENCRYPTION_KEY=${tail(32)}`, tail(32)],
    ["key_material", `key_material: "${tail(44)}"`, tail(44)],
    ["bearer JSON field", `{"bearer": "${tail(40)}"}`, tail(40)],
    ["Bearer <jwt> without a header", `sent Bearer ${jwt2}${tail(20)} upstream`, tail(20)],
    ["two-part JWT", `token ${jwt2}`, "eyJzdWIiOiJhZG1pbiJ9"],
    ["PHP define", "define('DB_PASSWORD', 'wp-Gx9-secret');", "wp-Gx9-secret"],
    ["XML password", "<password>Gx9-secret</password>", "Gx9-secret"],
    ["mysql -p", "mysql -u root -pGx9secret shop", "Gx9secret"],
    ["curl -u", "curl -u admin:Gx9secret https://ci.example.com", "Gx9secret"],
    ["PGPASSWORD", "PGPASSWORD=Gx9secret psql -h db", "Gx9secret"],
    ["Telegram bot token", `bot 1234567890:AA${tail(33)}`, tail(33)],
    ["GitLab deploy token", `gldt-${tail(20)}`, tail(20)],
    ["GitLab runner token", `glrt-t1_${tail(27)}.01.abcdefghi`, tail(27)],
    ["age secret key", `AGE-SECRET-KEY-1${"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".repeat(2).slice(0, 58)}`, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"],
    ["Fireworks key", `fw_${tail(24)}`, tail(24)],
    ["fal key", `FAL=1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9:${tail(32, "0123456789abcdef")}`, tail(32, "0123456789abcdef")],
    ["Perplexity key", `pplx-${tail(48)}`, tail(48)],
    ["zero-width space", `ghp_${tail(10)}\u200b${tail(26)}`, tail(26)],
    ["ESC sequence", `\x1b[1mghp_${tail(12)}\x1b[0m${tail(24)}`, tail(24)],
    ["line break", `ghp_${tail(20)}\n${tail(16)}`, tail(16)],
  ];
  for (const [name, text, secret] of cases) {
    it(`masks ${name}`, () => {
      const out = redactSecrets(text);
      assert.ok(!out.includes(secret), out);
      assert.equal(out.split("\n").length, text.split("\n").length);
    });
  }
  it("keeps benign config that an earlier pattern set masked", () => {
    for (const text of ["runtime.token=local", '{"token": "CPU"}', "token: ${{ secrets.X }}", "password_min_length = 12"]) {
      assert.equal(redactSecrets(text), text);
    }
    assert.equal(redactSecrets("password=Gx9secret&username=bob"), "password=«redacted»&username=bob");
  });
});
