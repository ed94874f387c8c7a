/**
 * Issue 23.4 for DockerSandbox bind mode: when this process runs as root the container user is
 * root, and a command's `chmod 4755` would leave a setuid-root file in the host's workspace.
 * After every call the set-id bits are cleared (src/environment/dockerSandbox.ts stripSetIdBits).
 */
import assert from "node:assert/strict";
import { chmod, lstat, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { DockerSandbox } from "../src/environment/dockerSandbox.js";
import { DOCKER, dockerUnavailable, IMAGE } from "./helpers/docker.js";

const skip = (await dockerUnavailable()) ?? (process.getuid?.() === 0 ? undefined : "needs root (the case is a root agent process)");

describe("DockerSandbox bind mode as root: no set-id file stays in the workspace", { skip }, () => {
  let rootDir: string;
  let sandbox: ReturnType<typeof DockerSandbox>;
  before(async () => {
    rootDir = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-docker-setid-")));
    sandbox = DockerSandbox({ image: IMAGE, rootDir, dockerPath: DOCKER, labels: { "workbench.test": "1" } });
  });
  after(async () => {
    await sandbox?.close();
    await rm(rootDir, { recursive: true, force: true });
  });

  test("setuid and setgid bits set by a command are gone when the call returns; links are not followed", async () => {
    const env = await sandbox("root-agent");
    const dir = path.join(rootDir, "root-agent");
    // A host file outside the workspace with a set-id bit, reachable only through a link.
    const outside = path.join(rootDir, "outside-bin");
    const made = await env.exec(
      "cp /bin/sh x && chmod 4755 x && mkdir -p deep/er && cp /bin/true deep/er/y && chmod 6711 deep/er/y && chmod 2755 deep && id -u",
    );
    assert.equal(made.exitCode, 0, made.stderr);
    assert.equal(made.stdout.toString().trim(), "0");
    for (const f of ["x", "deep/er/y"]) {
      const s = await lstat(path.join(dir, f));
      assert.equal(s.mode & 0o6000, 0, `${f} kept mode ${(s.mode & 0o7777).toString(8)}`);
      assert.equal(s.mode & 0o777 & 0o100, 0o100, `${f} lost its execute bit`);
    }
    await writeFile(outside, "x");
    await chmod(outside, 0o4755);
    await symlink(outside, path.join(dir, "link"));
    await env.exec("true");
    assert.equal((await lstat(outside)).mode & 0o7777, 0o4755);
  });
});
