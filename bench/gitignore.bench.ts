/**
 * Per-path cost of workspace .gitignore matching at depths 10/100/1000: the linear-time matcher
 * (src/search/gitignoreMatch.ts, "walker" mode as the tree and JS search use it, and "path" mode
 * with every parent checked) against the anchor, the `ignore` package it replaced (which checks
 * every parent prefix). Each call tests a distinct path (the `ignore` package caches verdicts per path).
 */
import ignore from "ignore";
import { Gitignore, IgnoreWalk } from "../src/search/gitignoreMatch.js";
import { fmt } from "./fixtures.js";

/** Label, rules, and the leaf of the i-th path (below the chain of `a` directories). */
const RULE_SETS: Array<[string, string[], (i: number) => string]> = [
  ["typical (`node_modules/`, `*.log`, `/dist`, `build/`, `**/tmp/**`, `!keep.log`)", ["node_modules/", "*.log", "/dist", "build/", "**/tmp/**", "!keep.log"], (i) => `f${i}.txt`],
  ["2-globstar `a/**/a/**/z` (refused by the literal pre-check)", ["a/**/a/**/z"], (i) => `f${i}.txt`],
  ["2-globstar `a/**/a/**/b*z`, leaf `b<i>/z` (the NFA runs)", ["a/**/a/**/b*z"], (i) => `b${i}/z`],
];

/** Microseconds per call of `test` on distinct paths under `dir`, repeated until about `budgetMs` have passed (at least 3 calls). */
function perPath(dir: string, leaf: (i: number) => string, test: (p: string) => unknown, budgetMs: number): number {
  let calls = 0;
  const t0 = performance.now();
  do test(`${dir}/${leaf(calls++)}`);
  while (calls < 3 || performance.now() - t0 < budgetMs);
  return ((performance.now() - t0) * 1000) / calls;
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const depths = quick ? [10, 100] : [10, 100, 1000];
  const rows: string[] = [];
  for (const [label, rules, leaf] of RULE_SETS) {
    for (const depth of depths) {
      const dir = Array<string>(depth - 1).fill("a").join("/");
      const ours = new Gitignore(rules);
      const theirs = ignore({ ignorecase: false }).add(rules);
      let walk = IgnoreWalk.EMPTY.with(ours);
      for (const part of dir.split("/")) walk = walk.enter(part);
      const positioned = walk;
      perPath(dir, leaf, (p) => ours.ignores(p, false, "walker"), 50); // warm-up
      // As the tree and the JS search test an entry: the cursor carried down to its directory.
      const cursor = perPath(dir, leaf, (p) => {
        const slash = p.lastIndexOf("/");
        let at = positioned;
        if (slash > dir.length) at = at.enter(p.slice(dir.length + 1, slash));
        return at.ignores(p.slice(slash + 1), false);
      }, 300);
      const walker = perPath(dir, leaf, (p) => ours.ignores(p, false, "walker"), 300);
      const full = perPath(dir, leaf, (p) => ours.ignores(p, false, "path"), 300);
      const old = perPath(dir, leaf, (p) => theirs.ignores(p), depth >= 1000 ? 0 : 300);
      rows.push(`| ${label} | ${depth} | ${fmt(cursor)} µs | ${fmt(walker)} µs | ${fmt(full)} µs | ${fmt(old)} µs | ${fmt(old / cursor)}× / ${fmt(old / walker)}× / ${fmt(old / full)}× |`);
    }
  }
  await Promise.resolve();
  return [
    "## .gitignore matching per path",
    "",
    "One file path of the given depth (a chain of `a` directories), rules compiled once. *Walk cursor*: the rules positioned at the file's directory (what the tree and the JS search carry down), testing the name. *Walker mode*: the whole path, the entry only. *Path mode*: the entry and every parent. Anchor: the `ignore` package (full-path semantics, every parent prefix tested).",
    "",
    "| rules | depth | walk cursor | walker mode | path mode | `ignore` package | speed-up (cursor / walker / path) |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...rows,
  ].join("\n");
}
