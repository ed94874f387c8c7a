/**
 * `createFileTools(options?)`: the guarded file tools `read_file`, `write_file`, `patch` and
 * `search_files`, sharing one set of options (workspace root, confined/open mode, backend).
 *
 * The tools are stateless. With the FileManager middleware (or `fileGuardsMiddleware`) they
 * also get read dedup, staleness warnings on writes and loop detection; without it they work
 * the same otherwise.
 */
import { parseOptions } from "../src/options.js";
import type { ThreadEnvironments } from "../src/environment/threadEnvironment.js";
import { sharedEnvironmentsOf } from "../src/environment/sharedEnvironments.js";
import { markWorkbenchTool } from "./toolResult.js";
import type { z } from "zod";
import { fileToolOptionsSchema, fileToolSettings } from "./fileToolSupport.js";
import { FileToolCaches } from "./lineCounts.js";
import { patchToolFrom } from "./patchTool.js";
import { readFileToolFrom } from "./readFile.js";
import { searchFilesToolFrom, searchSettingsSchema } from "./searchFiles.js";
import { writeFileToolFrom } from "./writeFile.js";

export type { FileToolOptions } from "./fileToolSupport.js";

/** The checks on {@link FileToolsOptions}, values included: the file-tool options plus `search`. */
export const fileToolsOptionsSchema = fileToolOptionsSchema.safeExtend({
  /** search_files only: engine, ripgrep path, time and size limits (as `createSearchFilesTool` takes them). */
  search: searchSettingsSchema.optional(),
});

/** Options of {@link createFileTools}: the shared file-tool options plus search-only settings (the schema's input). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name for the schema's input type (tooltips, errors and docs/api.md show it); its members are the schema's
export interface FileToolsOptions extends z.input<typeof fileToolsOptionsSchema> {}

/** The four file tools, in the order a model usually needs them. */
export function createFileTools(options: FileToolsOptions = {}) {
  // Validate once, up front: a bad option (or an unknown key, at any level) fails here, not on the first tool call.
  parseOptions(fileToolsOptionsSchema, options ?? {}, "Invalid file tool options");
  return fileToolsFrom(options, sharedEnvironmentsOf(options));
}

/**
 * The four tools over options already checked with {@link fileToolsOptionsSchema}, resolved once
 * and shared by all four (so every option reaches every tool), on the caller's `environments`
 * when given (createWorkbench: one per workbench).
 */
function fileToolsFrom(options: FileToolsOptions, environments?: ThreadEnvironments) {
  const { search, ...rest } = options;
  // One set of caches for the tool set: given ones are the caller's to close.
  const shared = fileToolSettings({ ...rest, caches: rest.caches ?? new FileToolCaches() }, environments);
  return [
    markWorkbenchTool(readFileToolFrom(shared)),
    markWorkbenchTool(writeFileToolFrom(shared)),
    markWorkbenchTool(patchToolFrom(shared)),
    markWorkbenchTool(searchFilesToolFrom(shared, search)),
  ];
}
