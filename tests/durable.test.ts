// Durable state across processes: a thread runs in one child process against a SQLite checkpoint
// file, the process exits, and a second, fresh process resumes the same thread. The read ledger
// (dedup stub, staleness), the tree fingerprint and the timestamps must continue exactly.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, stat, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "durable-agent.ts");

interface Report {
  pid: number;
  messageCount: number;
  treeMessageIds: string[];
  treesSeenPerModelCall: string[][];
  toolResults: { name: string; status?: string; content: string }[];
  state: Record<string, unknown>;
}

let tmp = "";
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "wb-durable-"));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function child(phase: 1 | 2, db: string, root: string): Promise<Report> {
  const { stdout } = await run(process.execPath, ["--import", "tsx", fixture, String(phase), db, root], {
    timeout: 60_000,
    env: { ...process.env, WORKBENCH_ENABLE_SHELL: "false" },
  });
  const line = stdout.trim().split("\n").at(-1)!;
  return JSON.parse(line) as Report;
}

/** Moves a file's mtime forward so a content change is visible even on coarse-mtime file systems. */
async function touchLater(file: string, content: string): Promise<void> {
  await writeFile(file, content);
  const later = new Date((await stat(file)).mtimeMs + 5_000);
  await utimes(file, later, later);
}

test("a thread resumed in a new process keeps its read ledger, tree fingerprint and timestamps", async () => {
  const root = path.join(tmp, "ws");
  const dir = path.join(root, "durable");
  const db = path.join(tmp, "checkpoints.sqlite");
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "notes.md"), "stable notes\n");
  await writeFile(path.join(dir, "changing.md"), "version 1\n");
  await writeFile(path.join(dir, "target.md"), "target v1\n");

  const first = await child(1, db, root);
  assert.equal(first.toolResults.length, 3);
  for (const r of first.toolResults) assert.notEqual(r.status, "error", r.content);
  assert.match(first.toolResults[0]!.content, /stable notes/);
  assert.equal(first.treeMessageIds.length, 1, "phase 1 injected the tree once");

  // Between the processes: content-only edits (no structural change).
  await touchLater(path.join(dir, "changing.md"), "version 2\n");
  await touchLater(path.join(dir, "target.md"), "target v1, edited by someone else\n");

  const second = await child(2, db, root);
  assert.notEqual(second.pid, first.pid);
  const [again, changed, written] = second.toolResults;

  // Dedup: the same window of an unchanged file, still in the conversation → the stub.
  assert.match(again!.content, /unchanged/i, `expected the dedup stub, got ${again!.content}`);
  assert.doesNotMatch(again!.content, /stable notes/);
  // The ledger knows the old mtime: the changed file is read for real.
  assert.match(changed!.content, /version 2/);
  // Staleness: target.md changed since this thread read it (in the other process) → warning.
  assert.match(written!.content, /changed|modified|stale/i, `expected a staleness warning, got ${written!.content}`);

  // Tree fingerprint: the structure did not change, so phase 2 re-used phase 1's tree message.
  assert.deepEqual(second.treeMessageIds, first.treeMessageIds, "no re-injection of an unchanged tree");
  assert.deepEqual(second.treesSeenPerModelCall[0], first.treeMessageIds);
  const fingerprint = (run: typeof first) => (run.state._fileManager as { _treeFingerprint?: string } | undefined)?._treeFingerprint;
  assert.equal(typeof fingerprint(first), "string", "the fingerprint is checkpointed");
  assert.equal(fingerprint(second), fingerprint(first));

  // Timestamps continue: a new run start, and the file-update time never goes back.
  assert.ok((second.state.startWorkTime as number) > (first.state.startWorkTime as number));
  assert.ok((second.state.fileUpdateTime as number) >= (first.state.fileUpdateTime as number));
  assert.ok(second.messageCount > first.messageCount, "the conversation continued, not restarted");
});
