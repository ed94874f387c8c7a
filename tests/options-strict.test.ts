// Honest options: an unknown key in any options object, at any level, throws when the factory is
// called (not at the first tool call), naming the key, a near spelling when there is one, and the
// keys that object accepts. The right spelling still builds.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { z } from "zod";
import { fileGuardsMiddleware } from "../middleware/fileGuards.js";
import { createFileManagerMiddleware, fileManagerOptionsSchema, type FileManagerOptions } from "../middleware/fileManager.js";
import { WorkbenchBackend } from "../src/deepagents/backend.js";
import { DockerSandbox } from "../src/environment/dockerSandbox.js";
import { commandEnvironmentFor, SandboxEnvironment } from "../src/environment/sandboxEnvironment.js";
import { renderDirectoryTree } from "../src/tree.js";
import { createWorkbench } from "../src/workbench.js";
import { basicToolsOptionsSchema, createBasicTools, type BasicToolsOptions } from "../tools/basicTools.js";
import { createFileTools, fileToolsOptionsSchema, type FileToolsOptions } from "../tools/fileTools.js";
import { createReadFileTool } from "../tools/readFile.js";
import { createRunCommandTool, runCommandOptionsSchema, type RunCommandToolOptions } from "../tools/runCommand.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";
import { createWebTools, webToolsOptionsSchema, type WebToolsOptions } from "../tools/webTools.js";

// A strict schema must know every key of its interface (else a documented option would throw):
// `npx tsc` fails when the two disagree.
type Keys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : false;
const keysAgree: [
  Keys<FileManagerOptions, z.input<typeof fileManagerOptionsSchema>>,
  Keys<BasicToolsOptions, z.input<typeof basicToolsOptionsSchema>>,
  Keys<RunCommandToolOptions, z.input<typeof runCommandOptionsSchema>>,
  Keys<WebToolsOptions, z.input<typeof webToolsOptionsSchema>>,
  Keys<FileToolsOptions, z.input<typeof fileToolsOptionsSchema>>,
] = [true, true, true, true, true];

let root = "";
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "options-strict-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Expected {
  /** The unknown key. */
  key: string;
  /** The accepted key suggested for it. */
  suggest?: string;
  /** The accepted keys listed, in order: all of them (`exact`) or some of them. */
  accepted: string[];
  exact?: boolean;
  /** Where the object is, as zod prints it (`→ at fileGuards`), for a nested one. */
  at?: string;
  /** Start of the message (the factory's label). */
  label: RegExp;
}

function check(err: unknown, want: Expected): true {
  assert.ok(err instanceof TypeError, `a TypeError, got ${String(err)}`);
  const message = err.message;
  assert.match(message, want.label, message);
  const spelled = want.suggest ? `unknown key "${want.key}" (did you mean "${want.suggest}"?). Accepted keys: ` : `unknown key "${want.key}". Accepted keys: `;
  assert.ok(message.includes(spelled), `"${spelled}" in:\n${message}`);
  const listed = message.slice(message.indexOf(spelled) + spelled.length).split("\n")[0]!.split(", ");
  if (want.exact) assert.deepEqual(listed, want.accepted, message);
  else for (const key of want.accepted) assert.ok(listed.includes(key), `${key} listed in:\n${message}`);
  if (want.at) assert.ok(message.includes(`→ at ${want.at}`), `at ${want.at} in:\n${message}`);
  return true;
}

const throwsUnknown = (build: () => unknown, want: Expected) => assert.throws(build, (err: unknown) => check(err, want));
const rejectsUnknown = (build: () => Promise<unknown>, want: Expected) => assert.rejects(build, (err: unknown) => check(err, want));

const keysOf = (schema: { shape: object }) => Object.keys(schema.shape);
const quiet = { env: {}, searchBackend: false } as const;

describe("an unknown key throws at build time, naming it and the accepted keys", () => {
  test("type-level: the strict schemas know every key of their interfaces", () => {
    assert.deepEqual(keysAgree, [true, true, true, true, true]);
  });

  test("createWorkbench: top level, a part's options, and deeper inside a part", () => {
    const label = /^Invalid createWorkbench options: /;
    throwsUnknown(() => createWorkbench({ rootDir: root, webTools: false, fileManger: {} } as never), {
      label,
      key: "fileManger",
      suggest: "fileManager",
      accepted: ["rootDir", "fileOps", "environment", "enableShell", "fileManager", "fileTools", "basicTools", "webTools"],
      exact: true,
    });
    // The example: time travel silently stayed on.
    throwsUnknown(() => createWorkbench({ rootDir: root, webTools: false, fileManager: { timetravel: false } } as never), {
      label,
      key: "timetravel",
      suggest: "timeTravel",
      accepted: keysOf(fileManagerOptionsSchema),
      exact: true,
      at: "fileManager",
    });
    throwsUnknown(() => createWorkbench({ rootDir: root, webTools: false, fileTools: { redactSecret: false } } as never), {
      label,
      key: "redactSecret",
      suggest: "redactSecrets",
      accepted: keysOf(fileToolsOptionsSchema),
      exact: true,
      at: "fileTools",
    });
    throwsUnknown(() => createWorkbench({ rootDir: root, webTools: { ...quiet, sumarizer: false } } as never), {
      label,
      key: "sumarizer",
      suggest: "summarizer",
      accepted: keysOf(webToolsOptionsSchema),
      exact: true,
      at: "webTools",
    });
    // Deeper levels are the part's: its own label names it.
    throwsUnknown(() => createWorkbench({ rootDir: root, webTools: false, basicTools: { shell: { allowDangerus: true } } } as never), {
      label: /^Invalid createBasicTools options: /,
      key: "allowDangerus",
      suggest: "allowDangerous",
      accepted: keysOf(runCommandOptionsSchema),
      exact: true,
      at: "shell",
    });
  });

  test("createFileManagerMiddleware: top level and every nested object", () => {
    const label = /^Invalid FileManager options: /;
    throwsUnknown(() => createFileManagerMiddleware({ rootDir: root, timetravel: false } as never), {
      label,
      key: "timetravel",
      suggest: "timeTravel",
      accepted: ["rootDir", "fileOps", "environment", "tree", "injectOnFirstCall", "keepOnlyLatestTree", "rewritePaths", "pathArgs", "readOnlyTools", "tracker", "fileGuards", "toolCallSteps", "timeTravel", "evictLargeResults", "imagesInToolResults", "onError"],
      exact: true,
    });
    throwsUnknown(() => createFileManagerMiddleware({ rootDir: root, tree: { maxEntrie: 10 } } as never), {
      label,
      key: "maxEntrie",
      suggest: "maxEntries",
      accepted: ["mode", "maxEntries", "maxChars", "maxDepth", "ignore"],
      exact: true,
      at: "tree",
    });
    throwsUnknown(() => createFileManagerMiddleware({ rootDir: root, tracker: { Kind: "polling" } } as never), {
      label,
      key: "Kind",
      suggest: "kind",
      accepted: ["kind", "maxLive", "idleMs", "pollIntervalMs"],
      exact: true,
      at: "tracker",
    });
    throwsUnknown(() => createFileManagerMiddleware({ rootDir: root, fileGuards: { loopWarn: 3 } } as never), {
      label,
      key: "loopWarn",
      suggest: "loopWarnAt",
      accepted: ["maxEntries", "loopWarnAt", "loopBlockAt"],
      exact: true,
      at: "fileGuards",
    });
    throwsUnknown(() => createFileManagerMiddleware({ rootDir: root, timeTravel: { retention: { maxSnapshot: 3 } } } as never), {
      label,
      key: "maxSnapshot",
      suggest: "maxSnapshots",
      accepted: ["maxSnapshots", "maxAgeMs", "maxBytes"],
      exact: true,
      at: "timeTravel.retention",
    });
    throwsUnknown(() => createFileManagerMiddleware({ rootDir: root, timeTravel: { restor: "off" } } as never), {
      label,
      key: "restor",
      suggest: "restore",
      accepted: ["restore", "ignoreNames", "exclude", "retention"],
      at: "timeTravel",
    });
  });

  test("fileGuardsMiddleware", () => {
    throwsUnknown(() => fileGuardsMiddleware({ maxentries: 3 } as never), {
      label: /^Invalid file guards options: /,
      key: "maxentries",
      suggest: "maxEntries",
      accepted: ["maxEntries", "loopWarnAt", "loopBlockAt"],
      exact: true,
    });
  });

  test("createFileTools and the single file tools: top level and `search`", () => {
    const label = /^Invalid file tool options: /;
    throwsUnknown(() => createFileTools({ rootDir: root, redactSecret: false } as never), {
      label,
      key: "redactSecret",
      suggest: "redactSecrets",
      accepted: ["rootDir", "confine", "fileOps", "environment", "maxReadChars", "redactSecrets", "allowHardLinks", "caches", "search"],
    });
    throwsUnknown(() => createFileTools({ rootDir: root, search: { timeoutMS: 1_000 } } as never), {
      label,
      key: "timeoutMS",
      suggest: "timeoutMs",
      accepted: ["engine", "ripgrepPath", "timeoutMs", "maxResults", "maxOutputBytes", "maxLineChars"],
      at: "search",
    });
    // Another part's spelling of the same option gets pointed at this one's.
    throwsUnknown(() => createReadFileTool({ rootDir: root, redact: false } as never), { label, key: "redact", suggest: "redactSecrets", accepted: ["redactSecrets"] });
    throwsUnknown(() => createSearchFilesTool({ rootDir: root, engines: "js" } as never), {
      label: /^Invalid search_files options: /,
      key: "engines",
      suggest: "engine",
      accepted: ["rootDir", "engine", "ripgrepPath", "timeoutMs"],
    });
  });

  test("createBasicTools and run_command: top level and `shell` (checked even with the shell off)", () => {
    const label = /^Invalid createBasicTools options: /;
    throwsUnknown(() => createBasicTools({ rootDir: root, enableshell: true } as never), {
      label,
      key: "enableshell",
      suggest: "enableShell",
      accepted: ["rootDir", "enableShell", "shell", "environment", "now"],
      exact: true,
    });
    throwsUnknown(() => createBasicTools({ rootDir: root, shell: { allowDangerus: true } } as never), {
      label,
      key: "allowDangerus",
      suggest: "allowDangerous",
      accepted: ["sandbox", "network", "secrets", "limits", "protectedPaths", "rootDir", "environment", "fileOps", "defaultTimeoutSeconds", "maxTimeoutSeconds", "maxOutputChars", "allowDangerous", "env"],
      exact: true,
      at: "shell",
    });
    throwsUnknown(() => createRunCommandTool({ rootDir: root, sandbox: "off", maxOutputchars: 500 } as never), {
      label: /^Invalid run_command options: /,
      key: "maxOutputchars",
      suggest: "maxOutputChars",
      accepted: keysOf(runCommandOptionsSchema),
      exact: true,
    });
  });

  test("createWebTools: top level and every nested object", () => {
    const label = /^Invalid createWebTools options: /;
    throwsUnknown(() => createWebTools({ ...quiet, sumarizer: false } as never), {
      label,
      key: "sumarizer",
      suggest: "summarizer",
      accepted: ["searchBackend", "extractBackend", "backends", "env", "urlSafety", "policy", "summarizer", "summary", "debug", "maxUrls", "maxContentChars"],
      exact: true,
    });
    throwsUnknown(() => createWebTools({ ...quiet, urlSafety: { allowPrivat: true } } as never), {
      label,
      key: "allowPrivat",
      suggest: "allowPrivate",
      accepted: ["allowPrivate", "allowHosts", "lookup"],
      exact: true,
      at: "urlSafety",
    });
    throwsUnknown(() => createWebTools({ ...quiet, backends: { tavly: { apiKey: "k" } } } as never), {
      label,
      key: "tavly",
      suggest: "tavily",
      accepted: ["firecrawl", "parallel", "tavily", "exa", "fetch"],
      exact: true,
      at: "backends",
    });
    throwsUnknown(() => createWebTools({ ...quiet, backends: { fetch: { maxbytes: 1_000 } } } as never), {
      label,
      key: "maxbytes",
      suggest: "maxBytes",
      accepted: ["maxBytes", "timeoutMs", "maxRedirects", "userAgent", "urlSafety", "policy", "concurrency", "htmlPool"],
      exact: true,
      at: "backends.fetch",
    });
    throwsUnknown(() => createWebTools({ ...quiet, backends: { exa: { retry: { attempt: 1 } } } } as never), {
      label,
      key: "attempt",
      suggest: "attempts",
      accepted: ["attempts", "baseDelayMs", "maxDelayMs"],
      exact: true,
      at: "backends.exa.retry",
    });
    throwsUnknown(() => createWebTools({ ...quiet, policy: { blocklist: { domain: ["example.com"] } } } as never), {
      label,
      key: "domain",
      suggest: "domains",
      accepted: ["domains", "files"],
      exact: true,
      at: "policy.blocklist",
    });
    throwsUnknown(() => createWebTools({ ...quiet, summary: { minchars: 10 } } as never), {
      label,
      key: "minchars",
      suggest: "minChars",
      accepted: ["minChars", "chunkChars", "maxOutputChars"],
      at: "summary",
    });
    throwsUnknown(() => createWebTools({ ...quiet, debug: { enable: true } } as never), {
      label,
      key: "enable",
      suggest: "enabled",
      accepted: ["enabled", "dir", "maxCalls"],
      exact: true,
      at: "debug",
    });
  });

  test("WorkbenchBackend: top level and `execute`", () => {
    const label = /^Invalid WorkbenchBackend options: /;
    throwsUnknown(() => new WorkbenchBackend({ rootDir: root, redactSecrets: false } as never), {
      label,
      key: "redactSecrets",
      suggest: "redact",
      accepted: ["rootDir", "threadId", "fileOps", "environment", "execute", "credentialPatterns", "redact", "maxReadChars", "skipDirs", "maxTransferBytes"],
    });
    throwsUnknown(() => new WorkbenchBackend({ rootDir: root, execute: { allowDangerus: true } } as never), {
      label,
      key: "allowDangerus",
      suggest: "allowDangerous",
      accepted: ["timeoutSeconds", "maxOutputChars", "allowDangerous", "env", "sandbox", "network", "secrets"],
      exact: true,
      at: "execute",
    });
  });

  test("the environment factories and renderDirectoryTree", async () => {
    throwsUnknown(() => new SandboxEnvironment({ workspaceDir: root, netwrk: true } as never), {
      label: /^Invalid SandboxEnvironment options: /,
      key: "netwrk",
      suggest: "network",
      accepted: ["workspaceDir", "network", "secrets", "env", "readOnlyBinds", "bwrapPath", "defaultTimeoutMs", "mountPath", "limits", "protectedPaths"],
      exact: true,
    });
    await rejectsUnknown(() => commandEnvironmentFor(root, { sandBox: "off" } as never), {
      label: /^Invalid shell sandbox options: /,
      key: "sandBox",
      suggest: "sandbox",
      accepted: ["sandbox", "network", "secrets", "env", "bwrapPath", "defaultTimeoutMs", "limits", "protectedPaths"],
      exact: true,
    });
    throwsUnknown(() => DockerSandbox({ image: "debian", rootDir: root, mounts: [{ source: root, target: "/data", readonly: true }] } as never), {
      label: /^DockerSandbox options: /,
      key: "readonly",
      suggest: "readOnly",
      accepted: ["source", "target", "readOnly"],
      exact: true,
      at: "mounts[0]",
    });
    await rejectsUnknown(() => renderDirectoryTree(root, { maxentries: 5 } as never), {
      label: /^Invalid tree options: /,
      key: "maxentries",
      suggest: "maxEntries",
      accepted: ["rootLabel", "maxEntries", "maxDepth", "maxChars", "ignore", "useGitignore", "defaultIgnores", "concurrency", "fileOps"],
      exact: true,
    });
  });

  test("several unknown keys in one object are named together; no suggestion when nothing is close", () => {
    throwsUnknown(() => createBasicTools({ rootDir: root, zzz: 1 } as never), {
      label: /^Invalid createBasicTools options: /,
      key: "zzz",
      accepted: ["rootDir", "enableShell", "shell", "environment", "now"],
      exact: true,
    });
    assert.throws(() => createBasicTools({ rootDir: root, shel: {}, zzz: 1 } as never), /unknown keys "shel" \(did you mean "shell"\?\), "zzz"\. Accepted keys: /);
  });
});

test("the right spellings, nested ones included, still build", async () => {
  const wb = createWorkbench({
    rootDir: root,
    enableShell: false,
    fileManager: { timeTravel: false, tree: { maxEntries: 10 }, tracker: { kind: "polling" }, fileGuards: { loopWarnAt: 3 } },
    fileTools: { redactSecrets: false, search: { timeoutMs: 1_000 } },
    basicTools: { shell: { allowDangerous: false, sandbox: "off" } },
    webTools: {
      ...quiet,
      summarizer: false,
      urlSafety: { allowPrivate: false },
      backends: { fetch: { maxBytes: 1_000_000 }, exa: { retry: { attempts: 1 } } },
      policy: { blocklist: { domains: ["example.com"] } },
      summary: { minChars: 10 },
      debug: { enabled: false },
    },
  });
  try {
    assert.ok(wb.tools.some((t) => t.name === "read_file"));
    // `timeTravel: false` is honoured (the typo'd `timetravel` left it on).
    await assert.rejects(wb.snapshots("t1"), /off/);
  } finally {
    await wb.close();
  }
  const fm = createFileManagerMiddleware({ rootDir: root, timeTravel: { restore: "off", retention: { maxSnapshots: 3 } } });
  await fm.close();
  assert.equal(createBasicTools({ rootDir: root, enableShell: true, shell: { allowDangerous: true, sandbox: "off" } }).length, 2);
  assert.doesNotThrow(() => new WorkbenchBackend({ rootDir: root, redact: false, execute: { allowDangerous: false, sandbox: "off" } }));
  assert.doesNotThrow(() => new WorkbenchBackend({ rootDir: root, execute: true }));
  assert.doesNotThrow(() => fileGuardsMiddleware({ maxEntries: 3 }));
  assert.equal(createFileTools({ rootDir: root, search: { engine: "js" } }).length, 4);
});
