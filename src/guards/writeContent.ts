/**
 * What a write's new text must not be, for every writer (write_file, patch, WorkbenchBackend's
 * write and edit): read_file's display (`N|` gutters), its "unchanged" placeholder, or text
 * holding a redaction marker (writing one back would destroy the real secret).
 */
import { looksLikeDedupStub } from "./access.js";
import { containsRedactionMarker } from "./redact.js";

const GUTTER_LINE = /^\s*(\d+)\|/;

/**
 * True when `content` looks like read_file output pasted back: at least two lines carrying an
 * `N|` gutter with consecutive numbers, covering most non-empty lines.
 */
export function looksLikeReadFileDisplay(content: string): boolean {
  const lines = content.split("\n").filter((l) => l.trim() !== "");
  if (lines.length < 2) return false;
  let gutter = 0;
  let consecutive = 0;
  let previous: number | undefined;
  for (const line of lines) {
    const m = GUTTER_LINE.exec(line);
    if (!m) continue;
    gutter++;
    const n = Number(m[1]);
    if (previous !== undefined && n === previous + 1) consecutive++;
    previous = n;
  }
  return gutter >= 2 && consecutive >= 1 && gutter >= lines.length * 0.8;
}

/** Why `content` (named `what` in the message) must not be written, or `undefined`. */
export function writeContentReason(content: string, what = "content"): string | undefined {
  if (looksLikeReadFileDisplay(content)) {
    return `The ${what} starts its lines with "N|" line numbers: that is read_file's display, not the file. Remove the "N|" prefixes and send the plain text.`;
  }
  if (looksLikeDedupStub(content)) {
    return `The ${what} is read_file's "unchanged" placeholder, not the file: writing it would replace the file with the placeholder. Use the content from the earlier read_file result (or read the file again with another offset), then send the real text.`;
  }
  if (containsRedactionMarker(content)) {
    return `The ${what} contains a «redacted…» marker from a masked read. Writing it would replace the real secret with the marker and destroy it. Edit only the other lines with patch (leave the secret lines untouched), or ask the user for the real value.`;
  }
  return undefined;
}
