// Globs from the model run on a non-backtracking matcher: hostile patterns finish quickly, the
// gitignore-style file_glob keeps the semantics the `ignore` package gave it, and patterns over
// the limits are refused with a message for the model.
import assert from "node:assert/strict";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import ignore from "ignore";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { globMatcher as deepagentsGlob } from "../src/deepagents/glob.js";
import { compileGlob } from "../src/search/globMatch.js";
import { globMatcher as searchGlob } from "../src/search/globs.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";

const HOSTILE = ["*a*a*a*a*a*a*b", "**/*a*a*a*a*a*a*a*a*a*a*b", "a/**/a/**/a/**/a/**/a/**/a/**/b", "?*?*?*?*?*?*?*?*b", "{a,b}*{a,b}*{a,b}*{a,b}*{a,b}*c"];

let root = "";
const thread = "hostile";
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-glob-"));
  const dir = path.join(root, thread);
  // 200 files with 90-character names of "a", and one 120-deep chain of "a" directories.
  await mkdir(dir, { recursive: true });
  for (let i = 0; i < 200; i++) await writeFile(path.join(dir, `${"a".repeat(86)}${String(i).padStart(4, "0")}`), "x\n");
  const deep = path.join(dir, ...Array(120).fill("a"));
  await mkdir(deep, { recursive: true });
  await writeFile(path.join(deep, "a".repeat(90)), "x\n");
  // A planted .gitignore whose rule would make the `ignore` package backtrack on deep paths.
  await writeFile(path.join(dir, ".gitignore"), "a/**/a/**/a/**/a/**/a/**/a/**/b\n*.log\n");
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("hostile globs finish quickly", () => {
  it("WorkbenchBackend.glob with *a*a*a*a*a*a*b over 90-character names", { timeout: 20_000 }, async () => {
    const backend = new WorkbenchBackend({ rootDir: root, threadId: thread });
    for (const pattern of HOSTILE) {
      const res = await backend.glob(pattern);
      assert.equal(res.error, undefined, pattern);
      assert.deepEqual(res.files, [], pattern);
    }
  });

  it("WorkbenchBackend.grep's glob filter and search_files' file_glob / files target", { timeout: 20_000 }, async () => {
    const backend = new WorkbenchBackend({ rootDir: root, threadId: thread });
    const tool = createSearchFilesTool({ rootDir: root });
    const js = createSearchFilesTool({ rootDir: root, engine: "js" });
    const config = { configurable: { thread_id: thread } };
    for (const pattern of HOSTILE) {
      assert.deepEqual((await backend.grep("x", "/", pattern)).matches, [], pattern);
      for (const t of [tool, js]) {
        const files = JSON.parse(String(await t.invoke({ pattern, target: "files" } as never, config)));
        assert.equal(files.error, undefined, pattern);
        assert.equal(files.total_files ?? files.files?.length ?? 0, 0, pattern);
        const content = JSON.parse(String(await t.invoke({ pattern: "x", file_glob: pattern } as never, config)));
        assert.equal(content.error, undefined, pattern);
      }
    }
  });

  it("the matchers alone: 90-character names, 60-deep paths", { timeout: 20_000 }, () => {
    const name = "a".repeat(90);
    const deep = [...Array(60).fill("a"), name].join("/");
    for (const pattern of HOSTILE) {
      for (const m of [deepagentsGlob(pattern), deepagentsGlob(pattern, true), searchGlob(pattern)]) {
        assert.equal(m(name), false, pattern);
        assert.equal(m(deep), false, pattern);
      }
    }
  });
});

describe("planted .gitignore", () => {
  it("the JS engine skips rules with many ** (and keeps the others)", { timeout: 20_000 }, async () => {
    await writeFile(path.join(root, thread, "skip.log"), "x\n");
    const js = createSearchFilesTool({ rootDir: root, engine: "js" });
    const r = JSON.parse(String(await js.invoke({ pattern: "^x$", output_mode: "files_only" } as never, { configurable: { thread_id: thread } })));
    assert.equal(r.error, undefined);
    assert.ok(r.files.some((f: string) => f.endsWith("a".repeat(90))), "the deep file is searched");
    assert.ok(!r.files.includes("skip.log"), "*.log still applies");
  });
});

describe("limits", () => {
  it("refuses over-long, star-heavy and brace-bomb globs with a guiding error", async () => {
    const backend = new WorkbenchBackend({ rootDir: root, threadId: thread });
    const tool = createSearchFilesTool({ rootDir: root });
    const config = { configurable: { thread_id: thread } };
    const cases: Array<[string, RegExp]> = [
      ["a".repeat(2_000), /characters long \(at most 1000\)/],
      ["*".repeat(100), /wildcards \(at most 64\)/],
      ["{a,b}".repeat(12), /expand to too many alternatives/],
    ];
    for (const [pattern, message] of cases) {
      assert.match((await backend.glob(pattern)).error ?? "", message);
      assert.match((await backend.grep("x", "/", pattern)).error ?? "", message);
      const files = JSON.parse(String(await tool.invoke({ pattern, target: "files" } as never, config)));
      assert.match(files.error ?? "", message);
      const content = JSON.parse(String(await tool.invoke({ pattern: "x", file_glob: pattern } as never, config)));
      assert.match(content.error ?? "", message);
    }
  });
});

describe("semantics", () => {
  it("the deepagents glob: * within a segment, ** across, {a,b}, classes, **/ as zero or more directories", () => {
    const cases: Array<[string, string, boolean]> = [
      ["*.md", "notes.md", true],
      ["*.md", "docs/guide.md", false],
      ["**/*.md", "docs/guide.md", true],
      ["**/*.md", "notes.md", true],
      ["docs/**", "docs/a/b.md", true],
      ["src/**/*.ts", "src/a.ts", true],
      ["src/**/*.ts", "src/x/y/a.ts", true],
      ["src/**/*.ts", "lib/a.ts", false],
      ["*.{ts,md}", "a.md", true],
      ["*.{ts,md}", "a.js", false],
      ["{src,lib}/**/*.{ts,tsx}", "lib/x/a.tsx", true],
      ["[ab]?.txt", "bz.txt", true],
      ["[!ab]?.txt", "bz.txt", false],
      ["[a-c]*", "cat", true],
      ["file?.txt", "file1.txt", true],
      ["file?.txt", "file/.txt", false],
      ["**.ts", "a/b/c.ts", true],
      [".env*", ".env.local", true],
      ["a{b", "a{b", true],
      ["a,b", "a,b", true],
    ];
    for (const [pattern, rel, expected] of cases) {
      assert.equal(deepagentsGlob(pattern)(rel), expected, `${pattern} ~ ${rel}`);
      // The RegExp fast path and the NFA agree.
      const nfa = compileGlob(pattern, { globstar: "anywhere", escapes: false, regexFastPath: false });
      assert.equal(nfa.test(rel), expected, `NFA: ${pattern} ~ ${rel}`);
    }
    assert.equal(compileGlob("[z-a]x", { globstar: "anywhere", escapes: false }).test("zx"), false, "a reversed range matches nothing");
    assert.equal(deepagentsGlob("*.ts", true)("deep/x/a.ts"), true, "anyDepth matches the base name");
    assert.equal(deepagentsGlob("./src/*.ts")("src/a.ts"), true);
  });

  it("search file_glob agrees with the gitignore semantics of the `ignore` package it replaced", () => {
    const previous = (glob: string) => {
      const negated = glob.startsWith("!");
      const ig = ignore({ allowRelativePaths: true }).add(negated ? glob.slice(1) : glob);
      return (rel: string) => (rel !== "" && ig.ignores(rel)) !== negated;
    };
    const globs = ["*.ts", "!*.md", "src/**/*.ts", "*", "README*", "src", "src/", "/src", "docs/*.md", "**/deep/**", "a?c", "[ab]*.txt", "[!a]*", "src/*", "**/*.test.ts", "deep", "deep/", "a\\*b", "src/**", "**", "**/a", "x/**/y", "a/**/b/**/c", ".env", ".*", "src/deep/*.ts", "*.TS", "d*p/"];
    const paths = ["a.ts", "src/a.ts", "src/deep/b.ts", "src/deep/x/c.test.ts", "README.md", "docs/with space/x.md", "docs/a.md", "abc", "a/b/c", "x/y", "x/m/n/y", "a/q/b/r/c", "src", "deep/z.txt", "q/deep/z", "bb.txt", "a.txt", "A.TS", ".env", "x/.env", "src/deep", "a*b", "axb", "x/src/a.ts", ""];
    const diffs: string[] = [];
    for (const g of globs) {
      const [o, n] = [previous(g), searchGlob(g)];
      for (const p of paths) if (o(p) !== n(p)) diffs.push(`${g} ~ ${p}: ignore=${o(p)} now=${n(p)}`);
    }
    assert.deepEqual(diffs, []);
    assert.equal(searchGlob("*.{ts,md}")("src/a.md"), true, "{a,b} alternatives, as in ripgrep's --glob");
  });
});
