import { applyEdits, closestRegions, describeSpans, locate, replacementFor } from "./locate.js";
import { fromLf, normaliseEol, toLf } from "./lineEndings.js";
import { STRATEGIES } from "./strategies.js";
import { LineIndex } from "./text.js";
import type { ReplaceOptions, ReplacePlan } from "./types.js";

/**
 * Plans the replacement of `oldString` by `newString` in `content` (pure: no I/O).
 *
 * The strategies are tried in order (see `MATCH_STRATEGIES`) and the one that matched is reported.
 * Several matches need `replaceAll` (and are never accepted for the guessing strategies
 * block-anchor and context-aware). Nothing found: "already applied" when `newString` is there,
 * otherwise the 3 closest regions. CRLF and BOM of `content` are kept.
 */
export function planReplace(content: string, oldString: string, newString: string, opts: ReplaceOptions = {}): ReplacePlan {
  if (typeof content !== "string") return { ok: false, error: "content must be a string" };
  if (typeof oldString !== "string" || typeof newString !== "string") {
    return { ok: false, error: "old_string and new_string must both be strings" };
  }
  if (oldString === "") {
    return { ok: false, error: "old_string is empty: to create a file or replace all of it, use write_file instead" };
  }
  const oldLf = normaliseEol(oldString);
  const newLf = normaliseEol(newString);
  if (oldLf === newLf) return { ok: false, error: "old_string and new_string are identical: there is nothing to change" };

  const { text, conventions } = toLf(content);
  const index = new LineIndex(text);
  const found = locate(index, oldLf);
  if (found === undefined) return notFound(index, oldLf, newLf);

  const { strategy, spans } = found;
  if (strategy.name === "exact" && isInsideNewText(text, spans, oldLf, newLf)) {
    return {
      ok: false,
      alreadyApplied: true,
      error:
        "Every match of old_string sits inside an occurrence of new_string: the change looks already applied, and applying it again would duplicate it. Read the file to confirm; include more surrounding lines if you really mean another place.",
    };
  }
  if (spans.length > 1 && (!opts.replaceAll || strategy.requiresUnique)) {
    const where = describeSpans(index, spans);
    const lines = where.map((c) => c.line).join(", ");
    const fix = strategy.requiresUnique
      ? `A fuzzy ("${strategy.name}") match must be unique: copy old_string exactly from the file, with a few more surrounding lines.`
      : "Include more surrounding lines in old_string to make it unique, or set replace_all=true to change every occurrence.";
    return {
      ok: false,
      error: `old_string matches ${spans.length} places (strategy "${strategy.name}") at lines ${lines}${spans.length > where.length ? ", …" : ""}. ${fix}`,
      candidates: where,
    };
  }
  // The result's size is known before it is built: refuse growth past the cap without allocating it.
  const edits: Array<{ start: number; end: number; text: string }> = [];
  let size = text.length;
  for (const s of spans) {
    const replacement = replacementFor(index, strategy, oldLf, s, newLf);
    size += replacement.length - (s.end - s.start);
    if (opts.maxResultChars !== undefined && size > opts.maxResultChars) {
      return { ok: false, error: `the edit would make the file more than ${opts.maxResultChars} characters long; nothing was written. Replace fewer occurrences or use a shorter new_string.` };
    }
    edits.push({ start: s.start, end: s.end, text: replacement });
  }
  return {
    ok: true,
    newContent: fromLf(applyEdits(text, edits), conventions),
    strategy: strategy.name,
    matches: spans.length,
    lines: spans.map((s) => index.lineAt(s.start) + 1),
  };
}

function notFound(index: LineIndex, oldLf: string, newLf: string): ReplacePlan {
  // A new_string contained in old_string (a deletion) proves nothing by being present.
  if (newLf.trim() !== "" && !oldLf.includes(newLf.trim()) && isPresent(index, newLf)) {
    return {
      ok: false,
      alreadyApplied: true,
      error: "old_string was not found but new_string is already in the file: the change looks already applied. Read the file to confirm before patching again.",
    };
  }
  const candidates = closestRegions(index, oldLf, 3);
  const hint = candidates
    .map((c) => `lines ${c.line}-${c.endLine} (similarity ${c.similarity}):\n${c.snippet}`)
    .join("\n---\n");
  return {
    ok: false,
    error:
      "old_string was not found (tried: " +
      STRATEGIES.map((s) => s.name).join(", ") +
      "). Read the file again and copy the exact text." +
      (hint ? ` Did you mean:\n${hint}` : ""),
    candidates,
  };
}

/** new_string extends old_string (an insertion) and each match is already part of a copy of new_string. */
function isInsideNewText(text: string, spans: Array<{ start: number; end: number }>, oldLf: string, newLf: string): boolean {
  const at = newLf.indexOf(oldLf);
  if (at === -1 || newLf.length === oldLf.length) return false;
  return spans.every((s) => {
    // Try every place old_string occurs within new_string, so the copy may start before the match.
    for (let k = at; k !== -1; k = newLf.indexOf(oldLf, k + 1)) {
      if (s.start - k >= 0 && text.startsWith(newLf, s.start - k)) return true;
    }
    return false;
  });
}

/** New text present in an exact or whitespace-tolerant form (the cheap, safe strategies only). */
function isPresent(index: LineIndex, newLf: string): boolean {
  return STRATEGIES.slice(0, 3).some((s) => s.find(index, newLf).length > 0);
}
