/**
 * The redaction marker, such as `«redacted:sk-…»`: guillemets never occur in a key, so the
 * marker cannot be mistaken for (or written back as) a real value.
 */

/** Opening of every marker. */
export const REDACTION_MARKER_PREFIX = "«redacted";

/** The marker for a secret of kind `label` (e.g. `sk-…`, `jwt`, `private-key`). */
export function redactionMarker(label?: string): string {
  return label ? `«redacted:${label}»` : "«redacted»";
}

const MARKER_RE = /«redacted(?::[^»\n]{0,60})?»/;

/** True when `text` contains a redaction marker (content that came from a redacted read). */
export function containsRedactionMarker(text: string): boolean {
  return typeof text === "string" && text.includes(REDACTION_MARKER_PREFIX) && MARKER_RE.test(text);
}
