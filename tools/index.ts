// Public API of "langgraph-workbench/tools".
// basic tools (get_current_time, run_command) and the thread-workspace context
export { createBasicTools, createCurrentTimeTool, formatCurrentTime, type BasicToolsOptions } from "./basic.js";
export { createRunCommandTool, type RunCommandToolOptions } from "./runCommand.js";
export { isDangerousCommand } from "./dangerousCommands.js";
export {
  commandEnvironmentForThread,
  runAgentCommand,
  runShellCommand,
  scrubEnv,
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  DEFAULT_MAX_OUTPUT_CHARS,
  type AgentCommandResult,
  type AgentCommandSettings,
  type CommandSandboxOptions,
  type RunShellCommandOptions,
  type ShellCommandResult,
} from "../src/fileops/command.js";
export {
  workspaceFromConfig,
  threadIdFromConfig,
  markWorkbenchTool,
  isWorkbenchTool,
  WORKBENCH_TOOL_METADATA_KEY,
  type ThreadConfigLike,
} from "../src/context/thread.js";
export {};
export { createWebTools, type WebToolsOptions, type WebExtractToolResult, type WebProgressEvent, type SummaryTuning } from "./web.js";
// search_files
export { createSearchFilesTool, searchFilesSchema, type SearchFilesToolOptions, type SearchFilesArgs } from "./searchFiles.js";
// file tools (read_file, write_file, patch, search_files) and their guards
export { createFileTools, type FileToolsOptions } from "./files.js";
export { createReadFileTool, readFileSchema, settleLineCounts, type ReadFileArgs } from "./readFile.js";
export { createWriteFileTool, writeFileSchema, looksLikeReadFileDisplay, type WriteFileArgs } from "./writeFile.js";
export { createPatchTool, patchSchema, type PatchArgs } from "./patchTool.js";
export { type FileToolOptions } from "./fileToolSupport.js";
export { fileToolProbe, type FileToolProbe, type FileToolTarget } from "../src/context/probes.js";
export { redactSecrets, containsRedactionMarker, isCredentialPath, hasBinaryExtension, sniffBinary } from "../src/guards/index.js";
