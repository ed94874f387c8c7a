import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, it } from "node:test";
import { tempRoot } from "./helpers/agentHarness.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.join(here, "fixtures", "middleware-exit-script.ts");
const demo = path.join(here, "..", "examples", "quickstart.ts");
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

it("the offline demo shows its session and exits on its own", async () => {
  const env: NodeJS.ProcessEnv = { ...process.env, WORKBENCH_ROOT: root };
  delete env.OPENAI_API_KEY;
  const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", demo], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /offline scripted model/);
  assert.ok(out.stdout.includes(`Workspace root: ${root}`));
  assert.equal(out.stdout.match(/workspace tree sent to the model/g)?.length, 2, "tree after creation and after delete+rename only");
  assert.match(out.stdout, /└── roadmap\.md/);
  assert.match(out.stdout, /command refused/);
  assert.doesNotMatch(out.stdout.split("Tools:")[1] ?? "", new RegExp(`${root}/demo`), "transcript uses agent paths");
});
