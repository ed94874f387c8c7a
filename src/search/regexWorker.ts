/**
 * Runs the JS engine's regex matching in a worker thread that is terminated at the search
 * deadline, so a catastrophically backtracking pattern (`^(a+)+$` on a long line) costs the
 * deadline, not the process: a RegExp cannot be interrupted on the thread that runs it.
 *
 * The worker's code is inline (an `eval` worker), so it needs no separate file in the build and
 * runs the same under tsx, ESM and CJS. One worker per search; files are matched in order.
 */
import { Worker } from "node:worker_threads";
import { WorkbenchError } from "../workbenchError.js";

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const perLine = new RegExp(workerData.source, workerData.flags);
const whole = new RegExp(workerData.source, workerData.flags + "m");
parentPort.on("message", ({ id, text }) => {
  const found = [];
  // Cheap whole-file rejection first; per-line matching decides.
  if (whole.test(text)) {
    const lines = text.split("\\n");
    if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    for (let i = 0; i < lines.length; i++) if (perLine.test(lines[i])) found.push(i);
  }
  parentPort.postMessage({ id, found });
});
`;

/** The pattern was still running on one file when the deadline came. */
export class RegexTimeoutError extends WorkbenchError {
  readonly code = "REGEX_TIMEOUT";
  constructor(readonly file: string) {
    super(`regular expression still running on ${file} at the deadline`);
  }
}

/** The search deadline passed while files were queued (an ordinary, incomplete timeout). */
export class RegexDeadlineError extends WorkbenchError {
  readonly code = "SEARCH_DEADLINE";
}

interface Pending {
  resolve: (lines: number[]) => void;
  reject: (err: Error) => void;
  file: string;
}

/** Matches file texts against one regex off the main thread, with a hard deadline. */
export class RegexRunner {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  /** When the request at the head of the queue started running. */
  private busySince = 0;
  private failure: Error | undefined;
  private readonly timer: NodeJS.Timeout;

  /**
   * @param stallMs how long one file's matching must have run at the deadline to be blamed on
   *   the pattern (else the search was merely slow and ends as an incomplete timeout).
   */
  constructor(
    private readonly source: string,
    private readonly flags: string,
    deadline: number,
    private readonly stallMs: number,
  ) {
    this.timer = setTimeout(() => this.expire(), Math.max(0, deadline - Date.now()));
  }

  /** Indexes of the lines of `text` (split on `\n`) that match; `file` names it in errors. */
  match(text: string, file: string): Promise<number[]> {
    if (this.failure) return Promise.reject(this.failure);
    const worker = (this.worker ??= this.start());
    const id = this.nextId++;
    if (this.pending.size === 0) this.busySince = Date.now();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, file });
      worker.postMessage({ id, text });
    });
  }

  /** Stops the worker; pending matches are rejected. */
  close(): void {
    clearTimeout(this.timer);
    this.fail(new RegexDeadlineError("search closed"));
  }

  private start(): Worker {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { source: this.source, flags: this.flags } });
    worker.unref();
    worker.on("message", ({ id, found }: { id: number; found: number[] }) => {
      const p = this.pending.get(id);
      if (!p) return;
      this.pending.delete(id);
      this.busySince = Date.now();
      p.resolve(found);
    });
    worker.on("error", (err) => this.fail(err));
    return worker;
  }

  private expire(): void {
    const head = this.pending.values().next().value as Pending | undefined;
    const stalled = head !== undefined && Date.now() - this.busySince >= this.stallMs;
    this.fail(stalled ? new RegexTimeoutError(head.file) : new RegexDeadlineError("search deadline"));
  }

  private fail(err: Error): void {
    this.failure ??= err;
    void this.worker?.terminate();
    this.worker = undefined;
    for (const p of this.pending.values()) p.reject(this.failure);
    this.pending.clear();
  }
}
