/**
 * Drops engine results from files the access policy refuses on facts a name does not show:
 * regular files with more than one hard link (another name of the same file may be a
 * credential file; see src/guards/access.ts). Name-based refusals happen earlier, through
 * `SearchRequest.exclude`, before anything is counted.
 */
import { lstat, type Stats } from "node:fs";
import path from "node:path";
import pLimit from "p-limit";
import { readAccessReason, type AccessPolicy } from "../guards/access.js";
import { LocalFileOperations } from "../environment/localFileOperations.js";
import { linkCountProcessUsable, LinkCountProcess } from "./linkCountProcess.js";
import { LinkCountWorker, type LinkedFile } from "./linkCountWorker.js";
import type { LineRecord, SearchOutcome } from "./types.js";

/**
 * The hard-link check, started while the engine still runs: {@link HardLinkScreen.see} queues
 * each result file as it is reported, so on a 100k-file answer the system calls overlap the
 * search instead of following it. `drop` checks whatever was not seen and filters.
 */
export interface HardLinkScreen {
  /** A result file the engine just reported (absolute path); an immediate repeat is ignored. */
  see(file: string): void;
  /**
   * Waits for the checks and removes refused files from `outcome`; unless the engine says it
   * announced every result file (`outcome.announced`), the outcome's files are checked now too.
   */
  drop(outcome: SearchOutcome): Promise<void>;
}

/** Files checked with async `lstat` before a search counts as big enough for the bulk check. */
const ASYNC_FILES = 512;
/** Paths per batch handed to the bulk check. */
const WORKER_BATCH = 2_048;

/**
 * Where big batches of paths get their link counts: {@link LinkCountProcess} (one `find`, no JS
 * per file) or {@link LinkCountWorker}. A rejected batch is checked with async `lstat` instead.
 */
export interface LinkCounter {
  check(paths: string[]): Promise<LinkedFile[]>;
  /** No more batches (find then finishes; batches may resolve only after this). */
  end?(): void;
  close(): void;
}

/** GNU find where it answers the argv (probed once per process), else the worker thread. */
function defaultLinkCounter(): LinkCounter {
  return linkCountProcessUsable() === true ? new LinkCountProcess() : new LinkCountWorker();
}

/**
 * @param newWorker where big batches go (tests hand in a counter that already failed, to see the
 *   fallback to async `lstat` take over).
 */
export function hardLinkScreen(policy: AccessPolicy, newWorker: () => LinkCounter = defaultLinkCounter): HardLinkScreen {
  if (policy.allowHardLinks) return { see() {}, drop: async () => {} };
  linkCountProcessUsable(); // the probe runs while the first results are checked one by one
  // Engines report a file's records together, so only back-to-back repeats are skipped (a Set
  // of every result path cost more than the checks it saved); a rarer repeat is checked twice.
  let last: string | undefined;
  let seenCount = 0;
  const refused = new Set<string>();
  const judge = (f: string, nlink: number, size: number) => {
    // Names were judged already; here only what the descriptor-level facts add.
    if (readAccessReason(f, { ...policy, confine: false, workspaceDir: path.dirname(f), credentialPatterns: [] }, { type: "file", nlink, size })) refused.add(f);
  };
  const queue = new LstatQueue((f, s) => {
    if (s?.isFile() && s.nlink > 1) judge(f, s.nlink, s.size);
  });
  let worker: LinkCounter | undefined;
  let batch: string[] = [];
  const batches: Array<Promise<void>> = [];
  const flush = () => {
    if (batch.length === 0) return;
    const paths = batch;
    batch = [];
    worker ??= newWorker();
    batches.push(
      worker.check(paths).then(
        (linked) => linked.forEach((l) => judge(l.path, l.nlink, l.size)),
        () => paths.forEach((p) => queue.push(p)), // the worker failed: checked here instead
      ),
    );
  };
  const see = (file: string) => {
    if (file === last) return;
    last = file;
    if (++seenCount <= ASYNC_FILES) return queue.push(file);
    batch.push(file);
    if (batch.length >= WORKER_BATCH) flush();
  };
  return {
    see,
    async drop(outcome) {
      if (!outcome.announced) {
        for (const l of outcome.lines) see(l.path);
        for (const f of outcome.files) see(f);
        for (const c of outcome.counts) see(c.path);
      }
      flush();
      worker?.end?.();
      try {
        await Promise.all(batches);
        await queue.idle();
      } finally {
        worker?.close();
      }
      if (refused.size === 0) return;
      outcome.lines = outcome.lines.filter((l) => !refused.has(l.path));
      outcome.files = outcome.files.filter((f) => !refused.has(f));
      outcome.counts = outcome.counts.filter((c) => !refused.has(c.path));
    },
  };
}

/** lstat requests kept in flight (the libuv pool has 4 threads; more only queue). */
const LSTAT_WINDOW = 64;

/**
 * `lstat` of every pushed path, `each` called with its stats (undefined when it failed). Plain
 * callbacks with a window, not a promise per file: on a 100k-file count search the per-file
 * promise and limiter overhead cost several times the system calls themselves.
 */
class LstatQueue {
  private readonly paths: string[] = [];
  private next = 0;
  private running = 0;
  private failed: unknown;
  private waiters: Array<() => void> = [];

  constructor(private readonly each: (p: string, s: Stats | undefined) => void) {}

  push(p: string): void {
    this.paths.push(p);
    if (this.running < LSTAT_WINDOW) this.start();
  }

  /** Resolves once every pushed path was checked; rejects with the first error `each` threw. */
  idle(): Promise<void> {
    const settled = () => (this.failed === undefined ? Promise.resolve() : Promise.reject(this.failed instanceof Error ? this.failed : new Error(String(this.failed))));
    if (this.running === 0) return settled();
    return new Promise<void>((resolve) => this.waiters.push(resolve)).then(settled);
  }

  private start(): void {
    const p = this.paths[this.next++]!;
    this.running++;
    lstat(p, (err, s) => {
      try {
        if (this.failed === undefined) this.each(p, err ? undefined : s);
      } catch (e) {
        this.failed = e;
      }
      this.running--;
      if (this.next < this.paths.length) this.start();
      else if (this.running === 0) {
        const waiting = this.waiters;
        this.waiters = [];
        for (const w of waiting) w();
      }
    });
  }
}

const VERIFY_LINE_CHARS = 4_096;
const sharedOps = new LocalFileOperations();

/**
 * ripgrep opens files by name, so a file swapped for a link between its directory listing and
 * its open can be read through the link. Before any of its text is shown, every reported line
 * is checked against a verified read of the same file (descriptor inside `realRoot`, see
 * LocalFileOperations): a file that now leads elsewhere, or whose lines differ from what was
 * reported, is dropped. `files_only`/`count` answers carry no text and are not re-read.
 */
export async function verifyReportedLines(outcome: SearchOutcome, realRoot: string): Promise<void> {
  if (outcome.lines.length === 0) return;
  const byFile = new Map<string, LineRecord[]>();
  for (const rec of outcome.lines) {
    let list = byFile.get(rec.path);
    if (!list) byFile.set(rec.path, (list = []));
    list.push(rec);
  }
  const limit = pLimit(16);
  const refused = new Set<string>();
  await Promise.all(
    [...byFile].map(([file, records]) =>
      limit(async () => {
        let first = Infinity;
        let last = 0;
        for (const r of records) {
          first = Math.min(first, r.line);
          last = Math.max(last, r.line);
        }
        try {
          const read = await sharedOps.readLines(file, { offset: first, limit: last - first + 1, maxLineChars: VERIFY_LINE_CHARS }, { within: realRoot });
          // ripgrep strips a UTF-8 BOM from the first line.
          const lineAt = (n: number) => (n === 1 ? read.lines[0]?.replace(/^\uFEFF/, "") : read.lines[n - first]);
          const same = records.every((r) => lineAt(r.line) === r.text.slice(0, VERIFY_LINE_CHARS));
          if (!same) refused.add(file);
        } catch {
          refused.add(file);
        }
      }),
    ),
  );
  if (refused.size > 0) outcome.lines = outcome.lines.filter((l) => !refused.has(l.path));
}
