/**
 * Media detection by magic bytes (never by the name alone): the formats read_file hands to a
 * model as they are (PNG, JPEG, GIF, WebP images) and PDF, whose text it extracts; and, for
 * WorkbenchBackend's audio and video blocks (deepagents' read_file), the audio and video
 * containers of deepagents' MIME table ({@link sniffAudioVideo}).
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

export type AudioVideoMimeType =
  | "audio/mpeg" | "audio/wav" | "audio/aiff" | "audio/aac" | "audio/ogg" | "audio/flac"
  | "video/mp4" | "video/quicktime" | "video/3gpp" | "video/webm" | "video/x-msvideo" | "video/x-flv" | "video/mpeg" | "video/x-ms-wmv";

const ID3 = ascii("ID3");
const WAVE = ascii("WAVE");
const AVI = ascii("AVI ");
const FORM = ascii("FORM");
const OGG = ascii("OggS");
const FLAC = ascii("fLaC");
const FTYP = ascii("ftyp");
const FLV = ascii("FLV");
const EBML = [0x1a, 0x45, 0xdf, 0xa3];
const ASF = [0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11];

/**
 * The audio or video type the first bytes announce (the containers deepagents names: MP3, WAV,
 * AIFF, AAC/ADTS, Ogg, FLAC, MP4/MOV/3GP, WebM, AVI, FLV, MPEG-PS, WMV), or `undefined`.
 */
export function sniffAudioVideo(head: Uint8Array): { kind: "audio" | "video"; mimeType: AudioVideoMimeType } | undefined {
  if (startsWith(head, ID3)) return { kind: "audio", mimeType: "audio/mpeg" };
  if (startsWith(head, RIFF) && startsWith(head, WAVE, 8)) return { kind: "audio", mimeType: "audio/wav" };
  if (startsWith(head, RIFF) && startsWith(head, AVI, 8)) return { kind: "video", mimeType: "video/x-msvideo" };
  if (startsWith(head, FORM) && (startsWith(head, ascii("AIFF"), 8) || startsWith(head, ascii("AIFC"), 8))) return { kind: "audio", mimeType: "audio/aiff" };
  if (startsWith(head, OGG)) return { kind: "audio", mimeType: "audio/ogg" };
  if (startsWith(head, FLAC)) return { kind: "audio", mimeType: "audio/flac" };
  if (startsWith(head, FTYP, 4)) {
    const brand = String.fromCharCode(...head.subarray(8, 12));
    if (brand === "qt  ") return { kind: "video", mimeType: "video/quicktime" };
    if (brand.startsWith("3g")) return { kind: "video", mimeType: "video/3gpp" };
    return { kind: "video", mimeType: "video/mp4" };
  }
  if (startsWith(head, EBML)) return { kind: "video", mimeType: "video/webm" };
  if (startsWith(head, FLV)) return { kind: "video", mimeType: "video/x-flv" };
  if (startsWith(head, ASF)) return { kind: "video", mimeType: "video/x-ms-wmv" };
  if (startsWith(head, [0x00, 0x00, 0x01, 0xba]) || startsWith(head, [0x00, 0x00, 0x01, 0xb3])) return { kind: "video", mimeType: "video/mpeg" };
  // Frame sync: MPEG audio layer III (0xFFFB/F3/F2) and AAC in ADTS (0xFFF1/F9).
  if (head.length >= 2 && head[0] === 0xff) {
    const b = head[1]!;
    if (b === 0xf1 || b === 0xf9) return { kind: "audio", mimeType: "audio/aac" };
    if (b === 0xfb || b === 0xf3 || b === 0xf2) return { kind: "audio", mimeType: "audio/mpeg" };
  }
  return undefined;
}
