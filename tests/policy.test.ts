import assert from "node:assert/strict";
import { mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { WebsitePolicy } from "../src/guards/policy.js";
import { createWebsitePolicy } from "../src/web/robots.js";
import { startSiteServer, type SiteServer } from "./helpers/siteServer.js";

let site: SiteServer;
let dir: string;
const urlSafety = { allowPrivate: false, allowHosts: ["127.0.0.1"] };

before(async () => {
  site = await startSiteServer();
  dir = await mkdtemp(path.join(tmpdir(), "policy-test-"));
});
after(async () => {
  await site.close();
  await rm(dir, { recursive: true, force: true });
});

const robotsFetches = () => site.paths().filter((p) => p === "/robots.txt").length;

describe("WebsitePolicy: blocklist", () => {
  const policy = new WebsitePolicy({
    blocklist: { domains: ["Example.com", "*.example.org", "www.tracker.net", "https://evil.io/some/path", "ads-*.cdn.net"] },
    respectRobots: "off",
  });

  it("blocks the exact host, with www. and ports ignored", async () => {
    for (const url of ["https://example.com/a", "http://www.example.com:8080/b", "https://EXAMPLE.COM./"]) {
      const decision = await policy.check(url);
      assert.equal(decision.allowed, false, url);
      assert.deepEqual(decision.blocked_by_policy, { host: "example.com", rule: "example.com", source: "options" });
    }
    assert.equal((await policy.check("https://docs.example.com/")).allowed, true, "a plain rule does not cover subdomains");
    assert.equal((await policy.check("https://notexample.com/")).allowed, true);
  });

  it("a *.domain rule covers the domain and every subdomain", async () => {
    for (const host of ["example.org", "a.example.org", "deep.b.example.org", "www.example.org"]) {
      const decision = await policy.check(`https://${host}/`);
      assert.equal(decision.allowed, false, host);
      assert.equal(decision.blocked_by_policy?.rule, "*.example.org");
    }
    assert.equal((await policy.check("https://example.org.evil.com/")).allowed, true);
  });

  it("normalises rules written with www., a scheme or a path, and supports inner globs", async () => {
    assert.equal((await policy.check("https://tracker.net/")).allowed, false);
    assert.equal((await policy.check("http://evil.io/other")).blocked_by_policy?.rule, "https://evil.io/some/path");
    assert.equal((await policy.check("http://ads-eu.cdn.net/x.js")).allowed, false);
    assert.equal((await policy.check("http://static.cdn.net/x.js")).allowed, true);
  });

  it("reads rule files with comments, reports file:line, and reloads them when their mtime changes", async () => {
    const file = path.join(dir, "blocklist.txt");
    await writeFile(file, "# social\n\nfacebook.com  # tracking\n*.doubleclick.net\n");
    const filePolicy = new WebsitePolicy({ blocklist: { files: [file] }, respectRobots: "off" });
    assert.deepEqual((await filePolicy.check("https://www.facebook.com/x")).blocked_by_policy, {
      host: "facebook.com",
      rule: "facebook.com",
      source: `${file}:3`,
    });
    assert.equal((await filePolicy.check("https://ad.doubleclick.net/")).blocked_by_policy?.source, `${file}:4`);
    assert.equal((await filePolicy.check("https://social.example/")).allowed, true);

    await writeFile(file, "social.example\n");
    const later = new Date(Date.now() + 5_000);
    await utimes(file, later, later);
    assert.equal((await filePolicy.check("https://social.example/")).allowed, false);
    assert.equal((await filePolicy.check("https://facebook.com/")).allowed, true);
  });

  it("warns, without blocking everything, when a rule file is missing", async () => {
    const missing = new WebsitePolicy({ blocklist: { files: [path.join(dir, "nope.txt")] }, respectRobots: "off" });
    const decision = await missing.check("https://example.com/");
    assert.equal(decision.allowed, true);
    assert.match(decision.warning ?? "", /nope\.txt could not be read \(ENOENT\)/);
  });

  it("validates its options", () => {
    assert.throws(() => new WebsitePolicy({ respectRobots: "always" as never }), /respectRobots/);
    assert.throws(() => new WebsitePolicy({ robotsTtlMs: -1 }), RangeError);
  });
});

describe("WebsitePolicy: robots.txt", () => {
  beforeEach(() => site.setRobots("User-agent: *\nDisallow: /private\n"));

  it("is advisory by default: allowed, with a warning naming the rule", async () => {
    const policy = createWebsitePolicy({ urlSafety });
    const decision = await policy.check(site.url("/private/page"));
    assert.equal(decision.allowed, true);
    assert.match(decision.warning ?? "", /robots\.txt at .*\/robots\.txt disallows this URL for langgraph-workbench \(Disallow: \/private \(robots\.txt line 2\)\)/);
    assert.deepEqual(await policy.check(site.url("/article")), { allowed: true });
  });

  it("blocks disallowed paths in enforce mode", async () => {
    const policy = createWebsitePolicy({ urlSafety, respectRobots: "enforce" });
    assert.deepEqual((await policy.check(site.url("/private/page"))).blocked_by_policy, {
      host: "127.0.0.1",
      rule: "Disallow: /private (robots.txt line 2)",
      source: site.url("/robots.txt"),
    });
    assert.equal((await policy.check(site.url("/article"))).allowed, true);
  });

  it("matches the group of its own user agent", async () => {
    site.setRobots("User-agent: langgraph-workbench\nDisallow: /\n\nUser-agent: *\nAllow: /\n");
    const policy = createWebsitePolicy({ urlSafety, respectRobots: "enforce" });
    assert.equal((await policy.check(site.url("/article"))).allowed, false);
    const other = createWebsitePolicy({ urlSafety, respectRobots: "enforce", userAgent: "OtherBot/2.0" });
    assert.equal((await other.check(site.url("/article"))).allowed, true);
  });

  it("fetches robots.txt once per origin while the TTL lasts, and again after it", async () => {
    const cached = createWebsitePolicy({ urlSafety });
    const start = robotsFetches();
    await Promise.all([cached.check(site.url("/a")), cached.check(site.url("/b")), cached.check(site.url("/private/c"))]);
    await cached.check(site.url("/d"));
    assert.equal(robotsFetches() - start, 1);

    const expiring = createWebsitePolicy({ urlSafety, robotsTtlMs: 0 });
    await expiring.check(site.url("/a"));
    await expiring.check(site.url("/b"));
    assert.equal(robotsFetches() - start, 3);
  });

  it("sends the workbench user agent for robots.txt", async () => {
    await createWebsitePolicy({ urlSafety, robotsTtlMs: 0 }).check(site.url("/a"));
    const request = site.requests.findLast((r) => r.path === "/robots.txt");
    assert.match(String(request?.headers["user-agent"]), /^langgraph-workbench\//);
  });

  it("applies a robots.txt redirected to another origin to the origin that was asked", async () => {
    const mirror = await startSiteServer(); // serves "Disallow: /private"
    site.route("/robots.txt", (_req, res) => {
      res.writeHead(301, { location: mirror.url("/robots.txt") });
      res.end();
    });
    try {
      const policy = createWebsitePolicy({ urlSafety, respectRobots: "enforce" });
      assert.equal((await policy.check(site.url("/private/x"))).allowed, false);
      assert.equal((await policy.check(site.url("/public"))).allowed, true);
    } finally {
      site.route("/robots.txt", undefined);
      await mirror.close();
    }
  });

  it("treats a missing robots.txt as allow-all, silently", async () => {
    site.setRobots(undefined);
    assert.deepEqual(await createWebsitePolicy({ urlSafety, respectRobots: "enforce" }).check(site.url("/private/x")), {
      allowed: true,
    });
  });

  it("allows with a note when robots.txt fails (server error)", async () => {
    site.setRobots(503);
    const decision = await createWebsitePolicy({ urlSafety, respectRobots: "enforce" }).check(site.url("/private/x"));
    assert.equal(decision.allowed, true);
    assert.match(decision.warning ?? "", /answered HTTP 503; treated as allowed/);
  });

  it("retries a failed robots.txt after a minute, long before the TTL", async (t) => {
    t.mock.timers.enable({ apis: ["Date"], now: Date.now() });
    site.setRobots(503);
    const policy = createWebsitePolicy({ urlSafety, respectRobots: "enforce", robotsTtlMs: 3_600_000 });
    assert.equal((await policy.check(site.url("/private/x"))).allowed, true);
    site.setRobots("User-agent: *\nDisallow: /private\n");
    assert.equal((await policy.check(site.url("/private/x"))).allowed, true, "still the cached failure");
    t.mock.timers.tick(61_000);
    assert.equal((await policy.check(site.url("/private/x"))).allowed, false);
  });

  it("fetches robots.txt through the SSRF guard: a private origin is not contacted", async () => {
    const start = robotsFetches();
    const decision = await createWebsitePolicy({ urlSafety: { allowPrivate: false } }).check(site.url("/private/x"));
    assert.equal(decision.allowed, true);
    assert.match(decision.warning ?? "", /could not be fetched \(blocked by URL safety: .*loopback/);
    assert.equal(robotsFetches(), start);
  });

  it("does not fetch robots.txt when off", async () => {
    const start = robotsFetches();
    assert.deepEqual(await createWebsitePolicy({ urlSafety, respectRobots: "off" }).check(site.url("/private/x")), {
      allowed: true,
    });
    assert.equal(robotsFetches(), start);
  });

  it("applies the blocklist before robots.txt", async () => {
    const start = robotsFetches();
    const policy = createWebsitePolicy({ urlSafety, blocklist: { domains: ["127.0.0.1"] }, respectRobots: "enforce" });
    assert.equal((await policy.check(site.url("/article"))).blocked_by_policy?.source, "options");
    assert.equal(robotsFetches(), start);
  });
});
