// One options path: `createWorkbench` checks each options object once (counted on the
// parseOptions channel), builds one ThreadEnvironments for all its parts and validates the
// environment a bounded number of times; createFileTools hands every file tool the same resolved
// options (so `allowHardLinks` reaches search_files too).
import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { link, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { StructuredTool } from "@langchain/core/tools";
import { LocalEnvironment } from "../src/environment/localEnvironment.js";
import { THREAD_ENVIRONMENTS_CHANNEL } from "../src/environment/threadEnvironment.js";
import { OPTIONS_PARSE_CHANNEL } from "../src/options.js";
import { createWorkbench, type WorkbenchOptions } from "../src/workbench.js";
import { createFileTools } from "../tools/fileTools.js";
import { createFileManagerMiddleware } from "../middleware/fileManager.js";
import { renderDirectoryTree } from "../src/tree.js";
import { makeAgent, text, treeMessages } from "./helpers/agentHarness.js";

let root = "";
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "options-once-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** What building with `options` costs: parseOptions calls by label, ThreadEnvironments made, environment validations. */
async function countBuild(options: (environment: LocalEnvironment) => WorkbenchOptions) {
  const labels: string[] = [];
  let environments = 0;
  let validations = 0;
  // Every validation of an Environment reads its `exec` (isEnvironmentOption); nothing else does while building.
  const env = new Proxy(new LocalEnvironment(), {
    get(target, key, receiver) {
      if (key === "exec") validations++;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  const onParse = (message: unknown) => void labels.push((message as { label: string }).label);
  const onEnvironments = () => void environments++;
  subscribe(OPTIONS_PARSE_CHANNEL, onParse);
  subscribe(THREAD_ENVIRONMENTS_CHANNEL, onEnvironments);
  let wb: ReturnType<typeof createWorkbench> | undefined;
  try {
    wb = createWorkbench(options(env));
  } finally {
    unsubscribe(OPTIONS_PARSE_CHANNEL, onParse);
    unsubscribe(THREAD_ENVIRONMENTS_CHANNEL, onEnvironments);
  }
  const counted = { labels, environments, validations, tools: wb.tools.map((t) => t.name) };
  await wb.close();
  return counted;
}

const perLabel = (labels: string[]) => labels.reduce<Record<string, number>>((m, l) => ({ ...m, [l]: (m[l] ?? 0) + 1 }), {});

describe("createWorkbench checks its options once", () => {
  test("every part on: one parse per options object, one ThreadEnvironments, the environment validated by the workbench only", async () => {
    const got = await countBuild((environment) => ({
      rootDir: root,
      environment,
      enableShell: true,
      fileManager: { timeTravel: false, tree: { maxEntries: 50 } },
      fileTools: { maxReadChars: 50_000, search: { engine: "js" } },
      basicTools: { shell: { defaultTimeoutSeconds: 5 } },
      webTools: { env: {}, searchBackend: false },
    }));
    console.log(`parses ${got.labels.length} ${JSON.stringify(perLabel(got.labels))}; ThreadEnvironments ${got.environments}; environment validations ${got.validations}`);
    assert.deepEqual(got.tools, ["read_file", "write_file", "patch", "search_files", "get_current_time", "run_command", "web_extract"]);
    assert.deepEqual(
      perLabel(got.labels),
      {
        "Invalid createWorkbench options": 1,
        "Invalid FileManager options": 1,
        "Invalid file tool options": 1,
        "Invalid createBasicTools options": 1,
        "Invalid run_command options": 1,
        "Invalid createWebTools options": 1,
      },
      "each options object the caller wrote is checked by exactly one parse",
    );
    assert.equal(got.environments, 1, "one ThreadEnvironments for every part");
    // createWorkbench's schema, then the ThreadEnvironments' own guard; no part checks it again.
    assert.equal(got.validations, 2, "the environment is validated by the workbench only");
  });

  test("defaults: the same, with the parts' options left out", async () => {
    const got = await countBuild(() => ({ rootDir: root, webTools: { env: {}, searchBackend: false } }));
    assert.equal(got.environments, 1);
    assert.ok(got.labels.every((l, i) => got.labels.indexOf(l) === i), `no label twice: ${got.labels.join(", ")}`);
  });
});

describe("createFileTools: every tool gets the same options", () => {
  test("the four tools: one parse, one ThreadEnvironments", () => {
    const labels: string[] = [];
    let environments = 0;
    const onParse = (message: unknown) => void labels.push((message as { label: string }).label);
    const onEnvironments = () => void environments++;
    subscribe(OPTIONS_PARSE_CHANNEL, onParse);
    subscribe(THREAD_ENVIRONMENTS_CHANNEL, onEnvironments);
    try {
      createFileTools({ rootDir: root, search: { engine: "js" } });
    } finally {
      unsubscribe(OPTIONS_PARSE_CHANNEL, onParse);
      unsubscribe(THREAD_ENVIRONMENTS_CHANNEL, onEnvironments);
    }
    assert.deepEqual(labels, ["Invalid file tool options"]);
    assert.equal(environments, 1);
  });

  test("allowHardLinks: read_file and search_files both see a hard-linked file (both refuse it without)", async () => {
    const ws = path.join(root, "hl");
    await mkdir(ws, { recursive: true });
    await writeFile(path.join(ws, "a.txt"), "needle one\n");
    await link(path.join(ws, "a.txt"), path.join(ws, "b.txt"));
    const cfg = { configurable: { thread_id: "hl" } };
    for (const allowHardLinks of [true, false]) {
      const [read, , , search] = createFileTools({ rootDir: root, allowHardLinks, search: { engine: "js" } }) as unknown as StructuredTool[];
      const readAnswer = String(await read!.invoke({ path: "b.txt" } as never, cfg));
      const found = JSON.parse(String(await search!.invoke({ pattern: "needle", output_mode: "files_only" } as never, cfg))) as { files?: string[] };
      const files = (found.files ?? []).map((f) => path.basename(f)).sort();
      if (allowHardLinks) {
        assert.match(readAnswer, /needle one/, "read_file reads the hard-linked file");
        assert.deepEqual(files, ["a.txt", "b.txt"], "search_files finds both names");
      } else {
        assert.doesNotMatch(readAnswer, /needle one/, "read_file refuses a hard-linked file by default");
        assert.deepEqual(files, [], "search_files skips both names by default");
      }
    }
  });
});

describe("the tree budget has one rule", () => {
  test("the FileManager's tree accepts what renderDirectoryTree accepts (Infinity: no cap) and refuses what it refuses, in the same words", async () => {
    const ws = path.join(root, "tree-t");
    await mkdir(ws, { recursive: true });
    for (let i = 0; i < 250; i++) await writeFile(path.join(ws, `f${String(i).padStart(3, "0")}.txt`), "x");
    const budget = { maxEntries: Infinity, maxChars: Infinity };
    const fm = createFileManagerMiddleware({ rootDir: root, timeTravel: false, tree: budget });
    try {
      const { agent } = await makeAgent({ script: ["done"], tools: [], middleware: [fm] });
      const out = await agent.invoke({ messages: [{ role: "user", content: "hi" }] }, { configurable: { thread_id: "tree-t" } });
      const shown = text(treeMessages(out.messages)[0]);
      assert.ok(shown.includes("f249.txt") && !/more entr/.test(shown), "every entry listed, none summarised");
      assert.ok(shown.includes((await renderDirectoryTree(ws, { ...budget, rootLabel: "." })).split("\n").at(-1)!), "the same listing as renderDirectoryTree's");
    } finally {
      await fm.close();
    }
    for (const bad of [{ maxChars: 100 }, { maxEntries: -1 }, { maxDepth: 1.5 }]) {
      const fromTree = await renderDirectoryTree(ws, bad).then(
        () => "",
        (err: Error) => err.message.replace(/^Invalid tree options: /, ""),
      );
      assert.ok(fromTree, `renderDirectoryTree refuses ${JSON.stringify(bad)}`);
      assert.throws(
        () => createFileManagerMiddleware({ rootDir: root, tree: bad }),
        (err: Error) => err.message.replace(/^Invalid FileManager options: /, "").replace("→ at tree.", "→ at ") === fromTree,
        `the FileManager refuses ${JSON.stringify(bad)} in the same words`,
      );
    }
  });
});
