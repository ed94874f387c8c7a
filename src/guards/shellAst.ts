/**
 * Bash source → a plain JavaScript syntax tree, with mvdan-sh (mvdan/sh, the parser behind
 * `shfmt`, compiled to JavaScript by GopherJS: synchronous, no native code, the same grammar
 * and the same errors as bash).
 *
 * The GopherJS objects are wrappers whose every property read converts Go values again, so the
 * tree is copied once into plain objects and every later walk is ordinary JavaScript.
 */
import { createRequire } from "node:module";

/** One syntax node: `type` is the mvdan/sh node type (`CallExpr`, `Word`, `Lit`…), fields keep their Go names. */
export interface ShNode {
  type: string;
  /** Byte offsets in the source, kept for the nodes whose text a message quotes. */
  pos?: number;
  end?: number;
  [field: string]: unknown;
}

interface Syntax {
  NewParser(): { Parse(src: string, name: string): any };
  NodeType(node: any): string;
}

/** mvdan/sh `RedirOperator` values. */
export const REDIR = { out: 54, append: 55, in: 56, readWrite: 57, dupIn: 58, dupOut: 59, clobber: 60, heredoc: 61, heredocTabs: 62, hereString: 63, all: 64, appendAll: 65 } as const;
/** mvdan/sh `BinCmdOperator` values. */
export const BINARY = { and: 10, or: 11, pipe: 12, pipeAll: 13 } as const;
/** mvdan/sh `ParExpOperator` values (`${x-y}` … `${x:=y}`). */
export const PARAM_EXP = { default: 70, colonDefault: 71, alternate: 68, colonAlternate: 69, error: 72, colonError: 73, assign: 74, colonAssign: 75 } as const;

/** Every field name of mvdan/sh v3 syntax nodes that can hold a child or a value the screen reads. */
const FIELDS = [
  "Stmts", "Cmd", "Redirs", "Background", "Negated", "Coprocess", "Op", "N", "Word", "Hdoc", "Assigns", "Args",
  "Name", "Value", "Array", "Index", "Naked", "Append", "Elems", "Cond", "Then", "Else", "Do", "Until", "Loop",
  "Items", "Init", "Post", "Patterns", "X", "Y", "Body", "Variant", "Exprs", "Stmt", "Parts", "Dollar", "Param",
  "Exp", "Length", "Excl", "Width", "Short", "Slice", "Offset", "Repl", "Orig", "With", "All", "Names", "Pattern",
  "Description",
];
/** Nodes whose source text a message may quote. */
const WITH_POSITION = new Set(["Redirect", "ExtGlob"]);

let loaded: { syntax: Syntax; parser: { Parse(src: string, name: string): any } } | undefined;

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
    loaded = { syntax, parser: syntax.NewParser() };
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

/** The parsed file (`type: "File"`, with `Stmts`); throws the parser's error on input bash would reject. */
export function parseShell(src: string): ShNode {
  const { syntax, parser } = load();
  const savedLimit = Error.stackTraceLimit;
  // GopherJS implements Go's panic/recover by comparing stack depths; it needs full stacks.
  Error.stackTraceLimit = Infinity;
  try {
    return toPlain(syntax, parser.Parse(src, "")) ?? { type: "File", Stmts: [] };
  } finally {
    Error.stackTraceLimit = savedLimit;
  }
}

function toPlain(syntax: Syntax, node: any): ShNode | undefined {
  if (node === null || node === undefined) return undefined;
  // The Go type behind the wrapper ("*syntax.CallExpr"): a plain read, where NodeType costs a
  // conversion of the whole wrapper. Structs that are not Nodes (Expansion, Replace…) get a name too.
  const goType: unknown = node.__internal_object__?.constructor?.string;
  let type = typeof goType === "string" ? goType.replace(/^\*?syntax\./, "") : "";
  if (!type) {
    try {
      type = syntax.NodeType(node);
    } catch {
      // Not a Node: copied as a plain struct.
    }
  }
  const out: ShNode = { type };
  for (const field of FIELDS) {
    const value = node[field];
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) out[field] = value.map((v) => (typeof v === "object" ? toPlain(syntax, v) : v));
    else if (typeof value === "object") out[field] = toPlain(syntax, value);
    else if (typeof value !== "function") out[field] = value;
  }
  if (WITH_POSITION.has(type)) {
    out.pos = node.Pos().Offset();
    out.end = node.End().Offset();
  }
  return out;
}

/** Children of a node, in source order of its fields. */
export function children(node: ShNode): ShNode[] {
  const out: ShNode[] = [];
  for (const field of FIELDS) {
    const value = node[field];
    if (Array.isArray(value)) {
      for (const v of value) if (v && typeof v === "object") out.push(v as ShNode);
    } else if (value && typeof value === "object") out.push(value as ShNode);
  }
  return out;
}

/** Depth-first walk; `visit` returns false to skip a node's children. */
export function walk(node: ShNode | undefined, visit: (node: ShNode) => boolean): void {
  if (!node || !visit(node)) return;
  for (const child of children(node)) walk(child, visit);
}
