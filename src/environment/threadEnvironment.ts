/**
 * Thread id → Environment → FileOperations, resolved per call for every part (file tools,
 * search, run_command, the FileManager, WorkbenchBackend), so a thread's files, search, terminal
 * and tree are always in the same place.
 *
 * - No `environment` option: the local machine ({@link LocalEnvironment}).
 * - An `Environment`: every thread uses it. A provider `(threadId) => Environment`: called on
 *   every use with the thread id (cache inside the provider, e.g. one container per thread).
 * - File access: `env.fileOps` when the environment has native file access, else one
 *   ShellFileOperations over its `exec`, cached per Environment object (a WeakMap: it lives as
 *   long as the environment does).
 * - A `fileOps` option next to `environment`: `fileOps` wins for file access, the environment
 *   still runs the commands.
 */
import type { Environment, EnvironmentOption } from "./environment.js";
import { LocalEnvironment } from "./localEnvironment.js";
import { ShellFileOperations } from "./shellFileOperations.js";
import type { FileOperations } from "./fileOperations.js";
import { WorkbenchError } from "../workbenchError.js";
import { channel } from "node:diagnostics_channel";

export { isLocalEnvironment, isLocalFileOperations } from "./locality.js";

let localEnvironment: LocalEnvironment | undefined;

/** The shared default environment: this machine, unsandboxed (created on first use). */
export function defaultLocalEnvironment(): LocalEnvironment {
  localEnvironment ??= new LocalEnvironment();
  return localEnvironment;
}

const derivedOps = new WeakMap<Environment, FileOperations>();

/** The environment's file access: its native `fileOps`, else a cached ShellFileOperations over `exec`. */
export function fileOperationsOf(env: Environment): FileOperations {
  if (env.fileOps) return env.fileOps;
  let ops = derivedOps.get(env);
  if (!ops) {
    ops = new ShellFileOperations(env);
    derivedOps.set(env, ops);
  }
  return ops;
}

/** True for a value usable as an `environment` option (an Environment or a provider function). */
export function isEnvironmentOption(value: unknown): value is EnvironmentOption {
  if (typeof value === "function") return true;
  return isEnvironment(value);
}

function isEnvironment(value: unknown): value is Environment {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Environment).exec === "function" &&
    typeof (value as Environment).kind === "string"
  );
}

/** The message of an `environment` option that is neither an Environment nor a provider. */
export const ENVIRONMENT_OPTION_MESSAGE =
  "environment must be an Environment (an object with kind and exec(command, options), e.g. new SshEnvironment({ … })) or a function (threadId) => Environment";

/** Thrown when a provider fails or returns something that is not an Environment. */
export class EnvironmentUnavailableError extends WorkbenchError {
  readonly code = "ENVIRONMENT_UNAVAILABLE";
  override readonly name = "EnvironmentUnavailableError";
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * The environment of `threadId`. A provider that throws or returns a non-Environment rejects
 * with an {@link EnvironmentUnavailableError} whose message says what went wrong (callers turn
 * it into an error result; it never names a host path of its own).
 */
export async function environmentFor(option: EnvironmentOption | undefined, threadId: string): Promise<Environment> {
  if (option === undefined) return defaultLocalEnvironment();
  if (typeof option !== "function") return option;
  let env: unknown;
  try {
    env = await option(threadId);
  } catch (error) {
    throw new EnvironmentUnavailableError(
      `The environment for this thread could not be prepared: ${error instanceof Error ? error.message : String(error)}. Try again later or tell the user.`,
      { cause: error },
    );
  }
  if (!isEnvironment(env)) {
    throw new EnvironmentUnavailableError("The environment provider did not return an Environment (an object with kind and exec).");
  }
  return env;
}

/** The Environment a FileOperations runs over (ShellFileOperations), if any. */
export function environmentBehind(ops: FileOperations | undefined): Environment | undefined {
  return ops instanceof ShellFileOperations ? ops.env : undefined;
}

/** Published once per {@link ThreadEnvironments} construction (free when nobody listens): a test counts them per `createWorkbench`. */
export const THREAD_ENVIRONMENTS_CHANNEL = "langgraph-workbench:thread-environments";
const created = channel(THREAD_ENVIRONMENTS_CHANNEL);

/** What a part keeps from its `environment` / `fileOps` options. */
export interface ThreadEnvironmentOptions {
  environment?: EnvironmentOption;
  fileOps?: FileOperations;
}

/**
 * A part's view of its options: where a thread's commands run and where its files are. Cheap:
 * no I/O and no provider call until asked.
 */
export class ThreadEnvironments {
  readonly environment: EnvironmentOption | undefined;
  /** A fixed `fileOps` option (wins for file access). */
  readonly fileOps: FileOperations | undefined;

  constructor(options: ThreadEnvironmentOptions = {}) {
    if (created.hasSubscribers) created.publish({});
    if (options.environment !== undefined && !isEnvironmentOption(options.environment)) {
      throw new TypeError(ENVIRONMENT_OPTION_MESSAGE);
    }
    // A ShellFileOperations given alone names its environment: commands and search go there too.
    this.environment = options.environment ?? environmentBehind(options.fileOps);
    this.fileOps = options.fileOps;
  }

  /** True when file access is the same for every thread (no provider involved). */
  get fixedFileOps(): FileOperations | undefined {
    if (this.fileOps) return this.fileOps;
    if (this.environment === undefined) return defaultLocalEnvironment().fileOps;
    return typeof this.environment === "function" ? undefined : fileOperationsOf(this.environment);
  }

  /** Where `threadId`'s commands run. */
  environmentFor(threadId: string): Promise<Environment> {
    return environmentFor(this.environment, threadId);
  }

  /** Where `threadId`'s files are: the `fileOps` option, else the thread environment's file access. */
  async fileOpsFor(threadId: string): Promise<FileOperations> {
    const fixed = this.fixedFileOps;
    if (fixed) return fixed;
    return fileOperationsOf(await this.environmentFor(threadId));
  }
}
