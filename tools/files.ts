/**
 * `createFileTools(options?)`: the guarded file tools `read_file`, `write_file`, `patch` and
 * `search_files`, sharing one set of options (workspace root, confined/open mode, backend).
 *
 * The tools are stateless. With the FileManager middleware (or `fileGuardsMiddleware`) they
 * also get read dedup, staleness warnings on writes and loop detection; without it they work
 * the same otherwise.
 */
import { markWorkbenchTool } from "./context.js";
import { resolveFileToolOptions, type FileToolOptions } from "./fileToolSupport.js";
import { createPatchTool } from "./patchTool.js";
import { createReadFileTool } from "./readFile.js";
import { createWriteFileTool } from "./writeFile.js";

export type { FileToolOptions } from "./fileToolSupport.js";

/** The four file tools, in the order a model usually needs them. */
export function createFileTools(options: FileToolOptions = {}) {
  // Validate once, up front: a bad option fails here, not on the first tool call.
  resolveFileToolOptions(options);
  return [
    markWorkbenchTool(createReadFileTool(options)),
    markWorkbenchTool(createWriteFileTool(options)),
    markWorkbenchTool(createPatchTool(options)),
  ];
}
