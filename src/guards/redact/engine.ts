/**
 * The redaction engine: every detector reports the spans of secret values in the raw text; the
 * spans are merged and replaced line by line, so the output has exactly the lines of the input
 * (callers add `N|` gutters afterwards).
 */
import { detectAssignments } from "./assignments.js";
import { detectContextRules } from "./contextRules.js";
import { detectGitleaks } from "./gitleaks.js";
import { redactionMarker } from "./markers.js";
import { detectPem } from "./pem.js";
import { TextScan } from "./scan.js";
import { detectContextShapes } from "./shapes.js";
import type { RedactOptions, SecretDetector, SecretSpan } from "./types.js";
import { detectUrlSecrets } from "./urls.js";
import { isPlaceholderToken } from "./values.js";
import { detectVendorTokens } from "./vendors.js";

/** Every detector, by name (the order only matters for which label wins on equal spans). */
export const SECRET_DETECTORS: ReadonlyArray<{ name: string; detect: SecretDetector }> = [
  { name: "pem", detect: detectPem },
  { name: "vendors", detect: detectVendorTokens },
  { name: "gitleaks", detect: detectGitleaks },
  { name: "urls", detect: detectUrlSecrets },
  { name: "context", detect: detectContextRules },
  { name: "shapes", detect: detectContextShapes },
  { name: "assignments", detect: detectAssignments },
];

/**
 * Placeholders shaped like a token (`ghp_xxxx…`, `AKIAXXXXXXXXXXXXXXXX`, zeros, templates) are
 * kept whichever detector found them; counting sequences only when no vendor prefix vouches for
 * the token.
 */
function isKept(text: string, s: SecretSpan, detector: string): boolean {
  if (s.label === "private-key" || s.end - s.start > 512) return false;
  return isPlaceholderToken(text.slice(s.start, s.end), detector !== "vendors");
}

function collectSpans(text: string, opts: RedactOptions): SecretSpan[] {
  const spans: SecretSpan[] = [];
  const scan = new TextScan(text);
  for (const d of SECRET_DETECTORS) for (const s of d.detect(text, opts, scan)) if (!isKept(text, s, d.name)) spans.push(s);
  return spans;
}

/** Sorted, merged spans; a labelled span wins over an unlabelled one it overlaps. */
function mergeSpans(spans: SecretSpan[]): SecretSpan[] {
  const sorted = spans.filter((s) => s.end > s.start).sort((a, b) => a.start - b.start || b.end - a.end);
  const out: SecretSpan[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s.start < last.end) {
      if (s.end > last.end) last.end = s.end;
      if (!last.label && s.label) last.label = s.label;
    } else {
      out.push({ ...s });
    }
  }
  return out;
}

/** The merged secret spans of `text` (exported for tests and tools that must not edit inside one). */
export function findSecrets(text: string, opts: RedactOptions = {}): SecretSpan[] {
  if (typeof text !== "string" || text.length === 0) return [];
  try {
    return mergeSpans(collectSpans(text, opts));
  } catch {
    return [{ start: 0, end: text.length }];
  }
}

/** Replaces each span by its marker, line by line: the result has the lines of `text`. */
function applySpans(text: string, spans: SecretSpan[]): string {
  if (spans.length === 0) return text;
  const parts: string[] = [];
  let pos = 0;
  for (const s of spans) {
    parts.push(text.slice(pos, s.start));
    const marker = redactionMarker(s.label);
    const value = text.slice(s.start, s.end);
    if (!value.includes("\n")) parts.push(marker);
    else {
      parts.push(
        value
          .split("\n")
          .map((piece) => (piece.trim() === "" ? piece : marker + (piece.endsWith("\r") ? "\r" : "")))
          .join("\n"),
      );
    }
    pos = s.end;
  }
  parts.push(text.slice(pos));
  return parts.join("");
}

/**
 * Masks secrets in `text` (see the module comment). Keeps the line structure; linear in the
 * text; never throws (on an internal error every line is masked).
 */
export function redactSecrets(text: string, opts: RedactOptions = {}): string {
  if (typeof text !== "string" || text.length === 0) return text;
  try {
    return applySpans(text, mergeSpans(collectSpans(text, opts)));
  } catch {
    return text.replace(/[^\n]+/g, redactionMarker());
  }
}
