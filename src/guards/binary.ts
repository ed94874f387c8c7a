/**
 * Binary detection: by extension (cheap, before opening) and by sniffing the first bytes (a
 * `.txt` that is really a PNG is caught too — the reference checked extensions only).
 */
import path from "node:path";

const IMAGE_EXTENSIONS = new Set(["png", "jpg", "jpeg", "gif", "bmp", "webp", "ico", "tif", "tiff", "heic", "heif", "avif", "psd"]);

const BINARY_EXTENSIONS = new Set([
  ...IMAGE_EXTENSIONS,
  // archives and packages
  "zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "tar", "jar", "war", "ear", "whl", "egg", "deb", "rpm", "apk", "dmg", "iso", "img", "msi", "cab", "lz4", "br",
  // executables and objects
  "exe", "dll", "so", "dylib", "o", "obj", "a", "lib", "bin", "elf", "class", "pyc", "pyo", "wasm", "node", "dex",
  // media
  "mp3", "mp4", "m4a", "m4v", "mov", "avi", "mkv", "webm", "wav", "flac", "ogg", "oga", "opus", "aac", "wma", "wmv", "flv", "mid", "midi",
  // documents and fonts
  "pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "epub", "ttf", "otf", "woff", "woff2", "eot",
  // data
  "sqlite", "sqlite3", "db", "mdb", "parquet", "arrow", "feather", "npy", "npz", "pkl", "pickle", "h5", "hdf5", "pt", "pth", "onnx", "safetensors", "gguf", "ckpt", "tfrecord", "lmdb",
  "DS_Store",
]);

function extensionOf(p: string): string {
  const base = path.posix.basename(String(p).replace(/\\/g, "/"));
  const dot = base.lastIndexOf(".");
  return dot <= 0 && base !== ".DS_Store" ? "" : base.slice(dot + 1);
}

/** True when the file name's extension marks a binary format. */
export function hasBinaryExtension(p: string): boolean {
  const ext = extensionOf(p);
  return ext !== "" && (BINARY_EXTENSIONS.has(ext.toLowerCase()) || BINARY_EXTENSIONS.has(ext));
}

/** True for image extensions (PNG/JPEG/GIF/WebP with their real content are shown as images; the rest are refused with this hint). */
export function isImagePath(p: string): boolean {
  return IMAGE_EXTENSIONS.has(extensionOf(p).toLowerCase());
}

/** How many leading bytes {@link sniffBinary} needs. */
export const SNIFF_BYTES = 8192;

/**
 * True when `buf` (the first bytes of a file) is not UTF-8 text: it holds a NUL byte or an
 * invalid UTF-8 sequence. A multi-byte character cut by the end of the sample is not an error.
 */
export function sniffBinary(buf: Uint8Array): boolean {
  if (buf.length === 0) return false;
  if (buf.indexOf(0) !== -1) return true;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(buf, { stream: true });
    return false;
  } catch {
    return true;
  }
}

/** The guiding message for a binary file. */
export function binaryFileMessage(agentPath: string, detectedBy: "extension" | "content"): string {
  if (isImagePath(agentPath)) {
    return `"${agentPath}" is an image in a format read_file cannot show (it shows PNG, JPEG, GIF and WebP images, recognised by their content). Convert it to PNG with a command if one is available and read the copy, or describe what you need from it.`;
  }
  const how = detectedBy === "extension" ? "its extension marks a binary format" : "its content is not UTF-8 text (NUL bytes or invalid UTF-8)";
  return `"${agentPath}" is a binary file (${how}); read_file shows text only. Use a tool made for this format, or search_files to find text files.`;
}
