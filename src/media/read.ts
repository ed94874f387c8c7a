/**
 * The non-text side of a read, shared by read_file and WorkbenchBackend: sniff what was opened,
 * let the guard layer decide (src/guards/media.ts), then load an image or a PDF with the open
 * guard, so the answer is about the bytes actually read. On this machine's disk the file is
 * opened once (see {@link openWorkspaceFile}): the sniffed head and the loaded bytes come from
 * one descriptor that was checked to be the regular file that was listed. Remote file access
 * goes through the thread's FileOperations.
 */
import { readAt } from "../environment/readAt.js";
import { SNIFF_BYTES } from "../guards/binary.js";
import { binaryTooLargeMessage, classifyHead, imageTooLargeMessage, mediaReadDecision, pdfTooLargeMessage, type BinaryLoads } from "../guards/media.js";
import type { AudioVideoMimeType, ImageMimeType } from "../guards/sniffMedia.js";
import { isLocalFileOperations } from "../environment/locality.js";
import type { FileOperations, OpenGuard } from "../environment/fileOperations.js";
import { createHash } from "node:crypto";
import { openWorkspaceFile } from "./openFile.js";
import { LIMITS } from "../guards/limits.js";
import { extractPdfPages } from "./pdf.js";

export type OpenedRead =
  /** Not media and not binary: read it as text. */
  | { kind: "text" }
  | { kind: "image"; mimeType: ImageMimeType; bytes: Buffer }
  | { kind: "pdf"; bytes: Buffer }
  /** Only when asked for (`loads`): audio or video by its bytes, or any other binary (`mimeType` undefined). */
  | { kind: "audio" | "video"; mimeType: AudioVideoMimeType; bytes: Buffer }
  | { kind: "binary"; mimeType: undefined; bytes: Buffer }
  | { kind: "refused"; reason: string };

/** The LangChain v1 standard image content block (base64 data with its MIME type). */
export interface ImageContentBlock {
  type: "image";
  mimeType: ImageMimeType;
  data: string;
}

export function imageBlock(bytes: Uint8Array, mimeType: ImageMimeType): ImageContentBlock {
  return { type: "image", mimeType, data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64") };
}

const CHANGED = "was replaced while it was being read. Try again.";

/** Where the head and the body of one read come from: one descriptor locally, two guarded reads remotely. */
interface ByteSource {
  read(start: number, length: number): Promise<Buffer>;
  close(): Promise<void>;
}

async function byteSource(ops: FileOperations, target: { systemPath: string; shown: string }, guard: OpenGuard | undefined): Promise<ByteSource | { refused: string }> {
  if (!isLocalFileOperations(ops)) {
    return { read: (start, length) => ops.readBytes(target.systemPath, start, length, guard), close: async () => undefined };
  }
  const opened = await openWorkspaceFile(target.systemPath, target.shown, guard);
  if ("refused" in opened) return opened;
  return { read: (start, length) => readAt(opened.fh, start, length), close: () => opened.fh.close().catch(() => undefined) };
}

/**
 * Classifies the file at `systemPath` (stat size `size`) and loads it when it is an image or a
 * PDF. `names` are the names it goes by (the path asked for and its real path), for the
 * binary-extension rule. Errors of the FileOperations (ENOENT, a refused open) propagate.
 */
export async function openForRead(
  ops: FileOperations,
  target: { systemPath: string; shown: string; names: readonly string[] },
  size: number,
  guard: OpenGuard | undefined,
  maxImageBytes: number,
  loads: BinaryLoads = {},
): Promise<OpenedRead> {
  const source = await byteSource(ops, target, guard);
  if ("refused" in source) return { kind: "refused", reason: source.refused };
  try {
    // An empty file is read too (a 0-byte read still verifies the open): its name alone may refuse it.
    const head = await source.read(0, Math.min(SNIFF_BYTES, size));
    const decision = mediaReadDecision(target.shown, target.names, head, size, maxImageBytes, loads);
    if (decision.action === "refuse") return { kind: "refused", reason: decision.reason };
    if (decision.action === "text") return { kind: "text" };
    // One byte more than expected tells a file that grew since it was stat'ed.
    const bytes = await source.read(0, Math.min(size, decision.maxBytes) + 1);
    const again = classifyHead(target.names, bytes.subarray(0, SNIFF_BYTES));
    const media = typeof again === "string" ? (again === "text" ? undefined : { kind: "binary" as const, mimeType: undefined }) : again;
    if (media?.kind !== decision.media.kind || media.mimeType !== decision.media.mimeType || (bytes.length > size && bytes.length <= decision.maxBytes)) {
      return { kind: "refused", reason: `"${target.shown}" ${CHANGED}` };
    }
    if (bytes.length > decision.maxBytes) {
      const reason = media.kind === "image" && decision.maxBytes === maxImageBytes ? imageTooLargeMessage(target.shown, bytes.length, decision.maxBytes) : media.kind === "pdf" ? pdfTooLargeMessage(target.shown, bytes.length) : binaryTooLargeMessage(target.shown, bytes.length);
      return { kind: "refused", reason };
    }
    switch (media.kind) {
      case "image":
        return { kind: "image", mimeType: media.mimeType, bytes };
      case "pdf":
        return { kind: "pdf", bytes };
      case "binary":
        return { kind: "binary", mimeType: undefined, bytes };
      default:
        return { kind: media.kind, mimeType: media.mimeType, bytes };
    }
  } finally {
    await source.close();
  }
}

/** Pages as text under `--- page N of T ---` headers (the same rendering for every entry point). */
export function renderPdfPages(pages: readonly { page: number; text: string }[], totalPages: number): string {
  return pages.map((p) => `--- page ${p.page} of ${totalPages} ---\n${p.text === "" ? "[no text on this page: it may be a scanned image]" : p.text}`).join("\n\n");
}

const PDF_CACHE_SIZE = 8;
const pdfCache = new Map<string, Promise<string[]>>();

/**
 * A PDF's text as lines (page headers included), up to {@link LIMITS.pdfMaxPagesWhole} pages,
 * for readers that window by lines. Cached by content hash, so paging through a document
 * extracts it once.
 */
export function pdfLines(bytes: Uint8Array): Promise<string[]> {
  const key = createHash("sha256").update(bytes).digest("hex");
  let lines = pdfCache.get(key);
  if (lines) {
    pdfCache.delete(key);
    pdfCache.set(key, lines);
    return lines;
  }
  lines = extractPdfPages(bytes, { first: 1, count: LIMITS.pdfMaxPagesWhole }).then((doc) => {
    const out = renderPdfPages(doc.pages, doc.totalPages).split("\n");
    if (doc.totalPages > doc.pages.length) out.push("", `--- pages ${doc.pages.length + 1}-${doc.totalPages} not extracted (at most ${LIMITS.pdfMaxPagesWhole} pages) ---`);
    return out;
  });
  lines.catch(() => pdfCache.delete(key));
  pdfCache.set(key, lines);
  if (pdfCache.size > PDF_CACHE_SIZE) pdfCache.delete(pdfCache.keys().next().value!);
  return lines;
}
