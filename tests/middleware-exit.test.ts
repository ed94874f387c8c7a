import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, it } from "node:test";
import { tempRoot } from "./helpers/agentHarness.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.join(here, "fixtures", "middleware-exit-script.ts");
let root: string;
let cleanup: () => Promise<void>;

before(async () => {
  ({ root, cleanup } = await tempRoot("wb-exit-"));
});
after(() => cleanup());

interface Outcome {
  finished: boolean;
  /** Exit code, or "still running" when it had not exited `graceMs` after finishing. */
  exit: number | "still running";
  stderr: string;
}

/** Runs the script; after it prints "finished", waits at most `graceMs` for it to exit by itself. */
function runScript(args: string[], graceMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", script, root, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let grace: NodeJS.Timeout | undefined;
    // Importing langchain on a busy 2-core machine can take a while: bound the whole run too.
    const overall = setTimeout(() => done("still running"), 120_000);
    const done = (exit: Outcome["exit"]) => {
      clearTimeout(grace);
      clearTimeout(overall);
      if (exit === "still running") child.kill("SIGKILL");
      resolve({ finished: stdout.includes("finished"), exit, stderr });
    };
    child.stdout.on("data", (b: Buffer) => {
      stdout += b.toString();
      if (!grace && stdout.includes("finished")) grace = setTimeout(() => done("still running"), graceMs);
    });
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    child.once("exit", (code) => done(code ?? -1));
  });
}

it("a script using the middleware exits on its own after close(), and does not without it", async () => {
  const [closed, open] = await Promise.all([runScript(["parcel"], 15_000), runScript(["parcel", "--no-close"], 3_000)]);
  assert.equal(closed.finished, true, closed.stderr);
  assert.equal(closed.exit, 0, closed.stderr);
  // Control: the live watcher is what keeps a process alive, so close() is what lets it go.
  assert.equal(open.finished, true, open.stderr);
  assert.equal(open.exit, "still running");
});

// The demo's own run (offline session, exit on its own) is tested in tests/demo.test.ts.
