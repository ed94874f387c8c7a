/**
 * What a read does with a file that is not plain text, decided on the bytes actually opened:
 * PNG/JPEG/GIF/WebP go to the model as an image block, a PDF as extracted text, each under a
 * size cap; every other binary is refused. One decision for read_file and WorkbenchBackend.
 */
import { sniffMedia, type SniffedMedia } from "./sniffMedia.js";
import { binaryFileMessage, hasBinaryExtension, sniffBinary } from "./binary.js";
import { LIMITS } from "./limits.js";

export type MediaDecision = { action: "text" } | { action: "load"; media: SniffedMedia; maxBytes: number } | { action: "refuse"; reason: string };

function megabytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  const mb = n / (1024 * 1024);
  return `${mb >= 10 ? Math.round(mb) : Math.round(mb * 10) / 10} MB`;
}

/** The refusal for an image over the cap (also used when it grew past the cap while being read). */
export function imageTooLargeMessage(shown: string, size: number, maxBytes: number): string {
  return (
    `"${shown}" is an image of ${megabytes(size)}, over the ${megabytes(maxBytes)} limit for images shown to the model. ` +
    "Make a smaller copy (fewer pixels, or JPEG instead of PNG) with a command if one is available, then read that copy; or describe what you need from the image."
  );
}

/** The refusal for a PDF over the cap. */
export function pdfTooLargeMessage(shown: string, size: number): string {
  return (
    `"${shown}" is a PDF of ${megabytes(size)}, over the ${megabytes(LIMITS.pdfMaxBytes)} limit for text extraction. ` +
    "Extract the pages you need into a smaller file (or to text) with a command if one is available, then read that."
  );
}

/**
 * The decision for a file whose first bytes are `head`. `names` are the paths the file goes by
 * (as asked, and its real path): a binary extension on either refuses a non-media file, while
 * a real PNG or PDF is recognised by its bytes whatever it is called. `maxImageBytes` 0 turns
 * images off (refused with guidance).
 */
export function mediaReadDecision(shown: string, names: readonly string[], head: Uint8Array, size: number, maxImageBytes: number): MediaDecision {
  const media = sniffMedia(head);
  if (media?.kind === "image" && maxImageBytes <= 0) {
    return {
      action: "refuse",
      reason: `"${shown}" is an image, and showing images to the model is turned off here (the model in use may not accept them). Describe what you need from it, or use a tool made for images.`,
    };
  }
  if (media?.kind === "image") {
    return size > maxImageBytes ? { action: "refuse", reason: imageTooLargeMessage(shown, size, maxImageBytes) } : { action: "load", media, maxBytes: maxImageBytes };
  }
  if (media?.kind === "pdf") {
    return size > LIMITS.pdfMaxBytes ? { action: "refuse", reason: pdfTooLargeMessage(shown, size) } : { action: "load", media, maxBytes: LIMITS.pdfMaxBytes };
  }
  if (names.some((n) => hasBinaryExtension(n))) return { action: "refuse", reason: binaryFileMessage(shown, "extension") };
  if (sniffBinary(head)) return { action: "refuse", reason: binaryFileMessage(shown, "content") };
  return { action: "text" };
}
