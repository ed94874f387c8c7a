/**
 * Multimodal reads through read_file: a PNG returned as an image block and a PDF's first pages
 * as text, each beside an anchor measured in the same run — `fs.readFile` + base64 for the image
 * (the least work any image read must do), and unpdf's `extractText` of the same pages on the
 * calling thread for the PDF (what read_file does, without the guards and the worker hop).
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createReadFileTool } from "../tools/readFile.js";
import { minimalPdf } from "../tests/helpers/pdf.js";
import { fmt, median, timeRuns } from "./fixtures.js";

const PNG_HEADER = Buffer.from("89504e470d0a1a0a", "hex");
const cfg = { configurable: { thread_id: "bench" } };

export async function run(opts: { quick: boolean }): Promise<string> {
  const runs = opts.quick ? 5 : 20;
  const root = await mkdtemp(path.join(os.tmpdir(), "wb-bench-media-"));
  try {
    const dir = path.join(root, "bench");
    await mkdir(dir, { recursive: true });
    // A PNG-signed file of 1 MiB: read_file's work does not depend on the pixels.
    const png = path.join(dir, "shot.png");
    await writeFile(png, Buffer.concat([PNG_HEADER, randomBytes(1024 * 1024 - PNG_HEADER.length)]));
    const pages = opts.quick ? 20 : 100;
    const pdf = path.join(dir, "doc.pdf");
    await writeFile(pdf, minimalPdf(Array.from({ length: pages }, (_, p) => Array.from({ length: 40 }, (_, l) => `Page ${p + 1} line ${l + 1}: the quick brown fox jumps over the lazy dog.`))));

    const tool = createReadFileTool({ rootDir: root });
    const read = (args: Record<string, unknown>) => tool.invoke(args as never, cfg);
    const imageTimes = await timeRuns(() => read({ path: "shot.png" }), runs);
    const imageAnchor = await timeRuns(async () => (await readFile(png)).toString("base64"), runs);

    const { getDocumentProxy } = await import("unpdf");
    const pdfTimes = await timeRuns(() => read({ path: "doc.pdf" }), runs);
    const pdfAnchor = await timeRuns(async () => {
      const doc = await getDocumentProxy(new Uint8Array(await readFile(pdf)), { verbosity: 0 });
      const first = await Promise.all(Array.from({ length: 20 }, (_, i) => doc.getPage(i + 1).then((page: { getTextContent(): Promise<unknown> }) => page.getTextContent())));
      await doc.destroy();
      return first.length;
    }, runs);

    const row = (what: string, t: number[], a: number[]) => `| ${what} | ${fmt(median(t))} | ${fmt(median(a))} | ${fmt(median(t) / median(a))}× |`;
    return [
      "## media",
      "",
      `read_file of images and PDFs (median of ${runs} runs, warm). Anchor: the same bytes read and`,
      "base64-encoded with `fs.readFile` (image); unpdf extracting the same 20 pages on the calling",
      "thread (PDF). read_file adds the guards, the content sniff, a verified open and, for PDFs, the",
      "hop to its extraction worker thread (which keeps the event loop free).",
      "",
      "| read | read_file ms | anchor ms | ratio |",
      "|---|---|---|---|",
      row("PNG 1 MiB → image block", imageTimes, imageAnchor),
      row(`PDF ${pages} pages → first 20 pages of text`, pdfTimes, pdfAnchor),
    ].join("\n");
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
