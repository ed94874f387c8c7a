import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { detectRipgrep, ripgrepArgs } from "../src/search/ripgrep.js";
import { createSearchFilesTool } from "../tools/searchFiles.js";

const THREAD = "t1";
const config = { configurable: { thread_id: THREAD } };
let root: string;
let ws: string;
let outside: string;

/** The shared corpus: ignore rules, hidden/credential/binary files, spaces, CRLF, a symlink out. */
async function buildCorpus(dir: string): Promise<void> {
  const files: Record<string, string | Buffer> = {
    "README.md": "# Demo\nTODO: write docs\n",
    "src/app.ts": "export function main() {\n  // TODO: start\n  return start();\n}\n\nconst url = 'x';\n",
    "src/util.ts": "export const add = (a: number, b: number) => a + b;\n// todo lower case\n",
    "src/deep/nested/mod.ts": "import { add } from '../../util';\nexport const TODO_LIST = [];\n",
    "docs/with space/notes file.md": "TODO in a path with spaces\n-dash line here\n",
    "windows.txt": "line one\r\nTODO crlf\r\nline three\r\n",
    "build/out.js": "TODO ignored by .gitignore\n",
    "logs/app.log": "TODO ignored log\n",
    "logs/keep.log": "TODO re-included by negation\n",
    "src/deep/.gitignore": "generated.ts\n",
    "src/deep/generated.ts": "TODO nested-ignored\n",
    ".gitignore": "build/\n*.log\n!keep.log\n",
    ".hidden/config.yml": "todo: hidden but not ignored\n",
    ".git/HEAD": "TODO never searched\n",
    ".env": "API_TOKEN=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD # TODO rotate\n",
    "config/settings.py": "OPENAI_API_KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD'  # TODO move\n",
    "image.bin": Buffer.from([0x54, 0x4f, 0x44, 0x4f, 0x00, 0x01, 0x02]),
    "unicode.txt": "naïve café TODO ünïcödé\n",
  };
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  await symlink(outside, path.join(dir, "escape-link"));
  await symlink(path.join(outside, "secret.txt"), path.join(dir, "escape-file.txt"));
}

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-search-"));
  outside = path.join(root, "outside");
  await mkdir(outside);
  await writeFile(path.join(outside, "secret.txt"), "TODO outside the workspace\n");
  ws = path.join(root, THREAD);
  await mkdir(ws);
  await buildCorpus(ws);
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function search(args: Record<string, unknown>, engine: "ripgrep" | "js" | "auto" = "auto"): Promise<Record<string, any>> {
  const t = createSearchFilesTool({ rootDir: root, engine });
  const raw = await t.invoke(args as never, config);
  return JSON.parse(typeof raw === "string" ? raw : String((raw as ToolMessage).content));
}

const hasRg = await detectRipgrep();

const QUERIES: Array<Record<string, unknown>> = [
  { pattern: "TODO" },
  { pattern: "TODO", context: 1 },
  { pattern: "(?i)todo", limit: 3, offset: 2 },
  { pattern: "TODO", output_mode: "files_only" },
  { pattern: "TODO", output_mode: "count" },
  { pattern: "TODO", path: "src" },
  { pattern: "TODO", path: "src/deep" },
  { pattern: "TODO", file_glob: "*.ts" },
  { pattern: "TODO", file_glob: "!*.md" },
  { pattern: "-dash" },
  { pattern: "--help" },
  { pattern: "TODO", path: "docs/with space" },
  { pattern: "^line (one|three)$" },
  { pattern: "\\bcaf\\S+" },
  { pattern: "*.ts", target: "files" },
  { pattern: "src/**/*.ts", target: "files" },
  { pattern: "*", target: "files", path: "src" },
  { pattern: "nothing-matches-this" },
  { pattern: "TODO", path: "README.md" },
  { pattern: "TODO", path: "README.md", output_mode: "count" },
  { pattern: "TODO", path: "README.md", output_mode: "files_only" },
  { pattern: "README*", target: "files" },
];

describe("search_files: ripgrep and the JS fallback agree on the corpus", { skip: hasRg ? false : "ripgrep is not installed" }, () => {
  for (const q of QUERIES) {
    it(JSON.stringify(q), async () => {
      const rg = await search(q, "ripgrep");
      const js = await search(q, "js");
      assert.equal(rg.engine, "ripgrep");
      assert.equal(js.engine, "js");
      delete rg.engine;
      delete js.engine;
      assert.deepEqual(js, rg);
    });
  }
});

for (const engine of ["ripgrep", "js"] as const) {
  describe(`search_files behaviour (${engine})`, { skip: engine === "ripgrep" && !hasRg ? "ripgrep is not installed" : false }, () => {
    it("respects .gitignore (nested, negation), skips .git, binary files and symlinks out", async () => {
      const r = await search({ pattern: "TODO", output_mode: "files_only" }, engine);
      assert.deepEqual(r.files, [
        "README.md",
        "config/settings.py",
        "docs/with space/notes file.md",
        "logs/keep.log",
        "src/app.ts",
        "src/deep/nested/mod.ts",
        "unicode.txt",
        "windows.txt",
      ]);
      const hidden = await search({ pattern: "hidden but" }, engine);
      assert.deepEqual(hidden.matches.map((m: { path: string }) => m.path), [".hidden/config.yml"]);
    });

    it("omits credential files without counting them; redacts secrets in match text", async () => {
      const r = await search({ pattern: "TODO" }, engine);
      assert.equal(r.omitted_credential_files, undefined);
      assert.equal(r.omitted_note, undefined);
      assert.ok(!r.matches.some((m: { path: string }) => m.path === ".env"));
      const py = r.matches.find((m: { path: string }) => m.path === "config/settings.py");
      assert.ok(py);
      assert.doesNotMatch(py.text, /sk-proj-abcdef/);
      assert.match(py.text, /«redacted/);
    });

    it("workspace-relative paths, line numbers, CRLF stripped, context lines", async () => {
      const r = await search({ pattern: "crlf", context: 1 }, engine);
      assert.deepEqual(r.matches, [
        { path: "windows.txt", line: 2, text: "TODO crlf", before: [{ line: 1, text: "line one" }], after: [{ line: 3, text: "line three" }] },
      ]);
    });

    it("paginates with offset/limit and says what offset continues", async () => {
      const first = await search({ pattern: "TODO", limit: 2 }, engine);
      assert.equal(first.returned, 2);
      assert.equal(first.truncated, true);
      assert.equal(first.next_offset, 2);
      assert.match(first.hint, /Use offset=2 to continue/);
      const rest = await search({ pattern: "TODO", limit: 50, offset: 2 }, engine);
      assert.equal(rest.truncated, false);
      assert.equal(rest.next_offset, undefined);
      assert.equal(first.total_matches, 2 + rest.returned);
    });

    it("patterns starting with - are patterns, not flags", async () => {
      const r = await search({ pattern: "-dash" }, engine);
      assert.equal(r.total_matches, 1);
      assert.equal(r.matches[0].path, "docs/with space/notes file.md");
      const h = await search({ pattern: "--files" }, engine);
      assert.equal(h.error, undefined);
      assert.equal(h.total_matches, 0);
    });

    it("invalid regex: a clear JSON error", async () => {
      const t = createSearchFilesTool({ rootDir: root, engine });
      const raw = await t.invoke({ pattern: "foo(" } as never, config);
      const r = JSON.parse(String(raw));
      assert.match(r.error, /Invalid regular expression/);
      assert.match(r.error, /Escape special characters/);
    });

    it("a path with spaces works", async () => {
      const r = await search({ pattern: "spaces", path: "docs/with space" }, engine);
      assert.equal(r.total_matches, 1);
      assert.equal(r.path, "docs/with space");
    });

    it("never leaves the workspace: .., absolute, and a symlinked directory", async () => {
      for (const p of ["..", "../outside", "/etc", "escape-link"]) {
        const r = await search({ pattern: "TODO", path: p }, engine);
        assert.ok(r.error, `path ${p} should be refused`);
        assert.doesNotMatch(JSON.stringify(r), new RegExp(root.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
      }
      const all = await search({ pattern: "outside the workspace" }, engine);
      assert.equal(all.total_matches, 0);
    });

    it("missing path: guiding error", async () => {
      const r = await search({ pattern: "x", path: "no/such/dir" }, engine);
      assert.match(r.error, /does not exist/);
    });

    it("result cap marks the answer incomplete", async () => {
      const t = createSearchFilesTool({ rootDir: root, engine, maxResults: 2 });
      const r = JSON.parse(String(await t.invoke({ pattern: "TODO" } as never, config)));
      assert.equal(r.truncated, true);
      assert.match(r.incomplete, /stopped early/);
      assert.ok(r.total_matches <= 2);
    });
  });
}

describe("search_files plumbing", () => {
  it("a hung ripgrep is killed at the timeout and the answer says it is incomplete", async () => {
    // A stand-in "rg" that never answers: checks the timeout path without a huge corpus.
    const fake = path.join(root, "fake-rg.sh");
    await writeFile(fake, "#!/bin/sh\nexec sleep 30\n", { mode: 0o755 });
    const t = createSearchFilesTool({ rootDir: root, engine: "ripgrep", ripgrepPath: fake, timeoutMs: 200 });
    const r = JSON.parse(String(await t.invoke({ pattern: "TODO" } as never, config)));
    assert.equal(r.truncated, true);
    assert.match(r.incomplete, /time limit/);
  });

  it("the output cap stops the engine and marks the answer incomplete", { skip: hasRg ? false : "ripgrep is not installed" }, async () => {
    const t = createSearchFilesTool({ rootDir: root, engine: "ripgrep", maxOutputBytes: 64 });
    const r = JSON.parse(String(await t.invoke({ pattern: "TODO" } as never, config)));
    assert.match(r.incomplete, /size cap/);
  });

  it("a missing ripgrep binary is a JSON error when ripgrep is forced", async () => {
    const t = createSearchFilesTool({ rootDir: root, engine: "ripgrep", ripgrepPath: path.join(root, "no-such-rg") });
    const r = JSON.parse(String(await t.invoke({ pattern: "TODO" } as never, config)));
    assert.match(r.error, /could not be started/);
  });

  it("ripgrep argv: an array with -- right before the pattern, never a shell string", () => {
    const args = ripgrepArgs({
      target: "content",
      pattern: "-e rm -rf /",
      mode: "content",
      cwd: "/w",
      searchPath: "/w/dir with space",
      context: 2,
      maxRecords: 10,
      timeoutMs: 1000,
      maxOutputBytes: 1000,
    });
    const dd = args.indexOf("--");
    assert.equal(args[dd + 1], "-e rm -rf /");
    assert.equal(args[dd + 2], "dir with space");
    assert.equal(args.length, dd + 3);
    for (const flag of ["--null", "--max-columns=8192", "--max-columns-preview", "--context=2", "--no-context-separator", "--no-config"]) assert.ok(args.includes(flag), flag);
    assert.equal(args.includes("--json"), false, "--json ignores --max-columns");
  });

  it("option validation names the bad option", () => {
    assert.throws(() => createSearchFilesTool({ timeoutMs: 0 }), /timeoutMs/);
    assert.throws(() => createSearchFilesTool({ engine: "grep" as never }), /engine/);
  });

  it("inside an agent run: results and errors are ToolMessages and the run continues", async () => {
    const model = fakeModel()
      .respondWithTools([{ name: "search_files", args: { pattern: "-dash" }, id: "c1" }])
      .respondWithTools([{ name: "search_files", args: { pattern: "x", path: "../.." }, id: "c2" }])
      .respondWithTools([{ name: "search_files", args: { pattern: 42 }, id: "c3" }])
      .respond(new AIMessage("done"));
    const agent = createAgent({ model, tools: [createSearchFilesTool({ rootDir: root })], checkpointer: new MemorySaver() });
    const result = await agent.invoke({ messages: [{ role: "user", content: "find it" }] }, config);
    const tools = result.messages.filter((m: unknown): m is ToolMessage => ToolMessage.isInstance(m));
    assert.equal(tools.length, 3);
    const first = JSON.parse(tools[0]!.content as string);
    assert.equal(first.total_matches, 1);
    assert.equal(tools[1]!.status, "error");
    assert.match(JSON.parse(tools[1]!.content as string).error, /not allowed/);
    assert.equal(tools[2]!.status, "error");
    assert.equal(result.messages.at(-1)!.content, "done");
  });
});
