/**
 * Starts a throwaway PostgreSQL cluster on 127.0.0.1 for tests and benchmarks: `initdb` into a
 * temp dir (trust auth, no fsync), `pg_ctl start` on a free port with the socket in the same
 * dir, and `stop()` that shuts it down and removes the dir. As root the cluster runs as the
 * `postgres` user (Postgres refuses to run as root) through `runuser`.
 *
 * Locally, a machine without the server binaries skips the postgres tests; under CI
 * (`CI=true`) missing binaries are a failure, because `.ci/run` installs `postgresql`.
 */
import { spawnSync } from "node:child_process";
import { access, chown, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { runProcess } from "../../src/environment/localEnvironment.js";
import { freePort } from "./net.js";

export interface TestPostgres {
  port: number;
  /** `postgres://postgres@127.0.0.1:PORT/postgres` (trust auth: no password). */
  url: string;
  /** Stops the server and removes its files. Idempotent. */
  stop(): Promise<void>;
}

const APT_HINT = "apt-get install postgresql; .ci/run does this";

/**
 * The directory holding `initdb`, `pg_ctl` and `postgres`: `$PG_BIN`, else the newest
 * `/usr/lib/postgresql/<version>/bin` (Debian/Ubuntu), else `pg_config --bindir`, else a
 * directory on `PATH` with `initdb`.
 */
export async function postgresBinDir(): Promise<string | undefined> {
  const candidates: string[] = [];
  if (process.env.PG_BIN) candidates.push(process.env.PG_BIN);
  const versions = await readdir("/usr/lib/postgresql").catch(() => [] as string[]);
  for (const v of versions.filter((v) => /^\d+(\.\d+)?$/.test(v)).sort((a, b) => Number(b) - Number(a))) {
    candidates.push(path.join("/usr/lib/postgresql", v, "bin"));
  }
  const pgConfig = spawnSync("pg_config", ["--bindir"], { encoding: "utf8" });
  if (pgConfig.status === 0 && pgConfig.stdout.trim()) candidates.push(pgConfig.stdout.trim());
  candidates.push(...(process.env.PATH ?? "").split(path.delimiter).filter(Boolean));
  for (const dir of candidates) {
    const ok = await Promise.all(["initdb", "pg_ctl", "postgres"].map((b) => access(path.join(dir, b)).then(() => true, () => false)));
    if (ok.every(Boolean)) return dir;
  }
  return undefined;
}

/** Why postgres tests cannot run here, or `undefined` when they can. Under CI this throws instead. */
export async function postgresUnavailable(): Promise<string | undefined> {
  let missing: string | undefined;
  if (!(await postgresBinDir())) missing = `the PostgreSQL server binaries (initdb, pg_ctl) were not found (${APT_HINT})`;
  else if (isRoot() && !userExists("postgres")) missing = `running as root but there is no "postgres" user to run the server as (${APT_HINT})`;
  if (missing && process.env.CI === "true") throw new Error(`CI=true but ${missing}`);
  return missing;
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = await postgresBinDir();
  if (!bin) throw new Error(`PostgreSQL not found (${APT_HINT})`);
  const dir = await mkdtemp(path.join(os.tmpdir(), "wb-pg-"));
  const data = path.join(dir, "data");
  const asPostgres = isRoot();
  const run = (file: string, args: string[], timeoutMs: number) =>
    asPostgres
      ? runProcess("runuser", ["-u", "postgres", "--", path.join(bin, file), ...args], { timeoutMs, cwd: dir })
      : runProcess(path.join(bin, file), args, { timeoutMs, cwd: dir });
  let started = false;
  const stopSync = () => {
    // Last resort when the test process exits without stop(): never leave a server behind.
    if (!started) return;
    const args = ["-D", data, "-m", "immediate", "-w", "stop"];
    if (asPostgres) spawnSync("runuser", ["-u", "postgres", "--", path.join(bin, "pg_ctl"), ...args], { stdio: "ignore" });
    else spawnSync(path.join(bin, "pg_ctl"), args, { stdio: "ignore" });
  };
  process.once("exit", stopSync);
  try {
    await mkdir(data);
    if (asPostgres) {
      const { uid, gid } = postgresIds();
      await chown(dir, uid, gid);
      await chown(data, uid, gid);
    }
    const init = await run("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"], 120_000);
    if (init.exitCode !== 0) throw new Error(`initdb failed (${init.exitCode}): ${init.stderr || init.stdout}`);
    const port = await freePort();
    // A test cluster: durability off (it is thrown away), a socket only in its own dir.
    const serverOptions = [
      `-h 127.0.0.1 -p ${port} -k ${dir}`,
      "-c fsync=off -c synchronous_commit=off -c full_page_writes=off",
      "-c max_connections=200 -c shared_buffers=32MB",
    ].join(" ");
    const start = await run("pg_ctl", ["-D", data, "-l", path.join(dir, "server.log"), "-o", serverOptions, "-w", "-t", "60", "start"], 90_000);
    if (start.exitCode !== 0) throw new Error(`pg_ctl start failed (${start.exitCode}): ${start.stderr || start.stdout}`);
    started = true;
    let stopping: Promise<void> | undefined;
    return {
      port,
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      stop: () =>
        (stopping ??= (async () => {
          await run("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "30", "stop"], 60_000).catch(() => undefined);
          started = false;
          process.off("exit", stopSync);
          await rm(dir, { recursive: true, force: true });
        })()),
    };
  } catch (error) {
    stopSync();
    started = false;
    process.off("exit", stopSync);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

function userExists(name: string): boolean {
  return spawnSync("id", ["-u", name], { stdio: "ignore" }).status === 0;
}

function postgresIds(): { uid: number; gid: number } {
  const uid = Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout.trim());
  const gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error('cannot resolve the "postgres" user');
  return { uid, gid };
}

