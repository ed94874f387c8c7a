import { detectSandbox } from "../../src/environment/sandboxEnvironment.js";

/**
 * Why the bubblewrap sandbox cannot run here (a test's `skip` reason), or undefined when it can.
 * Under CI (which installs bubblewrap) a missing sandbox is a failure, not a skip.
 */
export async function sandboxUnavailable(): Promise<string | undefined> {
  const found = await detectSandbox();
  if (found.available) return undefined;
  if (process.env.CI === "true") throw new Error(`CI=true but the bubblewrap sandbox is unavailable: ${found.reason}`);
  return found.reason;
}
