/**
 * The redaction speed-ups must not change a single match: rules run only near their literals
 * (src/guards/redact/anchored.ts) give exactly `text.matchAll(re)`, and the one-pass literal scan
 * (src/guards/redact/literals.ts) gives exactly the positions a naive search per literal gives.
 * Checked against those references on generated texts full of near misses.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { XML_TAG_LEAD, anchoredMatches } from "../src/guards/redact/anchored.js";
import { forEachLiteral, literalSet } from "../src/guards/redact/literals.js";
import { TextScan, registerAnchorLiterals } from "../src/guards/redact/scan.js";
import { redactSecrets } from "../src/guards/redact.js";
import { VENDOR_PATTERNS } from "../src/guards/secretPatterns.js";
import { splicedTexts } from "./helpers/splicedTexts.js";

/** Deterministic texts spliced from fragments (tests/helpers/splicedTexts.ts). */
const texts = (fragments: string[], count: number) => splicedTexts(fragments, count, { seed: 7, maxPieces: 12, upperEvery: 4 });

const spans = (ms: Iterable<RegExpMatchArray>) => [...ms].map((m) => [m.index, m[0]]);

describe("anchored rules", () => {
  registerAnchorLiterals(["tok", "ab"]);

  it("give exactly the matches of a global scan, for needles up to `back` characters into the match", () => {
    // Matches start 0–3 characters before "tok"; greedy parts make them overlap the next needle.
    const re = /(?:x-|pre)?tok[a-z0-9]*(?:=\w+)?/gi;
    const frags = ["tok", "TOK", "x-", "pre", "pretok", "x-tok", "tokab", "=v", "=", " ", "\n", "t", "o", "k", "to", "ok", "a1", "ab", "«", "\u200b"];
    for (const t of texts(frags, 3000)) {
      const got = spans(anchoredMatches(t, new TextScan(t), re, { needles: ["tok"], back: 3 }));
      re.lastIndex = 0;
      assert.deepEqual(got, spans(t.matchAll(re)), JSON.stringify(t));
    }
  });

  it("honour look-behinds and empty-length edge cases like the global scan", () => {
    const re = /(?<![a-z])ab(?:c|)/g;
    for (const t of texts(["ab", "aab", "abc", "zab", " ", "abab", "c", "-"], 2000)) {
      const got = spans(anchoredMatches(t, new TextScan(t), re, { needles: ["ab"], back: 0 }));
      re.lastIndex = 0;
      assert.deepEqual(got, spans(t.matchAll(re)), JSON.stringify(t));
    }
  });

  it("run from a shared lead regex (XML tags) at its first or last character", () => {
    const open = /<((?:[a-z_:][\w.:-]*)?token[\w.:-]*)>([^<\n]{1,40})<\/\1>/gi;
    const after = />(?<=<([A-Za-z_][\w.:-]{0,80})>)\s*\n?([^<\s]+)\s*<\//g;
    const frags = ["<token>", "<my:token>", "<a<token>", "<>", "</token>", "v4lue", "\n", " ", "<Token>", "<x.token-id>", "</x.token-id>", ">", "<"];
    for (const t of texts(frags, 3000)) {
      const scan = new TextScan(t);
      open.lastIndex = after.lastIndex = 0;
      assert.deepEqual(spans(anchoredMatches(t, scan, open, { lead: XML_TAG_LEAD, at: "start" })), spans(t.matchAll(open)), JSON.stringify(t));
      assert.deepEqual(spans(anchoredMatches(t, scan, after, { lead: XML_TAG_LEAD, at: "last" })), spans(t.matchAll(after)), JSON.stringify(t));
    }
  });

  it("run a vendor pattern from its lead (Discord bot tokens: led by the capital, tried at the first dot)", () => {
    const discord = VENDOR_PATTERNS.find((p) => p.label === "discord-bot")!;
    const token = "MTE5ODc2NTQzMjEwOTg3NjU0.GaBcDe.abcdefghijklmnopqrstuvwxyz0123";
    const frags = [token, token.slice(0, 40), token.slice(1), "NzE5ODc2NTQzMjEwOTg3NjU0OTg", ".GaBcDe", "M", "x", "0123456789", ".", " ", " ", "\n", "-"];
    let found = 0;
    for (const t of texts(frags, 4000)) {
      found += [...t.matchAll(discord.re)].length;
      discord.re.lastIndex = 0;
      assert.deepEqual(spans(anchoredMatches(t, new TextScan(t), discord.re, { lead: discord.lead!, at: "last" })), spans(t.matchAll(discord.re)), JSON.stringify(t));
    }
    assert.ok(found > 100, `only ${found} tokens in the generated texts`);
    assert.ok(!redactSecrets(`DISCORD_BOT=${token}`).includes("abcdefghijklmnopqrstuvwxyz0123"));
  });

  it("refuse a literal the scan cannot find, when it is registered", () => {
    assert.throws(() => registerAnchorLiterals(["x"]), /2\+ ASCII/);
    assert.throws(() => registerAnchorLiterals(["«x"]), /2\+ ASCII/);
  });
});

describe("the literal scan", () => {
  it("finds every occurrence of every literal (overlaps, folded case, 2-character literals, the text's end)", () => {
    const literals = ["sk", "sk-", "sk-ant-", "s.", "gh", "ghp_", "q~", "akia", "api-", "pat", "patch", "xoxb-", "hooks.slack.com/"];
    const set = literalSet(literals.map((l) => [l, l] as [string, string]), true);
    const frags = [...literals, "SK-", "Sk", "s", "k", "-", "g", "h", "_", "\u0130", "\u212a", "ſ", " ", "\n", "a", "p"];
    for (const t of texts(frags, 3000)) {
      const got: string[] = [];
      forEachLiteral(t, set, 0, t.length, (at, l, v) => {
        assert.equal(l, v);
        got.push(`${at}:${l}`);
      });
      const lower = t.replace(/[A-Z]/g, (c) => c.toLowerCase());
      const want: Array<[number, string]> = [];
      for (const l of literals) for (let p = lower.indexOf(l); p !== -1; p = lower.indexOf(l, p + 1)) want.push([p, l]);
      want.sort((a, b) => a[0] - b[0] || b[1].length - a[1].length);
      assert.deepEqual(got, want.map(([p, l]) => `${p}:${l}`), JSON.stringify(t));
    }
  });
});

describe("redaction through the anchored rules", () => {
  it("still masks what each moved rule finds", () => {
    const cases: Array<[string, string]> = [
      ["Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2", "Zm9vYmFyYmF6cXV4MTIzNDU2"],
      ["x-shopify-access-token: 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", "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"],
      ["ocp-apim-subscription-key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"],
      ["mysqldump -u root -pS3cr3tPassw0rd db", "S3cr3tPassw0rd"],
      ["deploy --client-secret 'Qw3rTy9UiOp2AsDf' --yes", "Qw3rTy9UiOp2AsDf"],
      ["curl --user admin:Xk29vLq7PzW3 https://h", "Xk29vLq7PzW3"],
      ["machine example.org login bob password Pq8zX2wL9kV4", "Pq8zX2wL9kV4"],
      ["https://h/x?X-Amz-Signature=8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d", "8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d"],
      ["<db:password>Hu7#kLp2Vq9z</db:password>", "Hu7#kLp2Vq9z"],
      ["<apiToken>\n  Zk4Lp9Qw2Xv7Bn3M\n</apiToken>", "Zk4Lp9Qw2Xv7Bn3M"],
      ['System.setProperty("db.password", "Wq8Lz3Pk9Vx2")', "Wq8Lz3Pk9Vx2"],
      ['client = OpenAIClient("Rk7Tz2Wq9Lp4Xv8Nm3Bc")', "Rk7Tz2Wq9Lp4Xv8Nm3Bc"],
      ['var apiKey string = "Tq9Wz4Lk7Px2Vb8N"', "Tq9Wz4Lk7Px2Vb8N"],
      ["https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX1a2b", "B00000000/XXXXXXXXXXXXXXXXXXXXXXXX1a2b"],
    ];
    for (const [text, secret] of cases) assert.ok(!redactSecrets(text).includes(secret), `${text} → ${redactSecrets(text)}`);
  });
});
