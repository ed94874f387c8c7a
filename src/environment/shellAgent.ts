/**
 * ShellAgents: a few long-lived POSIX sh agents inside an environment that run one script per
 * request, so the several steps of one tool call (stat, realpath, read, re-check…) cost one
 * process start (`docker exec`) instead of one each. Every step is still its own script, run in
 * its own subshell in order: the guards between steps see the same answers as before.
 *
 * Protocol (binary-safe, no argv limits): the host writes `<script bytes> <stdin bytes>\n`, then
 * the script, then the stdin; the agent stores both in its private temp directory (so a script
 * that does not read all of its stdin cannot desynchronise the stream), runs the script with
 * stdout and stderr to files, and answers `<status> <stdout bytes> <stderr bytes>\n` then both.
 * An agent that cannot start (no writable temp directory, no `head -c`) answers nothing: the
 * caller then falls back to one exec per step.
 */
import type { ChannelEnvironment, ExecChannel } from "./execChannel.js";
import { WorkbenchError } from "../workbenchError.js";

const BANNER = "@@WBAGENT1\n";

const AGENT = `export LC_ALL=C
wb_d=$(mktemp -d 2>/dev/null) || exit 90
trap 'rm -rf -- "$wb_d"' EXIT
printf '${BANNER.replace("\n", "\\n")}'
while IFS=' ' read -r wb_n wb_m; do
  head -c "$wb_n" > "$wb_d/s" && head -c "$wb_m" > "$wb_d/i" || exit 91
  ( . "$wb_d/s" ) < "$wb_d/i" > "$wb_d/o" 2> "$wb_d/e"
  wb_rc=$?
  printf '%s %s %s\\n' "$wb_rc" "$(wc -c < "$wb_d/o")" "$(wc -c < "$wb_d/e")"
  cat -- "$wb_d/o" "$wb_d/e"
done`;

/** What one request answered. */
export interface AgentResult {
  stdout: Buffer;
  stderr: string;
  exitCode: number;
  timedOut: boolean;
}

/** No agent could take the request (nothing ran): the caller falls back to one exec. */
export class AgentUnavailableError extends WorkbenchError {
  override readonly name = "AgentUnavailableError";
  readonly code = "SHELL_AGENT_UNAVAILABLE";
}

/** The agent ended while it ran the request (e.g. the container stopped): it may have run in part. */
export class AgentLostError extends WorkbenchError {
  override readonly name = "AgentLostError";
  readonly code = "SHELL_AGENT_LOST";
}

interface Pending {
  resolve: (r: AgentResult) => void;
  reject: (e: Error) => void;
}

/** One agent process: a queue of one request at a time. */
class Agent {
  private buffer: Buffer = Buffer.alloc(0);
  private started = false;
  private pending: Pending | undefined;
  private startWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  dead = false;
  private channel: ExecChannel | undefined;

  static async open(env: ChannelEnvironment): Promise<Agent> {
    const agent = new Agent();
    agent.channel = await env.openChannel(AGENT, (chunk) => agent.onData(chunk));
    agent.channel.hold(true);
    void agent.channel.ended.then(({ stderr }) => agent.onEnd(stderr));
    await new Promise<void>((resolve, reject) => {
      if (agent.started) return resolve();
      if (agent.dead) return reject(new AgentUnavailableError("the file agent ended before it started"));
      agent.startWaiters.push({ resolve, reject });
    });
    agent.channel.hold(false);
    return agent;
  }

  run(script: string, stdin: Buffer | undefined, timeoutMs: number): Promise<AgentResult> {
    const channel = this.channel!;
    const body = Buffer.from(script, "utf8");
    const input = stdin ?? Buffer.alloc(0);
    channel.hold(true);
    return new Promise<AgentResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        // No answer in time: this agent is stopped with what it runs; the request reports a timeout.
        this.pending = undefined;
        this.kill();
        resolve({ stdout: Buffer.alloc(0), stderr: "", exitCode: -1, timedOut: true });
      }, timeoutMs);
      const settle = () => {
        clearTimeout(timer);
        this.pending = undefined;
        if (!this.dead) channel.hold(false);
      };
      this.pending = {
        resolve: (r) => (settle(), resolve(r)),
        reject: (e) => (settle(), reject(e)),
      };
      channel.write(Buffer.concat([Buffer.from(`${body.length} ${input.length}\n`), body, input]));
    });
  }

  end(): void {
    this.dead = true;
    this.channel?.end();
  }

  kill(): void {
    this.dead = true;
    this.channel?.kill();
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    if (!this.started) {
      if (this.buffer.length < BANNER.length) return;
      if (this.buffer.subarray(0, BANNER.length).toString("latin1") !== BANNER) {
        this.kill();
        return;
      }
      this.started = true;
      this.buffer = this.buffer.subarray(BANNER.length);
      for (const w of this.startWaiters.splice(0)) w.resolve();
    }
    this.parse();
  }

  private parse(): void {
    const newline = this.buffer.indexOf(10);
    if (newline < 0 || !this.pending) return;
    const head = /^(\d+) (\d+) (\d+)$/.exec(this.buffer.subarray(0, newline).toString("latin1"));
    if (!head) {
      this.pending.reject(new AgentLostError("the file agent answered out of protocol"));
      this.kill();
      return;
    }
    const out = Number(head[2]);
    const err = Number(head[3]);
    const end = newline + 1 + out + err;
    if (this.buffer.length < end) return;
    const stdout = Buffer.from(this.buffer.subarray(newline + 1, newline + 1 + out));
    const stderr = this.buffer.subarray(newline + 1 + out, end).toString("utf8");
    this.buffer = this.buffer.subarray(end);
    this.pending.resolve({ stdout, stderr, exitCode: Number(head[1]), timedOut: false });
  }

  private onEnd(stderr: string): void {
    this.dead = true;
    const why = `the file agent ended${stderr.trim() ? `: ${stderr.trim().slice(0, 300)}` : ""}`;
    for (const w of this.startWaiters.splice(0)) w.reject(new AgentUnavailableError(why));
    this.pending?.reject(new AgentLostError(why));
  }
}

/** A small pool of agents over one environment: idle ones are reused, and ended after `idleMs`. */
export class ShellAgents {
  private idle: Array<{ agent: Agent; timer: NodeJS.Timeout }> = [];
  private closed = false;
  /** Agents that failed to start in a row; past a few, steps go through exec for a while. */
  private failedStarts = 0;
  private pausedUntil = 0;

  constructor(
    private readonly env: ChannelEnvironment,
    private readonly idleMs = 10_000,
    private readonly maxIdle = 2,
  ) {}

  /** Runs one script; rejects with {@link AgentUnavailableError} when no agent could take it (nothing ran). */
  async run(script: string, stdin: Buffer | undefined, timeoutMs: number): Promise<AgentResult> {
    if (this.closed || Date.now() < this.pausedUntil) throw new AgentUnavailableError("no file agent");
    let agent: Agent;
    const reused = this.take();
    if (reused) agent = reused;
    else {
      try {
        agent = await Agent.open(this.env);
        this.failedStarts = 0;
      } catch (error) {
        // e.g. an image without `mktemp`, or the container is stopped: try again later, not every step.
        if (++this.failedStarts >= 3) this.pausedUntil = Date.now() + 30_000;
        throw error instanceof AgentUnavailableError ? error : new AgentUnavailableError((error as Error).message);
      }
    }
    try {
      const result = await agent.run(script, stdin, timeoutMs);
      this.giveBack(agent);
      return result;
    } catch (error) {
      agent.kill();
      throw error;
    }
  }

  close(): void {
    this.closed = true;
    for (const { agent, timer } of this.idle.splice(0)) {
      clearTimeout(timer);
      agent.end();
    }
  }

  private take(): Agent | undefined {
    while (this.idle.length > 0) {
      const { agent, timer } = this.idle.pop()!;
      clearTimeout(timer);
      if (!agent.dead) return agent;
    }
    return undefined;
  }

  private giveBack(agent: Agent): void {
    if (agent.dead) return;
    if (this.closed || this.idle.length >= this.maxIdle) return agent.end();
    const timer = setTimeout(() => {
      this.idle = this.idle.filter((e) => e.agent !== agent);
      agent.end();
    }, this.idleMs);
    timer.unref();
    this.idle.push({ agent, timer });
  }
}
