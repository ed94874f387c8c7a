// Time travel against a hostile workspace: every attack is run as the agent would run it, through
// the sandboxed run_command of a real createAgent with a real checkpointer, and a fork to an
// earlier checkpoint (restore "auto") must neither write outside the workspace, nor copy a host
// file into it, nor lose an entry it cannot record, nor bring back a setuid bit; snapshots must
// never read through a swapped link or materialise a sparse file. Locally, a machine where bwrap
// cannot start skips with the reason; under CI (`CI=true`) that is a failure.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmod, copyFile, lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import { brotliDecompressSync } from "node:zlib";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver, type StateSnapshot } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { isCredentialPath } from "../src/guards/credentials.js";
import { DockerSandbox } from "../src/environment/dockerSandbox.js";
import { MAX_LIST_DEPTH } from "../src/environment/listWorker.js";
import { SNAPSHOT_DIR_NAME, SnapshotStore } from "../src/snapshots/index.js";
import { createWorkbench, type Workbench, type WorkbenchOptions } from "../src/workbench.js";
import { DOCKER, dockerUnavailable } from "./helpers/docker.js";
import { sandboxUnavailable } from "./helpers/sandbox.js";

const skip = await sandboxUnavailable();

let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-tt-hostile-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

interface TestAgent {
  invoke(input: unknown, config?: RunnableConfig): Promise<{ messages: BaseMessage[] }>;
  getStateHistory(config: RunnableConfig): AsyncIterableIterator<StateSnapshot>;
}

/** A thread driven by scripted run_command turns on a real agent and checkpointer. */
class Thread {
  readonly errors: Error[] = [];
  readonly wb: Workbench;
  readonly saver = new MemorySaver();
  readonly dir: string;
  private n = 0;

  constructor(
    readonly root: string,
    readonly id: string,
    /** Where commands run: the bubblewrap sandbox by default. */
    options: { environment?: WorkbenchOptions["environment"] } = {},
  ) {
    this.wb = createWorkbench({
      rootDir: root,
      enableShell: true,
      ...(options.environment ? options : { basicTools: { shell: { sandbox: "required" as const } } }),
      webTools: false,
      fileManager: { onError: (e) => void this.errors.push(e) },
    });
    this.dir = path.join(root, id);
  }

  private agent(replies: AIMessage[]): TestAgent {
    let model = fakeModel();
    for (const r of replies) model = model.respond(r);
    return createAgent({ model, tools: this.wb.tools, middleware: this.wb.middleware, checkpointer: this.saver }) as unknown as TestAgent;
  }

  /** One user turn whose only tool call runs `command` in the sandbox. */
  async run(command: string): Promise<string> {
    const id = `c${++this.n}`;
    const calls = [{ name: "run_command", args: { command }, id, type: "tool_call" as const }];
    const out = await this.agent([new AIMessage({ content: "", tool_calls: calls }), new AIMessage("ok")]).invoke(
      { messages: [new HumanMessage(`turn ${this.n}`)] },
      { configurable: { thread_id: this.id } },
    );
    const result = out.messages.find((m) => m.getType() === "tool" && (m as { tool_call_id?: string }).tool_call_id === id);
    assert.ok(result, "the command ran");
    assert.notEqual((result as { status?: string }).status, "error", `command failed: ${String(result.content)}`);
    return String(result.content);
  }

  /** A new user turn forked from the end of turn `turn` (its checkpoint names that turn's files). */
  async forkAfter(turn: number): Promise<void> {
    const history: StateSnapshot[] = [];
    for await (const s of this.agent([]).getStateHistory({ configurable: { thread_id: this.id } })) history.push(s);
    const tools = (s: StateSnapshot) => ((s.values as { messages?: BaseMessage[] }).messages ?? []).filter((m) => m.getType() === "tool").length;
    const end = history.find((s) => tools(s) === turn && (s.next ?? []).length === 0);
    assert.ok(end, `found the end of turn ${turn}`);
    await this.agent([new AIMessage("forked")]).invoke({ messages: [new HumanMessage("fork")] }, end.config);
  }

  close(): Promise<void> {
    return this.wb.close();
  }
}

/** Every regular file under `dir`, found without following a link: relative path → content. */
async function regularFiles(dir: string, rel = ""): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const e of await readdir(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) for (const [k, v] of await regularFiles(dir, r)) out.set(k, v);
    else if (e.isFile()) out.set(r, await readFile(path.join(dir, r)));
  }
  return out;
}

/** Whether any object of the store holds `needle` (compressed blobs, under `zblobs/`, decompressed). */
async function storeHolds(root: string, needle: string, storeDir = SNAPSHOT_DIR_NAME): Promise<boolean> {
  for (const [rel, content] of await regularFiles(path.join(root, storeDir))) {
    const raw = rel.includes("zblobs/") ? brotliDecompressSync(content) : content;
    if (raw.includes(needle)) return true;
  }
  return false;
}

describe("time travel on a hostile workspace (real bwrap)", { skip, timeout: 240_000 }, () => {
  test("a fork never writes through a symlink the agent put where a directory was, or where one is now", async () => {
    const outside = path.join(tmp, "outside-1");
    await mkdir(outside, { recursive: true });
    await writeFile(path.join(outside, ".npmrc"), "ORIGINAL\n");
    const t = new Thread(path.join(tmp, "root-1"), "links");
    try {
      // Turn 1: `h` is a link to a directory outside. Turn 2: `h` is a real directory holding
      // entries time travel never records (credential files, .git) and one it does.
      await t.run(`ln -s ${outside} h && mkdir -p real && echo one > real/a.txt`);
      await t.run(`rm h && mkdir -p h/.ssh h/.git && echo KEY > h/.ssh/authorized_keys && echo EVIL > h/.npmrc && echo x > h/.git/config && echo note > h/notes.txt`);
      // Turn 3: the directory `real` becomes a link to the outside directory.
      await t.run(`rm -r real && ln -s ${outside} real`);

      await t.forkAfter(1);
      assert.deepEqual((await readdir(outside)).sort(), [".npmrc"], "nothing was created outside the workspace");
      assert.equal(await readFile(path.join(outside, ".npmrc"), "utf8"), "ORIGINAL\n", "the outside .npmrc is untouched");
      assert.ok((await lstat(path.join(t.dir, "real"))).isDirectory(), "`real` is a real directory again, not the link");
      assert.equal(await readFile(path.join(t.dir, "real", "a.txt"), "utf8"), "one\n");
      // `h` cannot be the link again without dropping what it holds: it stays, and that is reported.
      const h = await lstat(path.join(t.dir, "h"));
      assert.ok(h.isDirectory(), "`h` is kept as the directory that holds unrecorded entries");
      assert.equal(await readFile(path.join(t.dir, "h", ".ssh", "authorized_keys"), "utf8"), "KEY\n", "unrecorded entries are never lost");
      assert.equal(await readFile(path.join(t.dir, "h", ".npmrc"), "utf8"), "EVIL\n");
      await assert.rejects(lstat(path.join(t.dir, "h", "notes.txt")), "the recorded file the checkpoint lacks is gone");
      assert.ok(
        t.errors.some((e) => /left 1 path\(s\) as they are.*\bh\b/.test(e.message)),
        `the kept path is reported: ${t.errors.map((e) => e.message).join(" | ")}`,
      );
    } finally {
      await t.close();
    }
  });

  test("a fork never turns a link to a host file into a copy of it", async () => {
    const host = path.join(tmp, "host-secret.txt");
    await writeFile(host, "HOST-SECRET-CONTENT\n");
    const t = new Thread(path.join(tmp, "root-2"), "hostfile");
    try {
      await t.run("echo one > a.txt");
      // Many hard links to the link itself (the carry-over of 0.1.x fell back to a copy when
      // linking failed); .env and node_modules are never recorded.
      await t.run(`ln -s ${host} .env && mkdir -p node_modules && for i in $(seq 1 40); do ln -P .env node_modules/l$i; done && echo two > a.txt`);
      await t.forkAfter(1);
      assert.equal(await readFile(path.join(t.dir, "a.txt"), "utf8"), "one\n", "the fork restored a.txt");
      assert.ok((await lstat(path.join(t.dir, ".env"))).isSymbolicLink(), ".env is still the link, as the agent left it");
      for (const [rel, content] of await regularFiles(t.dir)) assert.ok(!content.includes("HOST-SECRET"), `${rel} holds no copy of the host file`);
      assert.ok(!(await storeHolds(t.root, "HOST-SECRET")), "the store holds no copy of the host file");
    } finally {
      await t.close();
    }
  });

  test("sparse files, FIFOs and names that are not UTF-8: recorded as skipped, never read, never lost", async () => {
    const t = new Thread(path.join(tmp, "root-3"), "odd");
    try {
      await t.run("echo one > a.txt");
      // A FIFO read by a snapshot would block forever; a 256 MiB sparse file takes no disk.
      await t.run(`truncate -s 256M big.bin && mkfifo pipe && printf 'bytes' > "$(printf 'r\\351sum\\351.txt')" && echo two > a.txt`);
      const [latest] = await t.wb.snapshots(t.id);
      const skipped = new Map((latest?.skipped ?? []).map((s) => [s.path, s.reason]));
      assert.equal(skipped.get("big.bin"), "sparse", JSON.stringify(latest?.skipped));
      assert.equal(skipped.get("pipe"), "not-regular");
      assert.equal(skipped.get("r\\xe9sum\\xe9.txt"), "not-utf8-name");
      let storeBytes = 0;
      for (const content of (await regularFiles(path.join(t.root, SNAPSHOT_DIR_NAME))).values()) storeBytes += content.length;
      assert.ok(storeBytes < 1024 * 1024, `the store stays small (${storeBytes} bytes)`);

      await t.forkAfter(1);
      assert.equal(await readFile(path.join(t.dir, "a.txt"), "utf8"), "one\n", "the fork restored a.txt");
      assert.equal((await stat(path.join(t.dir, "big.bin"))).size, 256 * 1024 * 1024, "the sparse file is left as it is");
      assert.ok((await lstat(path.join(t.dir, "pipe"))).isFIFO(), "the FIFO is left as it is");
      const names = (await readdir(t.dir, { encoding: "buffer" })).map((b) => b.toString("latin1"));
      assert.ok(names.includes("r\xe9sum\xe9.txt"), `the Latin-1 name survives the restore (${names.join(", ")})`);
    } finally {
      await t.close();
    }
  });

  test("setuid and setgid bits are never recorded, so never restored", async () => {
    const t = new Thread(path.join(tmp, "root-4"), "setuid");
    try {
      // The sandbox refuses set-id modes itself (tests/sandbox-hardening.test.ts); a file that got
      // them another way (an unsandboxed shell, Docker bind mode as root) is made here.
      await mkdir(t.dir, { recursive: true });
      await copyFile("/bin/true", path.join(t.dir, "tool"));
      await chmod(path.join(t.dir, "tool"), 0o6755);
      await t.run("stat -c %a tool");
      assert.equal((await stat(path.join(t.dir, "tool"))).mode & 0o7777, 0o6755, "a setuid/setgid file is in the workspace");
      await t.run("rm tool");
      await t.forkAfter(1);
      const mode = (await stat(path.join(t.dir, "tool"))).mode & 0o7777;
      assert.equal(mode, 0o755, `restored without the setuid/setgid bits (${mode.toString(8)})`);
    } finally {
      await t.close();
    }
  });
});

const dockerSkip = await dockerUnavailable();

describe("time travel with DockerSandbox in bind mode (real Docker)", { skip: dockerSkip, timeout: 240_000 }, () => {
  test("bind-mode threads are snapshotted; a link the container made to another thread's directory is never written through", async () => {
    const root = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-tt-docker-")));
    const sandbox = DockerSandbox({ image: process.env.WORKBENCH_TEST_DOCKER_IMAGE ?? "workbench-test:bookworm-1", rootDir: root, dockerPath: DOCKER, labels: { "workbench.test": "1" } });
    const other = path.join(root, "bob");
    await mkdir(other, { recursive: true });
    await writeFile(path.join(other, "b.txt"), "bob's\n");
    const t = new Thread(root, "alice", { environment: sandbox });
    try {
      // Inside the container the other thread's directory does not exist, but the link's text is resolved on the host.
      await t.run(`ln -s ${other} h && echo one > a.txt`);
      await t.run(`rm h && mkdir -p h && echo KEY=1 > h/.env && echo n > h/notes.txt && echo two > a.txt`);
      assert.ok((await t.wb.snapshots(t.id)).length >= 2, "bind-mode threads are snapshotted");
      await t.forkAfter(1);
      assert.equal(await readFile(path.join(t.dir, "a.txt"), "utf8"), "one\n", "the fork restored the container's file");
      assert.deepEqual((await readdir(other)).sort(), ["b.txt"], "nothing was written into the other thread's directory");
      assert.ok((await lstat(path.join(t.dir, "h"))).isDirectory(), "`h` stays the directory holding an unrecorded .env");
      assert.equal(await readFile(path.join(t.dir, "h", ".env"), "utf8"), "KEY=1\n");
    } finally {
      await t.close();
      await sandbox.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("snapshot store on a hostile workspace", () => {
  test("a file swapped for a link to a host file while snapshots run is never read through the link", async () => {
    const base = path.join(tmp, "swap");
    const dir = path.join(base, "ws");
    await mkdir(dir, { recursive: true });
    const host = path.join(base, "host.txt");
    await writeFile(host, "HOST-SWAP-SECRET\n");
    const store = new SnapshotStore(dir, path.join(base, "store"), { ignoreNames: [], excludePath: (rel) => isCredentialPath(rel) }, { maxSnapshots: 10_000, maxAgeMs: 1e12, maxBytes: 1e12 });
    // The attacker: swaps `f` between a regular file and a link to the host file, atomically, as
    // fast as it can (bounded: it stops by itself after 20 s).
    const swapper = spawn(
      "bash",
      ["-c", `cd "$1"; end=$((SECONDS+20)); while [ $SECONDS -lt $end ]; do echo "data $RANDOM" > f.tmp && mv -fT f.tmp f; ln -sfn "$2" l.tmp && mv -fT l.tmp f; done`, "swap", dir, host],
      { stdio: "ignore" },
    );
    try {
      const ids = new Set<string>();
      const t0 = Date.now();
      while (Date.now() - t0 < 2500) {
        ids.add(await store.snapshot({ paths: [path.join(dir, "f")] }));
        ids.add(await store.snapshot());
      }
      swapper.kill("SIGKILL");
      assert.ok(ids.size > 5, `snapshots caught the swaps (${ids.size} distinct)`);
      assert.ok(!(await storeHolds(base, "HOST-SWAP-SECRET", "store")), "no blob holds host content");
      // Every snapshot restores to a link or a regular file of the attacker's own data.
      await new Promise((r) => setTimeout(r, 50));
      for (const id of [...ids].slice(0, 20)) {
        await store.restore(id);
        const st = await lstat(path.join(dir, "f")).catch(() => undefined);
        // The attacker's own data; perhaps a prefix of it: the inode number of a file just replaced
        // comes back for the next one, so a read may take the listed (older) size of a newer file.
        if (st?.isFile()) assert.match(await readFile(path.join(dir, "f"), "utf8"), /^data \d+\n?$/);
      }
    } finally {
      swapper.kill("SIGKILL");
    }
  });

  test("a directory chain deeper than the listing walks is listed as skipped, never followed to the end", async () => {
    const base = path.join(tmp, "deep");
    const dir = path.join(base, "ws");
    let leaf = dir;
    for (let i = 0; i < MAX_LIST_DEPTH + 8; i++) leaf = path.join(leaf, "d");
    await mkdir(leaf, { recursive: true });
    await writeFile(path.join(leaf, "bottom.txt"), "deep\n");
    await writeFile(path.join(dir, "top.txt"), "top\n");
    const store = new SnapshotStore(dir, path.join(base, "store"), { ignoreNames: [], excludePath: () => false }, { maxSnapshots: 100, maxAgeMs: 1e12, maxBytes: 1e12 });
    const id = await store.snapshot();
    const [info] = await store.list();
    assert.deepEqual(
      (info?.skipped ?? []).map((x) => [x.path.split("/").length, x.reason]),
      [[MAX_LIST_DEPTH + 1, "too-deep"]],
      "the first directory past the limit is listed as skipped",
    );
    assert.ok((await store.manifest(id)).files.has("top.txt"));
  });

  test("caps: files over maxFileBytes and past maxSnapshotBytes are skipped, listed and never overwritten", async () => {
    const base = path.join(tmp, "caps");
    const dir = path.join(base, "ws");
    await mkdir(dir, { recursive: true });
    const store = new SnapshotStore(
      dir,
      path.join(base, "store"),
      { ignoreNames: [], excludePath: () => false, maxFileBytes: 4000, maxSnapshotBytes: 5000 },
      { maxSnapshots: 100, maxAgeMs: 1e12, maxBytes: 1e12 },
    );
    await writeFile(path.join(dir, "big.bin"), "small\n");
    const first = await store.snapshot();
    await writeFile(path.join(dir, "big.bin"), Buffer.alloc(4001, 1));
    await writeFile(path.join(dir, "a.bin"), Buffer.alloc(3000, 2));
    await writeFile(path.join(dir, "b.bin"), Buffer.alloc(3000, 3));
    await store.snapshot();
    const [latest] = await store.list();
    const reasons = Object.fromEntries((latest?.skipped ?? []).map((s) => [s.path, s.reason]));
    assert.equal(reasons["big.bin"], "too-large");
    assert.equal(Object.values(reasons).filter((r) => r === "snapshot-budget").length, 1, `one of a.bin/b.bin is past the budget: ${JSON.stringify(reasons)}`);
    assert.equal(latest?.skippedCount, 2);
    await store.restore(first);
    assert.equal((await stat(path.join(dir, "big.bin"))).size, 4001, "the over-cap file (not in the store) is not overwritten by its older version");
  });
});
