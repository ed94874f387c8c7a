/**
 * deepagents' rule for which files its `write(path, content)` receives as base64: the extension's
 * MIME type (its own table) is not a text type. Mirrors `getMimeType`/`isTextMimeType` of
 * deepagents 1.14, so a binary written through WorkbenchBackend lands as the same bytes as with
 * deepagents' FilesystemBackend.
 */
import path from "node:path";

/** deepagents 1.14's MIME table for its binary extensions (`getMimeType`). */
const BINARY_MIME_TYPES: Readonly<Record<string, string>> = {
  ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".heic": "image/heic", ".heif": "image/heif",
  ".mp3": "audio/mpeg", ".wav": "audio/wav", ".aiff": "audio/aiff", ".aac": "audio/aac", ".ogg": "audio/ogg", ".flac": "audio/flac",
  ".mp4": "video/mp4", ".webm": "video/webm", ".mpeg": "video/mpeg", ".mov": "video/quicktime", ".avi": "video/x-msvideo", ".flv": "video/x-flv",
  ".mpg": "video/mpeg", ".wmv": "video/x-ms-wmv", ".3gpp": "video/3gpp",
  ".pdf": "application/pdf", ".ppt": "application/vnd.ms-powerpoint", ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
};

/** The MIME type deepagents gives a binary file by its extension; `application/octet-stream` for the rest. */
export function mimeTypeForPath(filePath: string): string {
  return BINARY_MIME_TYPES[path.posix.extname(filePath).toLowerCase()] ?? "application/octet-stream";
}

const BASE64_EXTENSIONS = new Set([
  ".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic", ".heif",
  ".mp3", ".wav", ".aiff", ".aac", ".ogg", ".flac",
  ".mp4", ".webm", ".mpeg", ".mov", ".avi", ".flv", ".mpg", ".wmv", ".3gpp",
  ".pdf", ".ppt", ".pptx",
]);

/** True when deepagents treats `filePath` as binary (its content travels as base64). */
export function isBase64Path(filePath: string): boolean {
  return BASE64_EXTENSIONS.has(path.posix.extname(filePath).toLowerCase());
}

/** Strict base64 (standard or URL alphabet, padding optional, whitespace ignored) to bytes; `undefined` when it is not base64. */
export function decodeBase64(text: string): Buffer | undefined {
  const compact = text.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact) || compact.replace(/=+$/, "").length % 4 === 1) return undefined;
  return Buffer.from(compact, compact.includes("-") || compact.includes("_") ? "base64url" : "base64");
}
