// Process-wide resources belong to the object that made them: the workbench's HTML conversion
// workers and read_file's line-count caches are its own, and its close() releases them.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import type { StructuredTool } from "@langchain/core/tools";
import { createWorkbench } from "../src/workbench.js";
import { createFileTools } from "../tools/fileTools.js";
import { FileToolCaches } from "../tools/lineCounts.js";
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

test("read_file's line counts and indexes belong to the workbench: wb.close() waits for background counts and empties them", async () => {
  const seen = new Set<FileToolCaches>();
  const { remember } = FileToolCaches.prototype;
  FileToolCaches.prototype.remember = function (this: FileToolCaches, ...args: Parameters<typeof remember>) {
    seen.add(this);
    return remember.apply(this, args);
  };
  try {
    const wb = createWorkbench({ rootDir: root, webTools: false, basicTools: false, fileTools: { countLinesInlineMaxBytes: 1 } });
    await mkdir(path.join(root, "own"), { recursive: true });
    await writeFile(path.join(root, "own", "log.txt"), Array.from({ length: 2000 }, (_, i) => `line ${i + 1}`).join("\n") + "\n");
    const read = wb.tools.find((t) => t.name === "read_file") as StructuredTool;
    const cfg = { configurable: { thread_id: "own" } };
    const first = JSON.parse((await read.invoke({ path: "log.txt", limit: 5 }, cfg)) as string);
    assert.equal(first.total_lines, null, "the count runs in the background");
    await wb.close();
    assert.equal(seen.size, 1, "one cache object counted the file");
    const [caches] = seen;
    assert.equal(caches!.size, 0, "close() waited for the count and emptied the caches");
  } finally {
    FileToolCaches.prototype.remember = remember;
  }
});

test("tools given the same FileToolCaches share counts; close() releases them", async () => {
  await mkdir(path.join(root, "share"), { recursive: true });
  await writeFile(path.join(root, "share", "a.txt"), "x\ny\nz\n");
  const caches = new FileToolCaches();
  const cfg = { configurable: { thread_id: "share" } };
  const [readA] = createFileTools({ rootDir: root, caches, countLinesInlineMaxBytes: 1 }) as StructuredTool[];
  const [readB] = createFileTools({ rootDir: root, caches, countLinesInlineMaxBytes: 1 }) as StructuredTool[];
  assert.equal(JSON.parse((await readA!.invoke({ path: "a.txt", limit: 1 }, cfg)) as string).total_lines, null, "first read: count in background");
  await caches.settle();
  assert.equal(JSON.parse((await readB!.invoke({ path: "a.txt", limit: 1 }, cfg)) as string).total_lines, 3, "the other tool set sees the shared count");
  assert.ok(caches.size > 0, "the caches hold the count");
  await caches.close();
  assert.equal(caches.size, 0, "close() released it");
  assert.equal(JSON.parse((await readB!.invoke({ path: "a.txt", limit: 1 }, cfg)) as string).total_lines, null, "after close() the count is gone");
  await caches.close();
});
