/**
 * Time travel on a remote environment (timeTravel.remote): the same snapshot steps as the local
 * store, on the same generated workspace, once with the local store on the directory (the anchor)
 * and once through a real SSH server on 127.0.0.1 (SshEnvironment `exec` only: listing, fetch and
 * restore go over the protocol of src/snapshots/remoteWorkspace.ts). Round trips are counted.
 * Loopback SSH: the figures are the protocol's own cost (listing, parsing, tar, the mirror),
 * not a network's.
 */
import { cp, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Environment, ExecOptions, ExecResult } from "../src/environment/environment.js";
import { SshEnvironment } from "../src/environment/sshEnvironment.js";
import { SnapshotStores } from "../src/snapshots/index.js";
import { SnapshotStore } from "../src/snapshots/store.js";
import { sshdUnavailable, startSshd } from "../tests/helpers/sshd.js";
import { benchWorkspace, fmt, median } from "./fixtures.js";

class Counting implements Environment {
  readonly kind = "ssh";
  execs = 0;
  constructor(private readonly inner: Environment) {}
  exec(command: string, options?: ExecOptions): Promise<ExecResult> {
    this.execs++;
    return this.inner.exec(command, options);
  }
  async close(): Promise<void> {
    await this.inner.close?.();
  }
}

const policy = { ignoreNames: [".git", "node_modules"], excludePath: () => false };
const retention = { maxSnapshots: 1000, maxAgeMs: 1e12, maxBytes: 1e12 };

async function timed<T>(fn: () => Promise<T>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const skip = await sshdUnavailable();
  if (skip) return `## remoteSnapshots\n\nSkipped: ${skip}`;
  const sizes = quick ? [1_000] : [1_000, 10_000];
  const reps = quick ? 3 : 5;
  const sshd = await startSshd();
  const tmp = await mkdtemp(path.join(os.tmpdir(), "wb-bench-remote-"));
  const rows: string[] = [];
  try {
    for (const files of sizes) {
      const src = await benchWorkspace(files);
      const localDir = path.join(tmp, `local-${files}`);
      const remoteRoot = path.join(tmp, `remote-${files}`);
      const remoteDir = path.join(remoteRoot, "t");
      await cp(src, localDir, { recursive: true });
      await cp(src, remoteDir, { recursive: true });
      const local = new SnapshotStore(localDir, path.join(tmp, `local-store-${files}`), policy, retention);
      const env = new Counting(new SshEnvironment(sshd.options));
      const remote = new SnapshotStores(remoteRoot, { remote: true, storeDir: path.join(tmp, `remote-store-${files}`) }).remoteStoreFor("t", remoteDir, env);
      await remote.ready();

      const measure: Record<string, { local: number[]; remote: number[]; trips: number[] }> = {};
      const row = (name: string) => (measure[name] ??= { local: [], remote: [], trips: [] });
      const both = async (name: string, prepare: (dir: string, i: number) => Promise<void>, op: (s: { snapshot: SnapshotStore["snapshot"] }, dir: string) => Promise<unknown>, i: number) => {
        await prepare(localDir, i);
        row(name).local.push(await timed(() => op(local, localDir)));
        await prepare(remoteDir, i);
        const before = env.execs;
        row(name).remote.push(await timed(() => op(remote, remoteDir)));
        row(name).trips.push(env.execs - before);
      };
      const target = path.join("pkg07", "mod13", "file000.txt");
      await both("first snapshot (baseline)", async () => undefined, (s) => s.snapshot({ reason: "baseline" }), 0);
      for (let i = 0; i < reps; i++) {
        await both("one file written (known path)", (dir) => writeFile(path.join(dir, target), `edit ${i}\n`), (s, dir) => s.snapshot({ paths: [path.join(dir, target)] }), i);
        await both("after run_command touching one file (whole workspace)", (dir) => utimes(path.join(dir, target), new Date(), new Date(Date.now() + 1000 * (i + 1))), (s) => s.snapshot({ reason: "scan" }), i);
        await both("nothing changed (whole workspace)", async () => undefined, (s) => s.snapshot({ reason: "scan" }), i);
      }
      // Restore: one file differs from the snapshot.
      const ids = { local: await local.snapshot({ reason: "scan" }), remote: await remote.snapshot({ reason: "scan" }) };
      for (let i = 0; i < reps; i++) {
        await writeFile(path.join(localDir, target), `diverged ${i}\n`);
        await writeFile(path.join(remoteDir, target), `diverged ${i}\n`);
        row("restore, one file differs").local.push(await timed(() => local.restore(ids.local)));
        const before = env.execs;
        row("restore, one file differs").remote.push(await timed(() => remote.restore(ids.remote)));
        row("restore, one file differs").trips.push(env.execs - before);
      }
      for (const [name, m] of Object.entries(measure)) {
        const l = median(m.local);
        const r = median(m.remote);
        rows.push(`| ${files.toLocaleString("en-US")} | ${name} | ${fmt(l)} ms | ${fmt(r)} ms | ${fmt(r / l)}× | ${median(m.trips)} |`);
      }
      await env.close();
    }
  } finally {
    await sshd.stop();
    await rm(tmp, { recursive: true, force: true });
  }
  return [
    "## remoteSnapshots",
    "",
    `Time travel of a workspace on an SSH host (real sshd on 127.0.0.1, \`exec\` only) against the local store on the same files; median of ${reps} (the baseline once). Round trips: \`exec\` calls of the snapshot protocol.`,
    "",
    "| files | step | local store | remote (SSH) | ratio | round trips |",
    "|---:|---|---:|---:|---:|---:|",
    ...rows,
  ].join("\n");
}
