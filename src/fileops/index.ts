// File operations backends: shell-based FileOperations and the environments they run in.
export * from "./environment.js";
export * from "./quote.js";
export * from "./shell.js";
export { LocalShellEnvironment, runProcess, type LocalShellEnvironmentOptions } from "./localShell.js";
export * from "./ssh.js";
export * from "./docker.js";
