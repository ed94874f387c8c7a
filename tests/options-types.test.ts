// Every public options type is inferred from the zod schema its factory parses (an interface
// extending the schema's input, or an alias of it), so the two cannot drift; the second test
// fails for a public `*Options` type that is hand-written and not listed below with the reason.
// The type-level rows are checked by `npx tsc`.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";
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
import type { commandEnvironmentSchema, CommandEnvironmentOptions, sandboxOptionsSchema, SandboxEnvironmentOptions } from "../src/environment/sandboxEnvironment.js";
import type { commandSandboxSchema, CommandSandboxOptions } from "../src/environment/runShellCommand.js";
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

// Every options type inferred from a schema, by name, next to that schema (the second test
// checks that every public one is here). Parts whose values are checked
// deeper down (a part's options inside createWorkbench, `shell` inside createBasicTools, the web
// vendors' settings) are typed in the schema with `checkedAs`/`strictKeys`; the rows below them
// pin those types to the parts' own options.
const everyOptionsType = {
  WorkbenchOptions: true satisfies Agree<WorkbenchOptions, typeof workbenchOptionsSchema>,
  FileManagerOptions: true satisfies Agree<FileManagerOptions, typeof fileManagerOptionsSchema>,
  FileToolsOptions: true satisfies Agree<FileToolsOptions, typeof fileToolsOptionsSchema>,
  FileToolOptions: true satisfies Agree<FileToolOptions, typeof fileToolOptionsSchema>,
  SearchFilesToolOptions: true satisfies Agree<SearchFilesToolOptions, typeof searchFilesToolOptionsSchema>,
  RunCommandToolOptions: true satisfies Agree<RunCommandToolOptions, typeof runCommandOptionsSchema>,
  CommandSandboxOptions: true satisfies Agree<CommandSandboxOptions, z.ZodObject<typeof commandSandboxSchema>>,
  BasicToolsOptions: true satisfies Agree<BasicToolsOptions, typeof basicToolsOptionsSchema>,
  WebToolsOptions: true satisfies Agree<WebToolsOptions, typeof webToolsOptionsSchema>,
  TimeTravelOptions: true satisfies Agree<TimeTravelOptions, typeof timeTravelOptionsSchema>,
  FileGuardsOptions: true satisfies Agree<FileGuardsOptions, typeof fileGuardsOptionsSchema>,
  EvictLargeResultsOptions: true satisfies Agree<EvictLargeResultsOptions, typeof evictLargeResultsOptionsSchema>,
  ProtectedPathsOptions: true satisfies Agree<ProtectedPathsOptions, typeof protectedPathsOptionsSchema>,
  WorkbenchBackendOptions: true satisfies Agree<WorkbenchBackendOptions, typeof workbenchBackendOptionsSchema>,
  WorkbenchExecuteOptions: true satisfies Agree<WorkbenchExecuteOptions, typeof workbenchExecuteOptionsSchema>,
  DockerSandboxOptions: true satisfies Agree<DockerSandboxOptions, typeof dockerSandboxOptionsSchema>,
  DeepAgentsSandboxOptions: true satisfies Agree<DeepAgentsSandboxOptions, typeof deepAgentsSandboxOptionsSchema>,
  SandboxEnvironmentOptions: true satisfies Agree<SandboxEnvironmentOptions, typeof sandboxOptionsSchema>,
  CommandEnvironmentOptions: true satisfies Agree<CommandEnvironmentOptions, typeof commandEnvironmentSchema>,
};
const nestedParts = {
  fileManagerTree: true satisfies Mutual<FileManagerOptions["tree"], Input<typeof fileManagerOptionsSchema>["tree"]>,
  fileToolsSearch: true satisfies Agree<NonNullable<FileToolsOptions["search"]>, typeof searchSettingsSchema>,
  basicToolsShell: true satisfies Mutual<NonNullable<BasicToolsOptions["shell"]>, Omit<RunCommandToolOptions, "rootDir" | "environment">>,
  workbenchFileManager: true satisfies Mutual<NonNullable<WorkbenchOptions["fileManager"]>, Omit<FileManagerOptions, "rootDir">>,
  workbenchFileTools: true satisfies Mutual<Exclude<NonNullable<WorkbenchOptions["fileTools"]>, false>, Omit<FileToolsOptions, "rootDir">>,
  workbenchBasicTools: true satisfies Mutual<Exclude<NonNullable<WorkbenchOptions["basicTools"]>, false>, Omit<BasicToolsOptions, "rootDir" | "enableShell">>,
  workbenchWebTools: true satisfies Mutual<Exclude<NonNullable<WorkbenchOptions["webTools"]>, false>, WebToolsOptions>,
};

test("option types and schemas agree (checked by tsc), and a bad option is one TypeError listing every problem", async () => {
  assert.equal(fileToolsAgree && fileGuardsAgree && treeAgrees, true, "type-level agreement");
  assert.ok(Object.values(everyOptionsType).every((agrees) => agrees === true), "every public options type agrees with its schema");
  assert.ok(Object.values(nestedParts).every((agrees) => agrees === true), "the parts' options inside other options are the parts' own types");
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

// Public `*Options` types still written by hand, each with why it has no schema to be inferred
// from. A name here that becomes inferred fails the test too, so the list stays true.
const HAND_WRITTEN: Record<string, string> = {
  // Options of one call (not an options object a factory keeps): checked where they are used.
  WorkbenchArtifactOptions: "per call of workbench.artifacts(); since/maxBytes are read by listArtifacts",
  ExecOptions: "per call of Environment.exec; checked by checkExecOptions on every call",
  RunShellCommandOptions: "per call of runShellCommand",
  WebSearchOptions: "per call of WebBackend.search",
  WebExtractOptions: "per call of WebBackend.extract",
  SafeFetchOptions: "per call of safeFetch",
  RedactOptions: "per call of redactSecrets",
  ReplaceOptions: "per call of the patch engine's replace",
  HtmlToMarkdownOptions: "per call of htmlToMarkdown",
  SummarizeOptions: "per call of summarizeContent; createWebTools checks its keys (strictKeys) for `summary`",
  // Nested in webToolsOptionsSchema, which checks their keys (strictKeys<T> typed as the interface);
  // their values are checked by the backend or guard that reads them. src/web/, src/guards/ own them.
  UrlSafetyOptions: "keys checked by webToolsOptionsSchema (urlSafety); values by checkUrlSafety",
  WebPolicyOptions: "keys checked by webToolsOptionsSchema (policy); values by createWebsitePolicy",
  WebsitePolicyOptions: "the base of WebPolicyOptions; values checked by WebsitePolicy",
  VendorOptions: "keys checked by webToolsOptionsSchema (backends.*); values by the vendor backends",
  TavilyBackendOptions: "alias of VendorOptions",
  ExaBackendOptions: "alias of VendorOptions",
  FirecrawlBackendOptions: "keys checked by webToolsOptionsSchema (backends.firecrawl)",
  ParallelBackendOptions: "keys checked by webToolsOptionsSchema (backends.parallel)",
  FetchBackendOptions: "keys checked by webToolsOptionsSchema (backends.fetch)",
  WebDebugOptions: "keys checked by webToolsOptionsSchema (debug)",
  // Constructor options that no schema parses today: giving them one would make keys that are
  // ignored now throw (a behaviour change for their callers), so it is a change of its own.
  SshEnvironmentOptions: "SshEnvironment checks host-key options itself; no strict schema yet",
  DockerEnvironmentOptions: "DockerEnvironment (usually built by DockerSandbox, whose options are inferred); no schema yet",
  LocalEnvironmentOptions: "LocalEnvironment constructor; no schema yet",
  LocalShellEnvironmentOptions: "LocalShellEnvironment constructor; no schema yet",
  ShellFileOperationsOptions: "ShellFileOperations constructor; no schema yet",
  SftpFileOperationsOptions: "SftpFileOperations constructor; no schema yet",
  ThreadEnvironmentOptions: "ThreadEnvironments, built from options the factories have parsed already",
  HtmlConversionPoolOptions: "HtmlConversionPool constructor; no schema yet",
  RobotsFetcherOptions: "robots.txt fetcher; no schema yet",
  TrackerOptions: "change trackers (src/changes/): the FileManager's `tracker` option is checked by its schema; no schema of their own yet",
  PollingTrackerOptions: "as TrackerOptions",
  WatchingTrackerOptions: "as TrackerOptions",
  CreateChangeTrackerOptions: "as TrackerOptions",
  TrackerPoolOptions: "as TrackerOptions",
  // Has a schema, but the interface is kept in src/tree.ts (not converted yet); the first test pins the two.
  TreeOptions: "interface beside treeOptionsSchema in src/tree.ts; agreement checked by treeAgrees above",
};

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ENTRY_POINTS = ["src/index.ts", "middleware/index.ts", "tools/index.ts", "src/environment/index.ts", "src/web/index.ts", "src/deepagents/index.ts"];

const parsed = new Map<string, ts.SourceFile>();
function sourceOf(file: string): ts.SourceFile {
  let sf = parsed.get(file);
  if (!sf) parsed.set(file, (sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true)));
  return sf;
}

/** `z.input<typeof s>` / `z.infer<…>` / `z.output<…>` of a schema (or of `z.ZodObject<typeof shape>`). */
function isSchemaType(name: ts.EntityName | ts.Expression, args: readonly ts.TypeNode[] | undefined): boolean {
  const text = name.getText();
  if (!/^z\.(input|infer|output)$/.test(text) || args?.length !== 1) return false;
  const [arg] = args;
  return ts.isTypeQueryNode(arg!) || (ts.isTypeReferenceNode(arg!) && arg.typeName.getText() === "z.ZodObject" && arg.typeArguments?.length === 1 && ts.isTypeQueryNode(arg.typeArguments[0]!));
}

/** "inferred" when `decl` is an alias of a schema's type or an interface adding nothing to one; else "hand-written". */
function classify(decl: ts.InterfaceDeclaration | ts.TypeAliasDeclaration): "inferred" | "hand-written" {
  if (ts.isTypeAliasDeclaration(decl)) return ts.isTypeReferenceNode(decl.type) && isSchemaType(decl.type.typeName, decl.type.typeArguments) ? "inferred" : "hand-written";
  const bases = decl.heritageClauses?.flatMap((h) => h.types) ?? [];
  return decl.members.length === 0 && bases.length === 1 && isSchemaType(bases[0]!.expression, bases[0]!.typeArguments) ? "inferred" : "hand-written";
}

/** The declaration of `name` as `file` exports it, following `export … from` re-exports. */
function declarationOf(file: string, name: string, seen = new Set<string>()): ts.InterfaceDeclaration | ts.TypeAliasDeclaration | undefined {
  if (seen.has(`${file}#${name}`)) return undefined;
  seen.add(`${file}#${name}`);
  const sf = sourceOf(file);
  for (const st of sf.statements) {
    if ((ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) && st.name.text === name) return st;
  }
  for (const st of sf.statements) {
    if (!ts.isExportDeclaration(st) || !st.moduleSpecifier || !st.exportClause || !ts.isNamedExports(st.exportClause)) continue;
    for (const el of st.exportClause.elements) {
      if (el.name.text !== name) continue;
      const target = path.resolve(path.dirname(file), (st.moduleSpecifier as ts.StringLiteral).text.replace(/\.js$/, ".ts"));
      return declarationOf(target, (el.propertyName ?? el.name).text, seen);
    }
  }
  return undefined;
}

/** Every `*Options` type the entry points export, with its declaration. */
function publicOptionsTypes(): Map<string, ts.InterfaceDeclaration | ts.TypeAliasDeclaration | undefined> {
  const found = new Map<string, ts.InterfaceDeclaration | ts.TypeAliasDeclaration | undefined>();
  for (const entry of ENTRY_POINTS) {
    const file = path.join(repo, entry);
    for (const st of sourceOf(file).statements) {
      if (!ts.isExportDeclaration(st) || !st.exportClause || !ts.isNamedExports(st.exportClause)) continue;
      for (const el of st.exportClause.elements) if (/Options$/.test(el.name.text) && !found.has(el.name.text)) found.set(el.name.text, declarationOf(file, el.name.text));
    }
    for (const st of sourceOf(file).statements) {
      if ((ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) && /Options$/.test(st.name.text) && st.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) found.set(st.name.text, st);
    }
  }
  return found;
}

test("every public options type is inferred from its schema, or listed with why not", () => {
  const types = publicOptionsTypes();
  assert.ok(types.size > 20, `found only ${types.size} public options types`);
  const unresolved = [...types].filter(([, decl]) => decl === undefined).map(([name]) => name);
  assert.deepEqual(unresolved, [], "public options types whose declaration this test cannot find");
  const inferred = [...types].filter(([, decl]) => classify(decl!) === "inferred").map(([name]) => name);
  const handWritten = [...types].filter(([, decl]) => classify(decl!) === "hand-written").map(([name]) => name);
  assert.deepEqual(
    handWritten.filter((name) => !(name in HAND_WRITTEN)),
    [],
    "public *Options types written by hand: infer them from their schema (`interface X extends z.input<typeof xSchema> {}`), or list them in HAND_WRITTEN with the reason",
  );
  assert.deepEqual(
    Object.keys(HAND_WRITTEN).filter((name) => !handWritten.includes(name)),
    [],
    "HAND_WRITTEN names a type that is inferred now (or no longer public): remove it from the list",
  );
  assert.deepEqual(
    inferred.filter((name) => !(name in everyOptionsType)),
    [],
    "public options types inferred from a schema but missing from everyOptionsType (add the row naming the schema)",
  );
});
