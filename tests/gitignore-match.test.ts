// Workspace .gitignore rules run on the linear-time matcher (src/search/gitignoreMatch.ts): git's
// semantics (checked against the `ignore` package it replaced on a random corpus, and against
// real `git check-ignore` on a sample), and deep chains that took the old matcher minutes.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import ignore from "ignore";
import { boundedIgnoreRules } from "../src/guards/ignoreRules.js";
import { Gitignore, IgnoreWalk, ignoredByLayers } from "../src/search/gitignoreMatch.js";
import { renderDirectoryTree } from "../src/tree.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";
import { seededRandom } from "./helpers/seededRandom.js";

const run = promisify(execFile);

let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-gi-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Seeded, so a failing corpus case can be replayed. */
const prng = seededRandom;
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

const NAMES = ["a", "b", "ab", "ba", "a.b", "b.a", "x", ".a", "a1", "A"];
const PIECES = ["a", "b", ".", "x", "1", "A", "*", "?", "[ab]", "[!a]", "[a-b]", "*a", "a*", "\\a", "[[:digit:]]"];

function randomSegment(r: () => number): string {
  if (r() < 0.15) return "**";
  let s = "";
  const n = 1 + Math.floor(r() * 3);
  for (let i = 0; i < n; i++) s += pick(r, PIECES);
  return s;
}

function randomRule(r: () => number): string {
  const segments = Array.from({ length: 1 + Math.floor(r() * 3) }, () => randomSegment(r));
  let rule = segments.join("/");
  if (r() < 0.2) rule = `/${rule}`;
  if (r() < 0.25) rule += "/";
  if (r() < 0.25) rule = `!${rule}`;
  return rule;
}

/** Paths as a tree: a path is a directory when it has children, else a file or (sometimes) an empty directory. */
function randomTree(r: () => number, count: number): Map<string, boolean> {
  const paths = new Map<string, boolean>();
  for (let i = 0; i < count; i++) {
    const parts = Array.from({ length: 1 + Math.floor(r() * 4) }, () => pick(r, NAMES));
    for (let k = 1; k < parts.length; k++) paths.set(parts.slice(0, k).join("/"), true);
    const leaf = parts.join("/");
    if (!paths.has(leaf)) paths.set(leaf, r() < 0.2);
  }
  return paths;
}

/** What the `ignore` package (full-path semantics, parents included) says; case-sensitive as git. */
function oldVerdict(rules: readonly string[], rel: string, isDir: boolean): boolean {
  return ignore({ ignorecase: false }).add(rules).ignores(isDir ? `${rel}/` : rel);
}

/** [rules, path, isDir, ignored] — also checked against real git below. */
const CASES: Array<[string[], string, boolean, boolean]> = [
    [["*.log"], "x/y/a.log", false, true],
    [["*.log", "!keep.log"], "x/keep.log", false, false],
    [["build/"], "build", false, false],
    [["build/"], "src/build", true, true],
    [["build/"], "build/x.c", false, true],
    [["/root.txt"], "x/root.txt", false, false],
    [["/root.txt"], "root.txt", false, true],
    [["doc/frotz"], "a/doc/frotz", false, false],
    [["a/**/b"], "a/b", false, true],
    [["a/**/b"], "a/x/y/b", false, true],
    [["**/deep"], "deep", true, true],
    [["**/deep"], "q/r/deep", false, true],
    [["docs/**"], "docs", true, false],
    [["docs/**"], "docs/a/b", false, true],
    [["a**b"], "axxb", false, true],
    [["a/**b"], "a/x/b", false, false],
    [["x[!a]y"], "x/y", false, false],
    [["a/x[!b]y"], "a/x/y", false, false],
    [["a/x[!b]y"], "a/xcy", false, true],
    [["a/x[+-0]y"], "a/x/y", false, false],
    [["a/x?y"], "a/x/y", false, false],
    [["a/x*y"], "a/x/y", false, false],
    [["[[:digit:]]z"], "3z", false, true],
    [["[[:upper:]]"], "A", false, true],
    [["[[:bogus:]]"], "b", false, false],
    [["[ab"], "[ab", false, false],
    [["[]]"], "]", false, true],
    [["[a-]"], "-", false, true],
    [["foo\\ "], "foo ", false, true],
    [["foo  "], "foo", false, true],
    [["\\#x", "#y"], "#x", false, true],
    [["#y"], "#y", false, false],
    [["\\!x"], "!x", false, true],
    [["trail\\"], "trail", false, false],
    [["***"], "deep/any", false, true],
    [boundedIgnoreRules("\uFEFF*.md\r\n"), "a.md", false, true],
    // A file under an excluded directory cannot be re-included.
    [["dir/", "!dir/keep"], "dir/keep", false, true],
    [["dir/*", "!dir/keep"], "dir/keep", false, false],
    [["A"], "a", false, false],
  ];

describe("git semantics", () => {
  for (const [rules, rel, isDir, expected] of CASES) {
    it(`${JSON.stringify(rules)} ~ ${rel}${isDir ? "/" : ""} → ${expected ? "ignored" : "kept"}`, () => {
      assert.equal(new Gitignore(rules).ignores(rel, isDir, "path"), expected);
    });
  }

  it("deeper layers override shallower ones; a walker needs only the entry itself", () => {
    const layers = [
      { base: "", rules: new Gitignore(["*.log", "out/"]) },
      { base: "sub", rules: new Gitignore(["!*.log"]) },
    ];
    assert.equal(ignoredByLayers(layers, "a.log", false), true);
    assert.equal(ignoredByLayers(layers, "sub/a.log", false), false);
    assert.equal(ignoredByLayers(layers, "out", true), true);
    assert.equal(ignoredByLayers(layers, "sub/out", true), true);
    // In "path" mode the excluded parent decides even for a path the walker would never reach.
    const under = [{ base: "", rules: new Gitignore(["out/"]) }, { base: "out", rules: new Gitignore(["!x"]) }];
    assert.equal(ignoredByLayers(under, "out/x", false, "path"), true);
    assert.equal(ignoredByLayers(under, "out/x", false, "walker"), false);
  });

  it("ignoreCase folds rules and paths", () => {
    assert.equal(new Gitignore(["*.LOG"], { ignoreCase: true }).ignores("A.log", false), true);
    assert.equal(new Gitignore(["*.LOG"]).ignores("A.log", false), false);
  });
});

describe("differential corpus", () => {
  it("agrees with the `ignore` package on thousands of random rule/path pairs; walker mode agrees on reachable paths", () => {
    const r = prng(23);
    let pairs = 0;
    const diffs: string[] = [];
    for (let set = 0; set < 400; set++) {
      const rules = Array.from({ length: 1 + Math.floor(r() * 4) }, () => randomRule(r));
      const matcher = new Gitignore(rules);
      const tree = randomTree(r, 12);
      for (const [rel, isDir] of tree) {
        pairs++;
        const now = matcher.ignores(rel, isDir, "path");
        if (now !== oldVerdict(rules, rel, isDir)) diffs.push(`${JSON.stringify(rules)} ~ ${rel}${isDir ? "/" : ""}: ignore=${!now} now=${now}`);
        // A walker reaches `rel` only when no parent directory is ignored; there it tests only `rel`.
        const parts = rel.split("/");
        const reachable = parts.slice(0, -1).every((_, k) => !matcher.ignores(parts.slice(0, k + 1).join("/"), true, "walker"));
        if (reachable) {
          assert.equal(matcher.ignores(rel, isDir, "walker"), now, `walker: ${JSON.stringify(rules)} ~ ${rel}`);
          // The cursor a walker carries down gives the same verdict from the entry's name alone.
          let walk = IgnoreWalk.EMPTY.with(matcher);
          for (const part of parts.slice(0, -1)) walk = walk.enter(part);
          assert.equal(walk.ignores(parts.at(-1)!, isDir), now, `cursor: ${JSON.stringify(rules)} ~ ${rel}`);
        }
      }
    }
    assert.ok(pairs > 4_000, `${pairs} pairs`);
    assert.deepEqual(diffs, []);
  });

  it("agrees with real `git check-ignore` on a sample", { timeout: 120_000 }, async (t) => {
    const hasGit = await run("git", ["--version"]).then(
      () => true,
      () => false,
    );
    if (!hasGit) return t.skip("git is not installed");
    const repo = path.join(tmp, "repo");
    await mkdir(repo);
    await run("git", ["init", "-q", repo]);
    const r = prng(2023);
    const expected = new Map<string, boolean>();
    for (let set = 0; set < 60; set++) {
      const base = `c${set}`;
      const rules = Array.from({ length: 1 + Math.floor(r() * 4) }, () => randomRule(r));
      const matcher = new Gitignore(rules);
      await mkdir(path.join(repo, base));
      await writeFile(path.join(repo, base, ".gitignore"), `${rules.join("\n")}\n`);
      const tree = randomTree(r, 10);
      for (const [rel, isDir] of [...tree].sort(([a], [b]) => a.length - b.length)) {
        const abs = path.join(repo, base, rel);
        if (isDir) await mkdir(abs, { recursive: true });
        else await writeFile(abs, "");
        expected.set(`${base}/${rel}`, matcher.ignores(rel, isDir, "path"));
      }
    }
    // Nested rule files, through the cursors a walker carries (a path under an ignored directory is ignored, as git says).
    for (let set = 0; set < 40; set++) {
      const base = `n${set}`;
      const tree = randomTree(r, 12);
      const dirs = ["", ...[...tree].filter(([, isDir]) => isDir).map(([rel]) => rel)];
      const files = new Map<string, Gitignore>();
      for (const d of dirs) {
        if (d !== "" && r() < 0.6) continue;
        const rules = Array.from({ length: 1 + Math.floor(r() * 3) }, () => randomRule(r));
        files.set(d, new Gitignore(rules));
        await mkdir(path.join(repo, base, d), { recursive: true });
        await writeFile(path.join(repo, base, d, ".gitignore"), `${rules.join("\n")}\n`);
      }
      for (const [rel, isDir] of [...tree].sort(([x], [y]) => x.length - y.length)) {
        const abs = path.join(repo, base, rel);
        if (isDir) await mkdir(abs, { recursive: true });
        else await writeFile(abs, "");
        const parts = rel.split("/");
        let walk = IgnoreWalk.EMPTY;
        let ignored = false;
        for (let k = 0; k < parts.length && !ignored; k++) {
          const here = parts.slice(0, k).join("/");
          if (files.has(here)) walk = walk.with(files.get(here)!);
          ignored = walk.ignores(parts[k]!, k < parts.length - 1 || isDir);
          walk = walk.enter(parts[k]!);
        }
        expected.set(`${base}/${rel}`, ignored);
      }
    }
    for (const [i, [rules, rel, isDir, want]] of CASES.entries()) {
      const base = `t${i}`;
      await mkdir(path.join(repo, base, path.dirname(rel)), { recursive: true });
      await writeFile(path.join(repo, base, ".gitignore"), `${rules.join("\n")}\n`);
      if (isDir) await mkdir(path.join(repo, base, rel));
      else await writeFile(path.join(repo, base, rel), "");
      expected.set(`${base}/${rel}`, want);
    }
    const input = [...expected.keys()].join("\0");
    const git = execFile("git", ["-C", repo, "check-ignore", "--no-index", "--stdin", "-z"], { maxBuffer: 1 << 24 });
    const out = new Promise<string>((resolve) => {
      let text = "";
      git.stdout!.on("data", (d: Buffer) => (text += d.toString()));
      git.on("close", () => resolve(text));
    });
    git.stdin!.end(`${input}\0`);
    const ignored = new Set((await out).split("\0").filter(Boolean));
    const diffs = [...expected].filter(([p, v]) => ignored.has(p) !== v).map(([p, v]) => `${p}: git=${!v} now=${v}`);
    assert.ok(ignored.size > 100 && ignored.size < expected.size - 100, `${ignored.size} of ${expected.size} ignored`);
    assert.ok(expected.size > 400, `${expected.size} paths`);
    assert.deepEqual(diffs, []);
  });
});

describe("the JS search agrees with ripgrep", () => {
  it("nested rule files, negation, case, a search root inside an ignored directory", { timeout: 60_000 }, async (t) => {
    const hasRg = await run("rg", ["--version"]).then(
      () => true,
      () => false,
    );
    if (!hasRg) return t.skip("ripgrep is not installed");
    const root = path.join(tmp, "engines");
    const thread = "t";
    const dir = path.join(root, thread);
    const files: Record<string, string> = {
      ".gitignore": "*.log\nbuild/\n/top-only\nCase.txt\nsub/**/deep\n",
      "a.log": "",
      "keep/.gitignore": "!*.log\n",
      "keep/b.log": "",
      "build/x.txt": "",
      "sub/top-only": "",
      "top-only": "",
      "case.txt": "",
      "Case.txt": "",
      "sub/x/y/deep": "",
      "sub/deep": "",
      "sub/x/[ab]": "",
      "sub/x/.gitignore": "\\[ab]\n",
    };
    for (const [rel, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
      await writeFile(path.join(dir, rel), rel.endsWith(".gitignore") ? text : "needle\n");
    }
    const found = async (engine: "js" | "ripgrep", sub?: string) => {
      const tool = createSearchFilesTool({ rootDir: root, engine });
      const res = JSON.parse(String(await tool.invoke({ pattern: "needle", output_mode: "files_only", ...(sub && { path: sub }) } as never, { configurable: { thread_id: thread } })));
      assert.equal(res.error, undefined);
      return (res.files as string[]).sort();
    };
    const js = await found("js");
    assert.deepEqual(js, await found("ripgrep"));
    assert.deepEqual(js, ["case.txt", "keep/b.log", "sub/top-only"]);
    assert.deepEqual(await found("js", "build"), await found("ripgrep", "build"));
  });
});

describe("deep chains finish (the `ignore` package took seconds per path)", () => {
  const DEPTH = 2_000;
  const RULE = "a/**/a/**/z";

  it(`the matcher: every prefix of a ${DEPTH}-deep chain with a 2-globstar rule`, { timeout: 60_000 }, () => {
    // The old matcher: ~3.6 s for the deepest path alone, ~30 min for all of them.
    const rules = new Gitignore([RULE, "*.log"]);
    const chain = Array<string>(DEPTH).fill("a").join("/");
    assert.equal(rules.ignores(chain, true, "path"), false);
    assert.equal(rules.ignores(`${chain}/z`, false, "path"), true);
    for (let i = 1; i <= chain.length; i += 2) assert.equal(rules.ignores(chain.slice(0, i), true, "walker"), false);
  });

  it(`a walk with a rule file at every level of a ${DEPTH}-deep chain (rules that never die)`, { timeout: 60_000 }, () => {
    // Testing each entry's whole path against every file's rules is cubic in the depth (the
    // tree took 6.5 s at depth 500 that way); the cursors make each step cost the name's length.
    const rules = new Gitignore(["a/**/a/**/?a/a", "**/b", "!**/c/**"]);
    let walk = IgnoreWalk.EMPTY;
    for (let d = 0; d < DEPTH; d++) {
      walk = walk.with(rules);
      assert.equal(walk.ignores("a", true), false);
      assert.equal(walk.ignores("b", false), true);
      walk = walk.enter("a");
    }
  });

  it(`the tree and the JS search over a ${DEPTH}-deep chain`, { timeout: 300_000 }, async () => {
    const root = path.join(tmp, "deep");
    const thread = "t";
    const dir = path.join(root, thread);
    const deepest = path.join(dir, ...Array<string>(DEPTH - 1).fill("a"));
    await mkdir(deepest, { recursive: true });
    // A rule file at every level: the old matcher re-tested each entry's whole path against each
    // file (the tree took 23 s at depth 500, more than cubic in the depth); now ~10 s at depth 2000.
    for (let d = 0, at = dir; d < DEPTH; d++, at = path.join(at, "a")) await writeFile(path.join(at, ".gitignore"), `${RULE}\na/**/a/**/?a/a\n*.log\n`);
    await writeFile(path.join(deepest, "z"), "needle\n");
    await writeFile(path.join(deepest, "hit"), "needle\n");
    await writeFile(path.join(dir, "skip.log"), "needle\n");
    const text = await renderDirectoryTree(dir, { maxEntries: Infinity, maxChars: Infinity });
    assert.match(text, /hit/);
    assert.doesNotMatch(text, /\bz\b|skip\.log/);
    const js = createSearchFilesTool({ rootDir: root, engine: "js" });
    const res = JSON.parse(String(await js.invoke({ pattern: "needle", output_mode: "files_only" } as never, { configurable: { thread_id: thread } })));
    assert.equal(res.error, undefined);
    assert.deepEqual(
      (res.files as string[]).map((f) => f.split("/").pop()),
      ["hit"],
    );
  });
});
