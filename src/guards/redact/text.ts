/** Character and line helpers shared by the detectors (by char code: these run per operator or per line). */

/** `[A-Za-z0-9_.-]`. */
export function isKeyChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 46 || c === 45;
}

/** `[A-Za-z_]`: the first character of a key. */
export function isKeyStartChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
}

/** End of the line holding `pos` (before a `\r\n`). */
export function lineEnd(text: string, pos: number): number {
  const nl = text.indexOf("\n", pos);
  const end = nl === -1 ? text.length : nl;
  return end > pos && text[end - 1] === "\r" ? end - 1 : end;
}

/** The line holding `pos` as [start, end) offsets (end excludes the newline). */
export function lineAt(text: string, pos: number): [number, number] {
  const start = text.lastIndexOf("\n", pos - 1) + 1;
  const nl = text.indexOf("\n", pos);
  return [start, nl === -1 ? text.length : nl];
}

/** Start of capture group `g` inside the whole match (the value is the match's last occurrence). */
export function indexOfGroup(m: RegExpMatchArray, g: number): number {
  const whole = m[0];
  const value = m[g]!;
  // Groups in these rules end at or near the end of the match: search from the right.
  const at = whole.lastIndexOf(value);
  return at === -1 ? 0 : at;
}
