import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { access, constants as fsConstants } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { ChannelEnvironment, ExecChannel } from "./execChannel.js";
import { checkExecOptions, type ExecOptions, type ExecResult } from "./environment.js";

/** Options of {@link DockerEnvironment}. */
export interface DockerEnvironmentOptions {
  /** Name or id of a running container. */
  container: string;
  /** The docker CLI executable. Default `"docker"` (looked up on PATH once). */
  dockerPath?: string;
  /** `--user` for the commands (e.g. `"1000:1000"`). Default: the container's user. */
  user?: string;
  /** Timeout applied when a call gives none, in ms. Default 60,000. */
  defaultTimeoutMs?: number;
  /** Variables for calls that give no `env` (exactly these). Default: the container's own. */
  env?: Record<string, string>;
  /** Set by DockerSandbox: the container is isolated from the host (no host mounts but the thread's). */
  sandboxed?: boolean;
}

/** Marks every process of one call, so the call's processes can be found and killed. */
export const EXEC_ID_VAR = "WORKBENCH_EXEC_ID";

/**
 * Kills the processes of one call inside the container: those carrying the call's marker
 * variable (inherited across `setsid` and `nohup`), and everything in the session or process
 * group of a marked process (the call's shell is a session leader: runc makes every exec one).
 * A second pass, when the first killed something, catches children forked meanwhile. POSIX sh
 * and one grep per pass.
 */
const REAP = `wb_reap() {
  wb_t=$1 wb_spare=$2 wb_pass=0 wb_hit=1
  while [ $wb_pass -lt 2 ] && [ $wb_hit = 1 ]; do
    wb_hit=0
    wb_m=" "
    for wb_f in $(grep -lzx "${EXEC_ID_VAR}=$wb_t" /proc/[0-9]*/environ 2>/dev/null); do
      wb_f=\${wb_f#/proc/}
      wb_m="$wb_m\${wb_f%/environ} "
    done
    for wb_d in /proc/[0-9]*; do
      wb_p=\${wb_d#/proc/}
      [ "$wb_p" = "$wb_spare" ] && continue
      [ "$wb_p" = 1 ] && continue
      read -r wb_st < "$wb_d/stat" 2>/dev/null || continue
      set -- \${wb_st##*") "}
      case "$wb_m" in *" $wb_p "*|*" $3 "*|*" $4 "*) kill -9 "$wb_p" 2>/dev/null && wb_hit=1 ;; esac
    done
    wb_pass=$((wb_pass + 1))
  done
}`;

/**
 * The call's shell: runs the command (with exactly the listed variables when `$2` is 1), then
 * kills whatever the command left running (background jobs, `setsid` children) and exits with
 * the command's status.
 */
const WRAPPER = `${REAP}
wb_c=$1 wb_exact=$2
shift 2
(
  if [ "$wb_exact" = 1 ]; then
    for wb_v in $(env | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p'); do
      case " $* ${EXEC_ID_VAR} " in *" $wb_v "*) ;; *) unset "$wb_v" 2>/dev/null ;; esac
    done
  fi
  exec /bin/sh -c "$wb_c"
)
wb_s=$?
wb_reap "$${EXEC_ID_VAR}" $$
exit $wb_s`;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Names the docker client reads itself: they cannot ride in its environment (see exec). */
const CLIENT_OWN = /^DOCKER_/;

/**
 * Runs commands inside a running container through the docker CLI:
 * `docker exec -i [-u user] [-w cwd] -e WORKBENCH_EXEC_ID=<id> [-e NAME…] <container> sh -c <wrapper>`.
 * `-i` keeps stdin open, which is how file content reaches the container. The image needs GNU
 * coreutils, findutils and grep for ShellFileOperations and the process cleanup (Debian/Ubuntu
 * based images have them; busybox/alpine images do not).
 *
 * - **Variables** (`env`): each goes to docker as `-e NAME` with its value in the docker
 *   *client's* environment, so values never appear in an argv (`ps`) nor in `docker inspect`
 *   (exec variables are not stored on the container). The command then sees exactly those
 *   variables plus `WORKBENCH_EXEC_ID` (a random call id). Names starting with `DOCKER_` are
 *   refused: the client would read them as its own settings.
 * - **Timeout and abort** stop the command *inside* the container: a second `docker exec` kills
 *   every process of the call (its session and process group, and anything carrying its call id,
 *   which survives `setsid`), then the local client.
 * - **When a call returns**, the processes it left running (background jobs, `nohup`, `setsid`
 *   children) are killed the same way. A process that both leaves the session and clears its
 *   environment (`setsid env -i …`) escapes this sweep; it still ends with the container
 *   (DockerSandbox stops idle containers).
 */
export class DockerEnvironment implements ChannelEnvironment {
  readonly kind = "docker";
  readonly sandboxed: boolean;
  /** The container the commands run in. */
  readonly container: string;
  private readonly dockerPath: string;
  private readonly user: string | undefined;
  private readonly defaultTimeoutMs: number;
  private readonly env: Record<string, string> | undefined;
  private resolvedDocker: Promise<string> | undefined;

  constructor(options: DockerEnvironmentOptions) {
    if (!options || typeof options.container !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(options.container)) {
      throw new TypeError("DockerEnvironment: container must be a container name or id ([A-Za-z0-9_.-], not starting with - or .)");
    }
    if (options.dockerPath !== undefined && (typeof options.dockerPath !== "string" || options.dockerPath === "")) {
      throw new TypeError("DockerEnvironment: dockerPath must be a non-empty executable name or path");
    }
    if (options.user !== undefined && (typeof options.user !== "string" || !/^[A-Za-z0-9_][A-Za-z0-9_.:-]*$/.test(options.user))) {
      throw new TypeError("DockerEnvironment: user must look like name, uid or uid:gid");
    }
    if (options.defaultTimeoutMs !== undefined && !(Number.isFinite(options.defaultTimeoutMs) && options.defaultTimeoutMs > 0)) {
      throw new TypeError("DockerEnvironment: defaultTimeoutMs must be a positive number");
    }
    if (options.env !== undefined) checkEnv(options.env, "DockerEnvironment: env");
    this.container = options.container;
    this.dockerPath = options.dockerPath ?? "docker";
    this.user = options.user;
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
    this.env = options.env;
    this.sandboxed = options.sandboxed === true;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    checkExecOptions(options);
    if (typeof command !== "string") throw new TypeError("exec command must be a string");
    const env = options.env ?? this.env;
    if (env !== undefined) checkEnv(env, "exec option env");
    const docker = await this.docker();
    // Aborted before it started: nothing runs, nothing to kill.
    if (options.signal?.aborted) return { stdout: Buffer.alloc(0), stderr: "", exitCode: -1, timedOut: false, aborted: true };
    const id = randomBytes(12).toString("hex");
    // No shell on our side: argv goes to docker as-is, so only the container's `sh` parses it.
    const args = ["exec", "-i", ...this.userArgs()];
    if (options.cwd !== undefined) args.push("-w", options.cwd);
    args.push("-e", `${EXEC_ID_VAR}=${id}`);
    const names = env === undefined ? [] : Object.keys(env);
    for (const name of names) args.push("-e", name);
    args.push(this.container, "sh", "-c", WRAPPER, "wb", command, env === undefined ? "0" : "1", ...names);
    return this.run(docker, args, clientEnv(env ?? {}), id, options);
  }

  /**
   * One long-lived `docker exec -i` running `command` under the same wrapper as exec (so what it
   * leaves running is killed when it ends). Not holding this process alive unless `hold(true)`.
   */
  async openChannel(command: string, onStdout: (chunk: Buffer) => void): Promise<ExecChannel> {
    const docker = await this.docker();
    const id = randomBytes(12).toString("hex");
    const args = ["exec", "-i", ...this.userArgs(), "-e", `${EXEC_ID_VAR}=${id}`, this.container, "sh", "-c", WRAPPER, "wb", command, "0"];
    const child = spawn(docker, args, { env: clientEnv({}), stdio: ["pipe", "pipe", "pipe"], detached: true });
    let stderr = "";
    child.stdout.on("data", onStdout);
    child.stderr.on("data", (c: Buffer) => {
      if (stderr.length < 8192) stderr += c.toString("utf8");
    });
    child.stdin.on("error", () => undefined);
    const ended = new Promise<{ exitCode: number; stderr: string }>((resolve) => {
      child.on("error", (error) => resolve({ exitCode: -1, stderr: stderr || error.message }));
      child.on("close", (code) => resolve({ exitCode: code ?? -1, stderr }));
    });
    let killed = false;
    const handles = [child, child.stdin, child.stdout, child.stderr] as Array<{ ref?: () => void; unref?: () => void }>;
    return {
      write: (data) => void child.stdin.write(data),
      end: () => child.stdin.end(),
      kill: () => {
        if (killed) return;
        killed = true;
        // The processes inside first (a killed client would leave them running), then the client.
        void this.reap(docker, id).finally(() => killGroup(child.pid));
        setTimeout(() => killGroup(child.pid), 10_000).unref();
      },
      hold: (on) => {
        for (const h of handles) (on ? h.ref : h.unref)?.call(h);
      },
      ended,
    };
  }

  async close(): Promise<void> {
    // Each call is its own `docker exec`; nothing is held.
  }

  private userArgs(): string[] {
    return this.user === undefined ? [] : ["-u", this.user];
  }

  /** `dockerPath` resolved once against this process's PATH: the client's own PATH may be the command's. */
  private docker(): Promise<string> {
    this.resolvedDocker ??= resolveExecutable(this.dockerPath);
    return this.resolvedDocker;
  }

  private run(docker: string, args: string[], env: NodeJS.ProcessEnv, id: string, options: ExecOptions): Promise<ExecResult> {
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    return new Promise((resolve, reject) => {
      const child = spawn(docker, args, { env, stdio: ["pipe", "pipe", "pipe"], detached: true });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      let stopped: "timeout" | "abort" | undefined;
      let settled = false;
      const stop = (why: "timeout" | "abort") => {
        if (stopped || settled) return;
        stopped = why;
        void (async () => {
          // Once the call's processes are gone the client ends by itself. A call stopped while
          // docker was still starting it has nothing to kill yet: sweep again, then give up on
          // the container and kill the client.
          for (let attempt = 0; attempt < 3 && !settled; attempt++) {
            await this.reap(docker, id);
            if (!settled) await new Promise((r) => setTimeout(r, 1_000));
          }
          if (!settled) killGroup(child.pid);
        })();
      };
      const timer = setTimeout(() => stop("timeout"), timeoutMs);
      const onAbort = () => stop("abort");
      options.signal?.addEventListener("abort", onAbort, { once: true });
      const finish = () => {
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
      };
      child.stdout.on("data", (chunk: Buffer) => (options.onOutput ? options.onOutput(chunk, "stdout") : stdout.push(chunk)));
      child.stderr.on("data", (chunk: Buffer) => (options.onOutput ? options.onOutput(chunk, "stderr") : stderr.push(chunk)));
      // The command may exit without reading all of stdin (e.g. it failed early): EPIPE is expected.
      child.stdin.on("error", () => undefined);
      child.on("error", (error) => {
        if (settled) return;
        finish();
        reject(error);
      });
      child.on("close", (code) => {
        if (settled) return;
        finish();
        resolve({
          stdout: Buffer.concat(stdout),
          stderr: Buffer.concat(stderr).toString("utf8"),
          exitCode: stopped ? -1 : (code ?? -1),
          timedOut: stopped === "timeout",
          ...(stopped === "abort" ? { aborted: true } : {}),
        });
      });
      child.stdin.end(options.stdin ?? "");
    });
  }

  /** Kills every process of call `id` inside the container (bounded: 10 s). */
  private reap(docker: string, id: string): Promise<void> {
    return new Promise((resolve) => {
      const args = ["exec", ...this.userArgs(), this.container, "sh", "-c", `${REAP}\nwb_reap "$1" 0`, "wb", id];
      const child = spawn(docker, args, { env: clientEnv({}), stdio: "ignore", detached: true });
      const timer = setTimeout(() => killGroup(child.pid), 10_000);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      child.on("error", done);
      child.on("close", done);
    });
  }
}

function checkEnv(env: Record<string, string>, what: string): void {
  if (typeof env !== "object" || env === null) throw new TypeError(`${what} must be an object of string values`);
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) throw new TypeError(`${what}: ${JSON.stringify(name)} is not a valid variable name`);
    if (CLIENT_OWN.test(name)) {
      throw new TypeError(`${what}: ${name} cannot be passed into a container (the docker client reads DOCKER_* itself); use another name`);
    }
    if (typeof value !== "string" || value.includes("\0")) throw new TypeError(`${what}: ${name} must be a string without NUL bytes`);
  }
}

/**
 * The docker client's environment: this process's (the client is a host process like any
 * other; only the `-e` names reach the container), the command's variables over it, and the
 * client's configuration directory pinned so a HOME among those variables does not move it.
 */
function clientEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  const dockerConfig = process.env.DOCKER_CONFIG ?? path.join(process.env.HOME ?? os.homedir(), ".docker");
  return { ...process.env, ...vars, DOCKER_CONFIG: dockerConfig };
}

async function resolveExecutable(file: string): Promise<string> {
  if (file.includes("/")) return file;
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, file);
    if (await access(candidate, fsConstants.X_OK).then(() => true, () => false)) return candidate;
  }
  return file; // spawn reports ENOENT
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}
