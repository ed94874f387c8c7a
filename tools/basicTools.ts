import { tool, type StructuredTool } from "@langchain/core/tools";
import { z } from "zod";
import type { EnvironmentOption } from "../src/environment/environment.js";
import { ENVIRONMENT_OPTION_MESSAGE, isEnvironmentOption, type ThreadEnvironments } from "../src/environment/threadEnvironment.js";
import { markWorkbenchTool, toolError } from "./toolResult.js";
import { createRunCommandTool, runCommandOptionsSchema, type RunCommandToolOptions } from "./runCommand.js";
import { checkedAs, keysOf, parseOptions } from "../src/options.js";
import { sharedEnvironmentsOf, withSharedEnvironments } from "../src/environment/sharedEnvironments.js";

/**
 * The checks on {@link BasicToolsOptions}, strict at every level. `shell` is checked for its keys
 * here (run_command's, so a typo throws even with the shell off) and for its values by
 * run_command when it is built.
 */
export const basicToolsOptionsSchema = z.strictObject({
  /** Workspace root (else `WORKBENCH_ROOT`, else `./agent_files`). Use the middleware's value. */
  rootDir: z.string().min(1).optional(),
  /**
   * Include `run_command`. Default: `WORKBENCH_ENABLE_SHELL=true` in the environment, else false.
   * A shell reaches beyond the workspace; enable it deliberately.
   */
  enableShell: z.boolean().optional(),
  /** `run_command` settings (timeouts, output cap, `allowDangerous`, extra env). */
  shell: checkedAs<Omit<RunCommandToolOptions, "rootDir" | "environment">>(keysOf(runCommandOptionsSchema)).optional(),
  /**
   * Where `run_command` runs: an Environment, or `(threadId) => Environment` for one per thread.
   * Default: this machine. Give every part the same (see `createWorkbench({ environment })`).
   */
  environment: z.custom<EnvironmentOption>(isEnvironmentOption, ENVIRONMENT_OPTION_MESSAGE).optional(),
  /** Clock for `get_current_time` (tests). Default `() => new Date()`. */
  now: z.custom<() => Date>((v) => typeof v === "function", "now must be a function returning a Date").optional(),
});

/** Options of {@link createBasicTools} (the schema's input). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name for the schema's input type (tooltips, errors and docs/api.md show it); its members are the schema's
export interface BasicToolsOptions extends z.input<typeof basicToolsOptionsSchema> {}

/**
 * The package's basic tools: `get_current_time` always, `run_command` when the shell is
 * enabled. Both resolve the caller's thread workspace from their config, so they work with or
 * without the FileManager middleware.
 *
 * To have a human approve every command instead of relying on the built-in refusal list:
 * ```ts
 * createAgent({
 *   model,
 *   tools: createBasicTools({ enableShell: true, shell: { allowDangerous: true } }),
 *   middleware: [humanInTheLoopMiddleware({ interruptOn: { run_command: { allowedDecisions: ["approve", "edit", "reject"] } } })],
 *   checkpointer: new MemorySaver(),
 * });
 * ```
 */
export function createBasicTools(options: BasicToolsOptions = {}): StructuredTool[] {
  parseOptions(basicToolsOptionsSchema, options ?? {}, "Invalid createBasicTools options");
  return basicToolsFrom(options, sharedEnvironmentsOf(options));
}

/**
 * The tools over options already checked with {@link basicToolsOptionsSchema} (`shell`'s values
 * are run_command's to check), on the caller's `environments` when given (createWorkbench's one).
 */
function basicToolsFrom(options: BasicToolsOptions, environments?: ThreadEnvironments): StructuredTool[] {
  const tools: StructuredTool[] = [createCurrentTimeTool(options.now)];
  const enableShell = options.enableShell ?? process.env.WORKBENCH_ENABLE_SHELL?.trim().toLowerCase() === "true";
  if (enableShell) {
    const { environment } = options;
    tools.push(createRunCommandTool(withSharedEnvironments({ ...options.shell, rootDir: options.rootDir, ...(environment ? { environment } : {}) }, environments)));
  }
  return tools;
}

const currentTimeInput = z.object({
  timezone: z
    .string()
    .optional()
    .describe("IANA time zone name such as `Europe/Paris`, `America/New_York` or `UTC`. Omit for the server's local zone."),
});

/** `get_current_time`: ISO 8601 with the zone's UTC offset plus a readable form. */
export function createCurrentTimeTool(now: () => Date = () => new Date()): StructuredTool {
  const currentTime = tool(
    ({ timezone }, config) => {
      const zone = timezone?.trim() || Intl.DateTimeFormat().resolvedOptions().timeZone;
      try {
        return formatCurrentTime(now(), zone);
      } catch {
        const fix = `unknown time zone "${timezone}". Use an IANA zone name such as "Europe/Paris", "Asia/Tokyo" or "UTC", or omit timezone for the local zone.`;
        return toolError("get_current_time", config, fix);
      }
    },
    {
      name: "get_current_time",
      description: "Get the current date and time (ISO 8601 with UTC offset, and a readable form), optionally in a given IANA time zone.",
      schema: currentTimeInput,
    },
  );
  return markWorkbenchTool(currentTime) as unknown as StructuredTool;
}

/**
 * `date` in `timeZone` as `ISO 8601 with offset` plus a readable line. Throws a RangeError for an
 * unknown zone.
 */
export function formatCurrentTime(date: Date, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      timeZoneName: "longOffset",
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  const gmt = parts.timeZoneName ?? "GMT";
  const offset = gmt === "GMT" ? "+00:00" : gmt.replace(/^GMT/, "");
  const iso = `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`;
  const readable = new Intl.DateTimeFormat("en-US", { timeZone, dateStyle: "full", timeStyle: "long" }).format(date);
  return `${iso}\n${readable} (${timeZone})`;
}
