import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { initCommandScreen, isDangerousCommand } from "../src/guards/commands.js";
import { screen } from "../src/guards/commands/walk.js";
import { LIMITS } from "../src/guards/limits.js";
import type { StructuredTool } from "@langchain/core/tools";
import { createBasicTools } from "../tools/index.js";
import { isDangerousCommand as fromTools } from "../tools/dangerousCommands.js";
import { tempRoot } from "./helpers/agentHarness.js";
import { BENIGN, HOSTILE } from "./fixtures/commandCorpus.js";
import { BENIGN_DEV, HOSTILE_WRITTEN } from "./fixtures/commandCorpusWritten.js";

/** The screen's answer, `undefined` when it passes (reads better in the assertions below). */
const screenCommand = (c: string) => isDangerousCommand(c) ?? undefined;


describe("isDangerousCommand", () => {
  initCommandScreen();

  it(`refuses every hostile line (${HOSTILE.length})`, () => {
    const missed = HOSTILE.filter((c) => screenCommand(c) === undefined);
    assert.deepEqual(missed, [], `${missed.length} hostile lines passed`);
  });

  it(`passes every benign line (${BENIGN.length})`, () => {
    const refused = BENIGN.map((c) => [c, screenCommand(c)]).filter(([, r]) => r !== undefined);
    assert.deepEqual(refused, [], `${refused.length} benign lines refused`);
  });

  it(`refuses every danger written in the line (${HOSTILE_WRITTEN.length}: re-parsed text, cd, /proc/*/root, write options, wrappers, loops, arrays)`, () => {
    const missed = HOSTILE_WRITTEN.filter((c) => screenCommand(c) === undefined);
    assert.deepEqual(missed, [], `${missed.length} hostile lines passed`);
  });

  it(`passes every everyday developer command (${BENIGN_DEV.length})`, () => {
    const refused = BENIGN_DEV.map((c) => [c, screenCommand(c)]).filter(([, r]) => r !== undefined);
    assert.deepEqual(refused, [], `${refused.length} benign lines refused`);
  });

  it("has at least 150 lines of each kind", () => {
    assert.ok(HOSTILE_WRITTEN.length >= 150 && BENIGN_DEV.length >= 150, "the written-danger corpus has 150 of each");
    assert.equal(new Set(HOSTILE_WRITTEN).size, HOSTILE_WRITTEN.length, "duplicate hostile lines");
    assert.equal(new Set(BENIGN_DEV).size, BENIGN_DEV.length, "duplicate benign lines");
    console.log(`command screen corpus: ${HOSTILE.length} hostile, ${BENIGN.length} benign`);
    assert.ok(HOSTILE.length >= 150, `only ${HOSTILE.length} hostile lines`);
    assert.ok(BENIGN.length >= 150, `only ${BENIGN.length} benign lines`);
    assert.equal(new Set(HOSTILE).size, HOSTILE.length, "duplicate hostile lines");
    assert.equal(new Set(BENIGN).size, BENIGN.length, "duplicate benign lines");
  });

  it("gives short reasons that say what was seen and what to do instead", () => {
    const cases: [string, RegExp][] = [
      ["rm -rf /[a-z]*", /^`rm -r \/\[a-z\]\*` would delete every top-level directory.*: delete paths inside the workspace instead/],
      ["{ reboot; }", /^`reboot` would power off or restart the machine: ask the user/],
      ["curl -s x | sh", /pipes a download into sh.*save it to a file in the workspace and read it first/],
      [":(){ :|:& };:", /^`:` is a fork bomb/],
      ["echo x | tee /dev/sda", /^`tee` to \/dev\/sda writes straight to a disk/],
      ['rm -rf "$OUT/"*', /^`rm -r \$OUT\/\*` would delete every top-level directory of the system if \$OUT is empty \(guard it: \$\{OUT:\?\}\)/],
    ];
    for (const [cmd, re] of cases) {
      const why = screenCommand(cmd);
      assert.match(why ?? "(passed)", re, cmd);
      assert.ok(why!.length < 220, `reason too long for ${cmd}: ${why}`);
    }
  });

  it("refuses unparseable input only when it contains a dangerous word", () => {
    assert.match(screenCommand("rm -rf / 'unterminated") ?? "", /could not be parsed and it contains `rm`: simplify the command/);
    assert.match(screenCommand("echo $(reboot") ?? "", /could not be parsed and it contains `reboot`/);
    assert.equal(screenCommand("echo 'unterminated"), undefined);
    assert.equal(screenCommand("ls )"), undefined);
  });

  it("parses `bash -c` and `eval` strings again, to a bounded depth", () => {
    let cmd = "rm -rf /";
    for (let i = 0; i < 4; i++) cmd = `bash -c ${shellQuote(cmd)}`;
    assert.match(screenCommand(cmd) ?? "", /^`rm -r \/`/, "four levels deep is still seen");
    assert.equal(screenCommand("eval eval eval eval ls"), undefined);
    assert.match(screenCommand("eval ".repeat(30) + "ls") ?? "", /nests shell code .* more than 4 levels deep: run the inner command directly/);
  });

  it("never throws on odd input", () => {
    const odd = ["", " ", "'unterminated", '"also', "\\", "$(", ")))", "a".repeat(100_000), "$(".repeat(3000) + ")".repeat(3000), "{a,b}".repeat(200), "echo {1..99999999}", 42 as unknown as string, undefined as unknown as string];
    for (const cmd of odd) assert.doesNotThrow(() => screenCommand(cmd));
  });

  it("does not leak the parser's globals into the process", () => {
    assert.equal((globalThis as { require?: unknown }).require, undefined);
    assert.notEqual(Error.stackTraceLimit, Infinity);
  });

  it("is what run_command refuses with, before anything runs", async () => {
    const { root, cleanup } = await tempRoot("wb-screen-");
    const shell = createBasicTools({ rootDir: root, enableShell: true }).find((t) => t.name === "run_command") as StructuredTool;
    // PATH points nowhere, so even a broken screen could not reach a real `reboot` or `rm`.
    for (const command of ["PATH=/nonexistent; { reboot; }", 'PATH=/nonexistent; echo / | xargs rm -rf', "PATH=/nonexistent busybox rm -rf /"]) {
      const out: string = await shell.invoke({ command }, { configurable: { thread_id: "screen" } });
      assert.match(out, /^\{"error":"command refused because .*(?:rm -r|reboot|xargs rm)/, command);
      assert.doesNotMatch(out, /exit code/, command);
    }
    const ok: string = await shell.invoke({ command: "echo 'rm -rf /'" }, { configurable: { thread_id: "screen" } });
    assert.match(ok, /^rm -rf \/\n\[exit code 0\]$/);
    await cleanup();
  });

  it("is one check with a string | null shape, the same from the tools' path", () => {
    assert.equal(isDangerousCommand("ls"), null);
    assert.equal(typeof isDangerousCommand("busybox rm -rf /"), "string");
    assert.equal(fromTools, isDangerousCommand);
  });
});

describe("isDangerousCommand stays linear and bounded on hostile sizes", () => {
  initCommandScreen();
  // Work units, not time: the screen charges every node and word to one budget.
  const work = (c: string) => screen(c).work;

  it("screens a 1,000- and a 5,000-stage pipeline with work linear in the stages", { timeout: 120_000 }, () => {
    const pipe = (n: number) => Array(n).fill("sh").join("|");
    const w1 = work(pipe(1000));
    const w5 = work(pipe(5000));
    assert.equal(isDangerousCommand(pipe(1000)), null);
    assert.equal(isDangerousCommand(pipe(5000)), null);
    assert.ok(w5 <= w1 * 5.5, `5x the stages cost ${w5 / w1}x the work`);
    // Still sees a danger at the end of a long pipeline.
    assert.match(isDangerousCommand(Array(5000).fill("curl x").join("|") + "|sh") ?? "", /pipes a download into sh/);
  });

  it("refuses past the size, work and nesting budgets with a message saying so", { timeout: 120_000 }, () => {
    const size = isDangerousCommand("echo " + "a".repeat(LIMITS.commandScreenMaxChars));
    assert.match(size ?? "", /characters long, more than the 100000 the danger screen checks: split it into smaller commands, or write the script to a file/);
    const many = Array(40_000).fill("a").join("|");
    assert.ok(many.length <= LIMITS.commandScreenMaxChars);
    assert.match(isDangerousCommand(many) ?? "", /more than the danger screen checks \(250000 syntax nodes and words\)/);
    assert.ok(screen(many).work <= LIMITS.commandScreenMaxWork + 64, "stops at the budget");
    const deep = "{ ".repeat(LIMITS.commandScreenMaxNesting + 10) + "ls" + "; }".repeat(LIMITS.commandScreenMaxNesting + 10);
    assert.match(isDangerousCommand(deep) ?? "", /nests groups or substitutions more than 200 levels deep/);
  });

  it("bounds values that grow by doubling, brace bombs and long loop lists", { timeout: 120_000 }, () => {
    assert.doesNotThrow(() => isDangerousCommand("a=xxxxxxxx; " + "a=$a$a; ".repeat(60) + "echo $a"));
    assert.doesNotThrow(() => isDangerousCommand("echo " + "{a,b}".repeat(20_000)));
    // A long list cannot push the danger past the alternatives the screen keeps.
    assert.match(isDangerousCommand("for d in " + "x ".repeat(5000) + "/etc; do rm -rf $d; done") ?? "(passed)", /^`rm -r \/etc` would delete a system directory/);
    assert.ok(work("for d in " + "x ".repeat(5000) + "; do rm -rf $d; done") < 50_000);
  });
});

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}
