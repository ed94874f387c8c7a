// Secrets inside ordinary files, through every route that derives output from file contents:
// read_file windows, search_files context, patch (replace and V4A) diffs, quotes and errors, and
// WorkbenchBackend read/grep/edit. Each test fails on main (pattern redaction of gutter text only).
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { ToolMessage } from "@langchain/core/messages";
import { WorkbenchBackend } from "../src/deepagents/index.js";
import { maskValues, redactDerived, redactSecrets, secretEditReason, secretValues } from "../src/guards/redact.js";
import { resolveFileToolOptions } from "../tools/fileToolSupport.js";
import { patchCore } from "../tools/patchTool.js";
import { createReadFileTool } from "../tools/readFile.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";

// Built at runtime so this file holds no real-looking key.
const body = (n: number, seed: number, alphabet = "AbCdEfGh0123456789mNpQrStUvWxyZ") =>
  Array.from({ length: n }, (_, i) => alphabet[(i * 7 + seed * 3) % alphabet.length]).join("");
const KEY = `sk-proj-${body(48, 1)}`;
const PEM_LINES = Array.from({ length: 6 }, (_, i) => body(64, i + 3, "AbCdEfGh0123456789+/xyZqRsT"));
const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${PEM_LINES.join("\n")}\n-----END RSA PRIVATE KEY-----`;
const PASSWORD = "hunter2-Gx9";
const APP_YAML = `app:\n  name: shop\n  port: 8080\n  openai: ${KEY}\n  db_password: ${PASSWORD}\n  region: eu\n`;

let root: string;
let ws: string;
const cfg = { configurable: { thread_id: "t1" } };

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-redact-routes-"));
  ws = path.join(root, "t1");
});
beforeEach(async () => {
  await rm(ws, { recursive: true, force: true });
  await mkdir(path.join(ws, "config"), { recursive: true });
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const parse = (raw: unknown) => JSON.parse(typeof raw === "string" ? raw : String((raw as ToolMessage).content));
async function patch(args: Record<string, unknown>): Promise<Record<string, any>> {
  const { payload } = await patchCore(args as never, cfg, resolveFileToolOptions({ rootDir: root }));
  return payload;
}
const noSecret = (text: string) => {
  assert.ok(!text.includes(KEY.slice(8)), `key body shown: ${text}`);
  assert.ok(!text.toLowerCase().includes(KEY.slice(8, 30).toLowerCase()), `key body shown (case changed): ${text}`);
  assert.ok(!text.includes(PASSWORD), `password shown: ${text}`);
  for (const l of PEM_LINES) assert.ok(!text.includes(l.slice(0, 24)), `PEM body shown: ${text}`);
};

describe("value-aware helpers", () => {
  it("secretValues lists what redactSecrets masks, one entry per line of a multi-line secret", () => {
    const values = secretValues(`${APP_YAML}${PEM}\n`);
    assert.ok(values.includes(KEY));
    assert.ok(values.includes(PASSWORD));
    for (const l of PEM_LINES) assert.ok(values.includes(l));
  });
  it("maskValues masks values case-insensitively and by their body without the prefix", () => {
    const out = maskValues(`a ${KEY.toUpperCase()} b ${KEY.slice(8)} c SK-${KEY.slice(3)}`, [KEY]);
    assert.ok(!out.toLowerCase().includes(KEY.slice(8, 30).toLowerCase()), out);
    assert.equal(out.split("«redacted»").length - 1, 3, out);
  });
  it("redactDerived masks values found in the sources even where no pattern matches", () => {
    const derived = `-  openai: ${KEY}\n+  renamed: ${KEY.replace("sk-", "SK-")}\n note ${PASSWORD}`;
    noSecret(redactDerived(derived, [APP_YAML]));
  });
  it("secretEditReason: rewriting a line with a secret is refused, neighbours and whole-line deletion are not", () => {
    assert.ok(secretEditReason(APP_YAML, APP_YAML.replace("sk-", "SK-")));
    assert.ok(secretEditReason(APP_YAML, APP_YAML.replace(`db_password: ${PASSWORD}`, `db_password: ${PASSWORD}x`)));
    assert.equal(secretEditReason(APP_YAML, APP_YAML.replace("port: 8080", "port: 9090")), undefined);
    assert.equal(secretEditReason(APP_YAML, APP_YAML.replace(`  openai: ${KEY}\n`, "")), undefined);
  });
  it("never throws, on any input", () => {
    const odd = ["\u0000\uffff\ud800", "«redacted", "=".repeat(100_000), "a=".repeat(50_000), "-----BEGIN PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", `${"\x1b[".repeat(1000)}`];
    for (const t of odd) {
      assert.equal(typeof redactSecrets(t), "string");
      assert.equal(typeof redactSecrets(t, { startsMidFile: true }), "string");
      assert.ok(Array.isArray(secretValues(t)));
      assert.equal(typeof redactDerived(t, [t, null]), "string");
    }
    assert.equal(redactSecrets(undefined as unknown as string), undefined);
  });
});

describe("PEM keys across windows", () => {
  const file = `# deploy key\nname: deploy\n${PEM}\nafter: done\n`;
  it("redactSecrets: END without BEGIN, BEGIN without END, and a window inside the body", () => {
    const lines = file.split("\n");
    noSecret(redactSecrets(lines.slice(4).join("\n")));
    noSecret(redactSecrets(lines.slice(0, 6).join("\n")));
    noSecret(redactSecrets(lines.slice(4, 7).join("\n"), { startsMidFile: true }));
    assert.equal(redactSecrets("after: done\nplain text\n", { startsMidFile: true }), "after: done\nplain text\n");
  });
  it("read_file with an offset inside the key masks the body up to the END line", async () => {
    await writeFile(path.join(ws, "config", "deploy.yaml"), file);
    const read = createReadFileTool({ rootDir: root });
    for (const [offset, limit] of [[5, 10], [4, 2], [6, 1]]) {
      const r = parse(await read.invoke({ path: "config/deploy.yaml", offset, limit }, cfg));
      noSecret(r.content);
      assert.match(r.content, new RegExp(`^${offset}\\|«redacted:private-key»`), r.content);
    }
    const tail = parse(await read.invoke({ path: "config/deploy.yaml", offset: 9 }, cfg));
    assert.match(tail.content, /^9\|«redacted:private-key»\n10\|-----END RSA PRIVATE KEY-----\n11\|after: done/, tail.content);
  });
  it("search_files context lines inside the key are masked", async () => {
    await writeFile(path.join(ws, "config", "deploy.yaml"), file);
    for (const engine of ["js", "ripgrep"] as const) {
      const search = createSearchFilesTool({ rootDir: root, engine });
      const r = parse(await search.invoke({ pattern: PEM_LINES[2]!.slice(0, 12).replace(/[+/]/g, "."), context: 2 }, cfg));
      noSecret(JSON.stringify(r));
      const byEnd = parse(await search.invoke({ pattern: "END RSA", context: 3 }, cfg));
      noSecret(JSON.stringify(byEnd));
      assert.ok(JSON.stringify(byEnd).includes("«redacted:private-key»"), engine);
    }
  });
  it("WorkbenchBackend.read from an offset inside the key and grep of a body line", async () => {
    await writeFile(path.join(ws, "config", "deploy.yaml"), file);
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t1" });
    const r = await backend.read("/config/deploy.yaml", 5, 3);
    noSecret(String(r.content));
    const g = await backend.grep(PEM_LINES[3]!.slice(0, 10));
    noSecret(JSON.stringify(g));
  });
});

describe("patch never shows a secret the read masked", () => {
  beforeEach(async () => writeFile(path.join(ws, "config", "app.yaml"), APP_YAML));
  it("a patch of the neighbouring line shows the key only masked in the diff", async () => {
    const r = await patch({ path: "config/app.yaml", old_string: "  port: 8080\n  openai:", new_string: "  port: 9090\n  openai:" });
    assert.equal(r.error, undefined, r.error);
    noSecret(r.diff);
    assert.match(r.diff, /port: 9090/);
  });
  it("replacing sk- with SK- is refused, the file unchanged, and the answer holds no key", async () => {
    for (const args of [
      { path: "config/app.yaml", old_string: "sk-", new_string: "SK-" },
      { path: "config/app.yaml", old_string: "openai: sk-", new_string: "openai: xx" },
      { path: "config/app.yaml", old_string: "s", new_string: "S", replace_all: true },
    ]) {
      const r = await patch(args);
      assert.ok(r.error, JSON.stringify(r));
      noSecret(JSON.stringify(r));
      assert.equal(await readFile(path.join(ws, "config", "app.yaml"), "utf8"), APP_YAML);
    }
  });
  it("guessing a secret's characters gets the same answer right or wrong (no oracle)", async () => {
    const right = await patch({ path: "config/app.yaml", old_string: `db_password: ${PASSWORD.slice(0, 3)}`, new_string: "db_password: x" });
    const wrong = await patch({ path: "config/app.yaml", old_string: "db_password: zzz", new_string: "db_password: x" });
    assert.deepEqual(right, wrong);
    const appliedRight = await patch({ path: "config/app.yaml", old_string: "nothing here", new_string: `db_password: ${PASSWORD}` });
    const appliedWrong = await patch({ path: "config/app.yaml", old_string: "nothing here", new_string: "db_password: wrong-guess" });
    assert.equal(appliedRight.already_applied, appliedWrong.already_applied);
    assert.equal(appliedRight.error, appliedWrong.error);
  });
  it("in a large file, secrets are looked up around the change: a key line is still refused, a far edit passes", async () => {
    const filler = Array.from({ length: 20_000 }, (_, i) => `line ${i}: value ${i * 7}`).join("\n");
    await writeFile(path.join(ws, "config", "big.yaml"), `${filler}\n${APP_YAML}${filler.replace(/line /g, "tail ")}\n`);
    const refused = await patch({ path: "config/big.yaml", old_string: "openai: sk-", new_string: "openai: SK-" });
    assert.ok(refused.error);
    noSecret(JSON.stringify(refused));
    const far = await patch({ path: "config/big.yaml", old_string: "line 100: value 700\n", new_string: "line 100: value 701\n" });
    assert.equal(far.error, undefined, far.error);
    const near = await patch({ path: "config/big.yaml", old_string: "  port: 8080\n", new_string: "  port: 8081\n" });
    assert.equal(near.error, undefined, near.error);
    noSecret(near.diff);
  });
  it("did-you-mean quotes near a secret are masked", async () => {
    const r = await patch({ path: "config/app.yaml", old_string: "  openai: sk-nope\n  db_password: nope", new_string: "x" });
    assert.ok(r.error);
    noSecret(JSON.stringify(r));
  });
  it("V4A: neighbouring edits show a masked diff, edits of a secret line are refused without quoting it", async () => {
    const ok = await patch({
      mode: "patch",
      patch: "*** Begin Patch\n*** Update File: config/app.yaml\n@@ app:\n-  name: shop\n+  name: store\n*** End Patch",
    });
    assert.equal(ok.error, undefined, ok.error);
    noSecret(ok.diff);
    const refused = await patch({
      mode: "patch",
      patch: `*** Begin Patch\n*** Update File: config/app.yaml\n@@ app:\n-  openai: ${KEY.slice(0, 12)}\n+  openai: x\n*** End Patch`,
    });
    assert.ok(refused.error);
    noSecret(JSON.stringify(refused));
    const deleted = await patch({ mode: "patch", patch: "*** Begin Patch\n*** Delete File: config/app.yaml\n*** End Patch" });
    assert.equal(deleted.error, undefined, deleted.error);
    noSecret(deleted.diff);
  });
});

describe("WorkbenchBackend.edit", () => {
  beforeEach(async () => writeFile(path.join(ws, "config", "app.yaml"), APP_YAML));
  it("answers a guess inside a secret like a miss, refuses rewriting its line, keeps neighbours editable", async () => {
    const backend = new WorkbenchBackend({ rootDir: root, threadId: "t1" });
    const right = await backend.edit("/config/app.yaml", `${PASSWORD.slice(0, 4)}`, "x");
    const wrong = await backend.edit("/config/app.yaml", "qqqq", "x");
    assert.deepEqual(right, wrong);
    const caseChange = await backend.edit("/config/app.yaml", "sk-", "SK-");
    assert.ok(caseChange.error);
    noSecret(JSON.stringify(caseChange));
    assert.equal(await readFile(path.join(ws, "config", "app.yaml"), "utf8"), APP_YAML);
    const neighbour = await backend.edit("/config/app.yaml", "region: eu", "region: us");
    assert.equal(neighbour.error, undefined);
  });
});
