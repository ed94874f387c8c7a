import { checkExecOptions, type Environment, type ExecOptions, type ExecResult } from "./environment.js";
import { runProcess } from "./localShell.js";

/** Options of {@link DockerEnvironment}. */
export interface DockerEnvironmentOptions {
  /** Name or id of a running container. */
  container: string;
  /** The docker CLI executable. Default `"docker"` (looked up on PATH). */
  dockerPath?: string;
  /** `--user` for the commands (e.g. `"1000:1000"`). Default: the container's user. */
  user?: string;
  /** Timeout applied when a call gives none, in ms. Default 60,000. */
  defaultTimeoutMs?: number;
}

/**
 * Runs commands inside a running container through the docker CLI:
 * `docker exec -i [-u user] [-w cwd] <container> sh -c <command>`. `-i` keeps stdin open, which
 * is how file content reaches the container. The image needs GNU coreutils and findutils for
 * ShellFileOperations (Debian/Ubuntu based images have them; busybox/alpine images do not).
 * A timeout kills the local `docker exec` client; Docker does not forward that to the process in
 * the container, so a runaway command may keep running there.
 */
export class DockerEnvironment implements Environment {
  readonly kind = "docker";
  private readonly container: string;
  private readonly dockerPath: string;
  private readonly user: string | undefined;
  private readonly defaultTimeoutMs: number;

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
    this.container = options.container;
    this.dockerPath = options.dockerPath ?? "docker";
    this.user = options.user;
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    checkExecOptions(options);
    // No shell on our side: argv goes to docker as-is, so only the container's `sh` parses it.
    const args = ["exec", "-i"];
    if (this.user !== undefined) args.push("-u", this.user);
    if (options.cwd !== undefined) args.push("-w", options.cwd);
    args.push(this.container, "sh", "-c", command);
    return runProcess(this.dockerPath, args, { stdin: options.stdin, timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs });
  }

  async close(): Promise<void> {
    // Each call is its own `docker exec`; nothing is held.
  }
}
