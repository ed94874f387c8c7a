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
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { resolveRootDir, Workspace } from "../workspace.js";
import { DockerEnvironment } from "./dockerEnvironment.js";
import { RELAY_LISTEN_ADDRESS, RELAY_READY, startDockerEgress, type DockerEgress } from "./dockerEgress.js";
import { egressNetworkSchema, secretsOptionSchema } from "./egressProxy.js";
import type { Environment, EnvironmentProvider, ExecOptions, ExecResult } from "./environment.js";
import { LocalFileOperations } from "./localFileOperations.js";
import { ShellFileOperations } from "./shellFileOperations.js";
import type { FileOperations } from "./fileOperations.js";
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
    /**
     * `"none"` (default): no interface but loopback. `{ allow, deny?, onEgress? }`: still no
     * interface, but the listed hosts are reachable through the egress proxy (README "Network and
     * secrets in the sandbox"); the image needs socat or perl for the relay. Any other string: that
     * Docker network, an explicit opt-in.
     */
    network: z.union([z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/), egressNetworkSchema]).default("none"),
    /** Credentials commands see only as sentinels, put into requests to their hosts by the proxy. Needs `network: { allow }`. */
    secrets: secretsOptionSchema.optional(),
    /** `"never"` (default): the image must be on the engine (checked when the sandbox is built). `"missing"`: `docker run --pull missing`. */
    pull: z.enum(["never", "missing"]).default("never"),
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
  if (settings.secrets !== undefined && typeof settings.network !== "object") {
    throw new TypeError("DockerSandbox options: secrets need network: { allow: [...] } (the egress proxy puts them into requests to their hosts)");
  }
  checkEngine(settings);
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
      const boxes = [...threads.values()];
      for (const box of boxes) box.forget();
      threads.clear();
      await removeSandboxContainers({ dockerPath: settings.dockerPath, instanceId });
      for (const box of boxes) forgetAtExit(settings.dockerPath, box.name);
      await Promise.all(boxes.map((box) => box.closeEgress()));
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
  private egress: Promise<DockerEgress> | undefined;

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

  /** Stops this thread's egress proxy (the sandbox is closing). */
  async closeEgress(): Promise<void> {
    const egress = this.egress;
    this.egress = undefined;
    await egress?.then((e) => e.close(), () => undefined);
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
      await this.stripSetIdBits();
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

  /**
   * Bind mode as root: a command could leave a setuid-root file in the host's workspace
   * (`cp /bin/sh x && chmod 4755 x`; capabilities do not stop an owner's chmod). After every
   * call, once the call's processes are gone, one `docker exec` clears the set-id bits of every
   * regular file in the thread directory (`find -P -xdev`, never following a link).
   */
  private async stripSetIdBits(): Promise<void> {
    if (this.settings.workspaceMode !== "bind" || !runsAsRoot(this.user) || this.forgotten) return;
    const dir = this.workspace.dir;
    await docker_(this.settings.dockerPath, ["exec", "-u", "0", this.name, "find", "-P", dir, "-xdev", "-type", "f", "-perm", "/6000", "-exec", "chmod", "u-s,g-s", "--", "{}", "+"]).catch(() => undefined);
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
      forgetAtExit(docker, this.name);
      await this.closeEgress();
      throw new Error("DockerSandbox is closed");
    }
    if (this.egress) {
      // Commands may use the network from their first line: wait until the relay listens.
      const ready = await docker_(docker, ["exec", this.name, "sh", "-c", RELAY_READY, "ready", RELAY_LISTEN_ADDRESS]);
      if (ready.code !== 0) {
        const logs = await docker_(docker, ["logs", "--tail", "5", this.name]);
        throw new Error(`the egress relay of ${this.name} did not start: ${(logs.stderr || ready.stderr).trim()}`);
      }
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
      "--network", typeof s.network === "string" ? s.network : "none",
      "--pull", s.pull,
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
    let command = ["sleep", "infinity"];
    if (typeof s.network === "object") {
      const sameUid = this.user !== undefined && process.getuid !== undefined && this.user.split(":")[0] === String(process.getuid());
      const network = s.network;
      this.egress ??= startDockerEgress(network, s.secrets, sameUid);
      const egress = await this.egress;
      args.push(...egress.runArgs);
      command = egress.command;
    }
    args.push(s.image, ...command);
    // Registered before it exists: an exit while `docker run` is in flight still removes it.
    removeAtExit(s.dockerPath, this.name);
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

/**
 * Checks, when the sandbox is built (synchronously: it is built once, before any tool call),
 * that the docker CLI runs, the engine answers and the image is there (unless `pull: "missing"`),
 * and, with an egress allow-list, that the image can run the relay. Throws an operator error.
 */
function checkEngine(s: Settings): void {
  const run = (args: string[]) => spawnSync(s.dockerPath, args, { encoding: "utf8", timeout: 60_000, env: { ...process.env, HOME: process.env.HOME ?? os.homedir() } });
  const inspect = run(["image", "inspect", "--format", "{{.Id}}", s.image]);
  if (inspect.error) {
    const code = (inspect.error as NodeJS.ErrnoException).code;
    throw new Error(
      code === "ENOENT"
        ? `DockerSandbox: the docker CLI ${JSON.stringify(s.dockerPath)} was not found. Install Docker, or set dockerPath to the docker executable.`
        : `DockerSandbox: running ${JSON.stringify(s.dockerPath)} failed: ${inspect.error.message}`,
    );
  }
  if (inspect.status === 0) {
    if (typeof s.network === "object") checkRelay(s, run);
    return;
  }
  const why = inspect.stderr.trim();
  if (!/no such image/i.test(why)) throw new Error(`DockerSandbox: the Docker engine did not answer (${why.split("\n")[0]}). Start dockerd, or point DOCKER_HOST at a running engine.`);
  if (s.pull === "never") {
    throw new Error(`DockerSandbox: image ${JSON.stringify(s.image)} is not on the Docker engine, and pull is "never". Build or load it (docker build / docker load / docker pull), or set pull: "missing".`);
  }
}

function checkRelay(s: Settings, run: (args: string[]) => SpawnSyncReturns<string>): void {
  const probe = run(["run", "--rm", "--pull", "never", "--network", "none", "--entrypoint", "sh", s.image, "-c", "command -v socat || command -v perl"]);
  if (probe.status !== 0) {
    throw new Error(`DockerSandbox: network: { allow } needs socat or perl in image ${JSON.stringify(s.image)} (for the relay to the egress proxy); neither was found${probe.stderr ? ` (${probe.stderr.trim().split("\n")[0]})` : ""}. Add one to the image.`);
  }
}

/** Containers to remove when this process exits without close(), by docker CLI. */
const atExit = new Map<string, Set<string>>();
let exitHooked = false;

function removeAtExit(docker: string, name: string): void {
  let names = atExit.get(docker);
  if (!names) atExit.set(docker, (names = new Set()));
  names.add(name);
  if (exitHooked) return;
  exitHooked = true;
  process.once("exit", removeLeftovers);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      removeLeftovers();
      // Nobody else handles it: end the process the way the signal would have.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}

function forgetAtExit(docker: string, name: string): void {
  atExit.get(docker)?.delete(name);
}

/** Synchronous (the process is exiting): one bounded `docker rm -f` per CLI. */
function removeLeftovers(): void {
  for (const [docker, names] of atExit) {
    if (names.size === 0) continue;
    spawnSync(docker, ["rm", "-f", ...names], { stdio: "ignore", timeout: 20_000 });
    names.clear();
  }
}

/** The container user is root: `0`, `0:…`, `root`, or the image's default (taken as root). */
function runsAsRoot(user: string | undefined): boolean {
  if (user === undefined) return true;
  const name = user.split(":")[0];
  return name === "0" || name === "root";
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
