/**
 * Optional peer dependencies (the web vendor SDKs, ssh2, @langchain/openai): a consumer installs
 * only the ones the features they configure need. Each is imported on first use through
 * {@link loadOptional}, and checked when the feature is built through {@link requireInstalled}, so
 * a missing package is the operator's error at start-up, never the model's at call time.
 */
import { createRequire } from "node:module";
import { WorkbenchError } from "./workbenchError.js";

/** A configured feature needs a package that is not installed. */
export class MissingPackageError extends WorkbenchError {
  readonly code = "MISSING_PACKAGE";
  readonly packageName: string;
  constructor(packageName: string, feature: string) {
    super(`${feature} needs the package ${packageName}, which is not installed: run \`npm install ${packageName}\``);
    this.name = "MissingPackageError";
    this.packageName = packageName;
  }
}

function localRequire(): NodeJS.Require {
  // The CJS build has a real `require` (and no `import.meta.url`); ESM and tsx have the reverse.
  // The ESM build's bundler shim is a `require` without `resolve`, hence the second test.
  return typeof require === "function" && typeof require.resolve === "function" ? require : createRequire(import.meta.url);
}

function notFound(error: unknown, packageName: string): boolean {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  if (code !== "MODULE_NOT_FOUND" && code !== "ERR_MODULE_NOT_FOUND") return false;
  // Only the package itself: a broken install missing one of *its* dependencies says so instead.
  return typeof message === "string" && (message.includes(`'${packageName}'`) || message.includes(`"${packageName}"`) || message.includes(`/${packageName}/`));
}

/** Whether `packageName` can be resolved from this package (resolution only: nothing is loaded). */
export function isInstalled(packageName: string): boolean {
  try {
    localRequire().resolve(packageName);
    return true;
  } catch (error) {
    // Any other failure (a package without a CommonJS entry, say) still means it is there.
    return !notFound(error, packageName);
  }
}

/** Throws {@link MissingPackageError} unless `packageName` is installed. Call where the feature is built. */
export function requireInstalled(packageName: string, feature: string): void {
  if (!isInstalled(packageName)) throw new MissingPackageError(packageName, feature);
}

/**
 * Runs `load` (a literal `import("pkg")`, kept at the call site so types and bundlers see it) and
 * turns "package not found" into {@link MissingPackageError}.
 */
export async function loadOptional<T>(packageName: string, feature: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (notFound(error, packageName)) throw new MissingPackageError(packageName, feature);
    throw error;
  }
}
