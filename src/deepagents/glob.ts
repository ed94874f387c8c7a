/**
 * Glob matching for the deepagents `glob`/`grep` tools: `*` and `?` within a segment, `**` across
 * segments, `{a,b}` alternatives, `[...]` classes. Node 20 has no `path.matchesGlob`.
 */

/** Compiles a glob to an anchored RegExp tested against `/`-separated relative paths. */
export function globToRegExp(glob: string): RegExp {
  let re = "";
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const slashAfter = glob[i + 2] === "/";
        // "**/" matches zero or more whole directories; a trailing "**" matches anything.
        re += slashAfter ? "(?:.*/)?" : ".*";
        i += slashAfter ? 2 : 1;
      } else {
        re += "[^/]*";
      }
    } else if (c === "?") {
      re += "[^/]";
    } else if (c === "{") {
      depth++;
      re += "(?:";
    } else if (c === "}" && depth > 0) {
      depth--;
      re += ")";
    } else if (c === "," && depth > 0) {
      re += "|";
    } else if (c === "[") {
      const close = glob.indexOf("]", i + 1);
      if (close === -1) {
        re += "\\[";
      } else {
        const body = glob.slice(i + 1, close).replace(/\\/g, "\\\\");
        re += `[${body.startsWith("!") ? `^${body.slice(1)}` : body}]`;
        i = close;
      }
    } else {
      re += c.replace(/[.+^${}()|[\]\\/]/g, "\\$&");
    }
  }
  return new RegExp(`^${re}$`);
}

/**
 * A matcher for `pattern` relative to a search base. With `anyDepth` (grep's file filter, like
 * ripgrep's `--glob`) a pattern without `/` matches the base name at any depth; otherwise (the
 * glob tool, like fast-glob) it matches the whole relative path, so `*.md` means top level only.
 */
export function globMatcher(pattern: string, anyDepth = false): (relPath: string) => boolean {
  const cleaned = pattern.replace(/\\/g, "/").replace(/^\.\//, "").replace(/^\/+/, "");
  const re = globToRegExp(cleaned);
  if (anyDepth && !cleaned.includes("/")) return (rel) => re.test(rel.slice(rel.lastIndexOf("/") + 1));
  return (rel) => re.test(rel);
}
