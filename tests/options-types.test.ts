// Each factory's options have one zod schema; where the public type stays an interface (for its
// documentation), the interface and the schema's input type must agree both ways — `npx tsc`
// fails on a field added to one and not the other.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { z } from "zod";
import { fileToolOptionsSchema, resolveFileToolOptions, type FileToolOptions } from "../tools/fileToolSupport.js";
import { renderDirectoryTree, treeOptionsSchema, type TreeOptions } from "../src/tree.js";
import { fileGuardsMiddleware, fileGuardsOptionsSchema, type FileGuardsOptions } from "../middleware/fileGuards.js";

type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Keys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : false;

const fileToolsAgree: Mutual<FileToolOptions, z.input<typeof fileToolOptionsSchema>> & Keys<FileToolOptions, z.input<typeof fileToolOptionsSchema>> = true;
const fileGuardsAgree: Mutual<FileGuardsOptions, z.input<typeof fileGuardsOptionsSchema>> = true;
const treeAgrees: Mutual<TreeOptions, z.input<typeof treeOptionsSchema>> & Keys<TreeOptions, z.input<typeof treeOptionsSchema>> = true;

test("option types and schemas agree (checked by tsc), and a bad option is one TypeError listing every problem", async () => {
  assert.equal(fileToolsAgree && fileGuardsAgree && treeAgrees, true, "type-level agreement");
  assert.throws(
    () => resolveFileToolOptions({ confine: "no" as never, maxReadChars: 0, homeDir: "rel" }),
    (err: unknown) =>
      err instanceof TypeError &&
      /^Invalid file tool options: /.test(err.message) &&
      /confine must be a boolean/.test(err.message) &&
      /maxReadChars must be a positive integer/.test(err.message) &&
      /homeDir must be an absolute path/.test(err.message),
    "all three problems in one TypeError",
  );
  assert.doesNotThrow(() => resolveFileToolOptions({ readImages: false, maxImageBytes: 0 }), "maxImageBytes is not checked when images are off");
  await assert.rejects(
    renderDirectoryTree("/", { maxChars: 10, concurrency: 0 }),
    (err: unknown) => err instanceof TypeError && /^Invalid tree options: /.test(err.message) && /maxChars must be an integer ≥ 200/.test(err.message) && /concurrency must be a positive integer/.test(err.message),
    "both tree problems in one TypeError",
  );
  assert.throws(() => fileGuardsMiddleware({ loopWarnAt: 3, loopBlockAt: 3 }), /Invalid file guards options: .*loopWarnAt and loopBlockAt/s, "the guard bounds");
});
