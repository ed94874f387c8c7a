// What a sandbox's /proc/self/mountinfo shows of its bound workspace (src/environment/mountinfoTrace.ts):
// the bind's root within the filesystem that holds it. The pure reading of a listing, then this
// host's own: a plain temporary directory shows its path; the root of a tmpfs mounted for the
// test shows nothing of the host, and a sandboxed `cat /proc/self/mountinfo` agrees.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boundRootShown, mountinfoTrace } from "../src/environment/mountinfoTrace.js";
import { commandEnvironmentFor, detectSandbox, SandboxEnvironment } from "../src/environment/sandboxEnvironment.js";

const LISTING = [
  "21 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
  "30 21 8:2 / /srv rw,relatime shared:2 - ext4 /dev/sdb1 rw",
  "31 30 8:2 /volumes/app /srv/app\\040data rw,relatime - ext4 /dev/sdb1 rw",
  "40 21 0:50 / /mnt/ws rw - tmpfs tmpfs rw",
  "41 21 0:51 / /mnt/ws rw - tmpfs tmpfs rw",
].join("\n");

describe("mountinfo trace", () => {
  test("a directory shows as its path below its mount's root, escapes undone, the deepest mount point winning", () => {
    assert.equal(boundRootShown(LISTING, "/home/me/ws"), "/home/me/ws", "on the root filesystem: the whole path");
    assert.equal(boundRootShown(LISTING, "/srv/threads"), "/threads", "below /srv's own filesystem");
    assert.equal(boundRootShown(LISTING, "/srv/app data/t1"), "/volumes/app/t1", "a bind mount (\\040 is a space): its root, then the rest");
    assert.equal(boundRootShown(LISTING, "/srv/app datax"), "/app datax", "a longer name is not below the mount point");
    assert.equal(boundRootShown(LISTING, "/mnt/ws"), "/", "the root of a mount of its own; the later of two at one point");
    assert.equal(boundRootShown("", "/x"), undefined);
  });

  describe("this host", () => {
    let tmp = "";
    let mnt = "";
    let mounted = false;
    before(async () => {
      tmp = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-trace-")));
      mnt = path.join(tmp, "own");
      await mkdir(mnt);
      mounted = await new Promise<boolean>((resolve) => execFile("mount", ["-t", "tmpfs", "-o", "size=4m,mode=0755", "wb-trace", mnt], (err) => resolve(!err)));
    });
    after(async () => {
      if (mounted) await new Promise((resolve) => execFile("umount", [mnt], resolve));
      await rm(tmp, { recursive: true, force: true });
    });

    test("a plain directory shows its path within its filesystem; the root of its own mount shows nothing", async (t) => {
      const shown = await mountinfoTrace(tmp);
      assert.ok(shown !== undefined && shown.endsWith(path.basename(tmp)), `a temporary directory's path shows (${shown})`);
      if (!mounted) return t.skip("cannot mount a tmpfs here (needs root)");
      assert.equal(await mountinfoTrace(mnt), undefined);
    });

    test("the sandbox shows what the trace says", async (t) => {
      const found = await detectSandbox();
      if (!found.available) return t.skip(`no sandbox: ${found.reason}`);
      const ws = path.join(tmp, "t-trace");
      await mkdir(ws, { recursive: true });
      const env = new SandboxEnvironment({ workspaceDir: ws, bwrapPath: found.bwrapPath });
      const result = await env.exec("cat /proc/self/mountinfo");
      const line = result.stdout.toString().split("\n").find((l) => l.split(" ")[4] === "/workspace");
      assert.equal(line?.split(" ")[3], `${await mountinfoTrace(tmp)}/t-trace`, `the workspace's line: ${line}`);
    });

    test("the shell's environment says once, with the remedy, when sandboxed commands can read that path", async (t) => {
      const found = await detectSandbox();
      if (!found.available) return t.skip(`no sandbox: ${found.reason}`);
      const warnings: string[] = [];
      const original = console.warn;
      console.warn = (...args: unknown[]) => void warnings.push(args.map(String).join(" "));
      try {
        for (const name of ["t-a", "t-b"]) await commandEnvironmentFor(path.join(tmp, name), { sandbox: "required" });
        for (let i = 0; i < 100 && warnings.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
        await new Promise((r) => setTimeout(r, 50));
      } finally {
        console.warn = original;
      }
      assert.equal(warnings.length, 1, `one warning per process (${warnings.join(" | ")})`);
      assert.ok(warnings[0]!.includes(`"${await mountinfoTrace(tmp)}/<thread_id>"`) && warnings[0]!.includes("filesystem of its own"), warnings[0]);
    });
  });
});
