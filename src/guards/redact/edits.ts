/** Refusal of edits that rewrite a line holding a masked secret (the edit's success would be an oracle). */
import { diffLines } from "diff";
import { CHANGE_MARGIN_LINES, lineWindow } from "./derived.js";
import { findSecrets } from "./engine.js";

/** The refusal {@link secretEditReason} gives; callers answer with the masked view's error instead when quoting it would be an oracle. */
export const SECRET_EDIT_REFUSAL =
  "The change would rewrite a line that holds a masked secret («redacted…»). Lines with secrets can only be kept unchanged or deleted whole: anchor the edit on other lines, and ask the user to change secret values.";

/**
 * Refusal reason when a change from `before` to `after` rewrites a line holding a secret (a case
 * change, a cut prefix, an inserted separator, a guessed first character): the diff, a later read
 * of the altered value, or merely the success of an edit anchored inside the secret would reveal
 * a value the model was never given. Whole-line deletions are allowed; compares line hunks, so a
 * secret on an untouched neighbouring line is fine.
 */
export function secretEditReason(before: string, after: string): string | undefined {
  if (typeof before !== "string" || typeof after !== "string" || before === after) return undefined;
  try {
    const changes = diffLines(before, after, { timeout: 2000 });
    // Too different to diff in time: every secret must survive verbatim.
    if (!changes) return findSecrets(before).some((s) => !after.includes(before.slice(s.start, s.end))) ? SECRET_EDIT_REFUSAL : undefined;
    // Secrets are looked up in a window around each changed hunk, not in the whole (possibly huge) file.
    const overlapsSecret = (from: number, to: number) => {
      const [ws, we] = lineWindow(before, from, to, CHANGE_MARGIN_LINES);
      return findSecrets(before.slice(ws, we), { startsMidFile: ws > 0 }).some((s) => s.start + ws < to && s.end + ws > from);
    };
    let pos = 0;
    let removedFrom = -1;
    let removedTo = -1;
    let added = false;
    // Any rewrite of a line holding a secret (even one that keeps the value, `PASSWORD=h` → `PASSWORD=hh`)
    // would tell whether old_string guessed part of it: only whole-line deletions pass.
    const flush = (): boolean => {
      const bad = added && removedFrom >= 0 && overlapsSecret(removedFrom, removedTo);
      removedFrom = removedTo = -1;
      added = false;
      return bad;
    };
    for (const change of changes) {
      if (change.added) {
        added = true;
        continue;
      }
      if (change.removed) {
        if (removedFrom < 0) removedFrom = pos;
        pos += change.value.length;
        removedTo = pos;
        continue;
      }
      if (flush()) return SECRET_EDIT_REFUSAL;
      pos += change.value.length;
    }
    return flush() ? SECRET_EDIT_REFUSAL : undefined;
  } catch {
    return SECRET_EDIT_REFUSAL;
  }
}
