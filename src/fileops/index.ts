// File operations backends: ShellFileOperations and the environments it runs commands in;
// SftpFileOperations (SshEnvironment.fileOps).
// LocalFileOperations (native fs) lives in ./local.ts.
export { ShellFileOperations, type ShellFileOperationsOptions } from "./shell.js";
export type { Environment, EnvironmentOption, EnvironmentProvider, ExecOptions, ExecResult } from "./environment.js";
export { LocalShellEnvironment, LocalEnvironment, type LocalShellEnvironmentOptions, type LocalEnvironmentOptions } from "./localShell.js";
export {
  ThreadEnvironments,
  EnvironmentUnavailableError,
  defaultLocalEnvironment,
  environmentFor,
  fileOperationsOf,
  isLocalEnvironment,
  isLocalFileOperations,
  type ThreadEnvironmentOptions,
} from "./threadEnvironment.js";
export { SshEnvironment, hostKeyMatcher, type SshEnvironmentOptions } from "./ssh.js";
export { SftpFileOperations, type SftpFileOperationsOptions, type SftpSource } from "./sftp.js";
export { DockerEnvironment, type DockerEnvironmentOptions } from "./docker.js";
export {
  SandboxEnvironment,
  commandEnvironmentFor,
  detectSandbox,
  defaultSandboxEnv,
  type CommandEnvironment,
  type CommandEnvironmentOptions,
  type SandboxAvailability,
  type SandboxEnvironmentOptions,
} from "./sandbox.js";
export {
  DockerSandbox,
  dockerSandboxOptionsSchema,
  removeSandboxContainers,
  SANDBOX_LABEL,
  type DockerSandboxOptions,
  type DockerSandboxProvider,
} from "./dockerSandbox.js";
export { shellQuote } from "./quote.js";
