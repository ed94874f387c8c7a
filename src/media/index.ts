// Media reads: images as content blocks, PDF text (see read.ts).
export { sniffMedia, MEDIA_SNIFF_BYTES, type ImageMimeType, type SniffedMedia } from "../guards/sniffMedia.js";
export { extractPdfPages, PdfReadError, type PdfPages } from "./pdf.js";
export { imageBlock, openForRead, pdfLines, renderPdfPages, type ImageContentBlock, type OpenedRead } from "./read.js";
