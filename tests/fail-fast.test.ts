// Operator mistakes stop the program when the workbench is built, with a message for the operator;
// none of them reaches the model as something it should fix.
import assert from "node:assert/strict";
import { mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { createFileManagerMiddleware } from "../middleware/fileManager.js";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";
import { createWorkbench } from "../src/workbench.js";
import { createFileTools } from "../tools/fileTools.js";
import { createRunCommandTool } from "../tools/runCommand.js";
import { createWebTools } from "../tools/webTools.js";

let dir = "";
let file = "";
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "fail-fast-"));
  file = path.join(dir, "a-file");
  await writeFile(file, "not a directory");
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every factory that takes a rootDir, as the operator would call it. */
const builders: Array<[string, (rootDir: string) => unknown]> = [
  ["createWorkbench", (rootDir) => createWorkbench({ rootDir, webTools: false })],
  ["createFileManagerMiddleware", (rootDir) => createFileManagerMiddleware({ rootDir })],
  ["createFileTools", (rootDir) => createFileTools({ rootDir })],
  ["createRunCommandTool", (rootDir) => createRunCommandTool({ rootDir, sandbox: "off" })],
];

describe("rootDir is checked at build time", () => {
  for (const [name, build] of builders) {
    test(`${name}: a file as rootDir throws, naming the option`, () => {
      assert.throws(() => build(file), (err: Error) => err instanceof TypeError && /is not a directory/.test(err.message) && /rootDir/.test(err.message));
    });

    test(`${name}: a rootDir that cannot be created (inside a file) throws`, () => {
      assert.throws(() => build(path.join(file, "sub")), /cannot be created: .* is a file/);
    });

    test(`${name}: roots under /proc, /sys and /dev are refused at once`, () => {
      for (const root of ["/proc/self/workspaces", "/sys/kernel/agent", "/dev/agent_files", "/proc"]) {
        assert.throws(() => build(root), /kernel pseudo-filesystem/, root);
      }
    });
  }

  test("a symlink that leads into /proc is judged by where it leads", async () => {
    const link = path.join(dir, "to-proc");
    await symlink("/proc/self", link);
    assert.throws(() => createWorkbench({ rootDir: path.join(link, "ws"), webTools: false }), /resolves to \/proc/);
  });

  test("a directory that does not exist yet under a writable parent is fine, and nothing is created at build time", async () => {
    const fresh = path.join(dir, "new", "root");
    const wb = createWorkbench({ rootDir: fresh, webTools: false });
    await wb.close();
    assert.equal(wb.rootDir, fresh, "resolved root returned");
  });

  test("a read-only directory is refused (unless running as root, which may write anywhere)", { skip: process.getuid?.() === 0 && "root can write everywhere" }, async () => {
    const { chmod, mkdir } = await import("node:fs/promises");
    const ro = path.join(dir, "ro");
    await mkdir(ro);
    await chmod(ro, 0o555);
    assert.throws(() => createWorkbench({ rootDir: ro, webTools: false }), /not writable/);
  });

  test("files on another host: only the path is judged, not this machine's disk", () => {
    const fileOps = new ShellFileOperations(new LocalShellEnvironment());
    assert.doesNotThrow(() => createFileTools({ rootDir: file, fileOps }), "a remote root is not stat'ed locally");
    assert.throws(() => createFileTools({ rootDir: "/proc/x", fileOps }), /kernel pseudo-filesystem/, "the pseudo-filesystem rule still applies");
  });
});

describe("web backends are checked at build time", () => {
  const quiet = async <T>(fn: () => T): Promise<{ value: T; warnings: string[] }> => {
    const warnings: string[] = [];
    const original = console.warn;
    console.warn = (...args: unknown[]) => void warnings.push(args.map(String).join(" "));
    try {
      return { value: fn(), warnings };
    } finally {
      console.warn = original;
    }
  };

  test("an unknown backend name throws, from the option or the env switch", () => {
    assert.throws(() => createWebTools({ env: {}, searchBackend: "google" as never }), (err: Error) => err instanceof TypeError && /google/.test(err.message) && /firecrawl, parallel, tavily, exa/.test(err.message));
    assert.throws(() => createWebTools({ env: { WEB_SEARCH_BACKEND: "google" } }), /Unknown search backend "google" from env WEB_SEARCH_BACKEND/);
    assert.throws(() => createWebTools({ env: { WEB_EXTRACT_BACKEND: "curl" } }), /Unknown extract backend "curl"/);
  });

  test("the keyless fetch backend cannot search: naming it for search throws", () => {
    assert.throws(() => createWebTools({ env: {}, searchBackend: "fetch" as never }), /search backend "fetch"/);
  });

  test("an explicitly configured backend without its key throws, naming the variable", () => {
    assert.throws(() => createWebTools({ env: {}, searchBackend: "tavily" }), (err: Error) => err instanceof TypeError && /TAVILY_API_KEY/.test(err.message));
    assert.throws(() => createWebTools({ env: { WEB_SEARCH_BACKEND: "exa" } }), /EXA_API_KEY/);
    assert.throws(() => createWebTools({ env: {}, extractBackend: "parallel" }), /PARALLEL_API_KEY/);
    assert.throws(() => createWorkbench({ rootDir: dir, webTools: { env: {}, searchBackend: "tavily" } }), /TAVILY_API_KEY/);
  });

  test("nothing configured: one warning at build time, web_search left out, web_extract keyless", async () => {
    const { value: tools, warnings } = await quiet(() => createWebTools({ env: {} }));
    assert.deepEqual(tools.map((t) => t.name), ["web_extract"], "the model is not offered a search it cannot use");
    assert.equal(warnings.length, 1, `one warning: ${warnings.join(" | ")}`);
    assert.match(warnings[0]!, /web_search is off/);
    assert.match(warnings[0]!, /TAVILY_API_KEY/);
  });

  test("searchBackend: false leaves web_search out without a warning", async () => {
    const { value: tools, warnings } = await quiet(() => createWebTools({ env: {}, searchBackend: false }));
    assert.deepEqual(tools.map((t) => t.name), ["web_extract"], "only extraction");
    assert.deepEqual(warnings, [], "no warning when the operator chose it");
  });

  test("a key in the environment selects that vendor at build time", async () => {
    const { value: tools, warnings } = await quiet(() => createWebTools({ env: { EXA_API_KEY: "exa-test-key" } }));
    assert.deepEqual(tools.map((t) => t.name), ["web_search", "web_extract"], "both tools offered");
    assert.deepEqual(warnings, [], "nothing to warn about");
  });
});
