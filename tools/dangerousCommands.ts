/**
 * The command screen now lives in the guard layer (`src/guards/commands.ts`); this module keeps
 * the tools' import path and the `string | null` shape of `isDangerousCommand`.
 */
import { screenCommand } from "../src/guards/commands.js";

export { initCommandScreen, screenCommand } from "../src/guards/commands.js";

/**
 * Why `command` looks destructive beyond the workspace, or `null` when nothing matched.
 * Never throws. See {@link screenCommand}.
 */
export function isDangerousCommand(command: string): string | null {
  return screenCommand(command) ?? null;
}
