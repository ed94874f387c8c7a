/**
 * `createFileTools(options?)`: the guarded file tools `read_file`, `write_file`, `patch` and
 * `search_files`, sharing one set of options (workspace root, confined/open mode, backend).
 *
 * The tools are stateless. With the FileManager middleware (or `fileGuardsMiddleware`) they
 * also get read dedup, staleness warnings on writes and loop detection; without it they work
 * the same otherwise.
 */
import { parseOptions } from "../src/options.js";
import { markWorkbenchTool } from "./toolResult.js";
import { fileToolOptionsSchema, resolveFileToolOptions, type FileToolOptions } from "./fileToolSupport.js";
import { FileToolCaches } from "./lineCounts.js";
import { createPatchTool } from "./patchTool.js";
import { createReadFileTool } from "./readFile.js";
import { createSearchFilesTool, searchFilesToolOptionsSchema, type SearchFilesToolOptions } from "./searchFiles.js";
import { createWriteFileTool } from "./writeFile.js";

export type { FileToolOptions } from "./fileToolSupport.js";

/** Options of {@link createFileTools}: the shared file-tool options plus search-only settings. */
export interface FileToolsOptions extends FileToolOptions {
  /** search_files only: engine, ripgrep path, time and size limits (see {@link SearchFilesToolOptions}). */
  search?: Omit<SearchFilesToolOptions, "rootDir" | "confine" | "credentialPatterns" | "redactSecrets" | "homeDir" | "fileOps" | "environment">;
}

/** The checks on {@link FileToolsOptions}: the file-tool options plus the keys of `search` (whose values search_files checks). */
export const fileToolsOptionsSchema = fileToolOptionsSchema.safeExtend({ search: searchFilesToolOptionsSchema.optional() });

/** The four file tools, in the order a model usually needs them. */
export function createFileTools(options: FileToolsOptions = {}) {
  // Validate once, up front: a bad option (or an unknown key, at any level) fails here, not on the first tool call.
  parseOptions(fileToolsOptionsSchema, options ?? {}, "Invalid file tool options");
  const { search, ...rest } = options;
  resolveFileToolOptions(rest);
  // One set of caches for the tool set: given ones are the caller's to close.
  const shared = { ...rest, caches: rest.caches ?? new FileToolCaches() };
  const { rootDir, confine, credentialPatterns, redactSecrets, homeDir, fileOps, environment } = shared;
  return [
    markWorkbenchTool(createReadFileTool(shared)),
    markWorkbenchTool(createWriteFileTool(shared)),
    markWorkbenchTool(createPatchTool(shared)),
    markWorkbenchTool(createSearchFilesTool({ ...search, rootDir, confine, credentialPatterns, redactSecrets, homeDir, fileOps, environment })),
  ];
}
