/**
 * Media detection by magic bytes (never by the name alone): the formats read_file hands to a
 * model as they are (PNG, JPEG, GIF, WebP images) and PDF, whose text it extracts.
 */

/** Image MIME types a vision model accepts as an image content block. */
export type ImageMimeType = "image/png" | "image/jpeg" | "image/gif" | "image/webp";

export type SniffedMedia = { kind: "image"; mimeType: ImageMimeType } | { kind: "pdf"; mimeType: "application/pdf" };

/** How many leading bytes {@link sniffMedia} looks at. */
export const MEDIA_SNIFF_BYTES = 1024;

function startsWith(buf: Uint8Array, bytes: readonly number[], at = 0): boolean {
  if (buf.length < at + bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) if (buf[at + i] !== bytes[i]) return false;
  return true;
}

const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));
const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG = [0xff, 0xd8, 0xff];
const GIF87 = ascii("GIF87a");
const GIF89 = ascii("GIF89a");
const RIFF = ascii("RIFF");
const WEBP = ascii("WEBP");
const PDF = ascii("%PDF-");

/** The media type the first bytes of a file announce, or `undefined` for anything else. */
export function sniffMedia(head: Uint8Array): SniffedMedia | undefined {
  if (startsWith(head, PNG)) return { kind: "image", mimeType: "image/png" };
  if (startsWith(head, JPEG)) return { kind: "image", mimeType: "image/jpeg" };
  if (startsWith(head, GIF87) || startsWith(head, GIF89)) return { kind: "image", mimeType: "image/gif" };
  if (startsWith(head, RIFF) && startsWith(head, WEBP, 8)) return { kind: "image", mimeType: "image/webp" };
  // PDF readers accept the header anywhere in the first 1,024 bytes (some writers prepend junk).
  const window = head.subarray(0, MEDIA_SNIFF_BYTES);
  const at = Buffer.from(window.buffer, window.byteOffset, window.byteLength).indexOf("%PDF-");
  if (at !== -1 && startsWith(head, PDF, at)) return { kind: "pdf", mimeType: "application/pdf" };
  return undefined;
}
