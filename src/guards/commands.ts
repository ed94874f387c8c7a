/**
 * The command screen: refuses shell command lines that could wreck the machine rather than the
 * workspace (deleting or re-permissioning `/` or the home directory, formatting or partitioning
 * disks, fork bombs, powering off, killing every process, running downloaded code, writing system
 * configuration).
 *
 * It is defence in depth, not the wall: the sandbox around `run_command` is what contains a
 * command. The line is parsed with a real bash parser (mvdan/sh, the parser behind `shfmt`)
 * into a typed tree (`commands/syntax.ts`); the walk (`commands/walk.ts`) checks every simple
 * command the shell would run, with its words expanded statically (`commands/words.ts`),
 * wrappers peeled off (`commands/wrappers.ts`), and a rules table (`commands/rules.ts`) over
 * paths resolved against a `cd` and `/proc/*\/root` (`commands/paths.ts`). Text that only
 * mentions a command (`echo 'rm -rf /'`, a commit message) is data to the parser and passes. The
 * work is linear in the line and capped (LIMITS.commandScreen*); past the cap the line is refused
 * with a message saying so. A determined caller can still hide intent (values computed at run
 * time, base64, a script written first); that is what the sandbox is for.
 */
import { loadShellParser } from "./commands/syntax.js";
import { screen } from "./commands/walk.js";

/** Loads the parser now rather than on the first screened command (e.g. while the tools are built). */
export function initCommandScreen(): void {
  loadShellParser();
}

/**
 * Why `command` looks destructive beyond the workspace (a short sentence that fits after
 * "refused because"), or `null` when nothing matched. Never throws.
 *
 * Input the parser rejects is refused only when it contains a dangerous-looking word (bash would
 * most likely reject it too, and the sandbox contains it either way); otherwise it passes.
 */
export function isDangerousCommand(command: string): string | null {
  if (typeof command !== "string" || command.trim() === "") return null;
  return screen(command).reason ?? null;
}
