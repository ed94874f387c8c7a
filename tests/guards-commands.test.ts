import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { initCommandScreen, screenCommand } from "../src/guards/commands.js";
import type { StructuredTool } from "@langchain/core/tools";
import { createBasicTools } from "../tools/index.js";
import { isDangerousCommand } from "../tools/dangerousCommands.js";
import { tempRoot } from "./helpers/agentHarness.js";
import { BENIGN, HOSTILE } from "./fixtures/commandCorpus.js";


describe("screenCommand", () => {
  initCommandScreen();

  it(`refuses every hostile line (${HOSTILE.length})`, () => {
    const missed = HOSTILE.filter((c) => screenCommand(c) === undefined);
    assert.deepEqual(missed, [], `${missed.length} hostile lines passed`);
  });

  it(`passes every benign line (${BENIGN.length})`, () => {
    const refused = BENIGN.map((c) => [c, screenCommand(c)]).filter(([, r]) => r !== undefined);
    assert.deepEqual(refused, [], `${refused.length} benign lines refused`);
  });

  it("has at least 150 lines of each kind", () => {
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
      assert.match(out, /^Error: command refused because .*(?:rm -r|reboot|xargs rm)/, command);
      assert.doesNotMatch(out, /exit code/, command);
    }
    const ok: string = await shell.invoke({ command: "echo 'rm -rf /'" }, { configurable: { thread_id: "screen" } });
    assert.match(ok, /^rm -rf \/\n\[exit code 0\]$/);
    await cleanup();
  });

  it("keeps isDangerousCommand's string | null shape for existing callers", () => {
    assert.equal(isDangerousCommand("ls"), null);
    assert.equal(typeof isDangerousCommand("busybox rm -rf /"), "string");
  });
});

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}
