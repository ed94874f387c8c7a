/**
 * Value-aware masking of output *derived* from a file (a diff, a "did you mean" quote, search
 * context): masked with the values found in the file's raw content, so editing neighbouring text
 * or the case of a key never prints a secret that a read would have masked.
 */
import { diffLines } from "diff";
import { escapeRegExp } from "../regexp.js";
import { findSecrets, redactSecrets } from "./engine.js";
import { REDACTION_MARKER_PREFIX, redactionMarker } from "./markers.js";
import type { RedactOptions } from "./types.js";

/** Values shorter than this are only masked where a rule finds them, never by value. */
const MIN_VALUE_CHARS = 4;

/**
 * The exact secret substrings {@link redactSecrets} would mask in `text` (one entry per line of
 * a multi-line secret such as a PEM body), longest first, without duplicates.
 */
export function secretValues(text: string, opts: RedactOptions = {}): string[] {
  const found = new Set<string>();
  for (const s of findSecrets(text, opts)) {
    for (const piece of text.slice(s.start, s.end).split("\n")) {
      const v = piece.replace(/\r$/, "").trim();
      if (v.length >= MIN_VALUE_CHARS && !v.includes(REDACTION_MARKER_PREFIX)) found.add(v);
    }
  }
  return [...found].sort((a, b) => b.length - a.length);
}

/**
 * Masks every occurrence of the given secret values in `text`, case-insensitively and also by
 * their body without the vendor prefix (`sk-abc…` shown as `SK-abc…` or `abc…`), keeping lines.
 */
export function maskValues(text: string, values: readonly string[]): string {
  if (typeof text !== "string" || text.length === 0 || values.length === 0) return text;
  try {
    const needles = new Set<string>();
    for (const v of values) {
      if (typeof v !== "string" || v.length < MIN_VALUE_CHARS) continue;
      needles.add(v);
      // The body after a vendor prefix (`sk-proj-`, `ghp_`, `xoxb-123-`): long enough to be unique.
      const body = v.replace(/^[A-Za-z0-9]{1,12}[-_.](?:[A-Za-z0-9]{1,8}[-_.])?/, "");
      if (body !== v && body.length >= 16) needles.add(body);
    }
    if (needles.size === 0) return text;
    const re = new RegExp([...needles].sort((a, b) => b.length - a.length).map(escapeRegExp).join("|"), "gi");
    return text.replace(re, (m) => (m.includes("\n") ? m.replace(/[^\n]+/g, redactionMarker()) : redactionMarker()));
  } catch {
    return text.replace(/[^\n]+/g, redactionMarker());
  }
}

/**
 * The one call for output derived from file contents (diffs, "did you mean" quotes, search
 * context, edit results): pattern redaction of `output`, then masking of every secret value found
 * in the raw `sources` (the file before and after the change), so a change of neighbouring text,
 * of a key's case or of its prefix never prints a value a read would have masked.
 */
export function redactDerived(output: string, sources: ReadonlyArray<string | null | undefined>, opts: RedactOptions = {}): string {
  if (typeof output !== "string" || output.length === 0) return output;
  const values = new Set<string>();
  for (const src of sources) if (typeof src === "string") for (const v of secretValues(src)) values.add(v);
  return maskValues(redactSecrets(output, opts), [...values]);
}

/** Lines of context around a change in which secrets are looked for (a key's BEGIN line, an assignment). */
export const CHANGE_MARGIN_LINES = 100;

/** `[start, end)` of `text` widened from `[from, to)` by `lines` whole lines on each side. */
export function lineWindow(text: string, from: number, to: number, lines: number): [number, number] {
  let start = from;
  for (let i = 0; i <= lines && start > 0; i++) start = text.lastIndexOf("\n", start - 2) + 1;
  let end = to;
  for (let i = 0; i < lines && end < text.length; i++) {
    const nl = text.indexOf("\n", end);
    end = nl === -1 ? text.length : nl + 1;
  }
  return [Math.max(0, start), Math.min(text.length, end)];
}

/**
 * The parts of `before` and `after` a diff between them can show (each changed hunk with
 * {@link CHANGE_MARGIN_LINES} lines around it): the sources for {@link redactDerived} of that
 * diff, so a one-line patch of a large file does not redact the whole file twice.
 */
export function changeExcerpts(before: string, after: string): string[] {
  if (typeof before !== "string" || typeof after !== "string") return [];
  try {
    const changes = diffLines(before, after, { timeout: 2000 });
    if (!changes) return [before, after];
    const out: string[] = [];
    let posBefore = 0;
    let posAfter = 0;
    for (const change of changes) {
      const len = change.value.length;
      if (change.removed) {
        const [s, e] = lineWindow(before, posBefore, posBefore + len, CHANGE_MARGIN_LINES);
        out.push(before.slice(s, e));
        posBefore += len;
      } else if (change.added) {
        const [s, e] = lineWindow(after, posAfter, posAfter + len, CHANGE_MARGIN_LINES);
        out.push(after.slice(s, e));
        posAfter += len;
      } else {
        posBefore += len;
        posAfter += len;
      }
    }
    return out;
  } catch {
    return [before, after];
  }
}
