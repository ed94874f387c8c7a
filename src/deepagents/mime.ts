/**
 * deepagents' rule for which files its `write(path, content)` receives as base64: the extension's
 * MIME type (its own table) is not a text type. Mirrors `getMimeType`/`isTextMimeType` of
 * deepagents 1.14, so a binary written through WorkbenchBackend lands as the same bytes as with
 * deepagents' FilesystemBackend.
 */
import path from "node:path";

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
