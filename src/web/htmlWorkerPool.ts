/**
 * HTML → Markdown off the event loop: a small, bounded pool of worker threads running the same
 * {@link convertHtml} as `htmlToMarkdown`. A 5 MB page takes a few hundred ms (seconds on the
 * Readability fallback), which on the main thread would stall every other tool, stream and timer
 * of the agent meanwhile; a hostile page is stopped at the deadline without taking the agent down.
 *
 * The workers are started from source text (`eval: true`) that `require`s the libraries by
 * absolute path, so there is no separate worker file to locate: it works the same from tsx, the
 * ESM build and the CJS build.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import {
  convertHtml,
  finishMarkdown,
  htmlLibraryPaths,
  loadHtmlLibrariesAsync,
  type HtmlToMarkdownOptions,
  type MarkdownPage,
} from "./htmlConvert.js";
import { CHROME_SELECTORS, isolateMainContent } from "./mainContent.js";

/** Options of {@link HtmlConversionPool}. */
export interface HtmlConversionPoolOptions {
  /** Worker threads at most. Default: the CPU count, capped at 4. */
  size?: number;
  /** Pages under this many HTML characters convert on the calling thread (a worker round trip costs more). Default 10,000. */
  inlineBelowChars?: number;
  /**
   * Deadline per page in a worker, in ms (from hand-over, so a cold worker's start counts). Past
   * it the worker is stopped and that page fails with an error; the others are unaffected.
   * Default 60,000.
   */
  timeoutMs?: number;
}

interface Task {
  html: string;
  baseUrl: string | undefined;
  readabilityMaxChars: number | undefined;
  resolve(page: MarkdownPage): void;
  reject(error: Error): void;
}

interface PoolWorker {
  worker: Worker;
  task?: Task;
  timer?: NodeJS.Timeout;
  /** Set once the worker has loaded the libraries: a later death is the page's doing, not the setup's. */
  ready?: boolean;
}

type Reply = { ready: true } | { page: MarkdownPage } | { error: string };

// Written to run as CommonJS or as an ES module: an eval worker inherits the parent's flags, and
// `--input-type=module` makes it a module (no \`require\`). Messages wait in the port until the
// listener is attached.
const WORKER_SOURCE = (convertSource: string, isolateSource: string, chrome: readonly string[]) => `
(async () => {
  const { parentPort, workerData } = await import("node:worker_threads");
  const { createRequire } = await import("node:module");
  const { readFileSync } = await import("node:fs");
  const { pathToFileURL } = await import("node:url");
  const load = createRequire(workerData.linkedom);
  // tsx compiles with keepNames, which wraps local functions in __name(...): make it a no-op here.
  const __name = (value) => value;
  const isolate = (${isolateSource});
  const chrome = ${JSON.stringify(chrome)};
  let libs;
  try {
    const mdream = await import(pathToFileURL(workerData.mdream).href);
    mdream.initSync({ module: readFileSync(workerData.mdreamWasm) });
    libs = { mdream, isolate, chrome };
  } catch {
    libs = {
      isolate,
      chrome,
      parseHTML: load(workerData.linkedom).parseHTML,
      Readability: load(workerData.readability).Readability,
      TurndownService: load(workerData.turndown),
    };
  }
  const convertHtml = (${convertSource});
  parentPort.postMessage({ ready: true });
  parentPort.on("message", (task) => {
    try {
      parentPort.postMessage({ page: convertHtml(libs, task.html, task.baseUrl, task.readabilityMaxChars) });
    } catch (error) {
      parentPort.postMessage({ error: String((error && error.message) || error) });
    }
  });
})();
`;

/**
 * Converts pages in worker threads, at most `size` at a time, queueing the rest. Workers start
 * on first use and stay (unreferenced while idle, so they never keep the process alive). If a
 * worker cannot start, conversion falls back to the calling thread: a page is never lost.
 */
export class HtmlConversionPool {
  private readonly size: number;
  private readonly inlineBelowChars: number;
  private readonly timeoutMs: number;
  private readonly workers: PoolWorker[] = [];
  private readonly queue: Task[] = [];
  private disabled = false;

  constructor(options: HtmlConversionPoolOptions = {}) {
    this.size = options.size ?? Math.min(4, Math.max(1, availableParallelism()));
    this.inlineBelowChars = options.inlineBelowChars ?? 10_000;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    if (!Number.isInteger(this.timeoutMs) || this.timeoutMs < 1) throw new RangeError("timeoutMs must be a positive integer");
    if (!Number.isInteger(this.size) || this.size < 1) throw new RangeError("size must be a positive integer");
    if (!Number.isInteger(this.inlineBelowChars) || this.inlineBelowChars < 0) {
      throw new RangeError("inlineBelowChars must be a non-negative integer");
    }
  }

  /** Same result as `htmlToMarkdown(html, baseUrl, options)`. */
  async convert(html: string, baseUrl?: string, options: HtmlToMarkdownOptions = {}): Promise<MarkdownPage> {
    const readabilityMaxChars = options.readabilityMaxChars;
    const raw =
      this.disabled || html.length < this.inlineBelowChars
        ? convertHtml(await loadHtmlLibrariesAsync(), html, baseUrl, readabilityMaxChars)
        : await new Promise<MarkdownPage>((resolve, reject) => {
            this.queue.push({ html, baseUrl, readabilityMaxChars, resolve, reject });
            this.dispatch();
          });
    // The regex clean-up is linear and cheap; doing it here keeps the worker source minimal.
    return finishMarkdown(raw);
  }

  /** Stops every worker; queued and running conversions fail. The pool restarts workers on next use. */
  async close(): Promise<void> {
    const workers = this.workers.splice(0);
    for (const task of this.queue.splice(0)) task.reject(new Error("HTML conversion pool closed"));
    await Promise.all(
      workers.map(async (entry) => {
        clearTimeout(entry.timer);
        entry.task?.reject(new Error("HTML conversion pool closed"));
        await entry.worker.terminate();
      }),
    );
  }

  /** Worker threads currently started. */
  get threads(): number {
    return this.workers.length;
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let entry = this.workers.find((candidate) => !candidate.task);
      if (!entry && this.workers.length < this.size) entry = this.spawn();
      if (!entry) return;
      const task = this.queue.shift()!;
      entry.task = task;
      entry.timer = setTimeout(() => this.abandon(entry), this.timeoutMs);
      entry.timer.unref();
      entry.worker.ref();
      entry.worker.postMessage({ html: task.html, baseUrl: task.baseUrl, readabilityMaxChars: task.readabilityMaxChars });
    }
  }

  private spawn(): PoolWorker | undefined {
    let worker: Worker;
    try {
      const source = WORKER_SOURCE(convertHtml.toString(), isolateMainContent.toString(), CHROME_SELECTORS);
      worker = new Worker(source, { eval: true, workerData: htmlLibraryPaths() });
    } catch {
      this.fallBackToInline();
      return undefined;
    }
    const entry: PoolWorker = { worker };
    worker.unref();
    worker.on("message", (reply: Reply) => {
      if ("ready" in reply) {
        entry.ready = true;
        return;
      }
      const task = entry.task;
      entry.task = undefined;
      clearTimeout(entry.timer);
      worker.unref();
      if (task) {
        if ("page" in reply) task.resolve(reply.page);
        else task.reject(new Error(`HTML conversion failed: ${reply.error}`));
      }
      this.dispatch();
    });
    // A worker that could not even load the libraries means workers cannot run here: convert on
    // this thread from now on. One that dies on a page (out of memory, say) fails only that page;
    // retrying it here could take the whole process down with it.
    const onDeath = (error?: Error) => {
      const index = this.workers.indexOf(entry);
      if (index < 0) return;
      this.workers.splice(index, 1);
      const task = entry.task;
      entry.task = undefined;
      clearTimeout(entry.timer);
      if (!entry.ready) {
        if (task) void this.convertInline(task);
        this.fallBackToInline();
        return;
      }
      const why = error ? error.message.split("\n")[0] : "the worker exited";
      task?.reject(new Error(`HTML to Markdown conversion failed (${why}); try a more specific page of this site`));
      this.dispatch();
    };
    worker.on("error", (error) => onDeath(error));
    worker.on("exit", () => onDeath());
    this.workers.push(entry);
    return entry;
  }

  /** A page past its deadline (a pathological document): stop its worker, fail only that page. */
  private abandon(entry: PoolWorker): void {
    const index = this.workers.indexOf(entry);
    const task = entry.task;
    if (index < 0 || !task) return;
    this.workers.splice(index, 1);
    entry.task = undefined;
    entry.worker.terminate().catch(() => undefined);
    task.reject(
      new Error(`HTML to Markdown conversion took longer than ${this.timeoutMs} ms and was stopped; try a more specific page of this site`),
    );
    this.dispatch();
  }

  /** Workers cannot run here (a sandbox, a bundle without node_modules): convert on this thread. */
  private fallBackToInline(): void {
    this.disabled = true;
    for (const task of this.queue.splice(0)) void this.convertInline(task);
  }

  private async convertInline(task: Task): Promise<void> {
    try {
      task.resolve(convertHtml(await loadHtmlLibrariesAsync(), task.html, task.baseUrl, task.readabilityMaxChars));
    } catch (error) {
      task.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }
}

let shared: HtmlConversionPool | undefined;

/** The process-wide pool the fetch backend uses by default. */
export function sharedHtmlConversionPool(): HtmlConversionPool {
  return (shared ??= new HtmlConversionPool());
}
