// Workspace content is hostile input on the host-side read routes (issue 23, items 1, 2, 6): a
// FIFO, a socket or a swapped symlink where the tree, search, artifacts or downloads read a file
// never blocks, never leaks what it points at; planted ignore rules cannot freeze the event loop;
// archive entry names are the files' own components. Every FIFO case is bounded: a regression
// fails at the test's timeout (and `after` opens each FIFO once for writing, which releases a
// reader stuck in open(), so a regression cannot hold the test process either).
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { constants } from "node:fs";
import { lstat, mkdir, mkdtemp, open, readdir, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { unzipSync } from "fflate";
import { DirHandle, EntryChangedError, readWorkspaceFile } from "../src/environment/dirHandle.js";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { archiveEntryProblem } from "../src/artifacts/archiveEntryName.js";
import { archiveStream, listArtifacts } from "../src/artifacts/artifacts.js";
import { getFile, isTransferRefusal, putFile } from "../src/artifacts/transfer.js";
import { boundedIgnoreRules } from "../src/guards/ignoreRules.js";
import { LIMITS } from "../src/guards/limits.js";
import { runJsSearch } from "../src/search/fallback.js";
import { detectRipgrep, runRipgrep } from "../src/search/ripgrep.js";
import type { SearchRequest } from "../src/search/types.js";
import { renderDirectoryTree } from "../src/tree.js";
import { Workspace } from "../src/workspace.js";

const sh = promisify(execFile);
/** A regression that blocks on a FIFO fails here instead of hanging CI. */
const BOUND = { timeout: 20_000 };
let tmp = "";
let n = 0;
const fifos: string[] = [];
const servers: net.Server[] = [];

before(async () => {
  tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-hostile-")));
});
after(async () => {
  // Release any reader a regression left blocked in open() on a FIFO (a writer arriving ends the wait).
  for (const f of fifos) {
    const fh = await open(f, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => undefined);
    await fh?.close();
  }
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await sh("rm", ["-rf", tmp]);
});

async function caseDir(): Promise<string> {
  const dir = path.join(tmp, `case${n++}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

async function mkfifo(p: string): Promise<void> {
  await sh("mkfifo", [p]);
  fifos.push(p);
}

/** A listening Unix socket at `p` (open() on it fails with ENXIO; a plain read path must not crash). */
async function mksocket(p: string): Promise<void> {
  const server = net.createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(p, resolve));
}

describe("DirHandle.readRegular / readWorkspaceFile: the one host-side reader", () => {
  test("a FIFO and a socket are reported, never read; a symlink is refused; a listed identity must match", BOUND, async () => {
    const dir = await caseDir();
    await writeFile(path.join(dir, "ok.txt"), "hello");
    await mkfifo(path.join(dir, "fifo"));
    await mksocket(path.join(dir, "sock"));
    await writeFile(path.join(tmp, "outside.txt"), "outside");
    await symlink(path.join(tmp, "outside.txt"), path.join(dir, "link"));
    const d = (await DirHandle.openVerified(dir, dir))!;
    try {
      const ok = await d.readRegular("ok.txt", 100);
      assert.equal(ok?.kind === "file" && ok.data.toString(), "hello");
      assert.deepEqual(await d.readRegular("fifo", 100), { kind: "special" });
      assert.deepEqual(await d.readRegular("sock", 100), { kind: "special" });
      await assert.rejects(d.readRegular("link", 100), EntryChangedError);
      assert.equal(await d.readRegular("missing", 100), undefined);
      assert.deepEqual(await d.readRegular("ok.txt", 3), { kind: "too-large", size: 5 });
      const s = await lstat(path.join(dir, "ok.txt"));
      await assert.rejects(d.readRegular("ok.txt", 100, { ino: s.ino + 1, dev: s.dev }), EntryChangedError);
    } finally {
      await d.close();
    }
  });

  test("a parent directory swapped for a symlink is not followed", BOUND, async () => {
    const root = await caseDir();
    await mkdir(path.join(tmp, "elsewhere"), { recursive: true });
    await writeFile(path.join(tmp, "elsewhere", ".gitignore"), "secret\n");
    await symlink(path.join(tmp, "elsewhere"), path.join(root, "sub"));
    assert.equal(await readWorkspaceFile({ dir: root, real: root }, "sub/.gitignore", 1000), undefined);
    // The directory is opened, but it is not where the path says: refused too.
    assert.equal(await DirHandle.openVerified(path.join(tmp, "elsewhere"), path.join(root, "sub")), undefined);
    await mkdir(path.join(root, "real"));
    await writeFile(path.join(root, "real", ".gitignore"), "x\n");
    const got = await readWorkspaceFile({ dir: root, real: root }, "real/.gitignore", 1000);
    assert.equal(got?.kind === "file" && got.data.toString(), "x\n");
  });
});

/**
 * Renames in `dir`, in a tight loop in another process, until killed: the race a hostile agent
 * runs. Resolves once the loop is running (it creates `started`).
 */
async function swapLoop(dir: string, ...steps: [string, string][]): Promise<ReturnType<typeof spawn>> {
  const body = steps.map(([a, b]) => `    try: os.rename(${JSON.stringify(a)}, ${JSON.stringify(b)})\n    except OSError: pass`).join("\n");
  const child = spawn("python3", ["-c", `import os\nos.chdir(${JSON.stringify(dir)})\nopen("started", "w").close()\nwhile True:\n${body}\n`], { stdio: "ignore" });
  while (!(await lstat(path.join(dir, "started")).then(() => true, () => false))) await new Promise((r) => setTimeout(r, 10));
  return child;
}

describe("tree: ignore files are read through the one reader", () => {
  test("a FIFO .gitignore (root and nested) and a socket .gitignore are listed, never opened", BOUND, async () => {
    const dir = await caseDir();
    await mkdir(path.join(dir, "a"));
    await mkdir(path.join(dir, "b"));
    await writeFile(path.join(dir, "a", "x.txt"), "");
    await writeFile(path.join(dir, "b", "y.txt"), "");
    await mkfifo(path.join(dir, ".gitignore"));
    await mkfifo(path.join(dir, "a", ".gitignore"));
    await mksocket(path.join(dir, "b", ".gitignore"));
    const text = await renderDirectoryTree(dir);
    assert.match(text, /x\.txt/);
    assert.match(text, /y\.txt/);
    assert.equal(text.split("\n").filter((l) => l.endsWith(".gitignore")).length, 3, "all three are shown as entries");
  });

  test("a directory swapped for a symlink out of the tree is never listed", BOUND, async () => {
    const dir = await caseDir();
    const outside = path.join(tmp, `outside${n}`);
    await mkdir(outside);
    await writeFile(path.join(outside, "host-secret.txt"), "");
    await mkdir(path.join(dir, "d"));
    await writeFile(path.join(dir, "d", "inside.txt"), "");
    // Swap `d` for a link to the outside directory in a tight loop while rendering: a render may
    // show `d/` (listed before the swap), `d -> [outside the tree]` or nothing, never the outside file.
    await symlink(outside, path.join(dir, "d.l"));
    const swapper = await swapLoop(dir, ["d", "d.r"], ["d.l", "d"], ["d", "d.l"], ["d.r", "d"]);
    try {
      for (let i = 0; i < 400; i++) {
        const text = await renderDirectoryTree(dir);
        assert.doesNotMatch(text, /host-secret/, text);
      }
    } finally {
      swapper.kill("SIGKILL");
    }
  });

  test("a .gitignore swapped for a symlink to an outside file never applies that file's rules", BOUND, async () => {
    const dir = await caseDir();
    const rules = path.join(tmp, `rules${n}`);
    await writeFile(rules, "visible.txt\n");
    await writeFile(path.join(dir, "visible.txt"), "");
    await writeFile(path.join(dir, ".gitignore"), "other\n");
    await symlink(rules, path.join(dir, "g.l"));
    const swapper = await swapLoop(dir, [".gitignore", "g.r"], ["g.l", ".gitignore"], [".gitignore", "g.l"], ["g.r", ".gitignore"]);
    try {
      for (let i = 0; i < 400; i++) {
        const text = await renderDirectoryTree(dir);
        assert.match(text, /visible\.txt/, "the outside file's rule was applied");
      }
    } finally {
      swapper.kill("SIGKILL");
    }
  });

  // Bounded at 15 s: unbounded, this case takes 28-40 s here; bounded, milliseconds.
  test("a planted rule with many ** cannot freeze the render (9 globstars, a 44-deep chain)", { timeout: 15_000 }, async () => {
    const dir = await caseDir();
    const chain = Array.from({ length: 44 }, () => "a");
    await mkdir(path.join(dir, ...chain), { recursive: true });
    await writeFile(path.join(dir, ...chain, "z-file"), "");
    // Unbounded, this rule blocked the event loop ~98 s per render (issue 23).
    await writeFile(path.join(dir, ".gitignore"), `${Array.from({ length: 9 }, () => "**/a").join("/")}/z\nkept-out\n`);
    await writeFile(path.join(dir, "kept-out"), "");
    const text = await renderDirectoryTree(dir, { maxEntries: Infinity, maxChars: Infinity });
    assert.match(text, /z-file/);
    assert.doesNotMatch(text, /kept-out/, "the file's other rules still apply");
  });

  test("boundedIgnoreRules is the one gate: rules over the globstar or length limit are dropped", () => {
    const many = `${"**/a/".repeat(LIMITS.gitignoreMaxGlobstars + 1)}z`;
    const few = `${"**/a/".repeat(LIMITS.gitignoreMaxGlobstars)}z`;
    assert.deepEqual(boundedIgnoreRules(`${many}\n${few}\r\n*.log\n${"x".repeat(LIMITS.globMaxChars + 1)}`), [few, "*.log"]);
  });
});

function request(dir: string, over: Partial<SearchRequest> = {}): SearchRequest {
  return { target: "content", pattern: "needle", mode: "content", cwd: dir, searchPath: dir, context: 0, maxRecords: 100, timeoutMs: 30_000, maxOutputBytes: 1 << 20, ...over };
}

/** A workspace whose root and nested `.gitignore` are FIFOs (and one a socket), with a match in each. */
async function fifoWorkspace(): Promise<string> {
  const dir = await caseDir();
  await mkdir(path.join(dir, "a"));
  await mkdir(path.join(dir, "b"));
  await writeFile(path.join(dir, "top.txt"), "needle top\n");
  await writeFile(path.join(dir, "a", "x.txt"), "needle a\n");
  await writeFile(path.join(dir, "b", "y.txt"), "needle b\n");
  await mkfifo(path.join(dir, ".gitignore"));
  await mkfifo(path.join(dir, "a", ".gitignore"));
  await mksocket(path.join(dir, "b", ".gitignore"));
  return dir;
}

describe("search: ignore files through the one reader; ripgrep never waits on a FIFO", () => {
  test("JS engine: FIFO and socket .gitignore files are skipped, every match found", BOUND, async () => {
    const dir = await fifoWorkspace();
    const out = await runJsSearch(request(dir));
    assert.equal(out.error, undefined);
    assert.deepEqual(out.lines.map((l) => path.relative(dir, l.path)).sort(), ["a/x.txt", "b/y.txt", "top.txt"]);
    const sub = await runJsSearch(request(dir, { searchPath: path.join(dir, "a") }));
    assert.deepEqual(sub.lines.map((l) => path.relative(dir, l.path)), ["a/x.txt"]);
  });

  test("ripgrep: a FIFO .gitignore stops ripgrep early and the JS engine answers (content and files)", BOUND, async (t) => {
    const rg = await detectRipgrep();
    if (!rg) return t.skip("ripgrep is not installed");
    const dir = await fifoWorkspace();
    const out = await runRipgrep(request(dir), rg);
    assert.equal(out.error, undefined);
    assert.equal(out.complete, true);
    assert.deepEqual(out.lines.map((l) => path.relative(dir, l.path)).sort(), ["a/x.txt", "b/y.txt", "top.txt"]);
    const files = await runRipgrep(request(dir, { target: "files", pattern: "*.txt" }), rg);
    assert.deepEqual(files.files.map((f) => path.relative(dir, f)).sort(), ["a/x.txt", "b/y.txt", "top.txt"]);
  });

  test("ripgrep without hostile files still answers itself", BOUND, async (t) => {
    const rg = await detectRipgrep();
    if (!rg) return t.skip("ripgrep is not installed");
    const dir = await caseDir();
    await writeFile(path.join(dir, "f.txt"), "needle\n");
    await writeFile(path.join(dir, ".gitignore"), "ignored.txt\n");
    await writeFile(path.join(dir, "ignored.txt"), "needle\n");
    const out = await runRipgrep(request(dir), rg);
    assert.equal(out.engine, "ripgrep");
    assert.deepEqual(out.lines.map((l) => path.basename(l.path)), ["f.txt"]);
  });

  test("JS engine: a planted 9-globstar rule over a deep chain does not stall the walk", { timeout: 15_000 }, async () => {
    const dir = await caseDir();
    const chain = Array.from({ length: 44 }, () => "a");
    await mkdir(path.join(dir, ...chain), { recursive: true });
    await writeFile(path.join(dir, ...chain, "z.txt"), "needle\n");
    await writeFile(path.join(dir, ".gitignore"), `${Array.from({ length: 9 }, () => "**/a").join("/")}/z\n`);
    const out = await runJsSearch(request(dir));
    assert.equal(out.lines.length, 1);
  });
});

describe("artifacts and downloads", () => {
  async function workspace(): Promise<{ ws: Workspace; ops: LocalFileOperations; dir: string }> {
    const root = await caseDir();
    const ws = Workspace.forThread(root, "t");
    const ops = new LocalFileOperations();
    await ws.ensure(ops);
    return { ws, ops, dir: ws.dir };
  }

  test("entry names are the files' own components: a backslash name is listed but never packed", BOUND, async () => {
    const { ws, ops, dir } = await workspace();
    await mkdir(path.join(dir, "app"));
    await writeFile(path.join(dir, "app", "settings.py"), "REAL\n");
    await writeFile(path.join(dir, "\\app\\settings.py"), "PLANTED\n");
    await mkdir(path.join(dir, "sub"));
    await writeFile(path.join(dir, "sub\\..\\notes.txt"), "PLANTED\n");
    await writeFile(path.join(dir, "notes.txt"), "REAL\n");
    const list = await listArtifacts(ws, ops, { since: 0 });
    assert.deepEqual(list.files.map((f) => f.path).sort(), ["\\app\\settings.py", "app/settings.py", "notes.txt", "sub\\..\\notes.txt"]);
    assert.deepEqual(list.notArchived.map((f) => f.path), ["\\app\\settings.py", "sub\\..\\notes.txt"]);
    assert.match(list.notArchived[0]!.reason, /backslash/);
    const zip = unzipSync(new Uint8Array(await new Response(list.archive("zip")).arrayBuffer()));
    assert.deepEqual(Object.keys(zip).sort(), ["app/settings.py", "notes.txt"]);
    assert.equal(new TextDecoder().decode(zip["app/settings.py"]), "REAL\n");
    const tarFile = path.join(tmp, `a${n++}.tar`);
    await writeFile(tarFile, new Uint8Array(await new Response(list.archive("tar")).arrayBuffer()));
    const { stdout } = await sh("tar", ["-tf", tarFile]);
    assert.deepEqual(stdout.trim().split("\n").sort(), ["app/settings.py", "notes.txt"]);
    // archiveStream refuses such paths from any caller.
    const direct = unzipSync(new Uint8Array(await new Response(archiveStream([{ path: "/etc/x", size: 1, modifiedAt: new Date() }, { path: "a/../b", size: 1, modifiedAt: new Date() }, { path: "ok", size: 1, modifiedAt: new Date() }], "zip", async () => new Uint8Array([1]))).arrayBuffer()));
    assert.deepEqual(Object.keys(direct), ["ok"]);
  });

  test("archiveEntryProblem: absolute, '.', '..', backslash, control and non-UTF-8 names", () => {
    assert.equal(archiveEntryProblem(["a", "b.txt"]), undefined);
    for (const bad of [[], ["", "x"], [".", "x"], ["a", ".."], ["a\\b"], ["a\nb"], ["bad\ufffdname"]]) assert.ok(archiveEntryProblem(bad), JSON.stringify(bad));
  });

  test("FIFOs and sockets are never listed; a listed file swapped for a FIFO, a socket or a symlink is left out", BOUND, async () => {
    const { ws, ops, dir } = await workspace();
    await mkfifo(path.join(dir, "pipe.txt"));
    await mksocket(path.join(dir, "sock.txt"));
    for (const name of ["f.txt", "s.txt", "l.txt", "keep.txt"]) await writeFile(path.join(dir, name), `${name}\n`);
    await writeFile(path.join(dir, "other.txt"), "OTHER\n");
    const list = await listArtifacts(ws, ops, { since: 0 });
    assert.deepEqual(list.files.map((f) => f.path), ["f.txt", "keep.txt", "l.txt", "other.txt", "s.txt"]);
    // Swapped after the listing, before packing.
    await rm(path.join(dir, "f.txt"));
    await mkfifo(path.join(dir, "f.txt"));
    await rm(path.join(dir, "s.txt"));
    await mksocket(path.join(dir, "s.txt"));
    await rm(path.join(dir, "l.txt"));
    await symlink("other.txt", path.join(dir, "l.txt"));
    const zip = unzipSync(new Uint8Array(await new Response(list.archive("zip")).arrayBuffer()));
    assert.deepEqual(Object.keys(zip).sort(), ["keep.txt", "other.txt"], "the link's target is not packed under the listed name");
    // A file replaced by another file (new inode) is not the one listed either.
    await writeFile(path.join(dir, "k2"), "NEW\n");
    await rename(path.join(dir, "k2"), path.join(dir, "keep.txt"));
    const tarFile = path.join(tmp, `b${n++}.tar`);
    await writeFile(tarFile, new Uint8Array(await new Response(list.archive("tar")).arrayBuffer()));
    assert.deepEqual((await sh("tar", ["-tf", tarFile])).stdout.trim().split("\n"), ["other.txt"]);
  });

  test("downloads refuse a FIFO and a socket; uploads replace them without opening them", BOUND, async () => {
    const { ws, ops, dir } = await workspace();
    await mkfifo(path.join(dir, "pipe"));
    await mksocket(path.join(dir, "sock"));
    for (const name of ["pipe", "sock"]) {
      const got = await getFile(ws, ops, name);
      assert.ok(isTransferRefusal(got) && got.code === "permission_denied", `${name}: ${JSON.stringify(got)}`);
    }
    // A stat that saw a regular file, then a FIFO by the time of the open: refused, not read as empty.
    await writeFile(path.join(dir, "swap"), "data\n");
    const swapping = Object.create(ops) as LocalFileOperations;
    swapping.stat = async (p: string) => {
      const s = await ops.stat(p);
      if (p.endsWith("/swap")) {
        await rm(p);
        await mkfifo(p);
      }
      return s;
    };
    const swapped = await getFile(ws, swapping, "swap");
    assert.ok(isTransferRefusal(swapped) && /not a regular file/.test(swapped.message), JSON.stringify(swapped));
    for (const name of ["pipe", "sock"]) {
      const put = await putFile(ws, ops, name, new TextEncoder().encode("up\n"));
      assert.deepEqual(put, { path: name, bytes: 3 });
    }
    assert.ok((await readdir(dir)).includes("pipe"));
    assert.ok((await lstat(path.join(dir, "pipe"))).isFile());
  });
});
