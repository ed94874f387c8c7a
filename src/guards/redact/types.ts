/** Types shared by the secret detectors and the redaction engine. */
import type { TextScan } from "./scan.js";


export interface RedactOptions {
  /**
   * The text is a window that may start in the middle of a file (read_file with an offset,
   * search context): leading lines that look like the body of a PEM key (base64 only, 40–80
   * characters) are masked too, since their BEGIN line may lie before the window.
   */
  startsMidFile?: boolean;
}

/** A secret found in a text: `[start, end)` of the value, and the marker label. */
export interface SecretSpan {
  start: number;
  end: number;
  label?: string;
}

/**
 * One way of finding secrets: the spans of secret values in `text` (unsorted, may overlap; the
 * engine merges them). Pure, linear in the text, may throw only on a bug (the engine then masks
 * everything). `scan` is the literal scan of `text` shared by the detectors of one call.
 */
export type SecretDetector = (text: string, opts: RedactOptions, scan: TextScan) => SecretSpan[];
