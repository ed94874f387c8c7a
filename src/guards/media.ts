/**
 * What a read does with a file that is not plain text, decided on the bytes actually opened:
 * PNG/JPEG/GIF/WebP go to the model as an image block, a PDF as extracted text, each under a
 * size cap; every other binary is refused — unless the caller asks for audio/video bytes (for
 * deepagents' audio and video blocks) or for any binary's bytes (WorkbenchBackend's readRaw),
 * under {@link LIMITS.binaryReadMaxBytes}. One decision for read_file and WorkbenchBackend.
 */
import { sniffAudioVideo, sniffMedia, type AudioVideoMimeType, type SniffedMedia } from "./sniffMedia.js";
import { binaryFileMessage, hasBinaryExtension, sniffBinary } from "./binary.js";
import { LIMITS } from "./limits.js";

/** What a read loads: an image, a PDF, audio/video, or (when asked for) any other binary's bytes. */
export type LoadedMedia = SniffedMedia | { kind: "audio" | "video"; mimeType: AudioVideoMimeType } | { kind: "binary"; mimeType: undefined };

export type MediaDecision = { action: "text" } | { action: "load"; media: LoadedMedia; maxBytes: number } | { action: "refuse"; reason: string };

/** Which binaries beyond images and PDFs a read loads (default: none). */
export interface BinaryLoads {
  /** Audio and video (by their bytes) load as bytes. */
  audioVideo?: boolean;
  /** Every other binary loads as bytes too (raw reads; never shown to a model as is). */
  anyBinary?: boolean;
}

function megabytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  const mb = n / (1024 * 1024);
  return `${mb >= 10 ? Math.round(mb) : Math.round(mb * 10) / 10} MB`;
}

/** The refusal for an image over the cap (also used when it grew past the cap while being read). */
export function imageTooLargeMessage(shown: string, size: number, maxBytes: number): string {
  return (
    `"${shown}" is too large to read: an image of ${megabytes(size)}, over the ${megabytes(maxBytes)} limit for images shown to the model. ` +
    "Make a smaller copy (fewer pixels, or JPEG instead of PNG) with a command if one is available, then read that copy; or describe what you need from the image."
  );
}

/** The refusal for a PDF over the cap. */
export function pdfTooLargeMessage(shown: string, size: number): string {
  return (
    `"${shown}" is too large to read: a PDF of ${megabytes(size)}, over the ${megabytes(LIMITS.pdfMaxBytes)} limit for text extraction. ` +
    "Extract the pages you need into a smaller file (or to text) with a command if one is available, then read that."
  );
}

/** The refusal for audio, video or another binary over {@link LIMITS.binaryReadMaxBytes} (deepagents' wording first). */
export function binaryTooLargeMessage(shown: string, size: number): string {
  return (
    `"${shown}" is too large to read: file too large to read (${megabytes(size)} exceeds the ${megabytes(LIMITS.binaryReadMaxBytes)} limit for binary files). ` +
    "Make a smaller excerpt (a shorter clip, fewer pages) with a command if one is available, then read that."
  );
}

/** Classifies the first bytes: text, or the media kind they announce (`binary` for any other binary). */
export function classifyHead(names: readonly string[], head: Uint8Array): LoadedMedia | "text" | "binary-by-extension" | "binary-by-content" {
  const media = sniffMedia(head) ?? sniffAudioVideo(head);
  if (media) return media;
  if (names.some((n) => hasBinaryExtension(n))) return "binary-by-extension";
  if (sniffBinary(head)) return "binary-by-content";
  return "text";
}

/**
 * The decision for a file whose first bytes are `head`. `names` are the paths the file goes by
 * (as asked, and its real path): a binary extension on either refuses a non-media file, while
 * a real PNG or PDF is recognised by its bytes whatever it is called. `maxImageBytes` 0 turns
 * images off (refused with guidance). `loads` lets audio/video or any binary load as bytes.
 */
export function mediaReadDecision(shown: string, names: readonly string[], head: Uint8Array, size: number, maxImageBytes: number, loads: BinaryLoads = {}): MediaDecision {
  const found = classifyHead(names, head);
  if (found === "text") return { action: "text" };
  const bytesOf = (media: LoadedMedia): MediaDecision =>
    size > LIMITS.binaryReadMaxBytes ? { action: "refuse", reason: binaryTooLargeMessage(shown, size) } : { action: "load", media, maxBytes: LIMITS.binaryReadMaxBytes };
  if (typeof found === "string") {
    return loads.anyBinary ? bytesOf({ kind: "binary", mimeType: undefined }) : { action: "refuse", reason: binaryFileMessage(shown, found === "binary-by-extension" ? "extension" : "content") };
  }
  if (found.kind === "image" && maxImageBytes <= 0) {
    if (loads.anyBinary) return bytesOf(found);
    return {
      action: "refuse",
      reason: `"${shown}" is an image, and showing images to the model is turned off here (the model in use may not accept them). Describe what you need from it, or use a tool made for images.`,
    };
  }
  if (found.kind === "image") {
    return size > maxImageBytes ? { action: "refuse", reason: imageTooLargeMessage(shown, size, maxImageBytes) } : { action: "load", media: found, maxBytes: maxImageBytes };
  }
  if (found.kind === "pdf") {
    return size > LIMITS.pdfMaxBytes ? { action: "refuse", reason: pdfTooLargeMessage(shown, size) } : { action: "load", media: found, maxBytes: LIMITS.pdfMaxBytes };
  }
  if (loads.audioVideo || loads.anyBinary) return bytesOf(found);
  return { action: "refuse", reason: binaryFileMessage(shown, names.some((n) => hasBinaryExtension(n)) ? "extension" : "content") };
}
