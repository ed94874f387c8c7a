// Redaction at the field's level (issue 23 item 8): the generated field corpus, the context shapes,
// the vendor families an earlier rule set missed, and placeholders kept.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { redactSecrets } from "../src/guards/redact.js";
import { buildCorpus, CORPUS_PATH, corpusText } from "../scripts/gen-redact-corpus.js";
import { leaks } from "./fixtures/redaction-corpus/index.js";
import { loadFieldCorpus, scoreField } from "./fixtures/redactFieldCorpus.js";

const corpus = loadFieldCorpus();
const result = scoreField((t) => redactSecrets(t), corpus);

/** A fake token of `n` characters from a fixed, non-sequential alphabet walk. */
function tail(n: number, alphabet = "Qm7Zr2Kx9Wp4Ld8Vb3Ny6Hc5Tg1Js0Fa"): string {
  let s = "";
  for (let i = 0; s.length < n; i++) s += alphabet[(i * 7 + 3) % alphabet.length];
  return s;
}
const hex = (n: number) => tail(n, "3f9a0c7e1b5d82f46a9c0e3b7d15f28e");

describe("field corpus", () => {
  it("is the generator's output and big enough (≥ 1,000 secrets, ≥ 150 formats, ≥ 15 shapes, ≥ 500 benign)", () => {
    assert.equal(readFileSync(CORPUS_PATH, "utf8"), corpusText(buildCorpus()), "run scripts/gen-redact-corpus.ts");
    assert.ok(result.secrets >= 1000, `${result.secrets} secrets`);
    assert.ok(result.formats >= 150, `${result.formats} formats`);
    assert.ok(result.shapes >= 15, `${result.shapes} shapes`);
    assert.ok(result.benign >= 500, `${result.benign} benign`);
  });
  it("recall is at least 99%", () => {
    const list = result.misses.map((m) => `  ${m.format}/${m.shape}: ${JSON.stringify(m.text).slice(0, 160)}`).join("\n");
    assert.ok(result.recall >= 0.99, `recall ${(result.recall * 100).toFixed(1)}%, missed:\n${list}`);
  });
  it("false positives are at most 1%", () => {
    const list = result.falsePositives.map((f) => `  ${f.kind}: ${JSON.stringify(f.text)} → ${JSON.stringify(f.output)}`).join("\n");
    assert.ok(result.fpRate <= 0.01, `false positives ${(result.fpRate * 100).toFixed(1)}%:\n${list}`);
  });
  it("keeps every line count", () => {
    for (const s of corpus.secrets) assert.equal(redactSecrets(s.text).split("\n").length, s.text.split("\n").length, s.format);
  });
});

describe("context shapes", () => {
  const v = `Zr2${tail(26)}`;
  const cases: Array<[string, string]> = [
    ["Java System.setProperty", `System.setProperty("db.password", "${v}");`],
    ["Kubernetes name/value across lines", `        - name: DB_PASSWORD\n          value: "${v}"`],
    ["Postman header object", `{"key": "X-Api-Key", "value": "${v}", "type": "text"}`],
    ["JSON name/value object", `{"name": "Authorization-Token", "value": "${v}"}`],
    ["Go Header.Set", `req.Header.Set("X-Api-Key", "${v}")`],
    ["os.environ.setdefault", `os.environ.setdefault("SECRET_KEY", "${v}")`],
    ["positional Client(…)", `client = StripeClient("${v}")`],
    ["multi-line XML element", `<apiKey>\n    ${v}\n</apiKey>`],
    ["PHP .=", `$apiKey .= "${v}";`],
    ["Makefile ::=", `API_TOKEN ::= ${v}`],
    ["Go var with a type", `var apiKey string = "${v}"`],
    ["TypeScript typed const", `const apiKey: string = "${v}";`],
  ];
  for (const [name, text] of cases) {
    it(`masks ${name}`, () => {
      const out = redactSecrets(text);
      assert.ok(!leaks(out, v), `${JSON.stringify(text)} → ${JSON.stringify(out)}`);
      assert.equal(out.split("\n").length, text.split("\n").length);
    });
  }
  it("keeps the same shapes with ordinary values", () => {
    for (const text of [
      `System.setProperty("java.awt.headless", "true");`,
      `        - name: LOG_LEVEL\n          value: "debug"`,
      `{"key": "Content-Type", "value": "application/json", "type": "text"}`,
      `req.Header.Set("Accept", "application/vnd.github+json")`,
      `os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")`,
      `client = HttpClient("https://api.example.com")`,
      `<timeout>\n    30000\n</timeout>`,
      `$output .= "<li>";`,
      `CFLAGS ::= -O2 -Wall`,
      `var apiVersion string = "2023-10-16"`,
    ]) {
      assert.equal(redactSecrets(text), text);
    }
  });
});

describe("vendor families from the gitleaks rule set", () => {
  const tokens: Array<[string, string]> = [
    ["SendGrid", `SG.${tail(22)}.${tail(43)}`],
    ["Shopify", `shpss_${hex(32)}`],
    ["GitHub server token", `ghs_${tail(36)}`],
    ["Vault batch token", `hvb.${tail(140)}`],
    ["Google API key", `AIza${tail(35)}`],
    ["fal", `1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9:${hex(32)}`],
    ["GitLab feed token", `glft-${tail(20)}`],
    ["age secret key", `AGE-SECRET-KEY-1${tail(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")}`],
    ["Fireworks", `fw_${tail(24)}`],
    ["Telegram bot token", `7234567891:AA${tail(33)}`],
    ["Twitter bearer token", `AAAAAAAAAAAAAAAAAAAAA${tail(80)}`],
    ["Square", `EAAA${tail(60)}`],
    ["DigitalOcean", `dop_v1_${hex(64)}`],
    ["New Relic", `NRAK-${tail(27).toUpperCase()}`],
    ["Netlify", `nfp_${tail(36)}`],
    ["Atlassian", `ATATT3${tail(180)}=${hex(8).toUpperCase()}`],
    ["Bedrock", `ABSK${tail(120)}`],
    ["Alibaba", `LTAI${tail(20)}`],
  ];
  for (const [name, token] of tokens) {
    it(`masks a ${name} token under a neutral key`, () => {
      const text = `value = "${token}"`;
      const out = redactSecrets(text);
      assert.ok(!leaks(out, token), `${name}: ${out}`);
    });
  }
});

describe("placeholders and templates are kept", () => {
  const kept = [
    "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "AWS_ACCESS_KEY_ID=AKIAXXXXXXXXXXXXXXXX",
    "API_KEY=00000000000000000000000000000000",
    "API_KEY=1234567890abcdef1234567890abcdef",
    'STRIPE_SECRET_KEY="sk_live_xxxxxxxxxxxxxxxxxxxxxxxx"',
    "curl -u $1:$2 https://api.example.com",
    "curl -u {USER}:{PASS} https://api.example.com",
    "printf 'token=%s\\n' \"$TOKEN\"",
    ': "${API_TOKEN:?API_TOKEN is required}"',
    "SECRET_KEY=${SECRET_KEY:-}",
    "mongodb://localhost:27017/db",
    "DATABASE_URL=postgres://localhost:5432/app_dev",
    'password = "changeme"',
  ];
  for (const text of kept) it(`keeps ${JSON.stringify(text)}`, () => assert.equal(redactSecrets(text), text));
});

describe("bounded on hostile text", () => {
  it("finishes on long runs of every shape's literal (no timing assertion: a ReDoS would not end)", () => {
    const parts = [
      '("a", "'.repeat(3000),
      "name: x\nvalue: ".repeat(3000),
      "<a>\n".repeat(3000),
      "var x string = ".repeat(3000),
      `${"x".repeat(90)}Client("`.repeat(300),
      "ghp_".repeat(5000),
      "password = ".repeat(3000),
    ];
    for (const text of parts) {
      const out = redactSecrets(text);
      assert.equal(out.split("\n").length, text.split("\n").length);
    }
  });
});
