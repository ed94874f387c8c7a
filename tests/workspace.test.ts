import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { DEFAULT_THREAD_ID, resolveRootDir, threadDirName, Workspace, WorkspacePathError } from "../src/workspace.js";

let tmp: string;
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-ws-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("thread directories", () => {
  const hostile = ["../evil", "..", ".", "a/b", "a\\b", "/etc", "C:\\Windows", "x\0y", "tab\tid", "\u0001", "x".repeat(200), ".hidden", "a/../../b", "~"];

  test("hostile thread ids always land directly under the root, encoded and distinct", () => {
    const root = path.join(tmp, "root");
    const dirs = new Set<string>();
    for (const id of hostile) {
      const ws = Workspace.forThread(root, id);
      assert.equal(path.dirname(ws.dir), root, `id ${JSON.stringify(id)}`);
      assert.match(path.basename(ws.dir), /~[0-9a-f]{24}$/, `id ${JSON.stringify(id)} is encoded`);
      assert.ok(!path.basename(ws.dir).includes("/") && !path.basename(ws.dir).includes("\0"));
      dirs.add(ws.dir);
    }
    assert.equal(dirs.size, hostile.length, "distinct ids never share a directory");
  });

  test("plain ids are used as they are; an encoded id cannot collide with a plain one", () => {
    assert.equal(threadDirName("t1"), "t1");
    assert.equal(threadDirName("user_42.session-7"), "user_42.session-7");
    assert.notEqual(threadDirName("a/b"), threadDirName("a_b"));
    assert.equal(threadDirName(undefined), DEFAULT_THREAD_ID);
    assert.equal(threadDirName(""), DEFAULT_THREAD_ID);
    assert.equal(Workspace.forThread(tmp).threadId, DEFAULT_THREAD_ID);
  });

  test("no I/O until ensure(); ensure creates the directory", async () => {
    const ws = Workspace.forThread(path.join(tmp, "lazy"), "t1");
    await assert.rejects(import("node:fs/promises").then((fs) => fs.stat(ws.dir)), /ENOENT/);
    await ws.ensure();
    assert.ok((await import("node:fs/promises").then((fs) => fs.stat(ws.dir))).isDirectory());
  });

  test("resolveRootDir refuses an empty root", () => {
    assert.throws(() => resolveRootDir(" "), /rootDir/);
  });
});

describe("agent paths", () => {
  let ws: Workspace;
  let outside: string;
  before(async () => {
    ws = Workspace.forThread(path.join(tmp, "paths"), "t1");
    await ws.ensure();
    outside = path.join(tmp, "outside");
    await mkdir(outside, { recursive: true });
    await writeFile(path.join(outside, "secret.txt"), "s");
    await mkdir(path.join(ws.dir, "real"), { recursive: true });
    await symlink(outside, path.join(ws.dir, "escape"));
    await symlink(path.join(ws.dir, "real"), path.join(ws.dir, "inner"));
  });

  test("relative, /-rooted and inside system paths resolve inside the thread directory", async () => {
    assert.equal(await ws.resolve("notes/todo.md"), path.join(ws.dir, "notes", "todo.md"));
    assert.equal(await ws.resolve("/notes/todo.md"), path.join(ws.dir, "notes", "todo.md"));
    assert.equal(await ws.resolve("notes\\todo.md"), path.join(ws.dir, "notes", "todo.md"));
    assert.equal(await ws.resolve("."), ws.dir);
    assert.equal(await ws.resolve("/"), ws.dir);
    assert.equal(await ws.resolve(path.join(ws.dir, "a.txt")), path.join(ws.dir, "a.txt"));
    assert.equal(await ws.resolve("a/../b"), path.join(ws.dir, "b"));
    assert.equal(await ws.resolve("inner/x"), path.join(ws.dir, "inner", "x"), "a symlink that stays inside is fine");
  });

  const refused: [string, RegExp][] = [
    ["../x", /climbs out/],
    ["a/../../x", /climbs out/],
    ["..\\..\\x", /climbs out/],
    ["/etc/passwd", /system path/],
    ["~", /home/],
    ["~/.ssh/id_rsa", /home/],
    ["a\0b", /NUL/],
    ["C:\\Windows\\system32", /system path/],
    ["escape/secret.txt", /symlink/],
    ["escape", /symlink/],
    ["escape/new-file.txt", /symlink/],
  ];
  for (const [agentPath, why] of refused) {
    test(`refuses ${JSON.stringify(agentPath)} naming only the agent path`, async () => {
      const err = await ws.resolve(agentPath).then(
        () => assert.fail("resolved"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof WorkspacePathError);
      assert.match(err.message, why);
      assert.ok(!err.message.includes(ws.dir) && !err.message.includes(tmp), "no system path in the message");
    });
  }

  test("a system path of a sibling thread is refused (t1 never reaches t10)", async () => {
    const sibling = Workspace.forThread(path.join(tmp, "paths"), "t10");
    await assert.rejects(ws.resolve(path.join(sibling.dir, "x")), WorkspacePathError);
  });

  test("toAgentPath gives the relative form inside, leaves other paths alone", () => {
    assert.equal(ws.toAgentPath(path.join(ws.dir, "a", "b.txt")), path.join("a", "b.txt"));
    assert.equal(ws.toAgentPath(ws.dir), ".");
    assert.equal(ws.toAgentPath(`${ws.dir}0/x`), `${ws.dir}0/x`);
    assert.equal(ws.toAgentPath("/etc/hosts"), "/etc/hosts");
  });
});

describe("rewrite", () => {
  const root = "/srv/agent_files";
  const t1 = Workspace.forThread(root, "t1");

  test("replaces the directory with the relative form; t1 never matches inside t10", () => {
    assert.equal(t1.rewrite(`wrote ${root}/t1/data/x.txt`), "wrote data/x.txt");
    assert.equal(t1.rewrite(`${root}/t10/x`), "<other-workspace>/x");
    assert.equal(t1.rewrite(`${root}/t10/x and ${root}/t1/y`), "<other-workspace>/x and y");
    assert.equal(t1.rewrite(`${root}/t1.bak/x`), "<other-workspace>/x");
    assert.equal(t1.rewrite(`${root}/t1-old/x`), "<other-workspace>/x");
  });

  test("the root and other threads' directories become placeholders, never host paths", () => {
    assert.equal(t1.rewrite(`ls ${root}`), "ls <workspace-root>");
    assert.equal(t1.rewrite(`${root}/: 3 entries`), "<workspace-root>: 3 entries");
    assert.equal(t1.rewrite(`${root}/t2`), "<other-workspace>");
    assert.equal(t1.rewrite(`[${root}/t2/a.txt, ${root}/t1/b.txt]`), "[<other-workspace>/a.txt, b.txt]");
    assert.equal(t1.rewrite(`${root}.bak/x`), `${root}.bak/x`, "a sibling of the root is another path");
  });

  test("the directory itself becomes '.', without turning a full stop into '..'", () => {
    assert.equal(t1.rewrite(`cd ${root}/t1`), "cd .");
    assert.equal(t1.rewrite(`(${root}/t1)`), "(.)");
    assert.equal(t1.rewrite(`${root}/t1/ is empty`), ". is empty");
    assert.equal(t1.rewrite(`Saved in ${root}/t1.`), "Saved in ./.");
  });

  test("a path glued to a word is not a path of this workspace, also among real matches", () => {
    assert.equal(t1.rewrite(`x${root}/t1/a`), `x${root}/t1/a`);
    assert.equal(t1.rewrite(`${root}/t1/a x${root}/t1/b ${root}/t1/c`), `a x${root}/t1/b c`);
    assert.equal(t1.rewrite(`${root}/t1/a ${root}/t1/"b" ${root}/t1/c`), `a ."b" c`);
  });

  test("JSON-escaped slashes and backslashes", () => {
    assert.equal(t1.rewrite(JSON.stringify({ p: `${root}/t1/a.txt` }).replace(/\//g, "\\/")), '{"p":"a.txt"}');
  });

  test("Windows drive-letter paths in any case, both separators, JSON-escaped", () => {
    const win = Workspace.forThread("D:\\agent_files", "t1");
    assert.equal(win.rewrite("D:\\agent_files\\t1\\data\\x.txt"), "data\\x.txt");
    assert.equal(win.rewrite("d:\\agent_files\\t1\\x"), "x");
    assert.equal(win.rewrite("D:/agent_files/t1/x"), "x");
    assert.equal(win.rewrite(JSON.stringify({ p: "D:\\agent_files\\t1\\x" })), '{"p":"x"}');
    assert.equal(win.rewrite("D:\\agent_files\\t10\\x"), "<other-workspace>\\x");
  });

  test("text without paths is returned untouched", () => {
    const text = "nothing to see: /srv/other, t1, agent_files, C:\\temp\n".repeat(100);
    assert.equal(t1.rewrite(text), text);
    assert.equal(t1.rewrite(""), "");
  });

  test("both the symlinked root and its real path are rewritten", async () => {
    const real = path.join(tmp, "real-root");
    const link = path.join(tmp, "link-root");
    await mkdir(real, { recursive: true });
    await symlink(real, link);
    const ws = Workspace.forThread(link, "t1");
    await ws.ensure();
    assert.equal(ws.rewrite(`${link}/t1/a and ${real}/t1/b`), "a and b");
    assert.equal(ws.rewrite(`${real}/t10/c`), "<other-workspace>/c");
    assert.equal(ws.rewrite(`${real} and ${link}`), "<workspace-root> and <workspace-root>");
    assert.equal(ws.toAgentPath(path.join(real, "t1", "d")), "d");
  });

  test("a directory whose name repeats in its path still rewrites correctly", () => {
    const ws = Workspace.forThread("/t1", "t1");
    assert.equal(ws.rewrite("/t1/t1/x and /t1/t10/y and /t1 and /t1/t1/t1/z"), "x and <other-workspace>/y and <workspace-root> and t1/z");
  });

});
