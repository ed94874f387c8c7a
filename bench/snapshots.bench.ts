/**
 * Workspace snapshots (time travel): the cost of one writing step's snapshot at 1k/10k/100k
 * files with one file changed, store growth over 100 steps editing one 1 MB file, and restore
 * time at 10k files, and what the first snapshot leaves on disk (files, allocated bytes). Anchor,
 * same tree, same run: `git add -A && git commit` (and `git reset --hard` for the restore), i.e. a
 * shadow-git checkpoint as Cline makes it.
 */
import { cp, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { SnapshotStore } from "../src/snapshots/store.js";
import { benchWorkspace, fmt, median, shadowGit, shadowGitCommit, SNAPSHOT_POLICY as policy, SNAPSHOT_RETENTION as retention, twinCopies } from "./fixtures.js";


const git = shadowGit;
const gitStep = shadowGitCommit;

async function du(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) total += await du(p);
    else total += (await stat(p)).size;
  }
  return total;
}

/** Files under `dir` and the bytes the file system allocated for them (blocks, not sizes). */
async function onDisk(dir: string): Promise<{ files: number; allocated: number }> {
  let files = 0;
  let allocated = 0;
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      const sub = await onDisk(p);
      files += sub.files;
      allocated += sub.allocated;
    } else {
      files++;
      allocated += (await stat(p)).blocks * 512;
    }
  }
  return { files, allocated };
}

const mb = (n: number) => `${fmt(n / 1024 / 1024)} MB`;
const mib = (n: number) => `${fmt(n / 1024 / 1024)} MiB`;

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const sizes = quick ? [1_000, 10_000] : [1_000, 10_000, 100_000];
  const steps = quick ? 7 : 21;
  const tmp = await mkdtemp(path.join(os.tmpdir(), "wb-bench-snap-"));
  const rows: string[] = [];
  const scanRows: string[] = [];
  const diskRows: string[] = [];
  try {
    for (const files of sizes) {
      const { ours, theirs } = await twinCopies(tmp, files);
      const store = new SnapshotStore(ours, path.join(tmp, `store-${files}`), policy, retention);
      let t0 = performance.now();
      await store.snapshot();
      const first = performance.now() - t0;
      await git(theirs, "init", "-q");
      t0 = performance.now();
      await gitStep(theirs, "first");
      const gitFirst = performance.now() - t0;
      const ourDisk = await onDisk(path.join(tmp, `store-${files}`));
      const gitDisk = await onDisk(path.join(theirs, ".git"));
      diskRows.push(`| ${files.toLocaleString("en-US")} | ${ourDisk.files.toLocaleString("en-US")} | ${mib(ourDisk.allocated)} | ${gitDisk.files.toLocaleString("en-US")} | ${mib(gitDisk.allocated)} |`);
      process.stderr.write(`${diskRows.at(-1)}\n`);

      // One writing step: the tool rewrote one file; the snapshot re-reads just that path.
      const target = path.join("pkg07", "mod13", "file000.txt");
      const times: number[] = [];
      const gitTimes: number[] = [];
      for (let i = 0; i < steps; i++) {
        await writeFile(path.join(ours, target), `edit ${i}\n`);
        t0 = performance.now();
        const id = await store.snapshot({ paths: [path.join(ours, target)] });
        await store.assign(id);
        times.push(performance.now() - t0);
      }
      const gitSteps = files >= 100_000 ? Math.min(steps, 5) : steps;
      for (let i = 0; i < gitSteps; i++) {
        await writeFile(path.join(theirs, target), `edit ${i}\n`);
        t0 = performance.now();
        await gitStep(theirs, `step ${i}`);
        gitTimes.push(performance.now() - t0);
      }
      const o = median(times);
      const g = median(gitTimes);
      const verdict = files === 100_000 ? (o <= 20 ? " ✅ ≤ 20 ms" : " ❌ > 20 ms") : "";
      rows.push(`| ${files.toLocaleString("en-US")} | ${fmt(o)} ms${verdict} | ${fmt(g)} ms | ${fmt(g / o)}× | ${fmt(first)} ms | ${fmt(gitFirst)} ms |`);
      process.stderr.write(`${rows.at(-1)}\n`);

      // After a tool whose changes are unknown (run_command): a stat pass, hashing only what moved.
      const scans: number[] = [];
      const scanRuns = files >= 100_000 ? 1 : 3;
      for (let i = 0; i < scanRuns; i++) {
        await writeFile(path.join(ours, target), `shell ${i}\n`);
        t0 = performance.now();
        await store.snapshot();
        scans.push(performance.now() - t0);
      }
      scanRows.push(`| ${files.toLocaleString("en-US")} | ${fmt(median(scans))} ms | ${fmt(g)} ms | ${fmt(g / median(scans))}× |`);
      process.stderr.write(`${scanRows.at(-1)}\n`);

      if (files === 10_000) {
        // Restore at 10k files: back to the first snapshot (one file differs), then to a state
        // where 1,000 files differ. Anchor: git reset --hard to the same commits.
        const list = await store.list();
        const firstId = list.at(-1)!.id;
        const latestId = list[0]!.id;
        const restoreOne = median(
          await (async () => {
            const r: number[] = [];
            for (let i = 0; i < 3; i++) {
              t0 = performance.now();
              await store.restore(i % 2 === 0 ? firstId : latestId);
              r.push(performance.now() - t0);
            }
            return r;
          })(),
        );
        const firstSha = (await git(theirs, "rev-list", "--max-parents=0", "HEAD")).trim();
        const headSha = (await git(theirs, "rev-parse", "HEAD")).trim();
        const gitRestore: number[] = [];
        for (let i = 0; i < 3; i++) {
          t0 = performance.now();
          await git(theirs, "reset", "-q", "--hard", i % 2 === 0 ? firstSha : headSha);
          gitRestore.push(performance.now() - t0);
        }
        // Many changed files: rewrite 1,000 files, snapshot, restore back and forth.
        await store.restore(latestId);
        const dirs = (await readdir(ours)).filter((d) => d.startsWith("pkg")).slice(0, 2);
        const manyPaths: string[] = [];
        for (const d of dirs) for (const m of await readdir(path.join(ours, d))) for (const f of (await readdir(path.join(ours, d, m))).slice(0, 20)) manyPaths.push(path.join(d, m, f));
        for (const p of manyPaths) await writeFile(path.join(ours, p), `rewritten ${p}\n`);
        const manyId = await store.snapshot();
        for (const p of manyPaths) await writeFile(path.join(theirs, p), `rewritten ${p}\n`);
        await gitStep(theirs, "many");
        const manySha = (await git(theirs, "rev-parse", "HEAD")).trim();
        const restoreMany: number[] = [];
        const gitMany: number[] = [];
        for (let i = 0; i < 3; i++) {
          t0 = performance.now();
          await store.restore(i % 2 === 0 ? latestId : manyId);
          restoreMany.push(performance.now() - t0);
          t0 = performance.now();
          await git(theirs, "reset", "-q", "--hard", i % 2 === 0 ? headSha : manySha);
          gitMany.push(performance.now() - t0);
        }
        rows.push("");
        rows.push(`RESTORE|${fmt(restoreOne)}|${fmt(median(gitRestore))}|${manyPaths.length}|${fmt(median(restoreMany))}|${fmt(median(gitMany))}`);
        process.stderr.write(`${rows.at(-1)}\n`);
      }
      await rm(ours, { recursive: true, force: true, maxRetries: 5 }).catch(() => undefined);
      await rm(theirs, { recursive: true, force: true, maxRetries: 5 }).catch(() => undefined);
    }

    // Store growth: 100 steps, each rewriting a few bytes of one 1 MB text file.
    const growthSteps = quick ? 20 : 100;
    const gOurs = path.join(tmp, "growth-ours");
    const gGit = path.join(tmp, "growth-git");
    const line = (i: number) => `line ${String(i).padStart(6, "0")} of a large generated report, with some repeated prose to fill it\n`;
    let base = "";
    for (let i = 0; base.length < 1024 * 1024; i++) base += line(i);
    base = base.slice(0, 1024 * 1024);
    for (const d of [gOurs, gGit]) {
      await cp(await benchWorkspace(1_000), d, { recursive: true });
      await writeFile(path.join(d, "big.txt"), base);
    }
    const gStore = new SnapshotStore(gOurs, path.join(tmp, "growth-store"), policy, retention);
    await gStore.snapshot();
    await git(gGit, "init", "-q");
    await gitStep(gGit, "first");
    const ours0 = await du(path.join(tmp, "growth-store"));
    const git0 = await du(path.join(gGit, ".git"));
    const stepTimes: number[] = [];
    for (let i = 0; i < growthSteps; i++) {
      const content = `edit ${i}\n${base.slice(0, base.length - 32)}`;
      await writeFile(path.join(gOurs, "big.txt"), content);
      await writeFile(path.join(gGit, "big.txt"), content);
      const t = performance.now();
      await gStore.snapshot({ paths: [path.join(gOurs, "big.txt")] });
      stepTimes.push(performance.now() - t);
      await gitStep(gGit, `e${i}`);
    }
    const oursGrowth = (await du(path.join(tmp, "growth-store"))) - ours0;
    const gitGrowth = (await du(path.join(gGit, ".git"))) - git0;
    await git(gGit, "gc", "-q");
    const gitPacked = (await du(path.join(gGit, ".git"))) - git0;

    const restore = rows.find((r) => r.startsWith("RESTORE|"));
    const table = rows.filter((r) => r !== "" && !r.startsWith("RESTORE|"));
    const [, rOne, gOne, nMany, rMany, gMany] = restore ? restore.split("|") : [];
    return [
      "## snapshots",
      "",
      "Time-travel snapshots (`src/snapshots/`): content-addressed blobs (small ones in pack files), one tree object per directory, one record per snapshot. Anchor measured in the same run on a copy of the same tree: a shadow git repository (`git add -A && git commit`, `git reset --hard`). Workspaces from `bench/fixtures.ts` (1,020 directories).",
      "",
      "### One writing step (one file rewritten; the snapshot re-reads the path the tool named)",
      "",
      "| files | snapshot + assign (median) | git add -A && git commit | git / ours | first snapshot (cold, full) | git first commit |",
      "|---:|---:|---:|---:|---:|---:|",
      ...table,
      "",
      "### Store on disk after the first snapshot (files, and bytes allocated in blocks)",
      "",
      "Small blobs (stored form ≤ 64 KiB) are appended to one pack file per writing process; larger ones are one file each.",
      "",
      "| files | store: files | store: allocated | git (.git after the first commit): files | git: allocated |",
      "|---:|---:|---:|---:|---:|",
      ...diskRows,
      "",
      "### After a tool whose changes are unknown (`run_command`): stat pass, hashing only files whose size/mtime moved",
      "",
      "| files | stat-pass snapshot (median of 3; 1 run at 100k) | git add -A && git commit | git / ours |",
      "|---:|---:|---:|---:|",
      ...scanRows,
      "",
      "### Restore at 10,000 files (records the current state first with a stat pass, then rewrites in place only the entries that differ)",
      "",
      "| change | ours | git reset --hard |",
      "|---|---:|---:|",
      `| one file differs | ${rOne} ms | ${gOne} ms |`,
      `| ${nMany} files differ | ${rMany} ms | ${gMany} ms |`,
      "",
      `### Store growth: ${growthSteps} steps, each rewriting one 1 MB text file (plus a 1,000-file tree)`,
      "",
      "| | growth | per step |",
      "|---|---:|---:|",
      `| ours (deduplicated blobs, brotli-compressed, quality 1) | ${mb(oursGrowth)} | ${fmt(median(stepTimes))} ms snapshot |`,
      `| git, loose objects (zlib) | ${mb(gitGrowth)} | |`,
      `| git after \`git gc\` (delta-compressed pack) | ${mb(gitPacked)} | |`,
      "",
      "Each distinct version of a file costs its compressed size once (no deltas between versions, unlike git's pack); unchanged files cost nothing. Retention (`maxSnapshots`, `maxAgeMs`, `maxBytes`, counted in stored bytes) bounds the store.",
    ].join("\n");
  } finally {
    await rm(tmp, { recursive: true, force: true, maxRetries: 5 }).catch(() => undefined);
  }
}
