import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, open, rm, symlink, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { ToolMessage } from "@langchain/core/messages";
import { LocalFileOperations } from "../src/environment/localFileOperations.js";
import { FileToolCaches } from "../tools/lineCounts.js";
import { createReadFileTool } from "../tools/readFile.js";
import type { FileToolOptions } from "../tools/fileToolSupport.js";

const run = promisify(execFile);
let root: string;
let ws: string;
const cfg = { configurable: { thread_id: "t1" } };

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-read-"));
  ws = path.join(root, "t1");
  await mkdir(ws, { recursive: true });
});
// One tool set's caches across the file's reads, so a count started by one read serves the next.
const caches = new FileToolCaches();
after(async () => {
  await caches.close();
  await rm(root, { recursive: true, force: true });
});

async function read(args: Record<string, unknown>, options: FileToolOptions = {}): Promise<Record<string, any>> {
  const t = createReadFileTool({ rootDir: root, caches, ...options });
  const out = await t.invoke(args as never, cfg);
  return JSON.parse(typeof out === "string" ? out : String((out as ToolMessage).content));
}

describe("read_file output", () => {
  it("numbers lines as N|text and gives the continuation hint", async () => {
    await writeFile(path.join(ws, "a.txt"), Array.from({ length: 1200 }, (_, i) => `line ${i + 1}`).join("\n") + "\n");
    const r = await read({ path: "a.txt" });
    assert.equal(r.path, "a.txt");
    assert.equal(r.total_lines, 1200);
    assert.equal(r.truncated, true);
    assert.ok(r.content.startsWith("1|line 1\n2|line 2\n"));
    assert.ok(r.content.endsWith("500|line 500"));
    assert.equal(r.hint, "Use offset=501 to continue reading (showing 1-500 of 1200 lines)");
    const tail = await read({ path: "a.txt", offset: 1199, limit: 10 });
    assert.equal(tail.content, "1199|line 1199\n1200|line 1200");
    assert.equal(tail.truncated, false);
    assert.equal(tail.hint, undefined);
  });
  it("caps limit at 2000 and says so", async () => {
    await writeFile(path.join(ws, "big.txt"), "x\n".repeat(2500));
    const r = await read({ path: "big.txt", limit: 5000 });
    assert.equal(r.content.split("\n").length, 2000);
    assert.match(r.hint, /offset=2001.*capped at 2000/);
  });
  it("cuts lines over 2,000 characters with a marker and names them", async () => {
    await writeFile(path.join(ws, "long.txt"), `short\n${"y".repeat(5000)}\n`);
    const r = await read({ path: "long.txt" });
    const second = r.content.split("\n")[1];
    assert.equal(second, `2|${"y".repeat(2000)}... [truncated]`);
    assert.match(r.hint, /Line\(s\) 2 were longer than 2,000 characters/);
  });
  it("notes an empty file and an offset past the end", async () => {
    await writeFile(path.join(ws, "empty.txt"), "");
    const e = await read({ path: "empty.txt" });
    assert.equal(e.content, "");
    assert.equal(e.total_lines, 0);
    assert.match(e.hint, /empty/);
    const past = await read({ path: "a.txt", offset: 5000 });
    assert.equal(past.content, "");
    assert.match(past.hint, /offset=5000 is past the end of the file \(1200 lines\)/);
  });
  it("not found: up to 5 similar names from the same directory, agent-relative", async () => {
    await mkdir(path.join(ws, "src"), { recursive: true });
    for (const n of ["config.ts", "config.json", "Config.tsx", "confg.ts", "other.md"]) await writeFile(path.join(ws, "src", n), "x");
    const r = await read({ path: "src/config.js" });
    assert.match(r.error, /File not found: "src\/config.js"/);
    assert.ok(r.similar_files.includes("src/config.ts"));
    assert.ok(r.similar_files.includes("src/config.json"));
    assert.ok(!r.similar_files.includes("src/other.md"));
    assert.ok(r.similar_files.length <= 5);
    assert.ok(!JSON.stringify(r).includes(root), "no system path leaks");
  });
  it("refuses a directory with guidance", async () => {
    const r = await read({ path: "src" });
    assert.match(r.error, /is a directory/);
  });
  it("size cap: guidance with a limit that fits, and the total line count", async () => {
    await writeFile(path.join(ws, "wide.txt"), `${"z".repeat(90)}\n`.repeat(200));
    const r = await read({ path: "wide.txt" }, { maxReadChars: 1000 });
    assert.match(r.error, /over the 1,000-character limit\. Use offset and limit .* limit=\d+/);
    assert.equal(r.total_lines, 200);
    const suggested = Number(/limit=(\d+)/.exec(r.error)![1]);
    const ok = await read({ path: "wide.txt", limit: suggested }, { maxReadChars: 1000 });
    assert.equal(ok.error, undefined);
  });
  it("an error inside an agent run is a ToolMessage with status error", async () => {
    const t = createReadFileTool({ rootDir: root });
    const out = await t.invoke({ name: "read_file", args: { path: "nope.txt" }, id: "call-1", type: "tool_call" }, cfg);
    assert.ok(ToolMessage.isInstance(out));
    assert.equal(out.status, "error");
    assert.equal(out.tool_call_id, "call-1");
  });
});

describe("read_file guards", () => {
  it("binary: by extension (image hint) and by content even with a .txt name", async () => {
    await writeFile(path.join(ws, "pic.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    assert.match((await read({ path: "pic.png" })).error, /image/);
    await writeFile(path.join(ws, "fake.txt"), Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01]), Buffer.alloc(64)]));
    assert.match((await read({ path: "fake.txt" })).error, /binary file \(its content is not UTF-8/);
    await writeFile(path.join(ws, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    assert.match((await read({ path: "latin1.txt" })).error, /binary/);
  });
  it("credential files are refused with a suggestion; templates are readable", async () => {
    await writeFile(path.join(ws, ".env"), "OPENAI_API_KEY=sk-x\n");
    await writeFile(path.join(ws, ".env.example"), "OPENAI_API_KEY=\n");
    const r = await read({ path: ".env" });
    assert.match(r.error, /protected credential file.*\.env\.example/);
    assert.ok(!JSON.stringify(r).includes("sk-x"));
    assert.equal((await read({ path: ".env.example" })).content, "1|OPENAI_API_KEY=");
    await writeFile(path.join(ws, "vault.json"), "{}");
    assert.match((await read({ path: "vault.json" }, { credentialPatterns: ["vault.*"] })).error, /protected/);
  });
  it("a symlink with an innocent name to a credential file is refused by its real path", async () => {
    await symlink(path.join(ws, ".env"), path.join(ws, "notes.txt"));
    assert.match((await read({ path: "notes.txt" })).error, /protected credential file/);
  });
  it("secrets are masked with markers and a warning", async () => {
    const key = `sk-proj-${"Ab3".repeat(15)}`;
    await writeFile(path.join(ws, "settings.py"), `DEBUG = True\nOPENAI_API_KEY = "${key}"\nMAX_TOKENS=100\n`);
    const r = await read({ path: "settings.py" });
    assert.ok(!r.content.includes(key));
    assert.match(r.content, /2\|OPENAI_API_KEY = "«redacted/);
    assert.match(r.content, /3\|MAX_TOKENS=100/);
    assert.match(r._warning, /Never write a marker back/);
  });
});

describe("read_file hostile paths (confined mode)", () => {
  before(async () => {
    await writeFile(path.join(root, "outside.txt"), "secret outside\n");
    await symlink("/etc", path.join(ws, "etc-link"));
  });
  const refused: Array<[string, RegExp]> = [
    ["../outside.txt", /climbs out/],
    ["sub/../../outside.txt", /climbs out/],
    ["/etc/passwd", /system path outside/],
    ["etc-link/hostname", /symlink that leads outside/],
    ["a\0b.txt", /NUL/],
    ["．．/outside.txt", /climbs out/],
    ["‥/outside.txt", /climbs out/],
    ["~/.ssh/id_rsa", /home-directory/],
    ["~", /home-directory/],
  ];
  for (const [p, re] of refused) {
    it(`refuses ${JSON.stringify(p)}`, async () => {
      const r = await read({ path: p });
      assert.match(r.error, re);
      assert.ok(!JSON.stringify(r).includes("secret outside"));
    });
  }
  it("the device guard runs first, on the literal path", async () => {
    assert.match((await read({ path: "/dev/zero" })).error, /is a device/);
    assert.match((await read({ path: "/proc/self/environ" })).error, /environment or memory/);
  });
});

describe("read_file devices, FIFOs and /proc in open mode (never hang)", () => {
  const open_ = { confine: false };
  for (const p of ["/dev/zero", "/dev/stdin", "/dev/urandom", "/dev/tty", "/dev/fd/0", "/proc/self/environ", "/proc/self/fd/0", "/proc/self/cmdline"]) {
    it(`refuses ${p}`, { timeout: 5000 }, async () => {
      assert.ok((await read({ path: p }, open_)).error);
    });
  }
  it("refuses a FIFO without opening it", { timeout: 5000 }, async () => {
    const fifo = path.join(ws, "pipe");
    await run("mkfifo", [fifo]);
    assert.match((await read({ path: "pipe" })).error, /not a regular file/);
    assert.match((await read({ path: fifo }, open_)).error, /not a regular file/);
  });
  it("refuses a symlink to a device or /proc file by its real path", { timeout: 5000 }, async () => {
    await symlink("/proc/self/environ", path.join(ws, "env-link.txt"));
    await symlink("/dev/zero", path.join(ws, "zero-link.txt"));
    assert.match((await read({ path: "env-link.txt" }, open_)).error, /device or process file/);
    const climb = "../".repeat(ws.split("/").length) + "proc/self/environ";
    assert.match((await read({ path: climb }, open_)).error, /device or process file/);
    assert.ok((await read({ path: "zero-link.txt" }, open_)).error);
  });
  it("open mode reads outside the workspace, expands ~, and keeps the credential list", async () => {
    const home = path.join(root, "home");
    await mkdir(path.join(home, ".ssh"), { recursive: true });
    await writeFile(path.join(home, "notes.txt"), "hi\n");
    await writeFile(path.join(home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    assert.equal((await read({ path: "~/notes.txt" }, { confine: false, homeDir: home })).content, "1|hi");
    assert.equal((await read({ path: path.join(root, "outside.txt") }, open_)).content, "1|secret outside");
    assert.match((await read({ path: "~/.ssh/id_ed25519" }, { confine: false, homeDir: home })).error, /protected/);
  });
});

describe("read_file background line counts", () => {
  it("one background count per file at a time, even when the file changes between reads", async () => {
    const local = new LocalFileOperations();
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // The real backend; only countLines waits for the test, to make the overlap deterministic.
    const gated = Object.assign(Object.create(local) as LocalFileOperations, {
      countLines: async (p: string) => {
        calls++;
        await gate;
        return local.countLines(p);
      },
    });
    const file = path.join(ws, "growing.log");
    await writeFile(file, "a\nb\nc\n");
    const opts = { fileOps: gated, countLinesInlineMaxBytes: 1 };
    const first = await read({ path: "growing.log", limit: 1 }, opts);
    assert.equal(first.total_lines, null);
    const later = new Date(Date.now() + 10_000);
    await utimes(file, later, later);
    await read({ path: "growing.log", limit: 1 }, opts);
    assert.equal(calls, 1, "no second scan while the first runs");
    release();
    await caches.settle();
    await read({ path: "growing.log", limit: 1 }, opts);
    assert.equal(calls, 2, "the changed file gets its own count once the first is done");
    await caches.settle();
    assert.equal((await read({ path: "growing.log", limit: 1 }, opts)).total_lines, 3);
  });
});

describe("read_file on a 1 GB sparse file", () => {
  it("streams the first lines without reading the file, counts the total in the background", { timeout: 60_000 }, async () => {
    const p = path.join(ws, "huge.log");
    const head = Array.from({ length: 1000 }, (_, i) => `entry ${i + 1} ${"-".repeat(40)}`).join("\n") + "\n";
    const fh = await open(p, "w");
    await fh.write(head);
    await fh.truncate(1024 ** 3);
    await fh.close();
    const r = await read({ path: "huge.log" });
    assert.equal(r.file_size, 1024 ** 3);
    assert.ok(r.content.startsWith("1|entry 1 "));
    assert.ok(r.content.includes("\n500|entry 500 "));
    assert.equal(r.truncated, true);
    assert.equal(r.total_lines, null, "not counted before answering");
    assert.equal(r.total_lines_at_least, 501);
    assert.match(r.hint, /Use offset=501 to continue reading \(showing 1-500 of at least 501 lines/);
    await caches.settle();
    const again = await read({ path: "huge.log", offset: 501, limit: 10 });
    assert.equal(again.total_lines, 1001, "cached count: 1000 text lines plus the NUL tail as one line");
    assert.match(again.hint, /showing 501-510 of 1001 lines/);
  });
});
