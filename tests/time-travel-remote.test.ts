// Time travel on environments without local files (timeTravel: { remote: true }): a thread on an
// exec-only Environment (bash, no fileOps: every file operation goes through exec) and on a real
// SSH host writes, patches, runs commands and deletes over several turns; forking from every
// earlier checkpoint brings the remote files back byte for byte; credential files, ignored
// folders, FIFOs and over-cap files are never fetched and never touched by a restore; the
// round trips per snapshot are counted; per-path restores and changes() work; hostile names are
// never written outside the host-side mirror.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver, type StateSnapshot } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { snapshotIdOf } from "../middleware/timeTravel.js";
import type { Environment, ExecOptions, ExecResult } from "../src/environment/environment.js";
import { DockerEnvironment } from "../src/environment/dockerEnvironment.js";
import { LocalEnvironment } from "../src/environment/localEnvironment.js";
import { SshEnvironment } from "../src/environment/sshEnvironment.js";
import { parseListing, recordablePath } from "../src/snapshots/remoteListing.js";
import { planRestore } from "../src/snapshots/remotePlan.js";
import { escapeForPrintf } from "../src/snapshots/remoteWorkspace.js";
import { createWorkbench, type Workbench } from "../src/workbench.js";
import { docker, DOCKER, dockerUnavailable, startContainer } from "./helpers/docker.js";
import { collectText, contents } from "./helpers/files.js";
import { threadDir } from "./helpers/threadDir.js";
import { sshdUnavailable, startSshd, type TestSshd } from "./helpers/sshd.js";

const run = promisify(execFile);

let tmp = "";
let sshd: TestSshd | undefined;
let sshSkip: string | undefined;
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-ttr-"));
  sshSkip = await sshdUnavailable();
  if (!sshSkip) sshd = await startSshd();
});
after(async () => {
  await sshd?.stop();
  await rm(tmp, { recursive: true, force: true });
});

/** An Environment with only `exec` (no native file access), counting the commands it runs. */
class ExecOnly implements Environment {
  readonly kind = "exec-only";
  execs = 0;
  /** Commands of the snapshot protocol (listing, fetch, restore). */
  snapshotExecs = 0;
  constructor(private readonly inner: Environment) {}
  exec(command: string, options?: ExecOptions): Promise<ExecResult> {
    this.execs++;
    if (command.includes(`cd -P -- "$1" || exit 90`)) this.snapshotExecs++;
    return this.inner.exec(command, options);
  }
  close(): Promise<void> {
    return this.inner.close?.() ?? Promise.resolve();
  }
}

const call = (name: string, args: Record<string, unknown>, id: string) => ({ name, args, id, type: "tool_call" as const });
const toolTurn = (...calls: ReturnType<typeof call>[]) => new AIMessage({ content: "", tool_calls: calls });

interface TestAgent {
  invoke(input: unknown, config?: RunnableConfig): Promise<{ messages: BaseMessage[] }>;
  getState(config: RunnableConfig): Promise<StateSnapshot>;
  getStateHistory(config: RunnableConfig): AsyncIterableIterator<StateSnapshot>;
}

function agentWith(wb: Workbench, saver: MemorySaver, replies: AIMessage[]): TestAgent {
  let model = fakeModel();
  for (const r of replies) model = model.respond(r);
  return createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer: saver }) as unknown as TestAgent;
}

const toolCount = (values: { messages?: { getType(): string }[] }) => (values.messages ?? []).filter((m) => m.getType() === "tool").length;

function workbench(root: string, env: Environment, storeDir: string, reports: unknown[]): Workbench {
  return createWorkbench({
    rootDir: root,
    environment: env,
    enableShell: true,
    basicTools: { shell: { sandbox: "off" } },
    webTools: false,
    fileManager: { onError: (e: unknown) => void reports.push(e), timeTravel: { remote: true, storeDir, maxFileBytes: 1024 * 1024 } },
  });
}

async function scenario(label: string, makeEnv: () => ExecOnly) {
  const root = path.join(tmp, label);
  const threadId = `t-${label}`;
  const dir = path.join(root, threadId);
  const storeDir = path.join(tmp, `${label}-store`);
  await mkdir(path.join(dir, "node_modules", "pkg"), { recursive: true });
  await writeFile(path.join(dir, "node_modules", "pkg", "index.js"), "module.exports = 1;\n");
  await writeFile(path.join(dir, ".env"), "API_KEY=sk-live-secret-value-1234567890\n");
  await writeFile(path.join(dir, "seed.txt"), "seeded before the first run\n");
  await writeFile(path.join(dir, "big.bin"), Buffer.alloc(2 * 1024 * 1024, 7));
  await run("mkfifo", [path.join(dir, "pipe")]);
  const env = makeEnv();
  const reports: unknown[] = [];
  const wb = workbench(root, env, storeDir, reports);
  const saver = new MemorySaver();
  const config = { configurable: { thread_id: threadId } };
  const skip = ["node_modules", ".env", "big.bin", "pipe"];
  try {
    const expected = new Map<number, Record<string, string>>();
    expected.set(0, await contents(dir, skip));
    const turns: { tools: AIMessage; count: number }[] = [
      { tools: toolTurn(call("write_file", { path: "a.txt", content: "one\n" }, "c1"), call("write_file", { path: "docs/b.md", content: "B1\n" }, "c2")), count: 2 },
      { tools: toolTurn(call("patch", { mode: "replace", path: "a.txt", old_string: "one", new_string: "two" }, "c3")), count: 3 },
      { tools: toolTurn(call("run_command", { command: "printf 'extra\\n' > 'c d.txt' && rm seed.txt && ln -s a.txt link && mkdir -p deep/er && echo x > deep/er/y" }, "c4")), count: 4 },
      { tools: toolTurn(call("write_file", { path: "a.txt", content: "four\n" }, "c5"), call("run_command", { command: "rm -r docs" }, "c6")), count: 6 },
    ];
    for (const [i, turn] of turns.entries()) {
      const agent = agentWith(wb, saver, [turn.tools, new AIMessage(`done ${i + 1}`)]);
      const out = await agent.invoke({ messages: [new HumanMessage(`turn ${i + 1}`)] }, config);
      for (const m of out.messages) if (m.getType() === "tool") assert.notEqual((m as { status?: string }).status, "error", `tool failed: ${String(m.content)}`);
      expected.set(turn.count, await contents(dir, skip));
    }
    assert.deepEqual(reports, [], "no errors were reported");

    // A snapshot after a one-file write costs at most 3 round trips (listing, fetch).
    const before1 = env.snapshotExecs;
    await agentWith(wb, saver, [toolTurn(call("write_file", { path: "one.txt", content: "1\n" }, "w1")), new AIMessage("ok")]).invoke({ messages: [new HumanMessage("one write")] }, config);
    const tools = env.snapshotExecs - before1;
    assert.ok(tools <= 3, `the turn with one write_file ran ${tools} snapshot commands`);
    expected.set(7, await contents(dir, skip));

    // Nothing secret or ignored reached the host-side store or its mirror.
    const hostText = await collectText(storeDir);
    assert.ok(!hostText.includes("sk-live-secret-value"), "the .env content never reaches the host");
    assert.ok(!hostText.includes("module.exports = 1"), "node_modules is not fetched");
    const listed = await wb.snapshots(threadId);
    const skipped = listed[0]!.skipped ?? [];
    assert.ok(skipped.some((s) => s.path === "big.bin" && s.reason === "too-large"), JSON.stringify(skipped));
    assert.ok(skipped.some((s) => s.path === "pipe" && s.reason === "not-regular"), JSON.stringify(skipped));

    const history: StateSnapshot[] = [];
    for await (const s of agentWith(wb, saver, []).getStateHistory(config)) history.push(s);
    let forks = 0;
    for (const s of history.filter((x) => snapshotIdOf(x.values) !== undefined)) {
      const count = toolCount(s.values as never);
      const want = expected.get(count);
      if (!want || !((s.next ?? []).length === 0)) continue;
      await agentWith(wb, saver, [new AIMessage("forked")]).invoke({ messages: [new HumanMessage("fork")] }, s.config);
      forks++;
      assert.deepEqual(await contents(dir, skip), want, `fork to the end of the turn with ${count} tool results restores its files`);
      assert.equal(await readFile(path.join(dir, ".env"), "utf8"), "API_KEY=sk-live-secret-value-1234567890\n", ".env is untouched");
      assert.equal(await readFile(path.join(dir, "node_modules", "pkg", "index.js"), "utf8"), "module.exports = 1;\n", "node_modules is untouched");
      assert.equal((await readFile(path.join(dir, "big.bin"))).length, 2 * 1024 * 1024, "the over-cap file is untouched");
      assert.ok((await lstat(path.join(dir, "pipe"))).isFIFO(), "the FIFO is untouched");
    }
    assert.ok(forks >= 4, `forked ${forks} times`);
    assert.deepEqual(reports, [], "no errors were reported while forking");

    // Per-path restore and changes().
    const first = snapshotIdOf(history.find((s) => toolCount(s.values as never) === 2)!.values)!;
    await writeFile(path.join(dir, "hand.txt"), "edited by hand\n");
    await wb.restore(threadId, first, { paths: ["docs"] });
    assert.equal(await readFile(path.join(dir, "docs", "b.md"), "utf8"), "B1\n", "docs/ came back");
    assert.equal(await readFile(path.join(dir, "hand.txt"), "utf8"), "edited by hand\n", "the hand edit stays");
    const diff = await wb.changes(threadId, { from: first });
    assert.ok(diff.files.some((f) => f.path === "hand.txt" && f.change === "added"), JSON.stringify(diff.files));
    return { tools };
  } finally {
    await wb.close();
    await env.close();
  }
}

describe("time travel through an environment's exec", () => {
  test("exec-only environment: forks restore the remote files; secrets, ignored, FIFO and over-cap entries stay", async () => {
    const { tools } = await scenario("exec", () => new ExecOnly(new LocalEnvironment()));
    assert.ok(tools >= 1, "the write was snapshotted through exec");
  });

  test("real SSH host (sshd on 127.0.0.1)", async (t) => {
    if (sshSkip) return t.skip(sshSkip);
    await scenario("ssh", () => new ExecOnly(new SshEnvironment(sshd!.options)));
  });
});

describe("remote listing and restore plan (pure)", () => {
  const policy = { ignoreNames: [".git", "node_modules"], excludePath: (rel: string) => rel.endsWith(".env"), maxFileBytes: 100 };
  const rec = (meta: string, p: Buffer | string, target = "") => Buffer.concat([Buffer.from(`${meta}\0`), Buffer.isBuffer(p) ? p : Buffer.from(p), Buffer.from(`\0${target}\0`)]);

  test("hostile names are never recorded; nothing below a refused directory either", () => {
    const out = Buffer.concat([
      rec("f 3 1700000000.5 644 8", "./ok.txt"),
      rec("d 4096 1700000000 755 8", Buffer.from([0x2e, 0x2f, 0x72, 0xe9, 0x73])),
      rec("f 3 1700000000 644 8", Buffer.concat([Buffer.from("./r"), Buffer.from([0xe9]), Buffer.from("s/inner.txt")])),
      rec("f 1 1700000000 644 8", "./new\nline"),
      rec("f 1 1700000000 644 8", "./a/../b"),
      rec("f 1 1700000000 644 8", "./x/.env"),
      rec("f 1 1700000000 644 8", "./.git/config"),
      rec("l 5 1700000000 777 0", "./lnk", "../../etc"),
      rec("p 0 1700000000 644 0", "./fifo"),
      rec("f 200 1700000000 4755 8", "./suid-big"),
      rec("f 5000000 1700000000 644 8", "./sparse"),
    ]);
    const { entries, skipped } = parseListing(out, { ...policy, maxFileBytes: 10_000_000 });
    assert.deepEqual([...entries.keys()].sort(), ["fifo", "lnk", "ok.txt", "sparse", "suid-big"]);
    assert.equal(entries.get("ok.txt")!.mtimeMs, 1700000000500);
    assert.equal(entries.get("lnk")!.target, "../../etc");
    assert.equal(entries.get("fifo")!.type, "other");
    assert.deepEqual(skipped.map((s) => s.reason).sort(), ["not-regular", "not-utf8-name", "not-utf8-name", "not-utf8-name", "sparse"]);
    assert.throws(() => parseListing(Buffer.from("f 3 1 644 8\0./x\0"), policy), /truncated/);
    assert.throws(() => parseListing(rec("f 3 1 644 8", "/etc/passwd"), policy), /outside/);
    assert.throws(() => parseListing(rec("zz", "./x"), policy), /unexpected listing record/);
    assert.equal(recordablePath(Buffer.from("a//b")), undefined);
  });

  test("a restore plan removes only recorded entries and keeps names an unrecorded entry holds", () => {
    const f = (h: string) => ({ h, s: 1, m: 0o644, t: 1 });
    const before = { files: new Map([["a.txt", f("1")], ["d/x", f("2")], ["gone.txt", f("3")]]), dirs: ["", "d"] };
    const after = { files: new Map([["a.txt", f("1")], ["d/x", f("9")], ["big", f("4")], ["n/y", f("5")], ["fifo", f("6")]]), dirs: ["", "d", "n"] };
    const listing = new Map<string, never>([["big", {} as never], ["fifo", {} as never], ["a.txt", {} as never]]);
    const plan = planRestore(before, after, listing);
    assert.deepEqual(plan.remove, [{ rel: "gone.txt", dir: false }]);
    assert.deepEqual(plan.mkdir, ["n"]);
    assert.deepEqual(plan.put.map((p) => p.rel).sort(), ["d/x", "n/y"]);
    assert.deepEqual(plan.kept.sort(), ["big", "fifo"]);
  });

  test("printf escapes carry any name through the plan text", async () => {
    const names = ["plain.txt", "with space", "new\nline", "quote'\"$(x)`", "ünï", "-dash", "back\\slash"];
    for (const n of names) {
      const { stdout } = await run("sh", ["-c", 'rel=$(printf "%bx" "$1"); printf %s "${rel%x}"', "sh", escapeForPrintf(n)]);
      assert.equal(stdout, n);
    }
  });
});

describe("remote restore never leaves the workspace", () => {
  test("a symlink made where a directory was is replaced, not written through", async () => {
    const { root, threadId, dir } = await threadDir(tmp, "hostile");
    const outside = path.join(tmp, "outside");
    await mkdir(outside, { recursive: true });
    await mkdir(path.join(dir, "h"), { recursive: true });
    await writeFile(path.join(dir, "h", "keep.txt"), "inside\n");
    const env = new ExecOnly(new LocalEnvironment());
    const reports: unknown[] = [];
    const wb = workbench(root, env, path.join(tmp, "hostile-store"), reports);
    const saver = new MemorySaver();
    const config = { configurable: { thread_id: threadId } };
    try {
      await agentWith(wb, saver, [toolTurn(call("write_file", { path: "h/more.txt", content: "more\n" }, "h1")), new AIMessage("ok")]).invoke({ messages: [new HumanMessage("one")] }, config);
      await agentWith(wb, saver, [toolTurn(call("run_command", { command: `rm -rf h && ln -s ${JSON.stringify(outside)} h` }, "h2")), new AIMessage("ok")]).invoke({ messages: [new HumanMessage("two")] }, config);
      const history: StateSnapshot[] = [];
      for await (const s of agentWith(wb, saver, []).getStateHistory(config)) history.push(s);
      const turn1 = history.find((s) => toolCount(s.values as never) === 1 && (s.next ?? []).length === 0)!;
      await agentWith(wb, saver, [new AIMessage("forked")]).invoke({ messages: [new HumanMessage("fork")] }, turn1.config);
      assert.deepEqual(await readdir(outside), [], "nothing was written outside");
      assert.ok((await lstat(path.join(dir, "h"))).isDirectory(), "h is a real directory again");
      assert.equal(await readFile(path.join(dir, "h", "more.txt"), "utf8"), "more\n");
      assert.deepEqual(reports, []);
    } finally {
      await wb.close();
      await env.close();
    }
  });

  test("a symlink in the remote workspace is recorded as a link in the mirror, never followed on the host", async () => {
    const { root, threadId, dir } = await threadDir(tmp, "links");
    const secret = path.join(tmp, "host-secret.txt");
    await writeFile(secret, "HOST ONLY\n");
    await symlink(secret, path.join(dir, "leak"));
    const env = new ExecOnly(new LocalEnvironment());
    const storeDir = path.join(tmp, "links-store");
    const wb = workbench(root, env, storeDir, []);
    try {
      await agentWith(wb, new MemorySaver(), [toolTurn(call("run_command", { command: "echo hi > x" }, "l1")), new AIMessage("ok")]).invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: threadId } });
      await wb.snapshots(threadId);
      assert.ok(!(await collectText(storeDir)).includes("HOST ONLY"), "the link's target content is never read on the host");
    } finally {
      await wb.close();
    }
  });
});

const dockerSkip = await dockerUnavailable();

describe("time travel in a Docker container (files only inside it)", { skip: dockerSkip }, () => {
  let container = "";
  before(async () => {
    container = await startContainer({ user: "1000:1000" });
    await docker("exec", container, "mkdir", "-p", "/tmp/root");
  });
  after(async () => {
    if (container) await docker("rm", "-f", container);
  });

  test("a fork brings back the container's files; a FIFO made inside stays", async () => {
    const env = new ExecOnly(new DockerEnvironment({ container, dockerPath: DOCKER }));
    const reports: unknown[] = [];
    const wb = workbench("/tmp/root", env, path.join(tmp, "docker-store"), reports);
    const saver = new MemorySaver();
    const config = { configurable: { thread_id: "t-docker" } };
    const inside = async (cmd: string) => (await docker("exec", container, "sh", "-c", `cd /tmp/root/t-docker && ${cmd}`)).stdout;
    try {
      await agentWith(wb, saver, [toolTurn(call("write_file", { path: "src/a.txt", content: "one\n" }, "d1")), new AIMessage("ok")]).invoke({ messages: [new HumanMessage("one")] }, config);
      await agentWith(wb, saver, [toolTurn(call("run_command", { command: "echo two > src/a.txt && echo new > b.txt && mkfifo p" }, "d2")), new AIMessage("ok")]).invoke({ messages: [new HumanMessage("two")] }, config);
      assert.equal(await inside("cat src/a.txt"), "two\n");
      const history: StateSnapshot[] = [];
      for await (const s of agentWith(wb, saver, []).getStateHistory(config)) history.push(s);
      const turn1 = history.find((s) => toolCount(s.values as never) === 1 && (s.next ?? []).length === 0)!;
      await agentWith(wb, saver, [new AIMessage("forked")]).invoke({ messages: [new HumanMessage("fork")] }, turn1.config);
      assert.equal(await inside("cat src/a.txt"), "one\n", "the container's file came back");
      assert.equal(await inside("ls"), "p\nsrc\n", "b.txt is gone; the FIFO stays");
      assert.deepEqual(reports, []);
    } finally {
      await wb.close();
    }
  });
});
