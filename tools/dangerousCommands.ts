/**
 * The command screen lives in the guard layer (`src/guards/commands.ts`); this module keeps the
 * tools' import path.
 */
export { initCommandScreen, isDangerousCommand } from "../src/guards/commands.js";
