import assert from "node:assert/strict";
import { test } from "node:test";
import { LocalShellEnvironment } from "../src/environment/localEnvironment.js";
import { shellQuote, shellQuoteAll, withArgs } from "../src/environment/shellQuote.js";

const HOSTILE = [
  "",
  "plain",
  "with space",
  "it's",
  "'",
  "''",
  '"double"',
  "$(touch /tmp/wb-quote-pwned)",
  "`id`",
  "$HOME ${PATH}",
  "a\nb\n",
  "-n",
  "--",
  "*",
  "semi;colon && echo no | cat > x",
  "back\\slash\\",
  "tab\there",
  "ünï ✓ 😀",
  "!history",
];

test("shellQuote round-trips every hostile string through a real shell, unchanged", async () => {
  const env = new LocalShellEnvironment();
  for (const shell of ["bash", "sh"]) {
    const result = await new LocalShellEnvironment({ shell }).exec(`printf '%s\\0' ${shellQuoteAll(HOSTILE)}`);
    assert.equal(result.exitCode, 0, result.stderr);
    assert.deepEqual(result.stdout.toString("utf8").split("\0").slice(0, -1), HOSTILE, `through ${shell}`);
  }
  const pwned = await env.exec("test -e /tmp/wb-quote-pwned");
  assert.notEqual(pwned.exitCode, 0, "a quoted $(...) must not run");
});

test("shellQuote wraps in single quotes and escapes embedded quotes as '\\''", () => {
  assert.equal(shellQuote("abc"), "'abc'");
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
  assert.equal(shellQuote(""), "''");
});

test("shellQuote rejects NUL (no command line can carry it) and non-strings", () => {
  assert.throws(() => shellQuote("a\0b"), { code: "ERR_INVALID_ARG_VALUE" });
  assert.throws(() => shellQuote(42 as unknown as string), TypeError);
});

test("withArgs makes the values positional parameters of a constant script", async () => {
  const script = withArgs('printf "%s|" "$1" "$2" "$#"', ["a b", "$(x)"]);
  const result = await new LocalShellEnvironment({ shell: "sh" }).exec(script);
  assert.equal(result.stdout.toString("utf8"), "a b|$(x)|2|");
  assert.equal(withArgs("echo", []), "echo");
});
