/**
 * Link counts of many files from one GNU `find` process: paths go in on stdin
 * (`-files0-from -`), one `lstat` each (`-P -maxdepth 0`: no link followed, nothing walked),
 * and only files with more than one link come back. No JS runs per file: on a 100k-file count
 * search this cost about 0.15 CPU-seconds against 0.23 for `lstatSync` in a worker (a Stats
 * object and four Dates per call), CPU that ripgrep wants on a 2-core machine.
 *
 * Completeness is proven, not assumed: a last path (`/.`) prints `end`, and find answers its
 * paths in order, so an answer without it (find missing, killed, or an old find without
 * `-files0-from`) rejects every batch and the caller checks those paths another way.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { LinkedFile } from "./linkCountWorker.js";

const SENTINEL = "/.";
const END = "end";
const ARGS = ["-P", "-files0-from", "-", "-maxdepth", "0", "-type", "f", "-links", "+1", "-printf", "%n %s %p\\0", "-o", "-path", SENTINEL, "-printf", `${END}\\0`];

let probed: Promise<boolean> | undefined;
let usable: boolean | undefined;

/**
 * Whether this machine's `find` answers {@link LinkCountProcess}'s argv (asked once per process,
 * in the background): `undefined` until known, so a caller can take another way meanwhile.
 */
export function linkCountProcessUsable(): boolean | undefined {
  probed ??= new LinkCountProcess()
    .finish()
    .then(
      () => true,
      () => false,
    )
    .then((ok) => (usable = ok));
  return usable;
}

/**
 * Checks batches of paths; each batch resolves with its regular files that have more than one
 * link once {@link end} was called and find answered every path. Missing files are left out.
 */
export class LinkCountProcess {
  private child: ChildProcess | undefined;
  private readonly batches: Array<{ paths: string[]; resolve(files: LinkedFile[]): void; reject(err: Error): void }> = [];
  private readonly out: Buffer[] = [];
  private failure: Error | undefined;
  private ended = false;
  private done: Promise<LinkedFile[]> | undefined;
  private rejectDone: ((err: Error) => void) | undefined;

  check(paths: string[]): Promise<LinkedFile[]> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended) return Promise.reject(new Error("link count process: check after end"));
    const child = this.start();
    return new Promise((resolve, reject) => {
      this.batches.push({ paths, resolve, reject });
      // Paths never hold NUL (`-files0-from` takes each name literally: no option clash).
      if (paths.length > 0) child.stdin!.write(paths.join("\0") + "\0");
    });
  }

  /** No more paths: find gets the sentinel and finishes. */
  end(): void {
    void this.finish().catch(() => undefined);
  }

  /** Stops find; batches still waiting are rejected. */
  close(): void {
    this.fail(new Error("link count process closed"));
  }

  /** Ends the input; resolves with every linked file once find answered all of it. */
  finish(): Promise<LinkedFile[]> {
    if (this.done) return this.done;
    this.ended = true;
    if (this.failure) return (this.done = Promise.reject(this.failure));
    const child = this.start();
    this.done = new Promise<LinkedFile[]>((resolve, reject) => {
      this.rejectDone = reject;
      child.on("close", () => {
        const linked = this.failure ? undefined : parseAnswer(Buffer.concat(this.out).toString("utf8"));
        if (!linked) return reject(this.fail(new Error("link count process ended without answering every path")));
        const byPath = new Map(linked.map((l) => [l.path, l]));
        for (const b of this.batches) b.resolve(byPath.size === 0 ? [] : b.paths.flatMap((p) => byPath.get(p) ?? []));
        this.batches.length = 0;
        resolve(linked);
      });
    });
    this.done.catch(() => undefined);
    child.stdin!.end(`${SENTINEL}\0`);
    return this.done;
  }

  private start(): ChildProcess {
    if (this.child) return this.child;
    // A plain environment: no locale or POSIXLY_CORRECT from the host changes find's answer.
    const child = spawn("find", ARGS, { stdio: ["pipe", "pipe", "ignore"], env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" } });
    child.stdout!.on("data", (chunk: Buffer) => this.out.push(chunk));
    // A find that exits early (not GNU, killed) closes its stdin: the close handler reports it.
    child.stdin!.on("error", () => undefined);
    child.on("error", (err) => this.fail(err));
    this.child = child;
    return child;
  }

  private fail(err: Error): Error {
    this.failure ??= err;
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    for (const b of this.batches) b.reject(this.failure);
    this.batches.length = 0;
    this.rejectDone?.(this.failure);
    return this.failure;
  }
}

/** `nlink size path\0` records then `end\0`; `undefined` when the end mark is missing. */
function parseAnswer(text: string): LinkedFile[] | undefined {
  const records = text.split("\0");
  if (records.pop() !== "" || records.pop() !== END) return undefined;
  const linked: LinkedFile[] = [];
  for (const r of records) {
    if (r === END) continue; // "/." given as an input path: a directory, never a linked file
    const a = r.indexOf(" ");
    const b = r.indexOf(" ", a + 1);
    const nlink = Number(r.slice(0, a));
    const size = Number(r.slice(a + 1, b));
    if (a <= 0 || b <= a || !Number.isInteger(nlink) || !Number.isInteger(size)) return undefined;
    linked.push({ path: r.slice(b + 1), nlink, size });
  }
  return linked;
}
