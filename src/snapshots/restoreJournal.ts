/**
 * The restore journal (`restore.json` in a thread's store): written before a restore touches the
 * workspace and removed once it is done, so a restore a crash interrupted is finished the next
 * time the store is used. Pure file handling; what "finish" means is the store's (it scans the
 * workspace and applies the journal's target again). Journals of 0.1.x (a staged copy swapped in
 * with two renames) are finished or undone here, as that version did.
 */
import { readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { exists } from "./exists.js";

/**
 * A restore under way: `target` is being applied in place. Journals of 0.1.x also carry
 * `staging`, `trash` and `moved`.
 */
export interface RestoreJournal {
  v?: 2;
  target: string;
  staging?: string;
  trash?: string;
  /** 0.1.x: excluded directories moved from the workspace into staging (relative paths). */
  moved?: string[];
  /** A per-path restore: only these paths are brought to `target`. */
  paths?: string[];
}

/** Leftovers of interrupted restores in a store directory (never the workspace itself). */
const LEFTOVER = /^(staging|trash|restore-tmp)-[0-9a-f-]+$/;

/** The journal file of one store. */
export class RestoreJournalFile {
  readonly path: string;

  constructor(readonly storeDir: string) {
    this.path = path.join(storeDir, "restore.json");
  }

  /** The journal of a restore that did not finish, if any (an unreadable one counts as none). */
  async read(): Promise<RestoreJournal | undefined> {
    try {
      return JSON.parse(await readFile(this.path, "utf8")) as RestoreJournal;
    } catch {
      return undefined;
    }
  }

  /** Written before the restore touches the workspace. */
  async write(journal: RestoreJournal): Promise<void> {
    await writeFile(this.path, JSON.stringify(journal), { mode: 0o600 });
  }

  /** The restore is done (or undone). */
  async clear(): Promise<void> {
    await rm(this.path, { force: true });
  }

  /** Removes what interrupted restores left in the store directory. */
  async removeLeftovers(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.storeDir);
    } catch {
      return;
    }
    await Promise.all(names.filter((n) => LEFTOVER.test(n)).map((n) => rm(path.join(this.storeDir, n), { recursive: true, force: true })));
  }
}

/**
 * A 0.1.x journal: staging still beside an intact workspace → undone (the moved directories go
 * back); the workspace gone or swapped → finished (staging becomes the workspace, and `onFinished`
 * moves the head to the target). The journal is cleared either way.
 */
export async function settleLegacySwap(journal: RestoreJournal, file: RestoreJournalFile, workspaceDir: string, onFinished: (target: string) => Promise<void>): Promise<void> {
  const staging = journal.staging!;
  const stagingThere = await exists(staging);
  const wsThere = await exists(workspaceDir);
  if (stagingThere && wsThere) {
    for (const rel of journal.moved ?? []) {
      const from = path.join(staging, ...rel.split("/"));
      const to = path.join(workspaceDir, ...rel.split("/"));
      if ((await exists(from)) && !(await exists(to))) await rename(from, to).catch(() => undefined);
    }
  } else {
    if (stagingThere) await rename(staging, workspaceDir);
    await onFinished(journal.target);
  }
  await file.clear();
}
