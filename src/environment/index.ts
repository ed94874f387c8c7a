// Public API of "langgraph-workbench/environment": where a thread's files live and its commands
// run. An Environment runs commands (this machine, a bubblewrap sandbox, Docker, SSH); a
// FileOperations reaches files (native fs, SFTP, or a shell over any Environment's exec).
export type { Environment, EnvironmentOption, EnvironmentProvider, ExecOptions, ExecResult } from "./environment.js";
export { OpenRefusedError, type DirEntry, type EntryType, type FileOperations, type FileStat, type OpenGuard, type OpenedInfo } from "./fileOperations.js";

// file access
export { LocalFileOperations } from "./localFileOperations.js";
export { ShellFileOperations, type ShellFileOperationsOptions } from "./shellFileOperations.js";
export { SftpFileOperations, type SftpFileOperationsOptions, type SftpSource } from "./sftpFileOperations.js";
export { withPathLock, withPathLocks } from "./pathLock.js";

// environments
export { LocalShellEnvironment, LocalEnvironment, type LocalShellEnvironmentOptions, type LocalEnvironmentOptions } from "./localEnvironment.js";
export { SshEnvironment, hostKeyMatcher, type SshEnvironmentOptions } from "./sshEnvironment.js";
export { DockerEnvironment, type DockerEnvironmentOptions } from "./dockerEnvironment.js";
export {
  SandboxEnvironment,
  commandEnvironmentFor,
  detectSandbox,
  type CommandEnvironment,
  type CommandEnvironmentOptions,
  type SandboxAvailability,
  type SandboxEnvironmentOptions,
} from "./sandboxEnvironment.js";
export {
  DockerSandbox,
  dockerSandboxOptionsSchema,
  removeSandboxContainers,
  SANDBOX_LABEL,
  type DockerSandboxOptions,
  type DockerSandboxProvider,
} from "./dockerSandbox.js";
export {
  DeepAgentsSandboxEnvironment,
  deepAgentsSandboxOptionsSchema,
  type DeepAgentsSandbox,
  type DeepAgentsSandboxOptions,
} from "./deepagentsSandbox.js";

// one thread → one environment; the one place that decides "local or remote"
export {
  ThreadEnvironments,
  EnvironmentUnavailableError,
  environmentFor,
  fileOperationsOf,
  type ThreadEnvironmentOptions,
} from "./threadEnvironment.js";
export { isLocalEnvironment, isLocalFileOperations } from "./locality.js";

// running an agent's command line (what run_command and WorkbenchBackend.execute share)
export {
  runAgentCommand,
  runShellCommand,
  scrubEnv,
  commandEnvironmentForThread,
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  DEFAULT_MAX_OUTPUT_CHARS,
  type AgentCommandResult,
  type AgentCommandSettings,
  type CommandSandboxOptions,
  type RunShellCommandOptions,
  type ShellCommandResult,
} from "./runShellCommand.js";
export { shellQuote } from "./shellQuote.js";
