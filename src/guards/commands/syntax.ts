/**
 * Bash source → a typed syntax tree, with mvdan-sh (mvdan/sh, the parser behind `shfmt`,
 * compiled to JavaScript by GopherJS: synchronous, no native code, the same grammar and errors
 * as bash).
 *
 * The converter reads GopherJS' internal Go objects directly (the public wrappers convert a
 * whole node again on every property read, which made a 100 KB line cost over a second), keeps
 * only what the screen reads, charges every node to the caller's {@link Budget}, and flattens
 * `a | b | …` and `a && b && …` chains without recursion, so a long pipeline costs linear time
 * and no stack.
 */
import { createRequire } from "node:module";
import type { Budget } from "./budget.js";

export interface Script {
  stmts: Stmt[];
}

export interface Stmt {
  type: "Stmt";
  cmd?: Command;
  redirs: Redirect[];
  background: boolean;
}

export interface Redirect {
  type: "Redirect";
  op: number;
  /** The descriptor number written before the operator (`3<>`), if any. */
  fd?: string;
  word?: Word;
  hdoc?: Word;
  /** Source text, for messages. */
  text: string;
}

export type Command = CallExpr | Chain | FuncDecl | Loop | Group | Case | Exprs;

export interface CallExpr {
  type: "CallExpr";
  assigns: Assign[];
  args: Word[];
}

/** `a | b | c` (ops = pipes) or `a && b || c`; `ops[i]` joins `stmts[i]` and `stmts[i + 1]`. */
export interface Chain {
  type: "Chain";
  pipe: boolean;
  stmts: Stmt[];
}

export interface FuncDecl {
  type: "FuncDecl";
  name: string;
  body?: Stmt;
}

/** `for x in …`, `select`, C-style `for ((…))`, `while`/`until`. */
export interface Loop {
  type: "Loop";
  kind: "for" | "cfor" | "while" | "until";
  /** The loop variable of `for x in …` / `select`. */
  name?: string;
  /** The words of `in …`; undefined when absent (`"$@"`). */
  items?: Word[];
  /** Words of a C-style loop's expressions; `cfor` with none in its condition runs forever. */
  exprWords: Word[];
  hasCondition: boolean;
  cond: Stmt[];
  body: Stmt[];
}

/** `{ …; }`, `( … )`, `if`, `time`, `coproc`, `declare`/`local`/`export` (with their assignments). */
export interface Group {
  type: "Group";
  stmts: Stmt[];
  assigns: Assign[];
  /** Set for a subshell: `cd` inside does not carry out. */
  subshell: boolean;
}

export interface Case {
  type: "Case";
  word?: Word;
  items: { patterns: Word[]; stmts: Stmt[] }[];
}

/** `(( … ))`, `[[ … ]]`, `let …`: only the words inside matter (their substitutions run). */
export interface Exprs {
  type: "Exprs";
  words: Word[];
}

export interface Assign {
  type: "Assign";
  name: string;
  naked: boolean;
  append: boolean;
  value?: Word;
  /** `a=(x y)`: the element words. */
  array?: Word[];
  indexWords: Word[];
}

export interface Word {
  type: "Word";
  parts: WordPart[];
}

export type WordPart = Lit | SglQuoted | DblQuoted | ParamExp | CmdSubst | Opaque;

export interface Lit {
  type: "Lit";
  value: string;
}

export interface SglQuoted {
  type: "SglQuoted";
  dollar: boolean;
  value: string;
}

export interface DblQuoted {
  type: "DblQuoted";
  parts: WordPart[];
}

export interface ParamExp {
  type: "ParamExp";
  param: string;
  /** `${a[…]}`: the index as literal text (`@`, `*`, `0`), or `?` when computed. */
  index?: string;
  /** `${#x}`, `${!x}`, slices, replacements, `${!prefix*}`: values this screen does not compute. */
  computed: boolean;
  exp?: { op: number; word?: Word };
  /** Words inside (index, slice, replacement, default), whose substitutions run. */
  inner: Word[];
}

/** `$(…)`, backticks, `<(…)`, `>(…)`. */
export interface CmdSubst {
  type: "CmdSubst";
  stmts: Stmt[];
  proc: boolean;
}

/** `$((…))`, extended globs and the like: a value not known statically, with the words inside. */
export interface Opaque {
  type: "Opaque";
  /** Source text (extended globs keep it: `!(x)`), else empty. */
  text: string;
  inner: Word[];
}

/** mvdan/sh `RedirOperator` values. */
export const REDIR = { out: 54, append: 55, in: 56, readWrite: 57, dupIn: 58, dupOut: 59, clobber: 60, heredoc: 61, heredocTabs: 62, hereString: 63, all: 64, appendAll: 65 } as const;
/** mvdan/sh `BinCmdOperator` values. */
export const BINARY = { and: 10, or: 11, pipe: 12, pipeAll: 13 } as const;
/** mvdan/sh `ParExpOperator` values (`${x-y}` … `${x:=y}`). */
export const PARAM_EXP = { default: 70, colonDefault: 71, alternate: 68, colonAlternate: 69, error: 72, colonError: 73, assign: 74, colonAssign: 75 } as const;

// ---------------------------------------------------------------------------------------------
// Loading the parser.

// GopherJS' internal objects are untyped; they stay inside this module.
type Raw = any;

interface Syntax {
  NewParser(): { Parse(src: string, name: string): Raw };
}

let loaded: { parser: { Parse(src: string, name: string): Raw } } | undefined;

function load(): NonNullable<typeof loaded> {
  if (!loaded) {
    const g = globalThis as { require?: unknown };
    const hadRequire = Object.prototype.hasOwnProperty.call(g, "require");
    const savedRequire = g.require;
    const savedLimit = Error.stackTraceLimit;
    let syntax: Syntax;
    try {
      syntax = (localRequire()("mvdan-sh") as { syntax: Syntax }).syntax;
    } finally {
      // GopherJS sets a global `require` and `Error.stackTraceLimit = Infinity` on load; neither
      // may leak into the host process. The limit is set again only while the parser runs.
      Error.stackTraceLimit = savedLimit;
      if (hadRequire) g.require = savedRequire;
      else delete g.require;
    }
    loaded = { parser: syntax.NewParser() };
  }
  return loaded;
}

function localRequire(): NodeJS.Require {
  // The CJS build has a real `require` (and no `import.meta.url`); ESM and tsx have the reverse.
  return typeof require === "function" && typeof require.resolve === "function" ? require : createRequire(import.meta.url);
}

/** Loads the parser now (~0.2–0.8 s once per process) instead of on first use. */
export function loadShellParser(): void {
  load();
}

/** Thrown when input is nested deeper than the budget allows. */
export class TooDeep extends Error {}

/**
 * The parsed script. Throws the parser's error on input bash would reject, {@link TooDeep}, or
 * the budget's error when the tree has more nodes than it allows.
 */
export function parseShell(src: string, budget: Budget, maxDepth: number): Script {
  const { parser } = load();
  const savedLimit = Error.stackTraceLimit;
  // GopherJS implements Go's panic/recover by comparing stack depths; it needs full stacks.
  Error.stackTraceLimit = Infinity;
  let file: Raw;
  try {
    file = parser.Parse(src, "").__internal_object__;
  } finally {
    Error.stackTraceLimit = savedLimit;
  }
  return { stmts: new Converter(Buffer.from(src, "utf8"), budget, maxDepth).stmts(file.Stmts) };
}

// ---------------------------------------------------------------------------------------------
// Raw Go values.

function isNil(v: Raw): boolean {
  return v === null || v === undefined || typeof v.constructor?.string !== "string" || v === v.constructor.nil;
}

function goType(v: Raw): string {
  return isNil(v) ? "" : String(v.constructor.string).replace(/^\*?syntax\./, "");
}

function items(slice: Raw): Raw[] {
  if (!slice || !slice.$array || !slice.$length) return [];
  return slice.$array.slice(slice.$offset, slice.$offset + slice.$length);
}

/** Go strings are byte strings in GopherJS (one char per UTF-8 byte). */
function str(v: Raw): string {
  if (typeof v !== "string") return "";
  return /^[\x00-\x7f]*$/.test(v) ? v : Buffer.from(v, "latin1").toString("utf8");
}

function lit(v: Raw): string {
  return isNil(v) ? "" : str(v.Value);
}

const ARITHM_TEST = new Set(["BinaryArithm", "UnaryArithm", "ParenArithm", "BinaryTest", "UnaryTest", "ParenTest"]);

class Converter {
  private depth = 0;

  constructor(
    private readonly bytes: Buffer,
    private readonly budget: Budget,
    private readonly maxDepth: number,
  ) {}

  private enter(): void {
    this.budget.spend(1);
    if (++this.depth > this.maxDepth) throw new TooDeep();
  }

  stmts(list: Raw): Stmt[] {
    return items(list).map((s) => this.stmt(s));
  }

  private stmt(raw: Raw): Stmt {
    this.enter();
    try {
      const redirs: Redirect[] = items(raw.Redirs).map((r) => this.redirect(r));
      return { type: "Stmt", cmd: this.command(raw.Cmd), redirs, background: raw.Background === true || raw.Coprocess === true };
    } finally {
      this.depth--;
    }
  }

  private redirect(r: Raw): Redirect {
    this.budget.spend(1);
    let text = "";
    try {
      text = this.bytes.subarray(r.Pos().offs, r.End().offs).toString("utf8");
    } catch {
      // Positions are for messages only.
    }
    return { type: "Redirect", op: Number(r.Op), fd: isNil(r.N) ? undefined : lit(r.N), word: this.word(r.Word), hdoc: this.word(r.Hdoc), text };
  }

  private command(raw: Raw): Command | undefined {
    const t = goType(raw);
    switch (t) {
      case "":
        return undefined;
      case "CallExpr":
        return { type: "CallExpr", assigns: items(raw.Assigns).map((a) => this.assign(a)), args: this.words(raw.Args) };
      case "BinaryCmd":
        return this.chain(raw);
      case "FuncDecl":
        return { type: "FuncDecl", name: lit(raw.Name), body: isNil(raw.Body) ? undefined : this.stmt(raw.Body) };
      case "ForClause": {
        const loop = raw.Loop;
        const body = this.stmts(raw.Do);
        if (goType(loop) === "CStyleLoop") {
          return { type: "Loop", kind: "cfor", exprWords: [...this.exprWords(loop.Init), ...this.exprWords(loop.Cond), ...this.exprWords(loop.Post)], hasCondition: !isNil(loop.Cond), cond: [], body };
        }
        const hasIn = !isNil(loop.InPos) && Number(loop.InPos.offs ?? 0) > 0;
        const list = this.words(loop.Items);
        return { type: "Loop", kind: "for", name: lit(loop.Name), items: hasIn || list.length ? list : undefined, exprWords: [], hasCondition: true, cond: [], body };
      }
      case "WhileClause":
        return { type: "Loop", kind: raw.Until ? "until" : "while", exprWords: [], hasCondition: true, cond: this.stmts(raw.Cond), body: this.stmts(raw.Do) };
      case "IfClause": {
        const stmts: Stmt[] = [];
        for (let c = raw; !isNil(c); c = c.Else) stmts.push(...this.stmts(c.Cond), ...this.stmts(c.Then));
        return { type: "Group", stmts, assigns: [], subshell: false };
      }
      case "Block":
      case "Subshell":
        return { type: "Group", stmts: this.stmts(raw.Stmts), assigns: [], subshell: t === "Subshell" };
      case "TimeClause":
      case "CoprocClause":
        return { type: "Group", stmts: isNil(raw.Stmt) ? [] : [this.stmt(raw.Stmt)], assigns: [], subshell: t === "CoprocClause" };
      case "DeclClause":
        return { type: "Group", stmts: [], assigns: items(raw.Args).map((a) => this.assign(a)), subshell: false };
      case "CaseClause":
        return { type: "Case", word: this.word(raw.Word), items: items(raw.Items).map((i) => ({ patterns: this.words(i.Patterns), stmts: this.stmts(i.Stmts) })) };
      case "ArithmCmd":
      case "TestClause":
        return { type: "Exprs", words: this.exprWords(raw.X) };
      case "LetClause":
        return { type: "Exprs", words: items(raw.Exprs).flatMap((e) => this.exprWords(e)) };
      default:
        // A construct of a newer grammar: its words still count if it has any.
        return { type: "Exprs", words: [] };
    }
  }

  /** A left- or right-nested chain of one operator family, flattened with an explicit stack. */
  private chain(raw: Raw): Chain {
    const pipe = isPipe(raw.Op);
    const out: Stmt[] = [];
    const todo: Raw[] = [raw.Y, raw.X];
    while (todo.length) {
      const s = todo.pop();
      const c = s?.Cmd;
      const plain = !isNil(c) && goType(c) === "BinaryCmd" && isPipe(c.Op) === pipe && !s.Background && !s.Coprocess && !s.Negated && items(s.Redirs).length === 0;
      if (plain) {
        this.budget.spend(1);
        todo.push(c.Y, c.X);
      } else out.push(this.stmt(s));
    }
    return { type: "Chain", pipe, stmts: out };
  }

  private assign(a: Raw): Assign {
    this.budget.spend(1);
    const array = isNil(a.Array) ? undefined : items(a.Array.Elems).map((e) => this.word(e.Value)).filter((w): w is Word => w !== undefined);
    return { type: "Assign", name: lit(a.Name), naked: a.Naked === true, append: a.Append === true, value: this.word(a.Value), array, indexWords: this.exprWords(a.Index) };
  }

  private words(list: Raw): Word[] {
    return items(list).map((w) => this.word(w)).filter((w): w is Word => w !== undefined);
  }

  word(raw: Raw): Word | undefined {
    if (isNil(raw)) return undefined;
    this.enter();
    try {
      return { type: "Word", parts: items(raw.Parts).map((p) => this.part(p)) };
    } finally {
      this.depth--;
    }
  }

  private part(raw: Raw): WordPart {
    this.budget.spend(1);
    switch (goType(raw)) {
      case "Lit":
        return { type: "Lit", value: str(raw.Value) };
      case "SglQuoted":
        return { type: "SglQuoted", dollar: raw.Dollar === true, value: str(raw.Value) };
      case "DblQuoted":
        return { type: "DblQuoted", parts: items(raw.Parts).map((p) => this.part(p)) };
      case "ParamExp":
        return this.param(raw);
      case "CmdSubst":
        return { type: "CmdSubst", stmts: this.nested(() => this.stmts(raw.Stmts)), proc: false };
      case "ProcSubst":
        return { type: "CmdSubst", stmts: this.nested(() => this.stmts(raw.Stmts)), proc: true };
      case "ArithmExp":
        return { type: "Opaque", text: "", inner: this.exprWords(raw.X) };
      case "ExtGlob":
        return { type: "Opaque", text: this.source(raw), inner: [] };
      default:
        return { type: "Opaque", text: "", inner: [] };
    }
  }

  private param(raw: Raw): ParamExp {
    const inner: Word[] = [];
    let index: string | undefined;
    if (!isNil(raw.Index)) {
      const words = this.exprWords(raw.Index);
      inner.push(...words);
      const only = words.length === 1 && goType(raw.Index) === "Word" ? words[0]!.parts : undefined;
      index = only && only.length === 1 && only[0]!.type === "Lit" ? only[0]!.value : "?";
    }
    if (!isNil(raw.Slice)) inner.push(...this.exprWords(raw.Slice.Offset), ...this.exprWords(raw.Slice.Length));
    if (!isNil(raw.Repl)) inner.push(...[this.word(raw.Repl.Orig), this.word(raw.Repl.With)].filter((w): w is Word => w !== undefined));
    let exp: ParamExp["exp"];
    if (!isNil(raw.Exp)) {
      const word = this.word(raw.Exp.Word);
      exp = { op: Number(raw.Exp.Op), word };
      if (word) inner.push(word);
    }
    const computed = raw.Length === true || raw.Excl === true || raw.Width === true || !isNil(raw.Slice) || !isNil(raw.Repl) || Number(raw.Names ?? 0) !== 0;
    return { type: "ParamExp", param: lit(raw.Param), index, computed, exp, inner };
  }

  /** Words under an arithmetic or test expression (their `$(…)` run), without recursion. */
  private exprWords(raw: Raw): Word[] {
    const out: Word[] = [];
    const todo: Raw[] = [raw];
    while (todo.length) {
      const n = todo.pop();
      const t = goType(n);
      if (t === "Word") {
        const w = this.word(n);
        if (w) out.push(w);
      } else if (ARITHM_TEST.has(t)) {
        this.budget.spend(1);
        if (!isNil(n.Y)) todo.push(n.Y);
        if (!isNil(n.X)) todo.push(n.X);
      }
    }
    return out;
  }

  private nested<T>(f: () => T): T {
    this.enter();
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  private source(raw: Raw): string {
    try {
      return this.bytes.subarray(raw.Pos().offs, raw.End().offs).toString("utf8");
    } catch {
      return "";
    }
  }
}

function isPipe(op: unknown): boolean {
  return op === BINARY.pipe || op === BINARY.pipeAll;
}
