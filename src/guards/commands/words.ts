/**
 * A word as the shell would expand it, statically: quotes removed, escapes applied, `${IFS}`
 * splits, `{a,b}` expands, known variables and array elements substituted (a variable may hold
 * several alternatives: the items of a `for` list, the elements of an array), `$(echo …)`
 * evaluated; everything else becomes the unknown markers of the vocabulary. Every field built
 * is charged to the budget.
 */
import type { Budget } from "./budget.js";
import { PARAM_EXP, type CmdSubst, type ParamExp, type Word, type WordPart } from "./syntax.js";
import { MAX_FIELDS, MAYBE_EMPTY, UNKNOWN } from "./vocabulary.js";

export interface Scope {
  /** Values (alternatives) of variables assigned earlier in the line, loop variables, arrays, `sh -c` positionals. */
  vars: Map<string, string[]>;
  budget: Budget;
}

/** Longest value a variable keeps; longer ones (`a=$a$a` doubling) become unknown. */
const MAX_VALUE_CHARS = 4_096;
/** Most `{` one literal may hold for brace expansion to run. */
const MAX_BRACE_GROUPS = 16;
/** `${x-y}` `${x:-y}` `${x=y}` `${x:=y}`: the default is what runs when x is unset. */
const EXP_DEFAULT = new Set<number>([PARAM_EXP.default, PARAM_EXP.colonDefault, PARAM_EXP.assign, PARAM_EXP.colonAssign]);
/** `${x?}` `${x:?}`: the shell stops when x is unset, so it is never empty. */
const EXP_REQUIRED = new Set<number>([PARAM_EXP.error, PARAM_EXP.colonError]);

/**
 * The fields `word` expands to. With `split` false the word is one field (assignment values,
 * scripts) and the result lists its alternatives (a loop variable's items).
 */
export function expandWord(word: Word | undefined, scope: Scope, split = true): string[] {
  if (!word) return [];
  const fields: string[] = [];
  let current = [""];
  const append = (alts: string[]) => {
    const next: string[] = [];
    for (const c of current) for (const a of alts) if (next.length < MAX_FIELDS) next.push(c + a);
    scope.budget.spend(next.length);
    current = next;
  };
  const breakField = () => {
    if (current.some((c) => c !== "")) fields.push(...current);
    current = [""];
  };
  const splitInto = (values: string[]) => {
    // Unquoted expansion with IFS whitespace (`rm${IFS}-rf${IFS}/`): word splitting.
    if (values.length === 1) {
      values[0]!.split(/[ \t\n]+/).forEach((piece, i) => {
        if (i > 0) breakField();
        if (piece) append([piece]);
      });
    } else append(values.flatMap((v) => v.split(/[ \t\n]+/).filter(Boolean)));
  };
  for (const part of word.parts) {
    switch (part.type) {
      case "Lit":
        append(split ? braceExpand(unescapeUnquoted(part.value)) : [unescapeUnquoted(part.value)]);
        break;
      case "SglQuoted":
        append([part.dollar ? ansiC(part.value) : part.value]);
        break;
      case "DblQuoted":
        append(quoted(part.parts, scope));
        break;
      case "ParamExp": {
        const values = param(part, scope);
        if (split && values.some((v) => /[ \t\n]/.test(v))) splitInto(values);
        else append(values);
        break;
      }
      case "CmdSubst": {
        const out = substOutput(part, scope);
        if (out !== undefined && split) splitInto([out]);
        else append([out ?? UNKNOWN]);
        break;
      }
      default:
        append([part.text || UNKNOWN]);
    }
  }
  breakField();
  if (!split) return fields.length ? fields : [""];
  return fields.filter((f) => f !== "");
}

/** The text of a word as one string (a here-document, a `-c` script): every word kept. */
export function wordText(word: Word | undefined, scope: Scope): string {
  return expandWord(word, scope, false)[0] ?? "";
}

function quoted(parts: WordPart[], scope: Scope): string[] {
  let out = [""];
  const add = (alts: string[]) => {
    const next: string[] = [];
    for (const o of out) for (const a of alts) if (next.length < MAX_FIELDS) next.push(o + a);
    scope.budget.spend(next.length);
    out = next;
  };
  for (const p of parts) {
    if (p.type === "Lit") add([p.value.replace(/\\([$`"\\\n])/g, (_m, c: string) => (c === "\n" ? "" : c))]);
    else if (p.type === "ParamExp") add(param(p, scope));
    else if (p.type === "CmdSubst") add([substOutput(p, scope) ?? UNKNOWN]);
    else add([UNKNOWN]);
  }
  return out;
}

function param(p: ParamExp, scope: Scope): string[] {
  const name = p.param;
  if (p.computed || (p.index === "?" && !scope.vars.has(name))) return [UNKNOWN];
  const known = knownVariable(name, scope);
  const values = known && p.index !== undefined && /^\d+$/.test(p.index) ? (known.length > 1 ? [known[Number(p.index)] ?? ""] : Number(p.index) === 0 ? known : [""]) : known;
  const op = p.exp?.op;
  if (op !== undefined && EXP_REQUIRED.has(op)) return values ?? [UNKNOWN];
  if (op !== undefined && EXP_DEFAULT.has(op)) {
    if (values !== undefined && values.some((v) => v !== "")) return values;
    // Unset here: the default is what runs.
    return [wordText(p.exp?.word, scope)];
  }
  if (op !== undefined) return [UNKNOWN];
  return values ?? [`${MAYBE_EMPTY}${name}${MAYBE_EMPTY}`];
}

function knownVariable(name: string, scope: Scope): string[] | undefined {
  const v = scope.vars.get(name);
  if (v) return v.map((s) => (s.length > MAX_VALUE_CHARS ? UNKNOWN : s));
  if (name === "HOME") return ["~"];
  if (name === "IFS") return [" "];
  if (name === "PWD" || name === "OLDPWD" || name === "TMPDIR" || name === "USER" || name === "PATH" || name === "0") return [UNKNOWN];
  return undefined;
}

/** What `$(echo …)` / `$(printf …)` prints, when that is all it runs; else undefined. */
function substOutput(s: CmdSubst, scope: Scope): string | undefined {
  if (s.proc || s.stmts.length !== 1) return undefined;
  const stmt = s.stmts[0]!;
  if (stmt.redirs.length || stmt.background || stmt.cmd?.type !== "CallExpr") return undefined;
  const argv = stmt.cmd.args.flatMap((w) => expandWord(w, scope));
  return echoOutput(argv)?.replace(/\n+$/, "");
}

/** What `echo …` or `printf FORMAT ARGS…` writes (every word kept), or undefined for other commands. */
export function echoOutput(argv: string[]): string | undefined {
  const name = argv[0]?.replace(/^.*\//, "");
  if (name === "echo") {
    let i = 1;
    let escapes = false;
    while (i < argv.length && /^-[neE]+$/.test(argv[i]!)) escapes ||= argv[i++]!.includes("e");
    const text = argv.slice(i).join(" ");
    return escapes ? text.replace(/\\n/g, "\n").replace(/\\t/g, "\t") : text;
  }
  if (name === "printf") {
    let args = argv.slice(1);
    if (args[0] === "--") args = args.slice(1);
    if (args[0] === "-v") return undefined;
    const format = (args[0] ?? "").replace(/\\n/g, "\n").replace(/\\t/g, "\t");
    const rest = args.slice(1);
    if (!/%[-#0 +]*\d*[sbdq]/.test(format)) return format.replace(/%%/g, "%");
    let out = "";
    // The format repeats until the arguments are used up (bounded by the word count).
    do {
      out += format.replace(/%[-#0 +]*\d*([sbdq%])/g, (_m, c: string) => (c === "%" ? "%" : (rest.shift() ?? "")));
    } while (rest.length > 0);
    return out;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Pure text helpers.

export function unescapeUnquoted(s: string): string {
  return s.replace(/\\(\n|.)/g, (_m, c: string) => (c === "\n" ? "" : c));
}

export function ansiC(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/g, (_m, e: string) => {
    const simple: Record<string, string> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", e: "\x1b", E: "\x1b", f: "\f", v: "\v" };
    if (e[0] === "x" || e[0] === "u" || e[0] === "U") {
      const cp = parseInt(e.slice(1), 16);
      return cp <= 0x10ffff ? String.fromCodePoint(cp) : "";
    }
    if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8));
    if (e[0] === "c") return String.fromCharCode(e.charCodeAt(1) & 31);
    return simple[e] ?? e;
  });
}

/** Bash brace expansion of unquoted text: `{a,b}`, `{1..3}`, nested; bounded by MAX_FIELDS. */
export function braceExpand(s: string): string[] {
  const open = s.indexOf("{");
  if (open < 0) return [s];
  // More groups than fields kept cannot all expand anyway; the cap keeps this linear.
  if (s.split("{", MAX_BRACE_GROUPS + 2).length > MAX_BRACE_GROUPS + 1) return [s];
  let depth = 0;
  const commas: number[] = [];
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (c === "{") depth++;
    else if (c === "}") {
      depth--;
      if (depth === 0) {
        const prefix = s.slice(0, open);
        const body = s.slice(open + 1, i);
        const rest = braceExpand(s.slice(i + 1));
        let alts: string[];
        if (commas.length) {
          const bounds = [open, ...commas, i];
          alts = bounds.slice(0, -1).flatMap((b, k) => braceExpand(s.slice(b + 1, bounds[k + 1])));
        } else {
          const range = /^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])$/.exec(body);
          if (!range) return rest.map((r) => s.slice(0, i + 1) + r).slice(0, MAX_FIELDS);
          alts = expandRange(range[1]!, range[2]!);
        }
        const out: string[] = [];
        for (const a of alts) for (const r of rest) if (out.length < MAX_FIELDS) out.push(prefix + a + r);
        return out;
      }
    } else if (c === "," && depth === 1) commas.push(i);
  }
  return [s];
}

function expandRange(a: string, b: string): string[] {
  const numeric = /^-?\d+$/.test(a) && /^-?\d+$/.test(b);
  const from = numeric ? Number(a) : a.charCodeAt(0);
  const to = numeric ? Number(b) : b.charCodeAt(0);
  const out: string[] = [];
  const step = from <= to ? 1 : -1;
  for (let v = from; out.length < MAX_FIELDS; v += step) {
    out.push(numeric ? String(v) : String.fromCharCode(v));
    if (v === to) break;
  }
  return out;
}
