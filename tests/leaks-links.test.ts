// A workspace that arrives with planted links (an uploaded archive, a cloned repo): every tool
// judges a name by what it really is — symlinks resolved, hard links refused.
import assert from "node:assert/strict";
import { link, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { ToolMessage } from "@langchain/core/messages";
import { renderDirectoryTree } from "../src/tree.js";
import { resolveFileToolOptions, type FileToolOptions } from "../tools/fileToolSupport.js";
import { patchCore } from "../tools/patchTool.js";
import { readFileCore } from "../tools/readFile.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";
import { writeFileCore } from "../tools/writeFile.js";

const SECRET = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ng0000000000";
let root: string;
let ws: string;
let outside: string;
const cfg = { configurable: { thread_id: "t1" } };

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-leaks-links-"));
  ws = path.join(root, "t1");
  outside = path.join(root, "outside");
});
beforeEach(async () => {
  await rm(ws, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
  await mkdir(path.join(ws, "real"), { recursive: true });
  await mkdir(path.join(outside, "dir"), { recursive: true });
  await writeFile(path.join(outside, "secret.txt"), `OUTSIDE ${SECRET}\n`);
  await writeFile(path.join(outside, "rules"), "*.md\n");
  await writeFile(path.join(ws, ".env"), `GITHUB_TOKEN=${SECRET}\n`);
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const opts = (o: FileToolOptions = {}) => resolveFileToolOptions({ rootDir: root, ...o });
const read = async (p: string, o?: FileToolOptions) => (await readFileCore({ path: p }, cfg, opts(o))).payload as Record<string, any>;
const write = async (p: string, content: string) => (await writeFileCore({ path: p, content }, cfg, opts())).payload as Record<string, any>;
const patch = async (args: Record<string, unknown>) => (await patchCore(args as never, cfg, opts())).payload as Record<string, any>;
async function search(args: Record<string, unknown>): Promise<Record<string, any>> {
  const raw = await createSearchFilesTool({ rootDir: root }).invoke(args as never, cfg);
  return JSON.parse(typeof raw === "string" ? raw : String((raw as ToolMessage).content));
}
const noSecret = (answer: unknown) => assert.ok(!JSON.stringify(answer).includes(SECRET.slice(0, 12)), JSON.stringify(answer));

describe("README.txt -> .env", () => {
  beforeEach(async () => {
    await symlink(".env", path.join(ws, "README.txt"));
  });

  it("read_file, search_files path=, patch and write_file all see a credential file", async () => {
    const r = await read("README.txt");
    assert.match(r.error, /protected credential file/);
    noSecret(r);
    const s = await search({ pattern: "TOKEN", path: "README.txt" });
    assert.match(s.error, /protected credential file/);
    noSecret(s);
    const p = await patch({ path: "README.txt", old_string: "x", new_string: "y" });
    assert.match(p.error, /protected credential file/);
    noSecret(p);
    const w = await write("README.txt", "overwrite\n");
    assert.match(w.error, /protected credential file/);
    assert.equal(await readFile(path.join(ws, ".env"), "utf8"), `GITHUB_TOKEN=${SECRET}\n`);
  });

  it("the tree may list the link's name (names are not contents)", async () => {
    const tree = await renderDirectoryTree(ws);
    assert.match(tree, /README\.txt/);
    noSecret(tree);
  });
});

describe(".gitignore -> a file outside the workspace", () => {
  it("is never read as rules: the tree and search still show README.md", async () => {
    await writeFile(path.join(ws, "README.md"), "hello\n");
    await symlink(path.join(outside, "rules"), path.join(ws, ".gitignore"));
    assert.match(await renderDirectoryTree(ws), /README\.md/);
    const s = await search({ pattern: "hello" });
    assert.deepEqual(s.matches.map((m: { path: string }) => m.path), ["README.md"]);
  });
});

describe("directory links", () => {
  it("data -> outside dir: reads, writes, patch adds refused; nothing is created outside", async () => {
    await symlink(path.join(outside, "dir"), path.join(ws, "data"));
    await writeFile(path.join(outside, "dir", "x.txt"), `x ${SECRET}\n`);
    noSecret(await read("data/x.txt"));
    assert.ok((await write("data/new.txt", "hi\n")).error);
    assert.ok((await write("data/deep/new.txt", "hi\n")).error);
    assert.ok((await patch({ mode: "patch", patch: "*** Begin Patch\n*** Add File: data/p.txt\n+hi\n*** End Patch" })).error);
    assert.deepEqual(await readdir(path.join(outside, "dir")), ["x.txt"]);
  });

  it("links that stay inside keep working for reads and writes", async () => {
    await symlink("real", path.join(ws, "alias"));
    await writeFile(path.join(ws, "real", "a.txt"), "alpha\n");
    assert.equal((await read("alias/a.txt")).content, "1|alpha");
    assert.equal((await write("alias/b/c.txt", "beta\n")).bytes_written, 5);
    assert.equal(await readFile(path.join(ws, "real", "b", "c.txt"), "utf8"), "beta\n");
  });
});

describe("hard links", () => {
  it("a hard link to .env inside the workspace is refused by read_file, patch and search", async () => {
    await link(path.join(ws, ".env"), path.join(ws, "notes.txt"));
    const r = await read("notes.txt");
    assert.match(r.error, /hard link/);
    noSecret(r);
    noSecret(await patch({ path: "notes.txt", old_string: "nothing", new_string: "x" }));
    noSecret(await search({ pattern: "GITHUB" }));
  });

  it("a hard link to a file outside the workspace is refused", async () => {
    await link(path.join(outside, "secret.txt"), path.join(ws, "copy.txt"));
    noSecret(await read("copy.txt"));
  });

  it("write_file may replace a hard-linked file: the link is broken, the other name keeps its content", async () => {
    await link(path.join(ws, ".env"), path.join(ws, "notes.txt"));
    assert.equal((await write("notes.txt", "plain notes\n")).bytes_written, 12);
    assert.equal(await readFile(path.join(ws, "notes.txt"), "utf8"), "plain notes\n");
    assert.equal(await readFile(path.join(ws, ".env"), "utf8"), `GITHUB_TOKEN=${SECRET}\n`);
  });

  it("allowHardLinks: true reads them (opt-in)", async () => {
    await writeFile(path.join(ws, "a.txt"), "alpha\n");
    await link(path.join(ws, "a.txt"), path.join(ws, "b.txt"));
    assert.equal((await read("b.txt", { allowHardLinks: true })).content, "1|alpha");
    assert.match((await read("b.txt")).error, /hard link/);
    assert.equal((await stat(path.join(ws, "b.txt"))).nlink, 2);
  });
});

describe("process files and direnv", () => {
  for (const p of ["/proc/self/smaps_rollup", "/proc/self/numa_maps", "/proc/self/smaps", "/proc/1/task/1/smaps_rollup"]) {
    it(`read_file in open mode refuses ${p}, also through a link`, async () => {
      assert.match((await read(p, { confine: false })).error, /environment or memory|device or process/);
    });
  }
  it("a link to /proc/self/smaps_rollup is refused by its real path", async () => {
    await symlink("/proc/self/smaps_rollup", path.join(ws, "mem.txt"));
    assert.ok((await read("mem.txt", { confine: false })).error);
    assert.ok((await read("mem.txt")).error);
  });
  it(".envrc, .envrc.local and .direnv/ files are credential files; .env.example is not", async () => {
    for (const name of [".envrc", ".envrc.local"]) {
      await writeFile(path.join(ws, name), `export GITHUB_TOKEN=${SECRET}\n`);
      const r = await read(name);
      assert.match(r.error, /protected credential file/);
      noSecret(r);
    }
    await mkdir(path.join(ws, ".direnv"));
    await writeFile(path.join(ws, ".direnv", "cache"), `GITHUB_TOKEN=${SECRET}\n`);
    noSecret(await read(".direnv/cache"));
    await writeFile(path.join(ws, ".env.example"), "GITHUB_TOKEN=\n");
    assert.equal((await read(".env.example")).content, "1|GITHUB_TOKEN=");
  });
});
