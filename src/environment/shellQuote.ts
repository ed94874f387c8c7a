/**
 * POSIX shell quoting. Every argument that reaches a shell command line goes through here, so a
 * file name can never be read as syntax (`$()`, backticks, `;`, newlines) or as an option (a
 * leading `-` is harmless once the command also uses `--`).
 */

/**
 * Quotes one argument for POSIX `sh`: wrapped in single quotes, each embedded `'` written as
 * `'\''`. Inside single quotes nothing is special, so this is complete. NUL cannot be passed
 * through a command line at all, so it is rejected rather than silently cut.
 */
export function shellQuote(arg: string): string {
  if (typeof arg !== "string") throw new TypeError(`shellQuote expects a string, got ${typeof arg}`);
  if (arg.includes("\0")) {
    throw Object.assign(new TypeError("Argument contains a NUL byte, which no shell command can carry"), {
      code: "ERR_INVALID_ARG_VALUE",
    });
  }
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Quotes each argument and joins them with spaces. */
export function shellQuoteAll(args: readonly string[]): string {
  return args.map(shellQuote).join(" ");
}

/**
 * A script with positional parameters: `set -- 'a' 'b'` followed by the script body, which reads
 * them as `"$1"`, `"$2"`. Keeps the script text constant and every value quoted in one place.
 */
export function withArgs(script: string, args: readonly string[]): string {
  return args.length === 0 ? script : `set -- ${shellQuoteAll(args)}\n${script}`;
}
