/**
 * PDF text extraction with unpdf (PDF.js), off the event loop: one worker thread, started on the
 * first PDF read and kept (unref'd) for the next, runs the extractions one at a time. PDF.js
 * parses on the thread that calls it, so a large or hostile document would otherwise stall every
 * other tool, stream and timer of the agent; a document still parsing at the deadline costs the
 * worker (stopped and replaced), not the process. Only the pages asked for are parsed for text.
 *
 * The worker starts from source text (`eval: true`) that imports unpdf by absolute path, so it
 * runs the same from tsx, the ESM build and the CJS build.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { LIMITS } from "../guards/limits.js";

/** A PDF that cannot be read (damaged, encrypted, too slow); `message` is guidance for the model, without a path. */
export class PdfReadError extends Error {
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

type Reply = { ok: PdfPages } | { error: { name: string; message: string } };

// Runs as CommonJS or as an ES module (an eval worker inherits the parent's flags). Messages
// wait in the port until the listener is attached.
const WORKER_SOURCE = `
(async () => {
  const { parentPort, workerData } = await import("node:worker_threads");
  const { pathToFileURL } = await import("node:url");
  let unpdf;
  try {
    unpdf = await import(pathToFileURL(workerData.unpdf).href);
  } catch (err) {
    parentPort.on("message", () => parentPort.postMessage({ error: { name: "LoadError", message: String(err && err.message) } }));
    return;
  }
  const pageText = (items) => {
    let out = "";
    for (const item of items) {
      if (typeof item.str !== "string") continue;
      out += item.str;
      if (item.hasEOL) out += "\\n";
    }
    return out.replace(/[ \\t]+\\n/g, "\\n").trimEnd();
  };
  parentPort.on("message", async ({ bytes, first, count, maxChars }) => {
    let doc;
    try {
      doc = await unpdf.getDocumentProxy(bytes, { verbosity: 0, isEvalSupported: false, useSystemFonts: false, disableFontFace: true, stopAtErrors: false });
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
        pages.push({ page: n, text });
        chars += text.length;
        if (maxChars !== undefined && chars >= maxChars) break;
      }
      parentPort.postMessage({ ok: { totalPages, pages } });
    } catch (err) {
      parentPort.postMessage({ error: { name: String(err && err.name), message: String(err && err.message) } });
    } finally {
      if (doc) await doc.destroy().catch(() => {});
    }
  });
})();
`;

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

/** An extraction worker and its queue (the module keeps one; tests make their own). */
export class PdfExtractor {
  private worker: Worker | undefined;
  private readonly queue: Job[] = [];
  private running: Job | undefined;
  private timer: NodeJS.Timeout | undefined;

  extract(bytes: Uint8Array, window: Job["window"], timeoutMs: number = LIMITS.pdfTimeoutMs): Promise<PdfPages> {
    return new Promise<PdfPages>((resolve, reject) => {
      this.queue.push({ bytes, window, timeoutMs, resolve, reject });
      this.next();
    });
  }

  /** Stops the worker (a queued or running extraction is rejected). */
  async close(): Promise<void> {
    for (const job of this.queue.splice(0)) job.reject(new PdfReadError("could not be read: the PDF extractor was closed."));
    const worker = this.worker;
    this.worker = undefined;
    this.finish(new PdfReadError("could not be read: the PDF extractor was closed."));
    await worker?.terminate().catch(() => undefined);
  }

  private next(): void {
    if (this.running || this.queue.length === 0) return;
    const job = this.queue.shift()!;
    let worker: Worker;
    try {
      worker = this.worker ??= this.start();
    } catch (err) {
      job.reject(failure({ name: "LoadError", message: (err as Error).message }));
      this.next();
      return;
    }
    this.running = job;
    worker.ref();
    this.timer = setTimeout(() => {
      // Stopped first, so the next job starts on a fresh worker.
      void this.stop();
      this.finish(new PdfReadError(`took longer than ${Math.round(job.timeoutMs / 100) / 10} s to extract and was stopped. Extract the pages you need with a command-line PDF tool if one is available.`));
    }, job.timeoutMs);
    // A copy the worker owns: PDF.js detaches the buffer it is given.
    const copy = new Uint8Array(job.bytes);
    const first = Math.max(1, Math.floor(job.window.first));
    const count = Math.max(0, Math.floor(job.window.count));
    worker.postMessage({ bytes: copy, first, count, maxChars: job.window.maxChars }, [copy.buffer]);
  }

  private start(): Worker {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { unpdf: localRequire().resolve("unpdf") } });
    // A stopped worker's late events are not about the job running now.
    worker.on("message", (reply: Reply) => {
      if (this.worker === worker) this.finish("ok" in reply ? reply.ok : failure(reply.error));
    });
    worker.on("error", (err) => {
      if (this.worker !== worker) return;
      void this.stop();
      this.finish(failure({ name: "Error", message: err.message }));
    });
    worker.on("exit", () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.finish(new PdfReadError("could not be read: the PDF extraction stopped unexpectedly. Try again."));
    });
    worker.unref();
    return worker;
  }

  private finish(result: PdfPages | Error): void {
    const job = this.running;
    if (!job) return;
    this.running = undefined;
    clearTimeout(this.timer);
    // Idle, the worker must not keep the process alive.
    this.worker?.unref();
    if (result instanceof Error) job.reject(result);
    else job.resolve(result);
    this.next();
  }

  private async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate().catch(() => undefined);
  }
}

let extractor: PdfExtractor | undefined;

/**
 * Text of pages `first .. first+count-1` (1-based; clamped to the document). Stops early once
 * `maxChars` is reached (the page that crosses it is included whole; callers cut it). Rejects
 * with {@link PdfReadError} for a document that cannot be read or is still parsing at the deadline.
 */
export function extractPdfPages(bytes: Uint8Array, window: { first: number; count: number; maxChars?: number }): Promise<PdfPages> {
  extractor ??= new PdfExtractor();
  return extractor.extract(bytes, window);
}
