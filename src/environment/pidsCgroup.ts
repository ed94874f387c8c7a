/**
 * A pids cgroup per sandboxed call, for the one case rlimits cannot cover: when the agent runs as
 * root, the sandbox user is host uid 0 and the kernel never applies RLIMIT_NPROC to it, so a fork
 * bomb would only end at the call's timeout. Where this process may create cgroups (root, cgroup
 * v1 `pids` hierarchy or a v2 tree with the pids controller enabled), each call gets
 * `langgraph-workbench/<pid>-<n>` with `pids.max`; the sandbox's launcher joins it before bwrap
 * starts, so every process of the call is counted. Elsewhere: `undefined` (rlimits apply).
 */
import { mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";

const GROUP = "langgraph-workbench";

let base: Promise<string | undefined> | undefined;
let counter = 0;

/** One call's cgroup: the file its launcher writes its pid to, and its removal. */
export interface PidsCgroup {
  procsFile: string;
  /** Removes the (by then empty) cgroup; retries briefly while the kernel finishes reaping. Never throws. */
  release(): Promise<void>;
}

/** Creates a cgroup allowing `max` tasks, or `undefined` where this process cannot. Never throws. */
export async function createPidsCgroup(max: number): Promise<PidsCgroup | undefined> {
  base ??= findBase();
  const dir = await base;
  if (!dir) return undefined;
  const own = path.join(dir, `${process.pid}-${++counter}`);
  try {
    await mkdir(own);
    await writeFile(path.join(own, "pids.max"), String(max));
  } catch {
    await rmdir(own).catch(() => undefined);
    return undefined;
  }
  return { procsFile: path.join(own, "cgroup.procs"), release: () => removeWhenEmpty(own) };
}

async function removeWhenEmpty(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EBUSY") return;
      await delay(25, undefined, { ref: false });
    }
  }
}

async function findBase(): Promise<string | undefined> {
  if (process.platform !== "linux" || process.getuid?.() !== 0) return undefined;
  for (const candidate of await candidates()) {
    const dir = path.join(candidate, GROUP);
    try {
      await mkdir(dir, { recursive: true });
      if (!(await readFile(path.join(dir, "pids.max"), "utf8").then(() => true, () => false))) {
        // cgroup v2: the controller must be enabled for the children of our group.
        await writeFile(path.join(dir, "cgroup.subtree_control"), "+pids");
      }
      await sweep(dir);
      return dir;
    } catch {
      // Not writable or no pids controller here: try the next.
    }
  }
  return undefined;
}

/** v1's pids hierarchy, then the v2 root when it offers pids. */
async function candidates(): Promise<string[]> {
  const found: string[] = [];
  if (await readFile("/sys/fs/cgroup/pids/cgroup.procs").then(() => true, () => false)) found.push("/sys/fs/cgroup/pids");
  const v2 = await readFile("/sys/fs/cgroup/cgroup.controllers", "utf8").catch(() => "");
  if (/\bpids\b/.test(v2)) found.push("/sys/fs/cgroup");
  return found;
}

/** Removes empty leftovers of processes that are gone (a crash between create and release). */
async function sweep(dir: string): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const pid = Number(/^(\d+)-\d+$/.exec(name)?.[1]);
    if (!pid || pid === process.pid) continue;
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) await rmdir(path.join(dir, name)).catch(() => undefined);
  }
}
