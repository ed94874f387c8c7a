// Each factory's options have one zod schema; where the public type stays an interface (for its
// documentation), the interface and the schema's input type must agree both ways — `npx tsc`
// fails on a field added to one and not the other.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { z } from "zod";
import { fileToolOptionsSchema, resolveFileToolOptions, type FileToolOptions } from "../tools/fileToolSupport.js";
import { renderDirectoryTree, treeOptionsSchema, type TreeOptions } from "../src/tree.js";
import { fileGuardsMiddleware, fileGuardsOptionsSchema, type FileGuardsOptions } from "../middleware/fileGuards.js";
import type { evictLargeResultsOptionsSchema, EvictLargeResultsOptions } from "../middleware/evictLargeResults.js";
import type { fileManagerOptionsSchema, FileManagerOptions } from "../middleware/fileManager.js";
import type { workbenchBackendOptionsSchema, WorkbenchBackendOptions, workbenchExecuteOptionsSchema, WorkbenchExecuteOptions } from "../src/deepagents/options.js";
import type { deepAgentsSandboxOptionsSchema, DeepAgentsSandboxOptions } from "../src/environment/deepagentsSandbox.js";
import type { dockerSandboxOptionsSchema, DockerSandboxOptions } from "../src/environment/dockerSandbox.js";
import type { protectedPathsOptionsSchema, ProtectedPathsOptions } from "../src/guards/protectedPaths.js";
import type { timeTravelOptionsSchema, TimeTravelOptions } from "../src/snapshots/index.js";
import type { workbenchOptionsSchema, WorkbenchOptions } from "../src/workbench.js";
import type { basicToolsOptionsSchema, BasicToolsOptions } from "../tools/basicTools.js";
import type { fileToolsOptionsSchema, FileToolsOptions } from "../tools/fileTools.js";
import type { runCommandOptionsSchema, RunCommandToolOptions } from "../tools/runCommand.js";
import type { searchFilesToolOptionsSchema, SearchFilesToolOptions, searchSettingsSchema } from "../tools/searchFiles.js";
import type { webToolsOptionsSchema, WebToolsOptions } from "../tools/webTools.js";

type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Keys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : false;

const fileToolsAgree: Mutual<FileToolOptions, z.input<typeof fileToolOptionsSchema>> & Keys<FileToolOptions, z.input<typeof fileToolOptionsSchema>> = true;
const fileGuardsAgree: Mutual<FileGuardsOptions, z.input<typeof fileGuardsOptionsSchema>> = true;
const treeAgrees: Mutual<TreeOptions, z.input<typeof treeOptionsSchema>> & Keys<TreeOptions, z.input<typeof treeOptionsSchema>> = true;

/** Both ways, and the same keys: what `A` documents is exactly what `schema` accepts. */
type Agree<A, S extends z.ZodType> = Mutual<A, z.input<S>> & Keys<A, z.input<S>>;
type Input<S extends z.ZodType> = z.input<S>;

// Every public options type next to the schema its factory parses. Where an object's values are
// checked deeper down (a part's options inside createWorkbench, `shell` inside createBasicTools,
// the web vendors' settings), the schema lists its keys only: there the keys must agree, and the
// rest of the type both ways.
const everyOptionsType = {
  fileManager: true satisfies Agree<FileManagerOptions, typeof fileManagerOptionsSchema>,
  fileManagerTree: true satisfies Mutual<FileManagerOptions["tree"], Input<typeof fileManagerOptionsSchema>["tree"]> & Keys<NonNullable<FileManagerOptions["tree"]>, NonNullable<Input<typeof fileManagerOptionsSchema>["tree"]>>,
  fileTools: true satisfies Agree<FileToolsOptions, typeof fileToolsOptionsSchema>,
  fileToolsSearch: true satisfies Agree<NonNullable<FileToolsOptions["search"]>, typeof searchSettingsSchema>,
  searchFiles: true satisfies Agree<SearchFilesToolOptions, typeof searchFilesToolOptionsSchema>,
  runCommand: true satisfies Agree<RunCommandToolOptions, typeof runCommandOptionsSchema>,
  basicTools: true satisfies Keys<BasicToolsOptions, Input<typeof basicToolsOptionsSchema>> & Mutual<Omit<BasicToolsOptions, "shell">, Omit<Input<typeof basicToolsOptionsSchema>, "shell">>,
  basicToolsShell: true satisfies Keys<NonNullable<BasicToolsOptions["shell"]>, Omit<NonNullable<Input<typeof basicToolsOptionsSchema>["shell"]>, "rootDir" | "environment">>,
  webTools: true satisfies Keys<WebToolsOptions, Input<typeof webToolsOptionsSchema>> &
    Mutual<Omit<WebToolsOptions, "backends" | "urlSafety" | "policy" | "summary" | "debug">, Omit<Input<typeof webToolsOptionsSchema>, "backends" | "urlSafety" | "policy" | "summary" | "debug">>,
  workbench: true satisfies Keys<WorkbenchOptions, Input<typeof workbenchOptionsSchema>> &
    Mutual<Pick<WorkbenchOptions, "rootDir" | "fileOps" | "environment" | "enableShell">, Pick<Input<typeof workbenchOptionsSchema>, "rootDir" | "fileOps" | "environment" | "enableShell">>,
  workbenchFileManager: true satisfies Keys<NonNullable<WorkbenchOptions["fileManager"]>, Omit<NonNullable<Input<typeof workbenchOptionsSchema>["fileManager"]>, "rootDir">>,
  workbenchFileTools: true satisfies Keys<Exclude<NonNullable<WorkbenchOptions["fileTools"]>, false>, Omit<Exclude<NonNullable<Input<typeof workbenchOptionsSchema>["fileTools"]>, false>, "rootDir">>,
  workbenchBasicTools: true satisfies Keys<Exclude<NonNullable<WorkbenchOptions["basicTools"]>, false>, Omit<Exclude<NonNullable<Input<typeof workbenchOptionsSchema>["basicTools"]>, false>, "rootDir" | "enableShell">>,
  workbenchWebTools: true satisfies Keys<Exclude<NonNullable<WorkbenchOptions["webTools"]>, false>, Exclude<NonNullable<Input<typeof workbenchOptionsSchema>["webTools"]>, false>>,
  // Types inferred from their schemas: agreement by construction, kept here so a change to hand-written fails.
  timeTravel: true satisfies Agree<TimeTravelOptions, typeof timeTravelOptionsSchema>,
  evictLargeResults: true satisfies Agree<EvictLargeResultsOptions, typeof evictLargeResultsOptionsSchema>,
  protectedPaths: true satisfies Agree<ProtectedPathsOptions, typeof protectedPathsOptionsSchema>,
  workbenchBackend: true satisfies Agree<WorkbenchBackendOptions, typeof workbenchBackendOptionsSchema>,
  workbenchExecute: true satisfies Agree<WorkbenchExecuteOptions, typeof workbenchExecuteOptionsSchema>,
  dockerSandbox: true satisfies Agree<DockerSandboxOptions, typeof dockerSandboxOptionsSchema>,
  deepAgentsSandbox: true satisfies Agree<DeepAgentsSandboxOptions, typeof deepAgentsSandboxOptionsSchema>,
};

test("option types and schemas agree (checked by tsc), and a bad option is one TypeError listing every problem", async () => {
  assert.equal(fileToolsAgree && fileGuardsAgree && treeAgrees, true, "type-level agreement");
  assert.ok(Object.values(everyOptionsType).every((agrees) => agrees === true), "every public options type agrees with its schema");
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
