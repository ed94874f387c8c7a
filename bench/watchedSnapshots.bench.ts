/**
 * Time travel as the middleware runs it, with the thread's live watcher (parcel), beside a shadow
 * git repository on a copy of the same tree in the same run:
 * - **after `run_command`** (a tool whose changes are unknown): the step settles the watcher and
 *   re-reads only what it listed (`settle()`, `changesSince`, `snapshot({ paths, statCache })`),
 *   against `git add -A && git commit` after the same change;
 * - **restore** (a fork): the current files are recorded from what the watcher listed and only
 *   the entries that differ are rewritten (`restore(id, { changed })`), against `git reset --hard`.
 * The stat-pass variants (no live watcher) are in the `snapshots` section.
 */
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createChangeTracker } from "../src/changes/index.js";
import type { ChangeTracker } from "../src/changes/types.js";
import { SnapshotStore } from "../src/snapshots/store.js";
import { fmt, median, shadowGit, shadowGitCommit, SNAPSHOT_POLICY, SNAPSHOT_RETENTION, twinCopies } from "./fixtures.js";

const STEPS = 7;

/** What the watcher listed since `cursor`, once settled (throws when it cannot tell: the bench needs the watcher path). */
async function listed(tracker: ChangeTracker, cursor: number): Promise<{ cursor: number; paths: string[] }> {
  if (!(await tracker.settle!(5_000))) throw new Error("the watcher did not settle");
  const answer = tracker.changesSince(cursor);
  if (!answer) throw new Error("the watcher cannot tell what changed");
  return answer;
}

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const sizes = quick ? [10_000] : [10_000, 100_000];
  const tmp = await mkdtemp(path.join(os.tmpdir(), "wb-bench-watched-"));
  const commandRows: string[] = [];
  const restoreRows: string[] = [];
  try {
    for (const files of sizes) {
      const { ours, theirs } = await twinCopies(tmp, files);
      const store = new SnapshotStore(ours, path.join(tmp, `store-${files}`), SNAPSHOT_POLICY, SNAPSHOT_RETENTION);
      const first = await store.snapshot({ assign: true });
      await shadowGit(theirs, "init", "-q");
      await shadowGitCommit(theirs, "first");
      const tracker = createChangeTracker(ours, { kind: "parcel" });
      await tracker.start();
      try {
        // A run_command step: one file rewritten, one created (what `sed -i`, `touch` leave).
        let cursor = tracker.cursor;
        const ourTimes: number[] = [];
        const gitTimes: number[] = [];
        for (let i = 0; i < STEPS; i++) {
          for (const dir of [ours, theirs]) {
            await writeFile(path.join(dir, "pkg03", "mod07", "file000.txt"), `command ${i}\n`);
            await writeFile(path.join(dir, "pkg03", "mod07", `made-${i}.txt`), `made ${i}\n`);
          }
          let t0 = performance.now();
          const answer = await listed(tracker, cursor);
          await store.snapshot({ paths: answer.paths, statCache: true, assign: true });
          ourTimes.push(performance.now() - t0);
          cursor = answer.cursor;
          t0 = performance.now();
          await shadowGitCommit(theirs, `step ${i}`);
          gitTimes.push(performance.now() - t0);
        }
        const ourCmd = median(ourTimes);
        const gitCmd = median(gitTimes);
        commandRows.push(`| ${files.toLocaleString("en-US")} | ${fmt(ourCmd)} ms | ${fmt(gitCmd)} ms | ${fmt(gitCmd / ourCmd)}× |`);
        process.stderr.write(`${commandRows.at(-1)}\n`);

        // Restores: back and forth between the first snapshot and the latest (the step's file and
        // the files it made differ: 1 + STEPS), then between states where 1,000 files differ.
        const latest = (await store.list())[0]!.id;
        const firstSha = (await shadowGit(theirs, "rev-list", "--max-parents=0", "HEAD")).trim();
        const headSha = (await shadowGit(theirs, "rev-parse", "HEAD")).trim();
        const restoreRound = async (a: string, b: string, shaA: string, shaB: string) => {
          const ours$: number[] = [];
          const git$: number[] = [];
          for (let i = 0; i < 4; i++) {
            const answer = await listed(tracker, cursor);
            let t0 = performance.now();
            await store.restore(i % 2 === 0 ? a : b, { changed: answer.paths });
            ours$.push(performance.now() - t0);
            // The restore's own writes are not drift: the next look starts after them.
            cursor = (await listed(tracker, answer.cursor)).cursor;
            t0 = performance.now();
            await shadowGit(theirs, "reset", "-q", "--hard", i % 2 === 0 ? shaA : shaB);
            git$.push(performance.now() - t0);
          }
          return { ours: median(ours$), git: median(git$) };
        };
        const few = await restoreRound(first, latest, firstSha, headSha);
        const many: string[] = [];
        for (const d of (await readdir(ours)).filter((n) => n.startsWith("pkg")).slice(0, 2)) {
          for (const m of await readdir(path.join(ours, d))) for (const f of (await readdir(path.join(ours, d, m))).slice(0, 20)) many.push(path.join(d, m, f));
        }
        for (const p of many) for (const dir of [ours, theirs]) await writeFile(path.join(dir, p), `rewritten ${p}\n`);
        const answer = await listed(tracker, cursor);
        const manyId = await store.snapshot({ paths: answer.paths, statCache: true, assign: true });
        cursor = answer.cursor;
        await shadowGitCommit(theirs, "many");
        const manySha = (await shadowGit(theirs, "rev-parse", "HEAD")).trim();
        const lots = await restoreRound(latest, manyId, headSha, manySha);
        restoreRows.push(
          `| ${files.toLocaleString("en-US")} | ${1 + STEPS} | ${fmt(few.ours)} ms | ${fmt(few.git)} ms | ${fmt(few.git / few.ours)}× | ${many.length.toLocaleString("en-US")} | ${fmt(lots.ours)} ms | ${fmt(lots.git)} ms | ${fmt(lots.git / lots.ours)}× |`,
        );
        process.stderr.write(`${restoreRows.at(-1)}\n`);
      } finally {
        await tracker.close();
      }
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return [
    "## watchedSnapshots",
    "",
    "Time travel as the middleware runs it by default, with the thread's live watcher (parcel): after a tool whose changes are unknown the watcher is settled and only what it listed is re-read; a restore records the current files from what the watcher listed and rewrites only the entries that differ. Anchor, same run, on a copy of the same tree (1,020 directories): a shadow git repository. Medians of " +
      `${STEPS} steps and 4 restores. The variants without a watcher (stat passes) are in the \`snapshots\` section.`,
    "",
    "### After `run_command` (one file rewritten, one created)",
    "",
    "| files | settle + listed paths + snapshot | git add -A && git commit | git / ours |",
    "|---:|---:|---:|---:|",
    ...commandRows,
    "",
    "### Restore (a fork)",
    "",
    "| files | entries differ | ours | git reset --hard | git / ours | entries differ | ours | git reset --hard | git / ours |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...restoreRows,
  ].join("\n");
}
