// The redaction corpus (tests/fixtures/redaction-corpus): recall and false positives of redactSecrets.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findSecrets, redactSecrets, secretValues } from "../src/guards/redact.js";
import { leaks, loadCorpus, score } from "./fixtures/redaction-corpus/index.js";

const corpus = loadCorpus();
const result = score((t, o) => redactSecrets(t, o), corpus);

describe("redaction corpus", () => {
  it("is big and varied enough to mean something", () => {
    assert.ok(result.secrets >= 300, `${result.secrets} secrets`);
    assert.ok(result.formats >= 40, `${result.formats} formats`);
    assert.ok(result.benign >= 300, `${result.benign} benign lines`);
  });
  it("recall is at least 99%", () => {
    const list = result.misses.map((m) => `  ${m.format}: ${JSON.stringify(m.text).slice(0, 160)}`).join("\n");
    assert.ok(result.recall >= 0.99, `recall ${(result.recall * 100).toFixed(1)}%, missed:\n${list}`);
  });
  it("false positives are at most 1%", () => {
    const list = result.falsePositives.map((f) => `  ${JSON.stringify(f.line)} → ${JSON.stringify(f.output)}`).join("\n");
    assert.ok(result.fpRate <= 0.01, `false positives ${(result.fpRate * 100).toFixed(1)}%:\n${list}`);
  });
  it("every secret case keeps its line count and its value is among secretValues", () => {
    for (const c of corpus.secrets) {
      const opts = c.startsMidFile ? { startsMidFile: true } : {};
      const out = redactSecrets(c.text, opts);
      assert.equal(out.split("\n").length, c.text.split("\n").length, c.format);
      // Value-aware masking needs the value itself (tokens split by invisible characters are found folded).
      if (!/split/.test(c.format)) {
        const values = secretValues(c.text, opts);
        assert.ok(values.some((v) => v.includes(c.secret) || c.secret.includes(v)), `${c.format}: ${JSON.stringify(values)}`);
      }
    }
  });
  it("the scorer itself catches a leak (the secret or 12 of its characters)", () => {
    assert.ok(leaks("x sk-abcdefghijklmnopq y", "sk-abcdefghijklmnopq"));
    assert.ok(leaks("prefix bcdefghijklmno", "sk-abcdefghijklmnopq"));
    assert.ok(!leaks("«redacted:sk-…»", "sk-abcdefghijklmnopq"));
    assert.equal(findSecrets("").length, 0);
  });
});
