// Unit tests of the command screen's pure parts (src/guards/commands/): the typed tree, words,
// paths, argv parsing, wrappers and the rules table, each without the others where it can.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseArgs } from "../src/guards/commands/argv.js";
import { Budget, BudgetExceeded } from "../src/guards/commands/budget.js";
import { criticalTarget, resolvePath } from "../src/guards/commands/paths.js";
import { checkRules } from "../src/guards/commands/rules.js";
import { parseShell, TooDeep, type CallExpr } from "../src/guards/commands/syntax.js";
import { echoOutput, expandWord } from "../src/guards/commands/words.js";
import { unwrap } from "../src/guards/commands/wrappers.js";

const parse = (src: string, limit = 1e6) => parseShell(src, new Budget(limit), 200);
const firstCall = (src: string) => parse(src).stmts[0]!.cmd as CallExpr;

describe("syntax", () => {
  it("flattens a pipeline into one chain, without recursion", () => {
    const chain = parse(Array(20_000).fill("sh").join("|")).stmts[0]!.cmd;
    assert.equal(chain?.type, "Chain");
    assert.equal(chain.type === "Chain" && chain.stmts.length, 20_000);
  });
  it("keeps UTF-8 text and redirection source", () => {
    const s = parse("echo é > /etc/x").stmts[0]!;
    assert.deepEqual((s.cmd as CallExpr).args[1]!.parts, [{ type: "Lit", value: "é" }]);
    assert.equal(s.redirs[0]!.text, "> /etc/x");
  });
  it("charges nodes to the budget and stops at the nesting limit", () => {
    assert.throws(() => parse("a;".repeat(1000), 100), BudgetExceeded);
    assert.throws(() => parseShell("{ ".repeat(60) + "ls" + "; }".repeat(60), new Budget(1e6), 50), TooDeep);
  });
});

describe("words", () => {
  const scope = (vars: Record<string, string[]> = {}) => ({ vars: new Map(Object.entries(vars)), budget: new Budget(1e6) });
  const fields = (src: string, vars?: Record<string, string[]>) => firstCall(src).args.flatMap((w) => expandWord(w, scope(vars)));
  it("removes quotes, expands braces, splits on IFS and knows variables and their alternatives", () => {
    assert.deepEqual(fields(`echo 'a b' "c" /{bin,etc} x\${IFS}y`), ["echo", "a b", "c", "/bin", "/etc", "x", "y"]);
    assert.deepEqual(fields(`rm "$d"`, { d: ["/etc", "/usr"] }), ["rm", "/etc", "/usr"]);
    assert.deepEqual(fields(`rm "\${a[@]}" \${a[1]}`, { a: ["/etc", "/usr"] }), ["rm", "/etc", "/usr", "/usr"]);
  });
  it("evaluates $(echo …) and keeps every word of echo and printf", () => {
    assert.deepEqual(fields("$(echo rm) -rf /"), ["rm", "-rf", "/"]);
    assert.equal(echoOutput(["echo", "rm", "-rf", "/etc"]), "rm -rf /etc");
    assert.equal(echoOutput(["printf", "rm -rf %s\\n", "/etc"]), "rm -rf /etc\n");
    assert.equal(echoOutput(["cat", "x"]), undefined);
  });
});

describe("paths", () => {
  it("follows /proc/*/root and /proc/*/cwd and a cd", () => {
    assert.equal(resolvePath("/proc/self/root/etc/passwd"), "/etc/passwd");
    assert.equal(resolvePath("/proc/1/task/1/root/../etc"), "/etc");
    assert.equal(resolvePath("/proc/self/cwd/../.."), "../..");
    assert.equal(resolvePath("etc", "/"), "/etc");
    assert.equal(resolvePath("/proc/self/cwd/x", "/etc"), "/etc/x");
    assert.equal(criticalTarget(resolvePath("/proc/self/root")), "the whole filesystem");
    assert.equal(criticalTarget("build"), undefined);
  });
});

describe("argv and wrappers", () => {
  it("reads option values in every spelling", () => {
    const spec = { valuedShort: "oH", valuedLong: ["output"] };
    assert.deepEqual(parseArgs(["-so", "a", "-ob", "--output", "c", "--output=d", "-Hx"], spec).values.get("-o"), ["a", "b"]);
    assert.deepEqual(parseArgs(["--output", "c", "--output=d"], spec).values.get("--output"), ["c", "d"]);
    assert.deepEqual(parseArgs(["-Ho", "x"], spec).operands, ["x"]);
  });
  it("peels wrappers and reports what they change", () => {
    assert.deepEqual(unwrap(["sudo", "env", "-C", "/", "nice", "-n", "5", "timeout", "9", "chroot", "/", "rm", "x"]).argv, ["rm", "x"]);
    assert.equal(unwrap(["env", "--chdir=/etc", "rm", "x"]).cwd, "/etc");
    assert.deepEqual(unwrap(["strace", "-o", "/etc/x", "ls"]).writes, ["/etc/x"]);
    const x = unwrap(["xargs", "-0", "sh", "-c"]);
    assert.equal(x.fromStdin && x.records, true);
    assert.deepEqual(unwrap(["script", "-qc", "rm -rf /", "/dev/null"]).argv, ["sh", "-c", "rm -rf /"]);
  });
});

describe("rules table", () => {
  const check = (name: string, args: string[], cwd?: string) => checkRules({ name, args, path: (p) => resolvePath(p, cwd) });
  it("treats every write option as a write target", () => {
    assert.match(check("curl", ["-so", "/etc/cron.d/job", "u"]) ?? "", /^`curl` to \/etc\/cron\.d\/job writes system configuration/);
    assert.match(check("sort", ["-o", "/etc/passwd", "x"]) ?? "", /writes system configuration/);
    assert.match(check("tar", ["xzf", "a.tgz", "-C", "/"]) ?? "", /into \/ writes into the root/);
    assert.equal(check("curl", ["-so", "out.json", "u"]), undefined);
    assert.equal(check("curl", ["-H", "-o: x", "u"]), undefined);
  });
  it("sees sources of mv -t, partitioners, and paths after a cd", () => {
    assert.match(check("mv", ["-t", "/tmp", "/etc"]) ?? "", /^`mv \/etc` would move a system directory away/);
    assert.match(check("sfdisk", ["--delete", "/dev/sda"]) ?? "", /partition table/);
    assert.equal(check("sfdisk", ["-l"]), undefined);
    assert.match(check("rm", ["-rf", "etc"], "/") ?? "", /^`rm -r etc` would delete a system directory/);
  });
});
