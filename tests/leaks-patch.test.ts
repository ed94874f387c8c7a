// Hostile patch calls: no route through `patch` reads, quotes, diffs, moves or deletes a
// credential file, and no answer tells whether some text is in one.
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { resolveFileToolOptions } from "../tools/fileToolSupport.js";
import { patchCore } from "../tools/patchTool.js";
import { readFileCore } from "../tools/readFile.js";
import { writeFileCore } from "../tools/writeFile.js";

const SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";
const ENV = `OPENAI_API_KEY=${SECRET}\nDEBUG=0\nPORT=3000\n`;
let root: string;
let ws: string;
const cfg = { configurable: { thread_id: "t1" } };

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-leaks-patch-"));
  ws = path.join(root, "t1");
});
beforeEach(async () => {
  await rm(ws, { recursive: true, force: true });
  await mkdir(ws, { recursive: true });
  await writeFile(path.join(ws, ".env"), ENV);
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function patch(args: Record<string, unknown>): Promise<Record<string, any>> {
  const { payload } = await patchCore(args as never, cfg, resolveFileToolOptions({ rootDir: root }));
  return payload;
}
const exists = (p: string) => stat(path.join(ws, p)).then(() => true, () => false);

/** Nothing of the .env file (values, keys, lines) appears anywhere in an answer. */
function assertNoLeak(answer: unknown): void {
  const text = JSON.stringify(answer);
  for (const piece of [SECRET, "sk-live", "OPENAI_API_KEY", "DEBUG=0", "PORT=3000", "4f9a8b"]) {
    assert.ok(!text.includes(piece), `answer leaks ${piece}: ${text}`);
  }
}

async function envUnchanged(): Promise<void> {
  assert.equal(await readFile(path.join(ws, ".env"), "utf8"), ENV);
}

describe("patch V4A on a credential file", () => {
  it("*** Move File: .env -> notes.txt is refused before any write; notes.txt never appears", async () => {
    const r = await patch({ mode: "patch", patch: "*** Begin Patch\n*** Move File: .env -> notes.txt\n*** End Patch" });
    assert.match(r.error, /protected credential file/);
    assertNoLeak(r);
    assert.equal(await exists("notes.txt"), false);
    await envUnchanged();
    const read = await readFileCore({ path: "notes.txt" }, cfg, resolveFileToolOptions({ rootDir: root }));
    assertNoLeak(read.payload);
  });

  it("*** Update File: .env -> Move to: notes.txt is refused", async () => {
    const r = await patch({
      mode: "patch",
      patch: "*** Begin Patch\n*** Update File: .env\n*** Move to: notes.txt\n@@\n-DEBUG=0\n+DEBUG=1\n*** End Patch",
    });
    assert.ok(r.error, JSON.stringify(r));
    assertNoLeak(r);
    assert.equal(await exists("notes.txt"), false);
    await envUnchanged();
  });

  it("*** Move File: notes.txt -> .env (overwriting nothing, but naming a credential destination) is refused", async () => {
    await rm(path.join(ws, ".env"));
    await writeFile(path.join(ws, "notes.txt"), "hello\n");
    const r = await patch({ mode: "patch", patch: "*** Begin Patch\n*** Move File: notes.txt -> .env\n*** End Patch" });
    assert.match(r.error, /protected credential file/);
    assert.equal(await exists(".env"), false);
  });

  it("*** Delete File: .env is refused and the file stays", async () => {
    const r = await patch({ mode: "patch", patch: "*** Begin Patch\n*** Delete File: .env\n*** End Patch" });
    assert.match(r.error, /protected credential file/);
    await envUnchanged();
  });

  it("*** Update File: .env with a non-matching hunk quotes nothing (no did-you-mean)", async () => {
    const r = await patch({ mode: "patch", patch: "*** Begin Patch\n*** Update File: .env\n@@\n-OPENAI_API_KEY=sk-x\n+OPENAI_API_KEY=sk-y\n*** End Patch" });
    assert.match(r.error, /protected credential file/);
    assertNoLeak(r);
  });

  it("*** Update File through a planted link (README.txt -> .env) is refused", async () => {
    await symlink(".env", path.join(ws, "README.txt"));
    const r = await patch({ mode: "patch", patch: "*** Begin Patch\n*** Update File: README.txt\n@@\n-DEBUG=0\n+DEBUG=1\n*** End Patch" });
    assert.match(r.error, /protected credential file/);
    assertNoLeak(r);
    await envUnchanged();
  });
});

describe("patch replace on a credential file", () => {
  it("a non-matching replace quotes no line of .env", async () => {
    const r = await patch({ path: ".env", old_string: "OPENAI_API_KEY=sk-live-0000", new_string: "x" });
    assert.match(r.error, /protected credential file/);
    assertNoLeak(r);
    assert.equal(r.candidates, undefined);
  });

  it("the already-applied check gives the same answer whether or not the text is in the file", async () => {
    const present = await patch({ path: ".env", old_string: "NOT_THERE=1", new_string: `OPENAI_API_KEY=${SECRET}` });
    const absent = await patch({ path: ".env", old_string: "NOT_THERE=1", new_string: "OPENAI_API_KEY=sk-live-ffff" });
    assert.equal(present.already_applied, undefined);
    assert.deepEqual(present, absent);
  });

  it("sk- -> SK- is refused: no diff shows the key", async () => {
    const r = await patch({ path: ".env", old_string: "sk-", new_string: "SK-" });
    assert.match(r.error, /protected credential file/);
    assert.equal(r.diff, undefined);
    assertNoLeak(r);
    await envUnchanged();
  });

  it("a replace through a link to .env (notes.txt -> .env) is refused the same way", async () => {
    await symlink(path.join(ws, ".env"), path.join(ws, "notes.txt"));
    const r = await patch({ path: "notes.txt", old_string: "sk-", new_string: "SK-" });
    assert.match(r.error, /protected credential file/);
    assertNoLeak(r);
    await envUnchanged();
  });

  it(".envrc (direnv) is a credential file too", async () => {
    await writeFile(path.join(ws, ".envrc"), `export TOKEN=${SECRET}\n`);
    const r = await patch({ path: ".envrc", old_string: "nothing", new_string: "x" });
    assert.match(r.error, /protected credential file/);
    assertNoLeak(r);
  });

  it("new_string equal to the dedup 'unchanged' stub is refused", async () => {
    await writeFile(path.join(ws, "a.txt"), "alpha\n");
    const stub = JSON.stringify({ status: "unchanged", dedup: true, path: "a.txt", message: "The file has not changed since you read this window in tool call c1; that result is still in the conversation above — use it instead of re-reading." });
    const r = await patch({ path: "a.txt", old_string: "alpha\n", new_string: stub });
    assert.match(r.error, /placeholder/);
    assert.equal(await readFile(path.join(ws, "a.txt"), "utf8"), "alpha\n");
  });

  it("write_file and a V4A Add File refuse the stub text too", async () => {
    const stub = JSON.stringify({ status: "unchanged", dedup: true, path: "a.txt", message: "x" });
    const w = await writeFileCore({ path: "b.txt", content: stub }, cfg, resolveFileToolOptions({ rootDir: root }));
    assert.match(String(w.payload.error), /placeholder/);
    const v = await patch({ mode: "patch", patch: `*** Begin Patch\n*** Add File: c.txt\n+${stub}\n*** End Patch` });
    assert.match(v.error, /placeholder/);
    assert.equal(await exists("b.txt"), false);
    assert.equal(await exists("c.txt"), false);
  });
});
