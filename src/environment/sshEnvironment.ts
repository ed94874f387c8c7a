import { createHash, timingSafeEqual } from "node:crypto";
import pLimit, { type LimitFunction } from "p-limit";
import type { Client, ClientChannel, ConnectConfig, SFTPWrapper } from "ssh2";
import { checkExecOptions, type Environment, type ExecOptions, type ExecResult } from "./environment.js";
import { loadOptional, requireInstalled } from "../optional.js";
import { shellQuote } from "./shellQuote.js";
import { SftpFileOperations, sftpChannelOpen } from "./sftpFileOperations.js";
import { WorkbenchError } from "../workbenchError.js";

/** Options of {@link SshEnvironment}. Exactly one way to check the host key is required. */
export interface SshEnvironmentOptions {
  /** Host name or IP address of the SSH server. */
  host: string;
  /** TCP port. Default 22. */
  port?: number;
  /** Login name. */
  username: string;
  /** Private key (OpenSSH or PEM text, or its bytes). */
  privateKey?: string | Buffer;
  /** Passphrase of an encrypted `privateKey`. */
  passphrase?: string;
  /** Password authentication. */
  password?: string;
  /** Path of an ssh-agent socket (usually `process.env.SSH_AUTH_SOCK`). */
  agent?: string;
  /**
   * The server's expected host key: OpenSSH public key text (`ssh-ed25519 AAAA… comment`, as in
   * a `.pub` file or a known_hosts line) or a `SHA256:…` fingerprint as `ssh-keygen -lf` prints
   * it. Several accepted keys may be given.
   */
  hostKey?: string | string[];
  /** Custom host key check, given the raw key blob; return true to accept. */
  hostVerifier?: (key: Buffer) => boolean;
  /** Accept any host key (man-in-the-middle possible). Only for throwaway test servers. */
  acceptAnyHostKey?: boolean;
  /** Give up connecting (TCP + handshake + auth) after this many ms. Default 10,000. */
  connectTimeoutMs?: number;
  /** Send a keepalive every this many ms; 0 disables. Default 15,000. */
  keepaliveIntervalMs?: number;
  /** Drop the connection after this many unanswered keepalives. Default 3. */
  keepaliveCountMax?: number;
  /**
   * Commands running at once over the one connection. OpenSSH allows 10 sessions per connection
   * (`MaxSessions`), so the default 8 stays under it with room for the SFTP session of `fileOps`.
   */
  maxConcurrentCommands?: number;
  /** Timeout applied when a call gives none, in ms. Default 60,000. */
  defaultTimeoutMs?: number;
  /**
   * End the connection after this many ms with no command or file call in flight; the next call
   * connects again. An open connection (its socket and keepalive timer) keeps Node's event loop
   * alive, so without this a program that forgot `close()` would never exit. Default 30,000.
   */
  idleTimeoutMs?: number;
}

/**
 * Runs commands on an SSH server with the `ssh2` package, in the login shell of the user.
 *
 * One connection is opened on first use and reused by every command (each command is one exec
 * channel). If that connection has died (server restart, network drop), the next command finds
 * the channel cannot be opened and reconnects once; the command had not started, so running it
 * on the new connection is safe. A connection lost *while* a command runs rejects that command
 * (it may have partly run; it is not repeated). On timeout the remote shell is sent SIGKILL and
 * the channel closed; OpenSSH signals only the shell, so its children may run on. Call
 * {@link close} when done so the process can exit.
 *
 * Cost: every command starts a new session, and the user's shell start-up runs each time
 * (Debian's bash sources `~/.bashrc` for sshd sessions), so keep that file fast on the server.
 *
 * Files go through SFTP instead ({@link fileOps}, an {@link SftpFileOperations}): one SFTP
 * session on the same connection serves every file call without starting a process, so search
 * and commands use `exec` and reads, writes, stat and listings use SFTP. The server must offer
 * the `sftp` subsystem (OpenSSH's default config does).
 */
export class SshEnvironment implements Environment {
  readonly kind = "ssh";
  private readonly config: ConnectConfig;
  private readonly defaultTimeoutMs: number;
  private readonly limit: LimitFunction;
  private connection: Promise<Client> | undefined;
  private closed = false;
  /** Native file access over SFTP on this environment's connection. */
  readonly fileOps: SftpFileOperations = new SftpFileOperations(this);
  private sftpSession: SftpSession | undefined;
  private readonly idleTimeoutMs: number;
  /** Calls in flight (commands queued or running, file calls). */
  private active = 0;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(options: SshEnvironmentOptions) {
    requireInstalled("ssh2", "The SSH environment");
    this.config = toConnectConfig(options);
    this.defaultTimeoutMs = positive(options.defaultTimeoutMs, "defaultTimeoutMs") ?? 60_000;
    this.limit = pLimit(positive(options.maxConcurrentCommands, "maxConcurrentCommands") ?? 8);
    this.idleTimeoutMs = positive(options.idleTimeoutMs, "idleTimeoutMs") ?? 30_000;
  }

  /**
   * Runs `op` as a use of the connection: while any is in flight the connection stays; once none
   * has been for `idleTimeoutMs` it is ended (see {@link SshEnvironmentOptions.idleTimeoutMs}).
   * SftpFileOperations wraps each file call in it.
   */
  async use<T>(op: () => Promise<T>): Promise<T> {
    this.active++;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    try {
      return await op();
    } finally {
      if (--this.active === 0 && !this.closed) {
        // Unref'd: this timer alone never keeps the process alive.
        this.idleTimer = setTimeout(() => this.endIdle(), this.idleTimeoutMs).unref();
      }
    }
  }

  /** Ends the connection nobody is using; the environment stays usable (the next call reconnects). */
  private endIdle(): void {
    this.idleTimer = undefined;
    if (this.active > 0) return;
    const connection = this.connection;
    this.connection = undefined;
    this.sftpSession = undefined;
    void connection?.then(
      (client) => client.end(),
      () => undefined,
    );
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    checkExecOptions(options);
    if (typeof command !== "string") throw new TypeError("command must be a string");
    // `env` is applied with `export` on top of the login environment: the server's own PATH and
    // HOME stay (this process's values mean nothing there).
    const exports = Object.entries(options.env ?? {}).map(([name, value]) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TypeError(`exec option env: invalid variable name ${JSON.stringify(name)}`);
      return `export ${name}=${shellQuote(value)}\n`;
    });
    const cd = options.cwd === undefined ? "" : `cd -- ${shellQuote(options.cwd)} || exit 1\n`;
    const line = exports.length === 0 && cd === "" ? command : `${exports.join("")}${cd}${command}`;
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const stream = { signal: options.signal, onOutput: options.onOutput };
    if (options.signal?.aborted) return { stdout: Buffer.alloc(0), stderr: "", exitCode: -1, timedOut: false, aborted: true };
    return this.use(() => this.limit(() => this.run(line, options.stdin, timeoutMs, stream)));
  }

  /**
   * The SFTP session of the current connection: opened on first use, shared by every file call,
   * and opened again on the new connection after a reconnect. Pass `stale`, a session whose
   * request just failed at the transport level, to get a fresh one; if the connection itself is
   * dead it is dropped and one new connection is tried, like a command whose channel cannot open.
   */
  sftp(stale?: SFTPWrapper): Promise<SFTPWrapper> {
    const current = this.sftpSession;
    if (current && !(current.ready && (current.ready === stale || !sftpChannelOpen(current.ready)))) return current.opening;
    if (current) {
      this.sftpSession = undefined;
      current.ready?.end();
    }
    // Every concurrent caller shares this one attempt (and its outcome).
    const session: SftpSession = { opening: this.openSftpSession() };
    this.sftpSession = session;
    const drop = () => {
      if (this.sftpSession === session) this.sftpSession = undefined;
    };
    session.opening.then((ready) => {
      session.ready = ready;
      ready.once("close", drop);
      ready.once("end", drop);
    }, drop);
    return session.opening;
  }

  private async openSftpSession(): Promise<SFTPWrapper> {
    let reconnected = false;
    for (let attempt = 1; ; attempt++) {
      const client = await this.connect();
      try {
        return await openSftp(client);
      } catch (error) {
        if (!(error instanceof ChannelOpenError)) throw error;
        if (error.serverAnswered) {
          // Briefly over MaxSessions while closed channels drain: wait, same connection.
          if (attempt >= OPEN_RETRIES) throw error;
          await delay(20 * attempt);
          continue;
        }
        if (reconnected) throw error;
        this.discard(client); // the reused connection is dead: try once on a fresh one
        reconnected = true;
      }
    }
  }

  /** Ends the connection (and the SFTP session on it). Later `exec` and file calls reject. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    this.sftpSession = undefined;
    const connection = this.connection;
    this.connection = undefined;
    if (!connection) return;
    const client = await connection.catch(() => undefined);
    client?.end();
  }

  private async run(command: string, stdin: string | Buffer | undefined, timeoutMs: number, stream: Streaming): Promise<ExecResult> {
    let client = await this.connect();
    let reconnected = false;
    for (let attempt = 1; ; attempt++) {
      try {
        return await runOn(client, command, stdin, timeoutMs, stream);
      } catch (error) {
        // Only failures before the command started are retried: running it twice is never safe.
        if (!(error instanceof ChannelOpenError)) throw error;
        if (error.serverAnswered) {
          // A live server refused a session (briefly over MaxSessions while closed channels
          // drain): wait and retry on the same connection, which other commands are using.
          if (attempt >= OPEN_RETRIES) {
            throw Object.assign(
              new Error(
                `${error.message}: the server refused a new session ${attempt} times; lower maxConcurrentCommands or raise MaxSessions in sshd_config`,
                { cause: error },
              ),
              { code: "ERR_SSH_CHANNEL_OPEN" },
            );
          }
          await delay(20 * attempt);
          continue;
        }
        if (reconnected) throw error;
        // The reused connection is dead: drop it and try once on a fresh one.
        this.discard(client);
        client = await this.connect();
        reconnected = true;
      }
    }
  }

  private connect(): Promise<Client> {
    if (this.closed) return Promise.reject(Object.assign(new Error("SshEnvironment is closed"), { code: "ERR_SSH_CLOSED" }));
    if (this.connection) return this.connection;
    const connection: Promise<Client> = openClient(this.config, () => this.forget(connection));
    connection.catch(() => this.forget(connection));
    this.connection = connection;
    return connection;
  }

  private forget(connection: Promise<Client>): void {
    if (this.connection === connection) this.connection = undefined;
  }

  private discard(client: Client): void {
    this.connection = undefined;
    client.end();
  }
}

/** Connects and authenticates; `onClose` runs when the connection later ends. */
async function openClient(config: ConnectConfig, onClose: () => void): Promise<Client> {
  const ClientClass = await loadClient();
  return new Promise<Client>((resolve, reject) => {
    const client = new ClientClass();
    const fail = (error: Error) => {
      reject(
        Object.assign(new Error(`SSH connection to ${config.host}:${config.port} failed: ${error.message}`), {
          code: (error as NodeJS.ErrnoException).code ?? "ECONNREFUSED",
          cause: error,
        }),
      );
    };
    client.once("error", fail);
    client.once("ready", () => {
      client.off("error", fail);
      // Later errors end in "close", where the connection is forgotten.
      client.on("error", () => undefined);
      resolve(client);
    });
    client.once("close", onClose);
    client.connect(config);
  });
}

/** ssh2 is loaded on first connect: importing it costs ~100+ ms, which users without SSH skip. */
async function loadClient(): Promise<typeof Client> {
  const ssh2 = await loadOptional("ssh2", "The SSH environment", () => import("ssh2"));
  return ssh2.Client ?? (ssh2 as unknown as { default: { Client: typeof Client } }).default.Client;
}

const OPEN_RETRIES = 8;

/** The environment's SFTP session: being opened, then `ready`. */
interface SftpSession {
  opening: Promise<SFTPWrapper>;
  ready?: SFTPWrapper;
}

/** Opens the SFTP subsystem on `client`; a failure to open the channel is a ChannelOpenError. */
function openSftp(client: Client): Promise<SFTPWrapper> {
  return new Promise((resolve, reject) => {
    try {
      client.sftp((error, sftp) => {
        if (!error) resolve(sftp);
        else if (!/subsystem|SFTP session/i.test(error.message)) reject(new ChannelOpenError(error));
        else {
          reject(
            Object.assign(
              new Error(`${error.message}: the SSH server offers no SFTP subsystem (add "Subsystem sftp internal-sftp" to its sshd_config, or use ShellFileOperations over this environment)`, { cause: error }),
              { code: "ERR_SSH_NO_SFTP" },
            ),
          );
        }
      });
    } catch (error) {
      // ssh2 throws "Not connected" synchronously when the socket is already gone.
      reject(new ChannelOpenError(error as Error));
    }
  });
}


function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The exec channel could not be opened: the command never started. */
class ChannelOpenError extends WorkbenchError {
  readonly code = "SSH_CHANNEL_OPEN";
  /** True when the server itself refused (the connection is alive), false when it is gone. */
  readonly serverAnswered: boolean;
  constructor(cause: Error) {
    super(cause.message, { cause });
    const reason = (cause as { reason?: unknown }).reason;
    this.serverAnswered = reason !== undefined || /Unable to exec/i.test(cause.message);
  }
}

/** The streaming parts of the exec options. */
type Streaming = Pick<ExecOptions, "signal" | "onOutput">;

function runOn(client: Client, command: string, stdin: string | Buffer | undefined, timeoutMs: number, stream: Streaming): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    try {
      client.exec(command, (error, channel) => {
        if (error) reject(new ChannelOpenError(error));
        // Listeners go on synchronously: the exit status may arrive in the same TCP read as the
        // exec confirmation, and an `exit` event emitted before a listener exists is lost.
        else collect(channel, stdin, timeoutMs, stream).then(resolve, reject);
      });
    } catch (error) {
      reject(new ChannelOpenError(error as Error));
    }
  });
}

function collect(channel: ClientChannel, stdin: string | Buffer | undefined, timeoutMs: number, stream: Streaming): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const { signal, onOutput } = stream;
    let exitCode: number | undefined;
    let settled = false;
    let aborted = false;
    const finish = (timedOut: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve({
        stdout: Buffer.concat(stdout),
        stderr: Buffer.concat(stderr).toString("utf8"),
        exitCode: timedOut || aborted ? -1 : (exitCode ?? -1),
        timedOut,
        ...(aborted ? { aborted } : {}),
      });
    };
    const kill = () => {
      // OpenSSH delivers the signal to the session's shell only; children that keep the pipes
      // open would hold the channel, so the caller is answered now instead of at channel close.
      try {
        channel.signal("KILL");
      } catch {
        // The server may not support signals.
      }
      channel.close();
    };
    const timer = setTimeout(() => {
      kill();
      finish(true);
    }, timeoutMs);
    const onAbort = () => {
      aborted = true;
      kill();
      finish(false);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    channel.on("data", (chunk: Buffer) => (onOutput ? onOutput(chunk, "stdout") : stdout.push(chunk)));
    channel.stderr.on("data", (chunk: Buffer) => (onOutput ? onOutput(chunk, "stderr") : stderr.push(chunk)));
    channel.on("exit", (code: number | null) => {
      exitCode = typeof code === "number" ? code : -1;
    });
    channel.on("error", () => undefined);
    channel.on("close", () => {
      if (exitCode === undefined && !settled) {
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        reject(Object.assign(new Error("SSH connection closed before the command finished"), { code: "ECONNRESET" }));
        return;
      }
      finish(false);
    });
    channel.end(stdin ?? "");
  });
}

function toConnectConfig(options: SshEnvironmentOptions): ConnectConfig {
  if (!options || typeof options !== "object") throw new TypeError("SshEnvironment needs an options object");
  const { host, username } = options;
  if (typeof host !== "string" || host === "") throw new TypeError("SshEnvironment: host must be a non-empty string");
  if (typeof username !== "string" || username === "") throw new TypeError("SshEnvironment: username must be a non-empty string");
  const port = options.port ?? 22;
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new TypeError("SshEnvironment: port must be an integer 1-65535");
  if (options.privateKey === undefined && options.password === undefined && options.agent === undefined) {
    throw new TypeError("SshEnvironment: give privateKey, password or agent to authenticate");
  }
  const checks = [options.hostKey !== undefined, options.hostVerifier !== undefined, options.acceptAnyHostKey === true];
  if (checks.filter(Boolean).length !== 1) {
    throw new TypeError(
      "SshEnvironment: give exactly one of hostKey (e.g. the server's ssh_host_ed25519_key.pub text or SHA256 fingerprint), hostVerifier, or acceptAnyHostKey: true",
    );
  }
  const keepaliveInterval = options.keepaliveIntervalMs ?? 15_000;
  if (!Number.isFinite(keepaliveInterval) || keepaliveInterval < 0) {
    throw new TypeError("SshEnvironment: keepaliveIntervalMs must be ≥ 0");
  }
  return {
    host,
    port,
    username,
    privateKey: options.privateKey,
    passphrase: options.passphrase,
    password: options.password,
    agent: options.agent,
    readyTimeout: positive(options.connectTimeoutMs, "connectTimeoutMs") ?? 10_000,
    keepaliveInterval,
    keepaliveCountMax: positive(options.keepaliveCountMax, "keepaliveCountMax") ?? 3,
    hostVerifier:
      options.hostVerifier ?? (options.hostKey !== undefined ? hostKeyMatcher(options.hostKey) : () => true),
  };
}

/** A verifier accepting only the given public keys or SHA256 fingerprints. */
export function hostKeyMatcher(hostKey: string | string[]): (key: Buffer) => boolean {
  const entries = (Array.isArray(hostKey) ? hostKey : [hostKey]).flatMap((text) => String(text).split("\n"));
  const blobs: Buffer[] = [];
  const fingerprints: string[] = [];
  for (const entry of entries.map((e) => e.trim()).filter((e) => e !== "" && !e.startsWith("#"))) {
    if (entry.startsWith("SHA256:")) {
      fingerprints.push(entry.slice("SHA256:".length).replace(/=+$/, ""));
      continue;
    }
    const tokens = entry.split(/\s+/);
    const at = tokens.findIndex((t) => /^(ssh-|ecdsa-|sk-)/.test(t));
    const blob = at >= 0 ? tokens[at + 1] : undefined;
    if (!blob) throw new TypeError(`SshEnvironment: cannot read host key ${JSON.stringify(entry.slice(0, 60))}`);
    blobs.push(Buffer.from(blob, "base64"));
  }
  if (blobs.length + fingerprints.length === 0) throw new TypeError("SshEnvironment: hostKey is empty");
  return (key) => {
    const fingerprint = createHash("sha256").update(key).digest("base64").replace(/=+$/, "");
    return fingerprints.includes(fingerprint) || blobs.some((b) => b.length === key.length && timingSafeEqual(b, key));
  };
}

function positive(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`SshEnvironment: ${name} must be a positive number`);
  return value;
}
