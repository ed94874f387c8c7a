// Hostile search_files calls: no answer depends on what a credential file holds (no count
// oracle), planted links are judged by what they point to, and ripgrep's errors never quote
// a file that a planted .gitignore link points at.
import assert from "node:assert/strict";
import { link, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { ToolMessage } from "@langchain/core/messages";
import { detectRipgrep } from "../src/search/ripgrep.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";

const SECRET = "sk-proj-Q7w9E2r4T6y8U0i1O3p5A7s9D1f3G5h7";
let root: string;
let ws: string;
let outside: string;
const config = (thread: string) => ({ configurable: { thread_id: thread } });

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-leaks-search-"));
  outside = path.join(root, "outside");
  await mkdir(outside);
  await writeFile(path.join(outside, "rules.txt"), "OUTSIDE_SECRET_{unclosed\nanother[line\n");
  ws = path.join(root, "t1");
  await mkdir(path.join(ws, "src"), { recursive: true });
  await writeFile(path.join(ws, ".env"), `API_TOKEN=${SECRET}\n`);
  await writeFile(path.join(ws, ".envrc"), `export API_TOKEN=${SECRET}\n`);
  await writeFile(path.join(ws, "src/app.ts"), "export const API_TOKEN_NAME = 'API_TOKEN';\n");
  await symlink(".env", path.join(ws, "README.txt"));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function search(args: Record<string, unknown>, engine: "ripgrep" | "js", thread = "t1"): Promise<Record<string, any>> {
  const t = createSearchFilesTool({ rootDir: root, engine });
  const raw = await t.invoke(args as never, config(thread));
  return JSON.parse(typeof raw === "string" ? raw : String((raw as ToolMessage).content));
}

function assertNoSecret(answer: unknown): void {
  const text = JSON.stringify(answer);
  assert.ok(!text.includes(SECRET.slice(0, 12)), `answer leaks the secret: ${text}`);
  assert.ok(!text.includes("OUTSIDE_SECRET"), `answer quotes the outside file: ${text}`);
}

const hasRg = await detectRipgrep();
const engines: Array<"ripgrep" | "js"> = hasRg ? ["ripgrep", "js"] : ["js"];

for (const engine of engines) {
  describe(`search_files (${engine}) has no count oracle`, () => {
    for (const output_mode of ["content", "files_only", "count"] as const) {
      it(`output_mode=${output_mode}: a regex matching the secret's prefix and one that does not get the same answer`, async () => {
        const hit = await search({ pattern: "API_TOKEN=sk-proj-Q7", output_mode }, engine);
        const miss = await search({ pattern: "API_TOKEN=sk-proj-Zz", output_mode }, engine);
        const strip = (r: Record<string, any>) => ({ ...r, pattern: undefined });
        assert.deepEqual(strip(hit), strip(miss));
        assertNoSecret(hit);
        assert.ok(!/credential file\(s\)|omitted_credential_files|\d+ match\(es\)/.test(JSON.stringify(hit)), JSON.stringify(hit));
      });
    }

    it("recovering the secret character by character finds nothing to go on", async () => {
      const answers = new Set<string>();
      for (const c of ["Q", "A", "7", "z"]) {
        const r = await search({ pattern: `API_TOKEN=sk-proj-${c}` }, engine);
        answers.add(JSON.stringify({ ...r, pattern: undefined }));
      }
      assert.equal(answers.size, 1);
    });

    it("path=README.txt (a planted link to .env) is refused as the credential file it is", async () => {
      const r = await search({ pattern: ".", path: "README.txt" }, engine);
      assert.match(r.error, /protected credential file/);
      assertNoSecret(r);
    });

    it("a hard link to .env is not searched", async () => {
      const dir = path.join(root, `hl-${engine}`);
      await mkdir(dir);
      await writeFile(path.join(dir, ".env"), `API_TOKEN=${SECRET}\n`);
      await link(path.join(dir, ".env"), path.join(dir, "notes.txt"));
      const r = await search({ pattern: "API_TOKEN" }, engine, `hl-${engine}`);
      assert.equal(r.total_matches, 0, JSON.stringify(r));
      assertNoSecret(r);
    });

    it(".gitignore -> an outside file: no error quotes it, the search still answers", async () => {
      const dir = path.join(root, `gi-${engine}`);
      await mkdir(path.join(dir, "sub"), { recursive: true });
      await writeFile(path.join(dir, "sub/a.txt"), "hello\n");
      await symlink(path.join(outside, "rules.txt"), path.join(dir, ".gitignore"));
      for (const args of [{ pattern: "nomatch" }, { pattern: "nomatch", path: "sub" }, { pattern: "hello" }, { pattern: "hello", path: "sub" }]) {
        const r = await search(args, engine, `gi-${engine}`);
        assertNoSecret(r);
        assert.equal(r.error, undefined, JSON.stringify(r));
      }
      assert.equal((await search({ pattern: "hello" }, engine, `gi-${engine}`)).total_matches, 1);
    });
  });
}
