import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { MissingPackageError, isInstalled, loadOptional, requireInstalled } from "../src/optional.js";

const run = promisify(execFile);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The optional peer dependencies: a consumer who configures none of them installs none. */
const OPTIONAL = ["@tavily/core", "exa-js", "@mendable/firecrawl-js", "parallel-web", "ssh2", "@langchain/openai"];

describe("optional packages", () => {
  it("tells installed from missing packages without loading them", () => {
    assert.equal(isInstalled("@tavily/core"), true, "a dev dependency is installed here");
    assert.equal(isInstalled("not-a-real-package-4d1c"), false, "a missing package");
    assert.throws(() => requireInstalled("not-a-real-package-4d1c", "The thing"), (error: Error) => {
      assert.ok(error instanceof MissingPackageError, "a MissingPackageError");
      assert.equal(error.message, "The thing needs the package not-a-real-package-4d1c, which is not installed: run `npm install not-a-real-package-4d1c`");
      return true;
    });
  });

  it("names the package when a lazy import finds it missing, and passes other failures through", async () => {
    await assert.rejects(
      loadOptional("@scope/not-real-4d1c", "The feature", () => import("@scope/not-real-4d1c" as string)),
      /The feature needs the package @scope\/not-real-4d1c, which is not installed: run `npm install @scope\/not-real-4d1c`/,
    );
    await assert.rejects(
      loadOptional("exa-js", "The exa web backend", () => Promise.reject(new Error("boom inside the SDK"))),
      /^Error: boom inside the SDK$/,
    );
    const loaded = await loadOptional("exa-js", "The exa web backend", () => import("exa-js"));
    assert.equal(typeof loaded.Exa, "function", "an installed package loads as usual");
  });
});

describe("a consumer install without the optional packages", () => {
  // A copy of the sources over a node_modules that has everything but the six optional packages.
  let tmp = "";
  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), "wb-optional-"));
    for (const dir of ["src", "tools", "middleware"]) await cp(path.join(repo, dir), path.join(tmp, dir), { recursive: true });
    await cp(path.join(repo, "package.json"), path.join(tmp, "package.json"));
    const modules = path.join(repo, "node_modules");
    const farm = path.join(tmp, "node_modules");
    await mkdir(farm);
    for (const entry of await readdir(modules)) {
      if (entry.startsWith("@")) {
        await mkdir(path.join(farm, entry));
        for (const member of await readdir(path.join(modules, entry))) {
          if (!OPTIONAL.includes(`${entry}/${member}`)) await symlink(path.join(modules, entry, member), path.join(farm, entry, member), "dir");
        }
      } else if (!OPTIONAL.includes(entry)) {
        await symlink(path.join(modules, entry), path.join(farm, entry), "dir");
      }
    }
  });
  after(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  const script = `
    import * as wb from "./src/index.ts";
    import * as web from "./src/web/index.ts";
    const out = {};
    const attempt = (name, fn) => { try { fn(); out[name] = "ok"; } catch (e) { out[name] = e.name + ": " + e.message; } };
    out.installed = ${JSON.stringify(OPTIONAL)}.filter((p) => wb.isInstalled(p));
    attempt("keyless", () => wb.createWebTools({ env: {} }));
    attempt("tavily", () => wb.createWebTools({ env: { TAVILY_API_KEY: "k" } }));
    attempt("firecrawlExtract", () => wb.createWebTools({ env: { FIRECRAWL_API_URL: "http://127.0.0.1:9" } }));
    attempt("exaOption", () => wb.createWebTools({ env: { EXA_API_KEY: "k" }, searchBackend: "exa", extractBackend: "fetch" }));
    attempt("parallelFactory", () => web.createParallelBackend({ apiKey: "k" }));
    attempt("summary", () => wb.createWebTools({ env: { WORKBENCH_SUMMARY_MODEL: "gpt-x" } }));
    attempt("ssh", () => new wb.SshEnvironment({ host: "127.0.0.1", username: "u", password: "p" }));
    const page = web.htmlToMarkdown("<main><h1>Still works</h1><p>" + "text ".repeat(200) + "</p></main>");
    out.html = page.title;
    console.log(JSON.stringify(out));
  `;

  it("loads the package, converts HTML and builds keyless tools; a configured feature names its missing package", async () => {
    const { stdout } = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: tmp,
      timeout: 120_000,
      env: { ...process.env, NODE_OPTIONS: "" },
    });
    const out = JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
    assert.deepEqual(out.installed, [], "none of the optional packages resolve in the farm");
    assert.equal(out.keyless, "ok", "nothing configured: nothing breaks");
    assert.equal(out.html, "Still works");
    const expect = (key: string, pkg: string, feature: RegExp) => {
      assert.match(String(out[key]), new RegExp(`^MissingPackageError: .*needs the package ${pkg.replace("/", "\\/")}, which is not installed: run \`npm install ${pkg.replace("/", "\\/")}\``), key);
      assert.match(String(out[key]), feature, `${key}: names the feature`);
    };
    expect("tavily", "@tavily/core", /The tavily web backend \(credentials found \(TAVILY_API_KEY\)\)/);
    expect("firecrawlExtract", "@mendable/firecrawl-js", /The firecrawl web backend/);
    expect("exaOption", "exa-js", /The exa web backend \(searchBackend option\)/);
    expect("parallelFactory", "parallel-web", /The parallel web backend/);
    expect("summary", "@langchain/openai", /WORKBENCH_SUMMARY_MODEL/);
    expect("ssh", "ssh2", /The SSH environment/);
  });
});
