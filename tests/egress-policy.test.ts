// The egress policy alone (src/guards/egress.ts): the entry grammar and the allow/deny decision,
// pure functions with no DNS and no sockets.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decideEgress, parseEgressPattern, parseEgressPolicy, secretAppliesTo } from "../src/guards/egress.js";

describe("parseEgressPattern", () => {
  it("reads names, wildcards, IPs and ports", () => {
    assert.deepEqual(parseEgressPattern("Registry.NPMjs.org"), { source: "Registry.NPMjs.org", kind: "exact", host: "registry.npmjs.org" });
    assert.deepEqual(parseEgressPattern("*.github.com:443"), { source: "*.github.com:443", kind: "wildcard", host: "github.com", port: 443 });
    assert.deepEqual(parseEgressPattern("127.0.0.1:8080"), { source: "127.0.0.1:8080", kind: "ip", host: "127.0.0.1", port: 8080 });
    assert.deepEqual(parseEgressPattern("[0:0::1]:8080"), { source: "[0:0::1]:8080", kind: "ip", host: "::1", port: 8080 });
    assert.deepEqual(parseEgressPattern("::1"), { source: "::1", kind: "ip", host: "::1" });
    assert.deepEqual(parseEgressPattern("*"), { source: "*", kind: "any", host: "" });
    assert.deepEqual(parseEgressPattern("example.com:*"), { source: "example.com:*", kind: "exact", host: "example.com" });
  });

  it("refuses malformed entries with an example of a good one", () => {
    for (const bad of ["", "exa mple.com", "*github.com", "a.*.com", "example.com:0", "example.com:65536", "example.com:http", "[::1", "http://example.com", "-bad-.com"]) {
      assert.throws(() => parseEgressPattern(bad), (err: Error) => err instanceof TypeError && /expected e\.g\. "registry\.npmjs\.org"/.test(err.message), bad);
    }
  });
});

describe("decideEgress", () => {
  const policy = parseEgressPolicy(["registry.npmjs.org", "*.github.com:443", "127.0.0.1:8080", "[::1]:9000"], ["evil.github.com"]);

  it("allows what is listed, on the listed port", () => {
    assert.deepEqual(decideEgress(policy, "registry.npmjs.org", 443), { allowed: true, rule: "registry.npmjs.org", explicitAddress: false });
    assert.equal(decideEgress(policy, "REGISTRY.npmjs.org.", 80).allowed, true);
    assert.equal(decideEgress(policy, "api.github.com", 443).allowed, true);
    assert.equal(decideEgress(policy, "a.b.github.com", 443).allowed, true);
    assert.deepEqual(decideEgress(policy, "127.0.0.1", 8080), { allowed: true, rule: "127.0.0.1:8080", explicitAddress: true });
    assert.equal(decideEgress(policy, "[::1]", 9000).allowed, true);
  });

  it("refuses the rest, saying why", () => {
    const no = (host: string, port: number, reason: RegExp) => {
      const d = decideEgress(policy, host, port);
      assert.equal(d.allowed, false, `${host}:${port}`);
      if (!d.allowed) assert.match(d.reason, reason);
    };
    no("github.com", 443, /not in the sandbox's network allow-list/); // a wildcard does not cover its apex
    no("api.github.com", 80, /not in the/);
    no("registry.npmjs.org.evil.com", 443, /not in the/);
    no("evilregistry.npmjs.org", 443, /not in the/);
    no("127.0.0.1", 8081, /not in the/);
    no("127.0.0.2", 8080, /not in the/);
    no("evil.github.com", 443, /denied by the egress rule "evil\.github\.com"/);
    no("bad host", 443, /invalid host name/);
    no("registry.npmjs.org", 0, /invalid port/);
  });

  it("never lets a name rule cover an IP literal, nor an IP rule a name", () => {
    const any = parseEgressPolicy(["*", "*.com"]);
    const d = decideEgress(any, "10.0.0.1", 80);
    // `*` covers an IP, but not as an explicit address: the SSRF check still refuses private ones.
    assert.deepEqual(d, { allowed: true, rule: "*", explicitAddress: false });
    assert.equal(decideEgress(parseEgressPolicy(["*.com"]), "10.0.0.1", 80).allowed, false);
    assert.equal(decideEgress(parseEgressPolicy(["127.0.0.1"]), "localhost", 80).allowed, false);
  });

  it("deny wins over allow, also for an IP", () => {
    const p = parseEgressPolicy(["*"], ["169.254.169.254", "*.internal"]);
    assert.equal(decideEgress(p, "169.254.169.254", 80).allowed, false);
    assert.equal(decideEgress(p, "metadata.google.internal", 80).allowed, false);
    assert.equal(decideEgress(p, "example.org", 80).allowed, true);
  });
});

describe("secretAppliesTo", () => {
  it("uses the allow-list grammar", () => {
    const hosts = ["api.github.com", "*.example.com:8443"].map(parseEgressPattern);
    assert.equal(secretAppliesTo(hosts, "API.github.com", 443), true);
    assert.equal(secretAppliesTo(hosts, "x.example.com", 8443), true);
    assert.equal(secretAppliesTo(hosts, "x.example.com", 443), false);
    assert.equal(secretAppliesTo(hosts, "github.com", 443), false);
  });
});
