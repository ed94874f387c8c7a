// The dependency direction of the package, checked on the import graph:
//   core (src/…) ← tools/ ← middleware/ ← src/workbench.ts, src/index.ts
// An import from a lower layer to a higher one fails this test, and so do the finer rules
// inside core (the guard layer does no I/O of its own; one module decides "local or remote").
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Layer rank: an import may only point to the same or a lower rank. */
const TOP = new Set(["src/index.ts", "src/workbench.ts"]);
function rank(file: string): number {
  if (TOP.has(file)) return 3;
  if (file.startsWith("middleware/")) return 2;
  if (file.startsWith("tools/")) return 1;
  if (file.startsWith("src/")) return 0;
  return -1;
}
const LAYER_NAMES = ["core (src/)", "tools/", "middleware/", "entry (src/index.ts, src/workbench.ts)"];

/** Folders inside core that may import only themselves and the listed core modules. */
const CORE_RULES: Array<{ dir: string; may: string[]; why: string }> = [
  { dir: "src/guards/", may: ["src/guards/", "src/environment/fileOperations.ts"], why: "guards are pure decisions; I/O (e.g. robots.txt) is passed in" },
  { dir: "src/context/", may: ["src/context/", "src/workspace.ts"], why: "the run-context helpers sit under tools, middleware and adapters" },
];

async function sourceFiles(): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    for (const entry of await readdir(path.join(repo, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) await walk(rel);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) out.push(rel);
    }
  };
  for (const dir of ["src", "tools", "middleware"]) await walk(dir);
  return out.sort();
}

/** Relative module specifiers of static imports/exports and dynamic `import()`, resolved to repo paths. */
export function importsOf(file: string, text: string): string[] {
  const specs = new Set<string>();
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  for (const m of code.matchAll(/\b(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) specs.add(m[1]!);
  return [...specs].map((spec) => path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, ".ts"));
}

test("no import points from a lower layer to a higher one", async () => {
  const upward: string[] = [];
  for (const file of await sourceFiles()) {
    const text = await readFile(path.join(repo, file), "utf8");
    for (const target of importsOf(file, text)) {
      if (rank(target) > rank(file)) upward.push(`${file} (${LAYER_NAMES[rank(file)]}) imports ${target} (${LAYER_NAMES[rank(target)]})`);
    }
  }
  assert.deepEqual(upward, [], `upward imports:\n${upward.join("\n")}`);
});

test("core folders import only what their layer allows", async () => {
  const bad: string[] = [];
  for (const file of await sourceFiles()) {
    const rule = CORE_RULES.find((r) => file.startsWith(r.dir));
    if (!rule) continue;
    const text = await readFile(path.join(repo, file), "utf8");
    for (const target of importsOf(file, text)) {
      if (!rule.may.some((allowed) => (allowed.endsWith("/") ? target.startsWith(allowed) : target === allowed))) {
        bad.push(`${file} imports ${target} (${rule.why})`);
      }
    }
  }
  assert.deepEqual(bad, [], `imports outside the allowed set:\n${bad.join("\n")}`);
});

test("one module decides local vs remote (src/environment/locality.ts)", async () => {
  const deciders: string[] = [];
  for (const file of await sourceFiles()) {
    if (file === "src/environment/locality.ts") continue;
    const text = await readFile(path.join(repo, file), "utf8");
    if (/\.kind\s*[!=]==?\s*["'](local|local-shell|sandbox)["']/.test(text)) deciders.push(file);
  }
  assert.deepEqual(deciders, [], `compare kinds through isLocalFileOperations / isLocalEnvironment instead:\n${deciders.join("\n")}`);
});

test("the import scanner sees static, re-export and dynamic imports", () => {
  const text = [
    'import { a } from "../tools/x.js";',
    'export { b } from "./y.js";',
    'const c = await import("../middleware/z.js");',
    '// import { d } from "../tools/commented.js";',
    'import { e } from "zod";',
  ].join("\n");
  assert.deepEqual(importsOf("src/web/q.ts", text), ["src/tools/x.ts", "src/web/y.ts", "src/middleware/z.ts"], "relative specifiers resolved from the importing file");
  assert.deepEqual(importsOf("src/q.ts", 'import { a } from "../tools/x.js";'), ["tools/x.ts"], "resolved against the repo");
  assert.equal(rank("tools/x.ts") > rank("src/guards/policy.ts"), true, "tools sit above core");
});
