// Packaging proof: the published tarball installs into a fresh project and works from ESM, CJS
// and a strict TypeScript consumer. Slow by nature (build, pack, one npm install): one of each.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const tsc = path.join(repo, "node_modules", "typescript", "bin", "tsc");

interface PackResult {
  filename: string;
  size: number;
  unpackedSize: number;
  files: { path: string }[];
}

let tmp = "";
let packed: PackResult;
let consumer = "";

before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-pack-"));
  await run("npm", ["run", "build"], { cwd: repo, timeout: 240_000, maxBuffer: 16 << 20 });
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", tmp], {
    cwd: repo,
    timeout: 120_000,
    maxBuffer: 16 << 20,
  });
  packed = (JSON.parse(stdout) as PackResult[])[0]!;
  consumer = path.join(tmp, "consumer");
  await mkdir(consumer, { recursive: true });
  await writeFile(path.join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true }));
  // The registry is reachable; --prefer-offline reuses the npm cache the repo install filled.
  await run(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", path.join(tmp, packed.filename)],
    { cwd: consumer, timeout: 300_000, maxBuffer: 16 << 20 },
  );
});

after(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

test("the tarball holds the build and docs, no tests, fixtures or source maps", (t) => {
  const paths = packed.files.map((f) => f.path);
  t.diagnostic(`tarball ${packed.filename}: ${packed.size} bytes packed, ${packed.unpackedSize} unpacked, ${paths.length} files`);
  for (const required of ["package.json", "dist/index.js", "dist/index.cjs", "dist/index.d.ts", "dist/index.d.cts", "dist/middleware.js", "dist/tools.cjs", "dist/deepagents.js", "dist/deepagents.d.cts"]) {
    assert.ok(paths.includes(required), `tarball lacks ${required}`);
  }
  const unwanted = paths.filter((p) => /^(tests|src|examples|bench)\//.test(p) || /fixtures|\.map$|\.test\./.test(p));
  assert.deepEqual(unwanted, []);
});

test("ESM import of every entry point", async () => {
  const script = [
    `import * as root from "langgraph-workbench";`,
    `import * as mw from "langgraph-workbench/middleware";`,
    `import * as tools from "langgraph-workbench/tools";`,
    `const ws = root.Workspace.forThread("/tmp/wb-root", "t1");`,
    `console.log(JSON.stringify({ root: Object.keys(root).length, mw: Object.keys(mw).length, tools: Object.keys(tools).length, dir: ws.dir, wb: typeof root.createWorkbench }));`,
  ].join("\n");
  await writeFile(path.join(consumer, "esm.mjs"), script);
  const { stdout } = await run(process.execPath, ["esm.mjs"], { cwd: consumer, timeout: 60_000 });
  const out = JSON.parse(stdout) as { root: number; dir: string; wb: string };
  assert.equal(out.dir, "/tmp/wb-root/t1");
  assert.equal(out.wb, "function");
  assert.ok(out.root > 3);
});

test("CJS require of every entry point", async () => {
  const script = [
    `const root = require("langgraph-workbench");`,
    `const mw = require("langgraph-workbench/middleware");`,
    `const tools = require("langgraph-workbench/tools");`,
    `const ws = root.Workspace.forThread("/tmp/wb-root", "t1");`,
    `console.log(JSON.stringify({ dir: ws.dir, rewritten: ws.rewrite("/tmp/wb-root/t1/a.txt"), wb: typeof root.createWorkbench, mw: typeof mw, tools: typeof tools }));`,
  ].join("\n");
  await writeFile(path.join(consumer, "cjs.cjs"), script);
  const { stdout } = await run(process.execPath, ["cjs.cjs"], { cwd: consumer, timeout: 60_000 });
  assert.deepEqual(JSON.parse(stdout), { dir: "/tmp/wb-root/t1", rewritten: "a.txt", wb: "function", mw: "object", tools: "object" });
});

test("a strict TypeScript consumer compiles against the published types", async () => {
  const source = [
    `import { Workspace, createWorkbench, type WorkbenchOptions } from "langgraph-workbench";`,
    `import { WorkbenchBackend } from "langgraph-workbench/deepagents";`,
    `import { createAgent } from "langchain";`,
    `const options: WorkbenchOptions = { rootDir: "./agent_files" };`,
    `const wb = createWorkbench(options);`,
    `const ws: Workspace = Workspace.forThread("./agent_files", "t1");`,
    `const rel: string = ws.rewrite(ws.dir + "/x.txt");`,
    `const backend = new WorkbenchBackend({ rootDir: "./agent_files" });`,
    `export const agent = createAgent({ model: "openai:gpt-4o-mini", tools: wb.tools, middleware: wb.middleware });`,
    `export const done: Promise<void> = wb.close();`,
    `export { rel, backend };`,
  ].join("\n");
  await writeFile(path.join(consumer, "consumer.ts"), source);
  await writeFile(
    path.join(consumer, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ["node"],
        typeRoots: [path.join(repo, "node_modules", "@types")],
      },
      files: ["consumer.ts"],
    }),
  );
  try {
    await run(process.execPath, [tsc, "--noEmit", "-p", "tsconfig.json"], { cwd: consumer, timeout: 120_000 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    assert.fail(`tsc failed:\n${e.stdout ?? ""}${e.stderr ?? ""}\n${await readFile(path.join(consumer, "consumer.ts"), "utf8")}`);
  }
});

test("a strict TypeScript consumer without deepagents installed and without skipLibCheck compiles against the root and the other subpaths", async () => {
  // The consumer installed the tarball only: npm adds the required peers, never the optional
  // `deepagents`. The root, /middleware and /tools types must not import it (only /deepagents does).
  const bare = consumer;
  await assert.rejects(readFile(path.join(bare, "node_modules", "deepagents", "package.json")), "deepagents must not be installed here");
  const source = [
    `import { Workspace, createWorkbench, type WorkbenchOptions, type Artifact } from "langgraph-workbench";`,
    `import { createFileManagerMiddleware } from "langgraph-workbench/middleware";`,
    `import { createFileTools } from "langgraph-workbench/tools";`,
    `const options: WorkbenchOptions = { rootDir: "./agent_files" };`,
    `const wb = createWorkbench(options);`,
    `export const fm = createFileManagerMiddleware({ rootDir: "./agent_files" });`,
    `export const tools = createFileTools({ rootDir: "./agent_files" });`,
    `export const ws: Workspace = wb.workspace("t1");`,
    `export async function produced(): Promise<Artifact[]> { return (await wb.artifacts("t1")).files; }`,
  ].join("\n");
  await writeFile(path.join(bare, "bare.ts"), source);
  await writeFile(
    path.join(bare, "tsconfig.bare.json"),
    JSON.stringify({
      compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, skipLibCheck: false, types: ["node"], typeRoots: [path.join(repo, "node_modules", "@types")] },
      files: ["bare.ts"],
    }),
  );
  try {
    await run(process.execPath, [tsc, "--noEmit", "-p", "tsconfig.bare.json"], { cwd: bare, timeout: 180_000, maxBuffer: 16 << 20 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    assert.fail(`tsc failed without deepagents:\n${e.stdout ?? ""}${e.stderr ?? ""}`);
  }
});
