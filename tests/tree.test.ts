import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { chmod, mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { fairShare, renderDirectoryTree, treeFingerprint } from "../src/tree.js";

const sh = promisify(execFile);
let tmp: string;
let n = 0;

before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-tree-"));
});
after(async () => {
  // `rm -rf` copes with paths longer than PATH_MAX (the ENAMETOOLONG case below); fs.rm does not.
  await sh("rm", ["-rf", tmp]);
});

/** Builds a directory from a spec: keys ending in `/` are directories. */
async function build(spec: Record<string, string | null>): Promise<string> {
  const dir = path.join(tmp, `case${n++}`);
  await mkdir(dir);
  for (const [rel, content] of Object.entries(spec)) {
    const p = path.join(dir, rel);
    if (rel.endsWith("/")) await mkdir(p, { recursive: true });
    else {
      await mkdir(path.dirname(p), { recursive: true });
      await writeFile(p, content ?? "");
    }
  }
  return dir;
}

describe("renderDirectoryTree", () => {
  test("draws connectors, directories first, sorted, with / after directory names", async () => {
    const dir = await build({ "b.txt": "", "A.md": "", "src/": null, "src/lib/x.ts": "", "src/index.ts": "", "docs/": null });
    assert.equal(
      await renderDirectoryTree(dir),
      [".", "|-- docs/", "|-- src/", "|   |-- lib/", "|   |   `-- x.ts", "|   `-- index.ts", "|-- A.md", "`-- b.txt"].join("\n"),
    );
  });

  test("uses rootLabel for the first line; an empty directory is just the label", async () => {
    const dir = await build({});
    assert.equal(await renderDirectoryTree(dir, { rootLabel: "workspace/" }), "workspace/");
  });

  test("sorting is case-insensitive first, code-unit order to break ties, independent of locale", async () => {
    const dir = await build({ b: "", B: "", a: "", _x: "", "é": "", Z: "" });
    const names = (await renderDirectoryTree(dir)).split("\n").slice(1).map((l) => l.slice(4));
    assert.deepEqual(names, ["_x", "a", "B", "b", "Z", "é"]);
  });

  test("what does not fit the budget is summarised with a count, never dropped", async () => {
    const spec: Record<string, string> = {};
    for (let i = 0; i < 1300; i++) spec[`f${String(i).padStart(4, "0")}.txt`] = "";
    const dir = await build(spec);
    const lines = (await renderDirectoryTree(dir, { maxEntries: 10 })).split("\n");
    assert.equal(lines.length, 1 + 10 + 1);
    assert.equal(lines.at(-1), "`-- ... 1,290 more entries");
    assert.equal(lines[10], "|-- f0009.txt");
  });

  test("budget is shared fairly across a level, partly shown directories end with a summary line", async () => {
    const spec: Record<string, string> = {};
    for (const d of ["a", "b", "c"]) for (let i = 0; i < 10; i++) spec[`${d}/f${i}.txt`] = "";
    const dir = await build(spec);
    const text = await renderDirectoryTree(dir, { maxEntries: 9 });
    for (const d of ["a", "b", "c"]) {
      assert.match(text, new RegExp(`\`-- \\.\\.\\. 8 more entries in ${d}/`));
    }
    assert.equal(text.split("\n").filter((l) => /f\d\.txt$/.test(l)).length, 6);
  });

  test("directories shown without their entries carry their own count, singular for one", async () => {
    const dir = await build({ "one/x": "", "many/a": "", "many/b": "", "empty/": null });
    assert.equal(
      await renderDirectoryTree(dir, { maxDepth: 1 }),
      [".", "|-- empty/", "|-- many/ ... 2 more entries", "`-- one/ ... 1 more entry"].join("\n"),
    );
    const nested = await renderDirectoryTree(dir, { maxEntries: 3 });
    assert.match(nested, /many\/ \.\.\. 2 more entries/);
  });

  test("maxDepth limits the levels listed", async () => {
    const dir = await build({ "a/b/c/d.txt": "" });
    assert.equal(await renderDirectoryTree(dir, { maxDepth: 2 }), [".", "`-- a/", "    `-- b/ ... 1 more entry"].join("\n"));
    assert.equal(await renderDirectoryTree(dir, { maxDepth: 0 }), ".\n`-- ... 1 more entry");
  });

  test("hides .git and node_modules by default; defaultIgnores: [] shows them", async () => {
    const dir = await build({ ".git/HEAD": "", "node_modules/x/index.js": "", "sub/node_modules/y.js": "", ".github/ci.yml": "", "a.txt": "" });
    const text = await renderDirectoryTree(dir);
    assert.doesNotMatch(text, /node_modules|\.git\//);
    assert.match(text, /\.github\//);
    const all = await renderDirectoryTree(dir, { defaultIgnores: [] });
    assert.match(all, /\|-- \.git\//);
    assert.match(all, /node_modules\//);
  });

  test("honours the root .gitignore, nested .gitignore files with negation, and extra patterns", async () => {
    const dir = await build({
      ".gitignore": "*.log\nbuild/\n",
      "app.log": "",
      "build/out.js": "",
      "keep.txt": "",
      "pkg/.gitignore": "!important.log\n*.tmp\n",
      "pkg/important.log": "",
      "pkg/other.log": "",
      "pkg/scratch.tmp": "",
      "notes.md": "",
      "secret.env": "",
    });
    const text = await renderDirectoryTree(dir, { ignore: ["*.env"] });
    assert.doesNotMatch(text, /app\.log|build\/|other\.log|scratch\.tmp|secret\.env/);
    assert.match(text, /important\.log/);
    assert.match(text, /keep\.txt/);
    assert.match(text, /notes\.md/);
    const raw = await renderDirectoryTree(dir, { useGitignore: false });
    assert.match(raw, /app\.log/);
    assert.match(raw, /build\//);
  });

  test("symlinks are shown with their target, never followed, and never name a path outside", async () => {
    const outside = await build({ "secret.txt": "" });
    const dir = await build({ "real/file.txt": "", "README.md": "" });
    await symlink(outside, path.join(dir, "escape"));
    await symlink("../../../../../../etc/passwd", path.join(dir, "climb"));
    await symlink("real", path.join(dir, "alias"));
    await symlink(path.join(dir, "README.md"), path.join(dir, "abs-inside"));
    const text = await renderDirectoryTree(dir);
    assert.match(text, /abs-inside -> README\.md/);
    assert.match(text, /alias -> real\n/);
    assert.match(text, /climb -> \[outside the tree\]/);
    assert.match(text, /escape -> \[outside the tree\]/);
    assert.doesNotMatch(text, /secret\.txt|etc\/passwd/);
    assert.ok(!text.includes(outside));
    assert.equal(text.split("\n").filter((l) => l.includes("file.txt")).length, 1, "alias/ is not descended");
  });

  test("draws in ASCII only (one non-ASCII character in the history makes every later checkpoint two-byte text)", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 40; i++) files[`d${i % 4}/sub/${String(i).padStart(2, "0")}-${"n".repeat(150)}.txt`] = "";
    const dir = await build(files);
    const texts = [
      await renderDirectoryTree(dir),
      await renderDirectoryTree(dir, { maxEntries: 5 }),
      await renderDirectoryTree(dir, { maxChars: 900 }),
      await renderDirectoryTree(dir, { maxDepth: 1 }),
    ];
    for (const text of texts) assert.match(text, /^[\x00-\x7f]*$/, `non-ASCII in:\n${text.slice(0, 400)}`);
    assert.match(texts[2]!, /\.\.\.\(\+[\d,]+ chars\)\.\.\./, "the budgeted render shortened names (the marker is covered)");
    assert.match(texts[1]!, /\.\.\. \d+ more entr/, "the entry budget summarised (the summary is covered)");
  });

  test("a file name cannot inject lines into the tree", async () => {
    const dir = await build({ "evil\n|-- fake.txt": "", "bell\u0007\u2028x": "" });
    const lines = (await renderDirectoryTree(dir)).split("\n");
    assert.equal(lines.length, 3);
    assert.ok(lines.includes("|-- bell\\x07\\u2028x"));
    assert.ok(lines.includes("`-- evil\\x0a|-- fake.txt"));
  });

  test("an unreadable directory is reported, not fatal", async () => {
    // Paths longer than PATH_MAX cannot be read by absolute path: an error even root gets.
    const dir = await build({ "ok.txt": "" });
    const seg = "d".repeat(250);
    const script = `const fs = require("fs"); for (let i = 0; i < 18; i++) { fs.mkdirSync("${seg}"); process.chdir("${seg}"); } fs.writeFileSync("leaf", "");`;
    await sh(process.execPath, ["-e", script], { cwd: dir });
    const text = await renderDirectoryTree(dir, { maxEntries: Infinity });
    assert.match(text, /\[unreadable: ENAMETOOLONG\]/);
    assert.match(text, /ok\.txt/);
  });

  test("a directory without permission is reported as EACCES", { skip: process.getuid?.() === 0 ? "root reads everything" : false }, async () => {
    const dir = await build({ "locked/x.txt": "", "ok.txt": "" });
    await chmod(path.join(dir, "locked"), 0o000);
    try {
      assert.match(await renderDirectoryTree(dir), /locked\/ \[unreadable: EACCES\]/);
    } finally {
      await chmod(path.join(dir, "locked"), 0o755);
    }
  });

  test("a missing root is reported on the first line", async () => {
    assert.equal(await renderDirectoryTree(path.join(tmp, "nope"), { rootLabel: "ws" }), "ws [unreadable: ENOENT]");
  });

  test("is deterministic, and its fingerprint changes with the structure", async () => {
    const dir = await build({ "a/1": "", "a/2": "", "b/3": "", c: "" });
    const one = await renderDirectoryTree(dir);
    const two = await renderDirectoryTree(dir, { concurrency: 1 });
    assert.equal(one, two);
    assert.equal(treeFingerprint(one), treeFingerprint(two));
    assert.match(treeFingerprint(one), /^[0-9a-f]{16}$/);
    await writeFile(path.join(dir, "a", "3"), "");
    assert.notEqual(treeFingerprint(await renderDirectoryTree(dir)), treeFingerprint(one));
  });

  test("validates its options", async () => {
    await assert.rejects(renderDirectoryTree(tmp, { maxEntries: -1 }), /maxEntries/);
    await assert.rejects(renderDirectoryTree(tmp, { maxDepth: 1.5 }), /maxDepth/);
    await assert.rejects(renderDirectoryTree(tmp, { rootLabel: "a\nb" }), /rootLabel/);
    await assert.rejects(renderDirectoryTree(tmp, { ignore: "*.log" as unknown as string[] }), /ignore/);
    await assert.rejects(renderDirectoryTree(""), /dir/);
    assert.throws(() => treeFingerprint(undefined as unknown as string), /treeFingerprint/);
  });
});

describe("fairShare", () => {
  test("splits evenly, caps by size, redistributes leftovers, then favours display order", () => {
    assert.deepEqual(fairShare([10, 10, 10], 9), [3, 3, 3]);
    assert.deepEqual(fairShare([1, 10, 10], 9), [1, 4, 4]);
    assert.deepEqual(fairShare([5, 5, 5], 2), [1, 1, 0]);
    assert.deepEqual(fairShare([2, 0, 3], 100), [2, 0, 3]);
    assert.deepEqual(fairShare([4, 4], Infinity), [4, 4]);
    assert.deepEqual(fairShare([4, 4], 0), [0, 0]);
  });
});
