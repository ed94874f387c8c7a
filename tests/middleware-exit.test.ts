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
  stdout: string;
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
      resolve({ finished: stdout.includes("finished"), stdout, exit, stderr });
    };
    child.stdout.on("data", (b: Buffer) => {
      stdout += b.toString();
      if (!grace && stdout.includes("finished")) grace = setTimeout(() => done("still running"), graceMs);
    });
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    child.once("exit", (code) => done(code ?? -1));
  });
}

// Bound after the turn finished; starting tsx + langchain is not part of it.
const EXIT_BOUND_MS = 5_000;

it("a script using createWorkbench exits on its own after close()", async () => {
  const closed = await runScript(["parcel"], 15_000);
  assert.equal(closed.finished, true, closed.stderr);
  assert.match(closed.stdout, /finished closed/, closed.stderr);
  assert.equal(closed.exit, 0, closed.stderr);
});

// Live watchers, idle timers and worker pools are unreferenced: forgetting close() (or an
// exception that skips it) must not keep the process alive.
for (const kind of ["parcel", "chokidar", "polling"]) {
  it(`a script that never calls close() exits within ${EXIT_BOUND_MS} ms with a live ${kind} watcher`, async () => {
    const open = await runScript([kind, "--no-close"], EXIT_BOUND_MS);
    assert.equal(open.finished, true, open.stderr);
    assert.match(open.stdout, /finished open/, "the tracker was still running when the script ended");
    assert.equal(open.exit, 0, `still running ${EXIT_BOUND_MS} ms after its work was done (killed): ${open.stderr}`);
  });
}

// The demo's own run (offline session, exit on its own) is tested in tests/demo.test.ts.
