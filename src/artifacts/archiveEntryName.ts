/**
 * Archive entry names for artifact downloads. An entry name is the file's own path components
 * joined with `/`, and nothing an extractor could read as something else: never absolute, never
 * `.`/`..`, never a backslash (zip tools on Windows, and many libraries everywhere, take `\` for a
 * separator: a file literally named `\app\settings.py` would extract as `/app/settings.py`,
 * `sub\..\notes.txt` as `sub/../notes.txt`), no control characters, valid text. Such files are
 * not renamed (an escaped name could collide with a real one): they are left out of the archive
 * and reported with the reason.
 */

/** Why `components` cannot be an archive entry name, or `undefined` when `components.join("/")` can. */
export function archiveEntryProblem(components: readonly string[]): string | undefined {
  if (components.length === 0) return "has no name";
  for (const c of components) {
    if (c === "" || c === "." || c === "..") return "has an empty, '.' or '..' path component";
    if (c.includes("\\")) return "has a backslash in its name, which unzip tools read as a directory separator";
    if (c.includes("/")) return "has a '/' inside a name";
    // U+FFFD: the name was not valid UTF-8, so the listed text is not the file's real name.
    if (/[\u0000-\u001f\u007f\ufffd]/.test(c)) return "has a control character or bytes that are not valid UTF-8 in its name";
  }
  return undefined;
}

/** The same check on a `/`-joined path (an `Artifact.path`). */
export function archivePathProblem(entryPath: string): string | undefined {
  if (typeof entryPath !== "string" || entryPath.startsWith("/")) return "is an absolute path";
  return archiveEntryProblem(entryPath.split("/"));
}
