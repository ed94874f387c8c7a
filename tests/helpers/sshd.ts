/**
 * Starts a throwaway OpenSSH server on 127.0.0.1 for tests and benchmarks: fresh ed25519 host
 * and user keys (ssh-keygen), a private sshd_config in a temp dir, `sshd -D -e` in the foreground.
 * Locally, a machine without /usr/sbin/sshd skips the ssh tests; under CI (`CI=true`) a missing
 * sshd is a failure, because `.ci/run` installs openssh-server.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { access, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { runProcess } from "../../src/environment/localEnvironment.js";
import type { SshEnvironmentOptions } from "../../src/environment/sshEnvironment.js";
import { freePort } from "./net.js";

export const SSHD_PATH = "/usr/sbin/sshd";

export interface TestSshd {
  port: number;
  /** Options for `new SshEnvironment(...)`: user key, pinned host key. */
  options: SshEnvironmentOptions;
  /** The server's public host key line. */
  hostPublicKey: string;
  /** Stops the server (existing connections drop) and starts it again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Why ssh tests cannot run here, or `undefined` when they can. Under CI this throws instead. */
export async function sshdUnavailable(): Promise<string | undefined> {
  const missing = await access(SSHD_PATH).then(
    () => undefined,
    () => `${SSHD_PATH} is missing (apt-get install openssh-server; .ci/run does this)`,
  );
  if (missing && process.env.CI === "true") throw new Error(`CI=true but ${missing}`);
  return missing;
}

export interface StartSshdOptions {
  /** Offer the SFTP subsystem (SshEnvironment.fileOps needs it). Default true. */
  sftp?: boolean;
}

export async function startSshd(options: StartSshdOptions = {}): Promise<TestSshd> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "wb-sshd-"));
  try {
    await keygen(path.join(dir, "host_ed25519"));
    await keygen(path.join(dir, "user_ed25519"));
    const hostPublicKey = (await readFile(path.join(dir, "host_ed25519.pub"), "utf8")).trim();
    await writeFile(path.join(dir, "authorized_keys"), await readFile(path.join(dir, "user_ed25519.pub")), { mode: 0o600 });
    // sshd refuses to start without its privilege-separation directory.
    if (process.getuid?.() === 0) await mkdir("/run/sshd", { recursive: true, mode: 0o755 });
    const port = await freePort();
    const config = [
      "ListenAddress 127.0.0.1",
      `Port ${port}`,
      `HostKey ${path.join(dir, "host_ed25519")}`,
      `AuthorizedKeysFile ${path.join(dir, "authorized_keys")}`,
      `PidFile ${path.join(dir, "sshd.pid")}`,
      "StrictModes no",
      "UsePAM no",
      "PermitRootLogin yes",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PubkeyAuthentication yes",
      "LogLevel ERROR",
      // Debian's bash sources ~/.bashrc for sshd sessions unless it thinks it is nested
      // (SHLVL ≥ 1); a slow bashrc (pyenv init: ~200 ms) would otherwise dominate every test.
      "SetEnv SHLVL=1",
      // SftpFileOperations (SshEnvironment.fileOps) needs the SFTP subsystem; the in-process
      // server needs no sftp-server binary on the host.
      ...(options.sftp === false ? [] : ["Subsystem sftp internal-sftp"]),
      "",
    ].join("\n");
    const configPath = path.join(dir, "sshd_config");
    await writeFile(configPath, config);
    let server = await launch(configPath, port);
    return {
      port,
      hostPublicKey,
      options: {
        host: "127.0.0.1",
        port,
        username: os.userInfo().username,
        privateKey: await readFile(path.join(dir, "user_ed25519")),
        hostKey: hostPublicKey,
        connectTimeoutMs: 10_000,
      },
      async restart() {
        await halt(server);
        server = await launch(configPath, port);
      },
      async stop() {
        await halt(server);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

async function keygen(file: string): Promise<void> {
  const result = await runProcess("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "wb-test", "-f", file], {
    timeoutMs: 20_000,
  });
  if (result.exitCode !== 0) throw new Error(`ssh-keygen failed: ${result.stderr}`);
}

async function launch(configPath: string, port: number): Promise<ChildProcess> {
  const child = spawn(SSHD_PATH, ["-D", "-e", "-f", configPath], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => (log += chunk.toString("utf8")));
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`sshd exited early (${code}): ${log.trim()}`))),
  );
  exited.catch(() => undefined);
  try {
    await Promise.race([waitForPort(port, 10_000), exited]);
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return child;
}

/**
 * Stops the listener and the per-connection sshd processes it forked: those survive a listener
 * SIGTERM by design (and call setsid, so no process group reaches them), which would keep old
 * connections alive across a "restart".
 */
async function halt(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  for (const pid of await childrenOf(child.pid)) {
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await gone;
  clearTimeout(timer);
}

async function childrenOf(parent: number | undefined): Promise<number[]> {
  if (parent === undefined) return [];
  const pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name));
  const children: number[] = [];
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    // Fields after the parenthesised command name: state, ppid, …
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (ppid === parent) children.push(Number(pid));
  }
  return children;
}


async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: "127.0.0.1", port });
      socket.setTimeout(1_000);
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("timeout", () => {
        socket.destroy();
        resolve(false);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`sshd did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
