/**
 * The one place that decides "is this the local machine?". Two questions, one home:
 * - are the files on this machine's disk (native fs, native watchers, a local ripgrep)?
 * - do commands run on this machine (so they get this process's scrubbed variables)?
 * Everything else (SSH, containers, a shell over some other exec) is reached only through its
 * FileOperations / Environment and is polled for changes.
 */

/**
 * True when `ops` reads this machine's disk: no backend given, or one of kind `"local"`
 * (LocalFileOperations — also the native file access of local sandboxes, whose thread directory
 * is bind-mounted at the same path).
 */
export function isLocalFileOperations(ops: { readonly kind: string } | undefined): boolean {
  return ops === undefined || ops.kind === "local";
}

/** Environment kinds whose commands run on this machine (a sandbox is a local process tree). */
const LOCAL_ENVIRONMENT_KINDS: ReadonlySet<string> = new Set(["local", "local-shell", "sandbox"]);

/**
 * True when the environment's commands run on this machine, so the caller passes them this
 * process's (scrubbed) variables; a remote host or container keeps its own `PATH` and `HOME`.
 */
export function isLocalEnvironment(env: { readonly kind: string } | undefined): boolean {
  return env === undefined || LOCAL_ENVIRONMENT_KINDS.has(env.kind);
}
