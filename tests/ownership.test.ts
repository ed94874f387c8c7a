// Process-wide resources belong to the object that made them: the workbench's HTML conversion
// workers are its own, and its close() stops them.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import type { StructuredTool } from "@langchain/core/tools";
import { createWorkbench } from "../src/workbench.js";
import { HtmlConversionPool, sharedHtmlConversionPool } from "../src/web/htmlWorkerPool.js";
import { fakePublicLookup } from "./helpers/fakeVendors.js";
import { startSiteServer, type SiteServer } from "./helpers/siteServer.js";

let root = "";
let site: SiteServer;
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-own-"));
  site = await startSiteServer();
});
after(async () => {
  await site.close();
  await rm(root, { recursive: true, force: true });
});

test("the workbench's fetch backend converts HTML in a pool of its own, stopped by wb.close()", async () => {
  const used = new Set<HtmlConversionPool>();
  const closed = new Set<HtmlConversionPool>();
  const { convert, close } = HtmlConversionPool.prototype;
  HtmlConversionPool.prototype.convert = function (this: HtmlConversionPool, ...args: Parameters<typeof convert>) {
    used.add(this);
    return convert.apply(this, args);
  };
  HtmlConversionPool.prototype.close = function (this: HtmlConversionPool) {
    closed.add(this);
    return close.apply(this);
  };
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    const wb = createWorkbench({
      rootDir: root,
      webTools: { env: {}, urlSafety: { lookup: fakePublicLookup, allowHosts: ["127.0.0.1"] }, policy: { respectRobots: "off" }, summarizer: false },
    });
    const extract = wb.tools.find((t) => t.name === "web_extract") as StructuredTool;
    const out = JSON.parse((await extract.invoke({ urls: [site.url("/article")] })) as string);
    assert.equal(out.results[0].error, null, "the page was converted");
    assert.equal(used.size, 1, "one pool converted the page");
    const [pool] = used;
    assert.notEqual(pool, sharedHtmlConversionPool(), "not the process-wide pool");
    await wb.close();
    assert.ok(closed.has(pool!), "wb.close() stopped the workbench's own pool");
  } finally {
    HtmlConversionPool.prototype.convert = convert;
    HtmlConversionPool.prototype.close = close;
    console.warn = warn;
  }
});
