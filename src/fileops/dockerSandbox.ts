/**
 * DockerSandbox: one container per thread, as an {@link EnvironmentProvider}.
 *
 *   const sandbox = DockerSandbox({ image: "workbench-test:bookworm-1", rootDir: "./agent_files" });
 *   createWorkbench({ rootDir: "./agent_files", environment: sandbox, enableShell: true });
 *   …
 *   await sandbox.close(); // removes every container it started
 *
 * The first use of a thread starts `docker run -d --init … sleep infinity` with no network,
 * no capabilities, no privilege escalation, a process and memory limit, and labels that find it
 * again (`docker ps -a --filter label=workbench.sandbox`). Later uses reuse it; concurrent first
 * uses share one creation; after `idleMs` without a call it is stopped (its file system kept)
 * and started again on the next call; a container removed behind its back is created again.
 */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { resolveRootDir, Workspace } from "../workspace.js";
import { DockerEnvironment } from "./docker.js";
import type { Environment, EnvironmentProvider, ExecOptions, ExecResult } from "./environment.js";
import { LocalFileOperations } from "./local.js";
import { ShellFileOperations } from "./shell.js";
import type { FileOperations } from "./types.js";
import { parseOptions } from "../options.js";

/** Label on every container a DockerSandbox starts; its value is the sandbox's instance id. */
export const SANDBOX_LABEL = "workbench.sandbox";
/** Label holding the thread's directory name. */
export const THREAD_LABEL = "workbench.thread";

const hostPath = z
  .string()
  .min(1)
  .refine((p) => path.isAbsolute(p) && !p.includes("\0"), "must be an absolute path");

export const dockerSandboxOptionsSchema = z
  .object({
    /** Image with POSIX sh, GNU coreutils/findutils and grep (Debian/Ubuntu based). */
    image: z.string().min(1).describe("Docker image, e.g. a debootstrap-built Debian image"),
    /** Workspace root: thread `t` lives at `ROOT/<t>` (same path in the container). Default: resolveRootDir(). */
    rootDir: z.string().min(1).optional(),
    /** Extra bind mounts, read-only unless `readOnly: false`. Nothing else of the host is visible. */
    mounts: z
      .array(z.object({ source: hostPath, target: hostPath, readOnly: z.boolean().default(true) }).strict())
      .default([]),
    /** Docker network. `"none"` (default): no interface but loopback. Anything else is an explicit opt-in. */
    network: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/).default("none"),
    /** `--memory`, e.g. `"1g"`. Default `"1g"`. */
    memory: z.string().regex(/^\d+[bkmg]?$/i).default("1g"),
    /** `--pids-limit`. Default 256 (stops fork bombs). */
    pids: z.number().int().positive().default(256),
    /** `--cpus`, e.g. 1.5. Default: no limit. */
    cpus: z.number().positive().optional(),
    /**
     * `--user` for the container and its commands. Default in "bind" mode: this process's
     * uid:gid, so files written in the container belong to the host user (the container has no
     * capabilities, so a root inside could not write a directory it does not own); in
     * "container" mode: the image's user.
     */
    user: z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.:-]*$/).optional(),
    /** Stop a thread's container after this long without a call (ms). Default 10 min. */
    idleMs: z.number().int().positive().default(600_000),
    /** The docker CLI. Default `"docker"`. */
    dockerPath: z.string().min(1).default("docker"),
    /** Extra labels on every container (e.g. to find a deployment's leftovers). */
    labels: z.record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/), z.string()).default({}),
    /**
     * `"bind"` (default): the host's `ROOT/<thread>` is bind-mounted at the same path, and the
     * file tools use the native file system. `"container"`: the workspace exists only inside the
     * container at that path (file tools go through `docker exec`); removing the container
     * removes the files.
     */
    workspaceMode: z.enum(["bind", "container"]).default("bind"),
    /** Timeout of a command that gives none, in ms. Default 60,000. */
    defaultTimeoutMs: z.number().int().positive().default(60_000),
  })
  .strict();

export type DockerSandboxOptions = z.input<typeof dockerSandboxOptionsSchema>;
type Settings = z.output<typeof dockerSandboxOptionsSchema>;

/** The provider: call it with a thread id; `close()` removes all its containers. */
export interface DockerSandboxProvider extends EnvironmentProvider {
  (threadId: string): Promise<Environment>;
  /** Value of the `workbench.sandbox` label on this sandbox's containers. */
  readonly instanceId: string;
  /** Names of the containers this sandbox currently holds, by thread id. */
  containers(): Map<string, string>;
  /** Removes every container of this sandbox (running or stopped). Safe to call more than once. */
  close(): Promise<void>;
}

/** Messages docker prints when the container is gone or stopped (exec never started). */
const CONTAINER_GONE = /^Error(?: response from daemon)?: (?:No such container|[Cc]ontainer [^\n]* is not running)/;

/**
 * A per-thread container provider for the `environment` option: `sandbox(threadId)` starts the
 * thread's container on first use (hardened: `--network none`, `--cap-drop ALL`,
 * `no-new-privileges`, pids and memory limits, `--init`), then reuses it; concurrent first uses
 * share one creation; idle containers are stopped and started again on use; `close()` removes
 * them all. The returned environments are `sandboxed`; in "bind" mode their `fileOps` is the
 * native file system (the thread directory is the same path on both sides).
 */
export function DockerSandbox(options: DockerSandboxOptions): DockerSandboxProvider {
  const settings = parseOptions(dockerSandboxOptionsSchema, options, "DockerSandbox options");
  const rootDir = resolveRootDir(settings.rootDir);
  const instanceId = randomBytes(6).toString("hex");
  const threads = new Map<string, ThreadBox>();
  let closed = false;

  const provider = async (threadId: string): Promise<Environment> => {
    if (closed) throw new Error("DockerSandbox is closed");
    const workspace = Workspace.forThread(rootDir, threadId || undefined);
    let box = threads.get(workspace.threadId);
    if (!box) {
      box = new ThreadBox(settings, instanceId, workspace);
      threads.set(workspace.threadId, box);
    }
    await box.ensure();
    return box.environment;
  };
  return Object.assign(provider, {
    instanceId,
    containers: () => new Map([...threads].map(([id, box]) => [id, box.name])),
    async close() {
      closed = true;
      for (const box of threads.values()) box.forget();
      threads.clear();
      await removeSandboxContainers({ dockerPath: settings.dockerPath, instanceId });
    },
  });
}

/**
 * Removes containers started by DockerSandbox: those of one instance, or (no instanceId) every
 * sandbox container on the engine, e.g. leftovers of a crashed process. Returns their ids.
 */
export async function removeSandboxContainers(options: { dockerPath?: string; instanceId?: string; label?: string } = {}): Promise<string[]> {
  const docker = options.dockerPath ?? "docker";
  const filter = options.label ?? (options.instanceId ? `${SANDBOX_LABEL}=${options.instanceId}` : SANDBOX_LABEL);
  const listed = await docker_(docker, ["ps", "-aq", "--filter", `label=${filter}`]);
  if (listed.code !== 0) throw new Error(`docker ps failed: ${listed.stderr.trim()}`);
  const ids = listed.stdout.split("\n").filter(Boolean);
  if (ids.length > 0) await docker_(docker, ["rm", "-f", ...ids]);
  return ids;
}

/** One thread's container: created, started, stopped when idle, recreated when gone. */
class ThreadBox {
  readonly name: string;
  readonly environment: Environment;
  private readonly exec: DockerEnvironment;
  private readonly user: string | undefined;
  /** The per-thread creation lock: every caller awaits the same start. */
  private starting: Promise<void> | undefined;
  private running = false;
  private busy = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private forgotten = false;

  constructor(
    private readonly settings: Settings,
    private readonly instanceId: string,
    private readonly workspace: Workspace,
  ) {
    const digest = createHash("sha256").update(workspace.threadId).digest("hex").slice(0, 12);
    this.name = `wb-${instanceId}-${digest}`;
    this.user =
      settings.user ?? (settings.workspaceMode === "bind" && process.getuid ? `${process.getuid()}:${process.getgid?.() ?? 0}` : undefined);
    this.exec = new DockerEnvironment({
      container: this.name,
      dockerPath: settings.dockerPath,
      user: this.user,
      defaultTimeoutMs: settings.defaultTimeoutMs,
      sandboxed: true,
    });
    const fileOps: FileOperations =
      settings.workspaceMode === "bind" ? new LocalFileOperations() : new ShellFileOperations(this.exec);
    this.environment = {
      kind: "docker",
      sandboxed: true,
      fileOps,
      exec: (command, execOptions) => this.run(command, execOptions),
      // The sandbox owns the container; DockerSandbox.close() removes it.
      close: async () => undefined,
    };
  }

  ensure(): Promise<void> {
    if (this.running) return Promise.resolve();
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** Stops the idle timer and keeps the container from being restarted (the sandbox is closing). */
  forget(): void {
    this.forgotten = true;
    this.running = false;
    if (this.idleTimer) clearTimeout(this.idleTimer);
  }

  private async run(command: string, options?: ExecOptions): Promise<ExecResult> {
    if (this.forgotten) throw new Error("DockerSandbox is closed");
    this.busy++;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    try {
      await this.ensure();
      const first = await this.execHoldingDockerErrors(command, options);
      if (!first.gone) return first.result;
      // Removed or stopped behind our back: the command never ran, so running it again is safe.
      this.running = false;
      await this.ensure();
      return (await this.execHoldingDockerErrors(command, options)).result;
    } finally {
      this.busy--;
      this.armIdleTimer();
    }
  }

  /**
   * Runs the command; when docker answers that the container is gone, reports it instead of
   * passing docker's error on. With `onOutput`, stderr that starts like such an error is held
   * back until it is clearly something else, so the caller never sees docker's complaint.
   */
  private async execHoldingDockerErrors(command: string, options: ExecOptions = {}): Promise<{ result: ExecResult; gone: boolean }> {
    const onOutput = options.onOutput;
    if (!onOutput) {
      const result = await this.exec.exec(command, options);
      return { result, gone: isGone(result, result.stderr, false) };
    }
    let held: Buffer[] | undefined = [];
    let sawStdout = false;
    const flush = () => {
      for (const chunk of held ?? []) onOutput(chunk, "stderr");
      held = undefined;
    };
    const result = await this.exec.exec(command, {
      ...options,
      onOutput: (chunk, stream) => {
        if (stream === "stdout") {
          sawStdout = true;
          flush();
          onOutput(chunk, stream);
          return;
        }
        if (!held) return onOutput(chunk, stream);
        held.push(chunk);
        const text = Buffer.concat(held).toString("utf8");
        const stillPossible = "Error".startsWith(text) || (text.startsWith("Error") && (!text.includes("\n") || CONTAINER_GONE.test(text)));
        if (!stillPossible) flush();
      },
    });
    const heldText = held ? Buffer.concat(held).toString("utf8") : "";
    if (isGone(result, heldText, sawStdout)) return { result, gone: true };
    flush();
    return { result, gone: false };
  }

  private armIdleTimer(): void {
    if (this.busy > 0 || this.forgotten) return;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => void this.stopIdle(), this.settings.idleMs);
    this.idleTimer.unref();
  }

  private async stopIdle(): Promise<void> {
    if (this.busy > 0 || this.starting || this.forgotten) return;
    this.running = false;
    // Stopped, not removed: a "container" workspace keeps its files for the next start.
    await docker_(this.settings.dockerPath, ["stop", "-t", "1", this.name]);
  }

  private async start(): Promise<void> {
    const docker = this.settings.dockerPath;
    const started = await docker_(docker, ["start", this.name]);
    if (started.code !== 0) {
      if (!/No such container/i.test(started.stderr)) throw new Error(`docker start ${this.name} failed: ${started.stderr.trim()}`);
      await this.create();
    }
    if (this.forgotten) {
      // close() ran while this start was in flight: the container must not outlive it.
      await docker_(docker, ["rm", "-f", this.name]);
      throw new Error("DockerSandbox is closed");
    }
    this.running = true;
    this.armIdleTimer();
  }

  private async create(): Promise<void> {
    const s = this.settings;
    const dir = this.workspace.dir;
    const args = [
      "run", "-d", "--name", this.name, "--init",
      "--label", `${SANDBOX_LABEL}=${this.instanceId}`,
      "--label", `${THREAD_LABEL}=${path.basename(dir)}`,
      "--label", `workbench.pid=${process.pid}`,
      "--network", s.network,
      "--cap-drop", "ALL",
      "--security-opt", "no-new-privileges",
      "--pids-limit", String(s.pids),
      "--memory", s.memory,
    ];
    for (const [key, value] of Object.entries(s.labels)) args.push("--label", `${key}=${value}`);
    if (s.cpus !== undefined) args.push("--cpus", String(s.cpus));
    if (this.user !== undefined) args.push("--user", this.user);
    if (s.workspaceMode === "bind") {
      await mkdir(dir, { recursive: true });
      args.push("--mount", mountSpec(await realpath(dir), dir, false));
      args.push("-w", dir);
    }
    for (const m of s.mounts) args.push("--mount", mountSpec(m.source, m.target, m.readOnly));
    args.push(s.image, "sleep", "infinity");
    const created = await docker_(s.dockerPath, args);
    if (created.code !== 0) {
      // A concurrent process (or an earlier run of this one) may hold the name: not ours to reuse.
      throw new Error(`docker run for thread ${JSON.stringify(this.workspace.threadId)} failed: ${created.stderr.trim()}`);
    }
    if (s.workspaceMode === "container") {
      // Created as root (the capability-less root can write root-owned /); a non-root user gets
      // the directory world-writable, since chown needs a capability the container does not have.
      const mode = this.user === undefined ? "0755" : "0777";
      const made = await docker_(s.dockerPath, ["exec", "-u", "0", this.name, "sh", "-c", 'mkdir -p -- "$1" && chmod "$2" -- "$1"', "sh", dir, mode]);
      if (made.code !== 0) throw new Error(`creating the workspace in ${this.name} failed: ${made.stderr.trim()}`);
    }
  }
}

function isGone(result: ExecResult, stderr: string, sawStdout: boolean): boolean {
  return !sawStdout && result.stdout.length === 0 && result.exitCode !== 0 && !result.timedOut && CONTAINER_GONE.test(stderr);
}

/** A `--mount` value; docker reads it as CSV, so each field is quoted. */
function mountSpec(source: string, target: string, readOnly: boolean): string {
  const field = (s: string) => `"${s.replace(/"/g, '""')}"`;
  return [field("type=bind"), field(`source=${source}`), field(`target=${target}`), ...(readOnly ? ["readonly"] : [])].join(",");
}

/** Runs a docker CLI command (no shell), bounded at 60 s. */
function docker_(docker: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(docker, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, HOME: process.env.HOME ?? os.homedir() } });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}
