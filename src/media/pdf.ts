/**
 * PDF text extraction with unpdf (PDF.js) in a child process under an OS-enforced memory cap.
 * A PDF is hostile input: a 1 MB flate bomb inflates to gigabytes inside PDF.js, in buffers no
 * worker heap limit covers. The child runs under the kernel's RLIMIT_DATA (set by `ulimit -d`
 * in a `/bin/sh` wrapper, then `exec`), which counts its heap and every private writable
 * mapping, so a bomb ends that process (the read fails with a clear message) and never the
 * agent. It gets no environment, no core dumps, a deadline, and the bytes over IPC (it opens
 * nothing). One child is started on the first PDF read and kept (unref'd) for the next; it is
 * replaced after a failure, a deadline, or when an earlier document left it using half its cap.
 * Only the pages asked for are parsed for text.
 *
 * The child runs source text (`node -e`) that imports unpdf by absolute path, so it runs the same
 * from tsx, the ESM build and the CJS build. Where there is no `/bin/sh` (Windows) the child runs
 * with V8 heap limits only.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { LIMITS, pdfMemoryMessage } from "../guards/limits.js";
import { WorkbenchError } from "../workbenchError.js";

/** A PDF that cannot be read (damaged, encrypted, too slow, too big in memory); `message` is guidance for the model, without a path. */
export class PdfReadError extends WorkbenchError {
  readonly code = "PDF_READ";
  override readonly name = "PdfReadError";
}

export interface PdfPages {
  totalPages: number;
  /** Text of pages `first ..` in order; a page without a text layer is the empty string. */
  pages: { page: number; text: string }[];
}

interface Job {
  bytes: Uint8Array;
  window: { first: number; count: number; maxChars?: number };
  timeoutMs: number;
  resolve(pages: PdfPages): void;
  reject(error: Error): void;
}

type Reply = { ok: PdfPages; rss: number } | { error: { name: string; message: string }; rss: number };

// CommonJS, run by `node -e`; argv[1] is unpdf's absolute path. It leaves when the parent goes.
const CHILD_SOURCE = `
const { pathToFileURL } = require("node:url");
process.on("disconnect", () => process.exit(0));
const loading = import(pathToFileURL(process.argv[1]).href);
loading.catch(() => {});
const pageText = (items) => {
  let out = "";
  for (const item of items) {
    if (typeof item.str !== "string") continue;
    out += item.str;
    if (item.hasEOL) out += "\\n";
  }
  return out.replace(/[ \\t]+\\n/g, "\\n").trimEnd();
};
const reply = (msg) => process.send({ ...msg, rss: process.memoryUsage().rss });
process.on("message", async ({ bytes, first, count, maxChars }) => {
  let unpdf;
  try {
    unpdf = await loading;
  } catch (err) {
    reply({ error: { name: "LoadError", message: String(err && err.message) } });
    return;
  }
  let doc;
  try {
    // PDF.js refuses a Buffer (what IPC delivers): a plain view of the same memory.
    const data = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    doc = await unpdf.getDocumentProxy(data, { verbosity: 0, isEvalSupported: false, useSystemFonts: false, disableFontFace: true, stopAtErrors: false });
    const totalPages = doc.numPages;
    const last = Math.min(totalPages, first + count - 1);
    const pages = [];
    let chars = 0;
    for (let n = first; n <= last; n++) {
      let text;
      try {
        const page = await doc.getPage(n);
        text = pageText((await page.getTextContent()).items);
        page.cleanup();
      } catch {
        text = "[this page could not be read]";
      }
      if (text.length > maxChars - chars) text = text.slice(0, maxChars - chars);
      pages.push({ page: n, text });
      chars += text.length;
      if (chars >= maxChars) break;
    }
    reply({ ok: { totalPages, pages } });
  } catch (err) {
    reply({ error: { name: String(err && err.name), message: String(err && err.message) } });
  } finally {
    if (doc) await doc.destroy().catch(() => {});
  }
});
`;

// Sets the caps, then becomes node: `$1` is the data limit in KiB, the rest the command.
const CAPPED_EXEC = 'ulimit -c 0 2>/dev/null; ulimit -d "$1" || exit 97; shift; exec "$@"';
/** The wrapper's exit code when the cap could not be set. */
const CAP_FAILED = 97;

function localRequire(): NodeJS.Require {
  // The CJS build has a real `require` (and no `import.meta.url`); ESM and tsx have the reverse.
  // The ESM build's bundler shim is a `require` without `resolve`, hence the second test.
  return typeof require === "function" && typeof require.resolve === "function" ? require : createRequire(import.meta.url);
}

function failure(error: { name: string; message: string }): PdfReadError {
  if (error.name === "PasswordException") return new PdfReadError("is a password-protected PDF; its text cannot be extracted. Ask the user for an unprotected copy.");
  if (error.name === "LoadError") return new PdfReadError(`cannot be read here: PDF support (the "unpdf" package) could not be loaded (${error.message}).`);
  return new PdfReadError(`could not be read as a PDF (${error.message || "damaged file"}). Ask for a repaired copy, or use a command-line PDF tool if one is available.`);
}

export interface PdfExtractorOptions {
  /** The child's memory cap in bytes (default {@link LIMITS.pdfMemoryBytes}). */
  memoryBytes?: number;
}

/** An extraction process and its queue (the module keeps one; tests make their own). */
export class PdfExtractor {
  private child: ChildProcess | undefined;
  private readonly queue: Job[] = [];
  private running: Job | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly memoryBytes: number;

  constructor(options: PdfExtractorOptions = {}) {
    const memoryBytes = options.memoryBytes ?? LIMITS.pdfMemoryBytes;
    if (!Number.isInteger(memoryBytes) || memoryBytes < 64 * 1024 * 1024) throw new TypeError("PdfExtractor: memoryBytes must be an integer of at least 64 MiB");
    this.memoryBytes = memoryBytes;
  }

  /** The pid of the running extraction process, if one is up (for tests and diagnostics). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  extract(bytes: Uint8Array, window: Job["window"], timeoutMs: number = LIMITS.pdfTimeoutMs): Promise<PdfPages> {
    return new Promise<PdfPages>((resolve, reject) => {
      this.queue.push({ bytes, window, timeoutMs, resolve, reject });
      this.next();
    });
  }

  /** Stops the extraction process (a queued or running extraction is rejected). */
  async close(): Promise<void> {
    for (const job of this.queue.splice(0)) job.reject(new PdfReadError("could not be read: the PDF extractor was closed."));
    this.stop();
    this.finish(new PdfReadError("could not be read: the PDF extractor was closed."));
  }

  private next(): void {
    if (this.running || this.queue.length === 0) return;
    const job = this.queue.shift()!;
    let child: ChildProcess;
    try {
      child = this.child ??= this.start();
    } catch (err) {
      job.reject(failure({ name: "LoadError", message: (err as Error).message }));
      this.next();
      return;
    }
    this.running = job;
    child.channel?.ref();
    this.timer = setTimeout(() => {
      // Stopped first, so the next job starts in a fresh process.
      this.stop();
      this.finish(new PdfReadError(`took longer than ${Math.round(job.timeoutMs / 100) / 10} s to extract and was stopped. Extract the pages you need with a command-line PDF tool if one is available.`));
    }, job.timeoutMs);
    const first = Math.max(1, Math.floor(job.window.first));
    const count = Math.max(0, Math.floor(job.window.count));
    const maxChars = Math.min(job.window.maxChars ?? LIMITS.pdfMaxTextChars, LIMITS.pdfMaxTextChars);
    try {
      child.send({ bytes: job.bytes, first, count, maxChars });
    } catch (err) {
      this.stop();
      this.finish(failure({ name: "Error", message: (err as Error).message }));
    }
  }

  private start(): ChildProcess {
    const unpdf = localRequire().resolve("unpdf");
    // Under half the cap for V8's own heap, so most runaway JS fails in V8 before the kernel cap.
    const heapMb = Math.max(32, Math.floor(this.memoryBytes / (2 * 1024 * 1024)));
    const node = [process.execPath, `--max-old-space-size=${heapMb}`, "-e", CHILD_SOURCE, unpdf];
    const posix = process.platform !== "win32";
    const [cmd, ...args] = posix ? ["/bin/sh", "-c", CAPPED_EXEC, "sh", String(Math.floor(this.memoryBytes / 1024)), ...node] : node;
    const child = spawn(cmd!, args, {
      // Nothing of the agent's environment (keys, NODE_OPTIONS) reaches the process parsing hostile bytes.
      env: {},
      cwd: "/",
      stdio: ["ignore", "ignore", "ignore", "ipc"],
      serialization: "advanced",
      windowsHide: true,
    });
    // A stopped child's late events are not about the job running now.
    child.on("message", (reply: Reply) => {
      if (this.child !== child) return;
      // An earlier document can leave the process big: start the next read afresh.
      if (reply.rss > this.memoryBytes / 2) this.stop();
      this.finish("ok" in reply ? reply.ok : failure(reply.error));
    });
    child.on("error", (err) => {
      if (this.child !== child) return;
      this.stop();
      this.finish(failure({ name: "LoadError", message: err.message }));
    });
    child.on("exit", (code, signal) => {
      if (this.child !== child) return;
      this.child = undefined;
      if (code === CAP_FAILED) this.finish(new PdfReadError("could not be read: the PDF extractor could not start under its memory limit (ulimit -d failed)."));
      // Killed by the kernel's cap (a failed allocation aborts or faults) or by V8's heap limit.
      else if (signal !== null || code !== 0) this.finish(new PdfReadError(pdfMemoryMessage(this.memoryBytes)));
      else this.finish(new PdfReadError("could not be read: the PDF extraction stopped unexpectedly. Try again."));
    });
    child.unref();
    child.channel?.unref();
    return child;
  }

  private finish(result: PdfPages | Error): void {
    const job = this.running;
    if (!job) return;
    this.running = undefined;
    clearTimeout(this.timer);
    // Idle, the child must not keep the agent's process alive.
    this.child?.channel?.unref();
    if (result instanceof Error) job.reject(result);
    else job.resolve(result);
    this.next();
  }

  private stop(): void {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
}

let extractor: PdfExtractor | undefined;

/**
 * Text of pages `first .. first+count-1` (1-based; clamped to the document). Stops early once
 * `maxChars` is reached (the page that crosses it is included, cut at {@link LIMITS.pdfMaxTextChars};
 * callers cut it further). Rejects with {@link PdfReadError} for a document that cannot be read,
 * outgrows the memory cap or is still parsing at the deadline.
 */
export function extractPdfPages(bytes: Uint8Array, window: { first: number; count: number; maxChars?: number }): Promise<PdfPages> {
  extractor ??= new PdfExtractor();
  return extractor.extract(bytes, window);
}
