// Website-policy egress: robots.txt checks contact the target origin, so they happen only when this
// process fetches the page (the keyless fetch backend) unless the operator asks for them with a
// vendor too; robots.txt goes through the same guarded client and URL-safety options as the rest.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import type { StructuredTool } from "@langchain/core/tools";
import { WebsitePolicy } from "../src/guards/policy.js";
import { createRobotsFetcher } from "../src/web/robots.js";
import { createWebTools, type WebToolsOptions } from "../tools/webTools.js";
import { FakeVendors, fakePublicLookup, fakeVendorEnv, useFakeVendors } from "./helpers/fakeVendors.js";
import { startSiteServer, type SiteServer } from "./helpers/siteServer.js";

let fake: FakeVendors;
let site: SiteServer;
useFakeVendors((f) => (fake = f));
before(async () => {
  site = await startSiteServer();
});
after(async () => {
  await site.close();
});
beforeEach(() => {
  site.requests.length = 0;
});

const robotsFetches = () => site.paths().filter((p) => p === "/robots.txt").length;
const urlSafety = { lookup: fakePublicLookup, allowHosts: ["127.0.0.1"] };

function extractTool(extra: Partial<WebToolsOptions>): StructuredTool {
  const tools = createWebTools({ urlSafety, summarizer: false, backends: { tavily: { retry: { attempts: 1 } } }, ...extra });
  return tools.find((t) => t.name === "web_extract")!;
}

async function extract(t: StructuredTool, url: string): Promise<any> {
  return JSON.parse((await t.invoke({ urls: [url] })) as string);
}

describe("robots.txt and vendor backends", () => {
  test("a vendor backend fetches the page: no request reaches the target site by default", async () => {
    const tool = extractTool({ env: fakeVendorEnv(fake, ["tavily"]), extractBackend: "tavily" });
    const out = await extract(tool, site.url("/private/page"));
    assert.equal(out.backend, "tavily", "the vendor answered");
    assert.equal(out.results[0].error, null, "the page came back");
    assert.equal(out.results[0].warning, undefined, "no robots.txt note on a vendor result");
    assert.deepEqual(site.paths(), [], "nothing was sent to the target origin");
  });

  test("robotsForVendors: true checks robots.txt for vendor backends too", async () => {
    const tool = extractTool({
      env: fakeVendorEnv(fake, ["tavily"]),
      extractBackend: "tavily",
      policy: { respectRobots: "enforce", robotsForVendors: true },
    });
    const out = await extract(tool, site.url("/private/page"));
    assert.equal(robotsFetches(), 1, "robots.txt was fetched from the target origin");
    assert.match(out.results[0].error ?? "", /blocked by website policy/, "the robots.txt rule applied");
    assert.equal(fake.requestsFor("tavily", "/extract").length, 0, "the vendor was never asked for a disallowed URL");
  });

  test("the keyless fetch backend checks robots.txt by default", async () => {
    const tool = extractTool({ env: {}, policy: { respectRobots: "enforce" } });
    const out = await extract(tool, site.url("/private/page"));
    assert.equal(out.backend, "fetch", "keyless backend chosen");
    assert.equal(robotsFetches(), 1, "robots.txt fetched once");
    assert.match(out.results[0].error ?? "", /blocked by website policy/, "the robots.txt rule applied");
    assert.equal(site.paths().includes("/private/page"), false, "the disallowed page was not fetched");
  });
});

describe("robots.txt fetches use the web tools' own client settings", () => {
  test("the tools' URL-safety options apply to robots.txt: a refused origin is never contacted", async () => {
    const tool = extractTool({ env: {}, urlSafety: { lookup: fakePublicLookup } });
    const out = await extract(tool, site.url("/article"));
    assert.match(out.results[0].error ?? "", /URL refused/, "loopback refused without allowHosts");
    assert.deepEqual(site.paths(), [], "neither robots.txt nor the page was requested");
  });

  test("the fetcher sends the workbench user agent and the configured timeout applies", async () => {
    const fetchRobots = createRobotsFetcher({ urlSafety, userAgent: "ExampleBot/1.0" });
    const answer = await fetchRobots(site.url("/robots.txt"));
    assert.equal(answer.status, 200, "robots.txt answered");
    assert.match(answer.text, /Disallow: \/private/, "the body is returned as text");
    assert.equal(site.requests.at(-1)?.headers["user-agent"], "ExampleBot/1.0", "the configured user agent was sent");
  });

  test("an operator's own fetcher (e.g. through their proxy) is used for every robots.txt", async () => {
    const asked: string[] = [];
    const policy = new WebsitePolicy({
      respectRobots: "enforce",
      fetchRobots: async (url) => {
        asked.push(url);
        return { status: 200, text: "User-agent: *\nDisallow: /\n" };
      },
    });
    const decision = await policy.check("https://docs.example.com/page");
    assert.deepEqual(asked, ["https://docs.example.com/robots.txt"], "the given fetcher was asked");
    assert.equal(decision.allowed, false, "its answer was applied");
  });

  test("a policy that checks robots.txt without a fetcher fails at construction", () => {
    assert.throws(() => new WebsitePolicy({ respectRobots: "advise" }), /fetchRobots is required/);
    assert.doesNotThrow(() => new WebsitePolicy({ respectRobots: "off" }), "no fetcher needed when robots.txt is off");
  });
});
