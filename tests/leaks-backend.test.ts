// Hostile calls on the deepagents WorkbenchBackend: planted links and hard links are judged by
// the file they lead to, and grep's answer (matches or error) never depends on a credential file.
import assert from "node:assert/strict";
import { link, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { ShellFileOperations } from "../src/environment/shellFileOperations.js";

const SECRET = "sk-proj-Q7w9E2r4T6y8U0i1O3p5A7s9D1f3G5h7";
const ENV = `API_TOKEN=${SECRET}\nDEBUG=0\n`;
let root = "";
let n = 0;

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-leaks-backend-"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

/**
 * A thread with `.env`, planted links `README.txt -> .env` and `src/config.txt -> .env`, a hard
 * link `notes.txt` to `.env` (local only: remote FileOperations report no link count, so the
 * hard-link rule is a local guarantee — see README "Security model"), and an ordinary file.
 */
async function plantedThreadWith(hardLink: boolean): Promise<{ id: string; dir: string }> {
  const id = `t${++n}`;
  const dir = path.join(root, id);
  await mkdir(path.join(dir, "src"), { recursive: true });
  await writeFile(path.join(dir, ".env"), ENV);
  await symlink(".env", path.join(dir, "README.txt"));
  await symlink(path.join(dir, ".env"), path.join(dir, "src", "config.txt"));
  if (hardLink) await link(path.join(dir, ".env"), path.join(dir, "notes.txt"));
  await writeFile(path.join(dir, "src", "app.ts"), "export const name = 'API_TOKEN';\n");
  return { id, dir };
}

function assertNoLeak(answer: unknown): void {
  const text = JSON.stringify(answer);
  for (const piece of [SECRET.slice(0, 14), "DEBUG=0"]) assert.ok(!text.includes(piece), `leaks ${piece}: ${text}`);
}

const backends = {
  local: () => undefined,
  shell: () => new ShellFileOperations(new LocalShellEnvironment()),
};

for (const [kind, fileOps] of Object.entries(backends)) {
  const plantedThread = () => plantedThreadWith(kind === "local");
  describe(`WorkbenchBackend (${kind} file operations) through planted links`, () => {
    it("read and readRaw refuse README.txt -> .env and src/config.txt -> .env", async () => {
      const { id } = await plantedThread();
      const b = new WorkbenchBackend({ rootDir: root, threadId: id, fileOps: fileOps() });
      for (const p of ["/README.txt", "/src/config.txt"]) {
        const r = await b.read(p);
        assert.match(r.error ?? "", /protected credential file/, JSON.stringify(r));
        assertNoLeak(r);
        const raw = await b.readRaw(p);
        assert.match(raw.error ?? "", /protected credential file/);
        assertNoLeak(raw);
      }
    });

    it("edit through a planted link is refused and .env is unchanged", async () => {
      const { id, dir } = await plantedThread();
      const b = new WorkbenchBackend({ rootDir: root, threadId: id, fileOps: fileOps() });
      const r = await b.edit("/README.txt", "sk-", "SK-");
      assert.match(r.error ?? "", /protected credential file/);
      assertNoLeak(r);
      const miss = await b.edit("/README.txt", "no such text", "x");
      assertNoLeak(miss);
      assert.deepEqual(miss, await b.edit("/README.txt", "API_TOKEN=sk-proj", "x"));
      assert.equal(await readFile(path.join(dir, ".env"), "utf8"), ENV);
    });

    it("delete of .env is refused", async () => {
      const { id, dir } = await plantedThread();
      const b = new WorkbenchBackend({ rootDir: root, threadId: id, fileOps: fileOps() });
      assert.match((await b.delete("/.env")).error ?? "", /protected credential file/);
      assert.equal(await readFile(path.join(dir, ".env"), "utf8"), ENV);
    });

    it("grep: the same answer for a regex that matches the secret's prefix and one that does not; no count in any error", async () => {
      const { id } = await plantedThread();
      const b = new WorkbenchBackend({ rootDir: root, threadId: id, fileOps: fileOps() });
      const hit = await b.grep("API_TOKEN=sk-proj-Q7", "/");
      const miss = await b.grep("API_TOKEN=sk-proj-Zz", "/");
      assert.deepEqual(hit, miss);
      assert.deepEqual(hit.matches, []);
      assert.equal(hit.error, undefined);
      assertNoLeak(hit);
      const named = await b.grep("API", "/README.txt");
      assert.match(named.error ?? "", /protected credential file/);
      assertNoLeak(named);
    });

    it("glob may list names but grep never opens them", async () => {
      const { id } = await plantedThread();
      const b = new WorkbenchBackend({ rootDir: root, threadId: id, fileOps: fileOps() });
      const g = await b.glob("**/*");
      assertNoLeak(g);
      const all = await b.grep("DEBUG", "/");
      assert.deepEqual(all.matches, []);
    });
  });
}

describe("WorkbenchBackend hard links and content guards (local)", () => {
  const plantedThread = () => plantedThreadWith(true);
  it("a hard link to .env (notes.txt) is refused for read, readRaw and grep", async () => {
    const { id } = await plantedThread();
    const b = new WorkbenchBackend({ rootDir: root, threadId: id });
    const r = await b.read("/notes.txt");
    assert.match(r.error ?? "", /hard link/);
    assertNoLeak(r);
    assertNoLeak(await b.readRaw("/notes.txt"));
    assertNoLeak(await b.grep("API_TOKEN", "/"));
    assertNoLeak(await b.grep("API_TOKEN", "/notes.txt"));
  });

  it("allowHardLinks opts in", async () => {
    const { id } = await plantedThread();
    await writeFile(path.join(root, id, "a.txt"), "hello\n");
    await link(path.join(root, id, "a.txt"), path.join(root, id, "b.txt"));
    const b = new WorkbenchBackend({ rootDir: root, threadId: id, allowHardLinks: true });
    assert.match((await b.read("/b.txt")).content as string, /hello/);
    const strict = new WorkbenchBackend({ rootDir: root, threadId: id });
    assert.match((await strict.read("/b.txt")).error ?? "", /hard link/);
  });

  it("write refuses the dedup 'unchanged' stub text", async () => {
    const { id, dir } = await plantedThread();
    const b = new WorkbenchBackend({ rootDir: root, threadId: id });
    const r = await b.write("/stub.txt", JSON.stringify({ status: "unchanged", dedup: true, path: "a.txt", message: "x" }));
    assert.match(r.error ?? "", /placeholder/);
    await assert.rejects(readFile(path.join(dir, "stub.txt")));
  });

  it(".envrc is refused", async () => {
    const { id, dir } = await plantedThread();
    await writeFile(path.join(dir, ".envrc"), `export API_TOKEN=${SECRET}\n`);
    const b = new WorkbenchBackend({ rootDir: root, threadId: id });
    assert.match((await b.read("/.envrc")).error ?? "", /protected credential file/);
  });
});
