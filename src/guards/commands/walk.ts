/**
 * The walk: every simple command the shell would run — in pipelines, lists, groups, subshells,
 * loops, functions, `$(…)`, `<(…)`, and `sh -c` / `eval` / `trap` strings or shells fed from a
 * pipe, parsed again — normalised ({@link expandWord}), unwrapped ({@link unwrap}) and checked
 * by the rules table, with what the line set up earlier: variables, loop lists, arrays, a `cd`,
 * a downloaded file, what the previous pipeline stages do. Each pipeline stage is summarised
 * once, so the walk is linear in the tree; every unit of work is charged to the budget.
 */
import { commandScreenBudgetProblem, LIMITS } from "../limits.js";
import { operandsOf, optionsOf } from "./argv.js";
import { Budget, BudgetExceeded } from "./budget.js";
import { changeDirectory, commandName, criticalTarget, fileKey, resolvePath, show, writeTargetProblem } from "./paths.js";
import { checkRules } from "./rules.js";
import { REDIR, TooDeep, parseShell, type Assign, type CallExpr, type Command, type FuncDecl, type Loop, type Stmt, type Word, type WordPart } from "./syntax.js";
import { DANGEROUS_TOKEN, DECODERS, DOWNLOADERS, MAX_DEPTH, MAX_FIELDS, MAYBE_EMPTY_VAR, NETWORK_SOURCES, NET_DEVICE, SCRIPT_INTERPRETERS, SHELLS, STDIN_PATHS, UNKNOWN } from "./vocabulary.js";
import { echoOutput, expandWord, wordText, type Scope } from "./words.js";
import { unwrap } from "./wrappers.js";

/** The outcome of one screen: the reason (undefined = passes) and the work it took. */
export interface ScreenResult {
  reason?: string;
  work: number;
}

/** Screens one command line. Never throws. */
export function screen(command: string): ScreenResult {
  const budget = new Budget(LIMITS.commandScreenMaxWork);
  if (command.length > LIMITS.commandScreenMaxChars) return { reason: commandScreenBudgetProblem("size", command.length), work: 0 };
  try {
    return { reason: screenScript(command, { depth: 0, vars: new Map(), downloads: new Set(), budget }), work: budget.spent };
  } catch (err) {
    if (err instanceof BudgetExceeded) return { reason: commandScreenBudgetProblem("work"), work: budget.spent };
    if (err instanceof TooDeep) return { reason: commandScreenBudgetProblem("nesting"), work: budget.spent };
    // The parser failed to load or crashed: judge by the words alone, like unparseable input.
    return { reason: unparseable(command), work: budget.spent };
  }
}

interface Ctx extends Scope {
  depth: number;
  /** What the earlier stages of the pipeline this command reads from do. */
  upstream?: Upstream;
  /** Where an earlier `cd` went (absolute, `~…`, or relative to the workspace); unset = the workspace. */
  cwd?: string;
  /** Files an earlier `curl -o` / `wget -O` / `curl … > F` in the same line wrote. */
  downloads: Set<string>;
  /** Descriptors an earlier `exec 3<>/dev/tcp/…` opened to the network. */
  netFds?: Set<string>;
}

interface Upstream {
  /** The stage right before. */
  last: Stmt;
  /** Some earlier stage reads the network. */
  fetches: boolean;
  /** Some earlier stage decodes text. */
  decodes: boolean;
}

class Found extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

function screenScript(src: string, ctx: Ctx): string | undefined {
  let stmts: Stmt[];
  try {
    stmts = parseShell(src, ctx.budget, LIMITS.commandScreenMaxNesting).stmts;
  } catch (err) {
    if (err instanceof BudgetExceeded || err instanceof TooDeep) throw err;
    return unparseable(src);
  }
  try {
    new Walker().stmts(stmts, ctx);
  } catch (err) {
    if (err instanceof Found) return err.reason;
    if (err instanceof BudgetExceeded || err instanceof TooDeep) throw err;
    // A stack overflow on absurd input, or a node shape this version does not know.
    return unparseable(src);
  }
  return undefined;
}

function unparseable(src: string): string | undefined {
  const m = DANGEROUS_TOKEN.exec(src);
  if (!m) return undefined;
  const token = m[0].replace(/^[^\w:/]/, "").trim();
  return `the command could not be parsed and it contains \`${token}\`: simplify the command (close quotes and brackets, one step per call) so it can be checked`;
}

class Walker {
  stmts(list: readonly Stmt[], ctx: Ctx): void {
    for (const s of list) this.stmt(s, ctx);
  }

  stmt(stmt: Stmt, ctx: Ctx): void {
    ctx.budget.spend(1);
    for (const r of stmt.redirs) {
      this.substitutions(r.word, ctx);
      this.substitutions(r.hdoc, ctx);
      if (r.fd !== undefined && (r.op === REDIR.in || r.op === REDIR.readWrite) && expandWord(r.word, ctx).some((t) => NET_DEVICE.test(t))) (ctx.netFds ??= new Set()).add(r.fd);
      if (!WRITE_REDIRECTS.has(r.op) || !r.word) continue;
      for (const target of expandWord(r.word, ctx)) {
        if (r.op === REDIR.dupOut && /^(?:\d+|-)$/.test(target)) continue; // >&2: duplicates a descriptor
        const why = writeTargetProblem(resolvePath(target, ctx.cwd));
        if (why) throw new Found(`the redirection \`${r.text.trim()}\` ${why}`);
      }
    }
    if (stmt.cmd) this.command(stmt.cmd, stmt, ctx);
  }

  private command(cmd: Command, stmt: Stmt, ctx: Ctx): void {
    switch (cmd.type) {
      case "CallExpr":
        return this.call(cmd, stmt, ctx);
      case "Chain":
        if (!cmd.pipe) return this.stmts(cmd.stmts, ctx);
        return this.pipeline(cmd.stmts, ctx);
      case "FuncDecl":
        this.forkBomb(cmd, ctx);
        if (cmd.body) this.stmt(cmd.body, { ...ctx, upstream: undefined });
        return;
      case "Loop":
        return this.loop(cmd, ctx);
      case "Group": {
        for (const a of cmd.assigns) this.assign(a, ctx);
        return this.stmts(cmd.stmts, cmd.subshell ? { ...ctx, vars: new Map(ctx.vars) } : ctx);
      }
      case "Case":
        this.substitutions(cmd.word, ctx);
        for (const item of cmd.items) {
          for (const p of item.patterns) this.substitutions(p, ctx);
          this.stmts(item.stmts, ctx);
        }
        return;
      case "Exprs":
        for (const w of cmd.words) this.substitutions(w, ctx);
    }
  }

  /** Each stage sees a summary of the ones before it, built once: linear in the stages. */
  private pipeline(stages: readonly Stmt[], ctx: Ctx): void {
    let fetches = ctx.upstream?.fetches ?? false;
    let decodes = ctx.upstream?.decodes ?? false;
    let upstream = ctx.upstream;
    for (const stage of stages) {
      this.stmt(stage, { ...ctx, upstream });
      fetches ||= this.contains(stage, (name) => NETWORK_SOURCES.has(name), ctx) || this.readsNetwork(stage, ctx);
      decodes ||= this.contains(stage, (name) => DECODERS.has(name), ctx);
      upstream = { last: stage, fetches, decodes };
    }
  }

  private loop(loop: Loop, ctx: Ctx): void {
    for (const w of [...(loop.items ?? []), ...loop.exprWords]) this.substitutions(w, ctx);
    if (loop.kind === "for" && loop.name) {
      const values = loop.items ? keepTelling(loop.items.flatMap((w) => expandWord(w, ctx))) : [UNKNOWN];
      ctx.vars.set(loop.name, values.length ? values : [""]);
    }
    this.stmts(loop.cond, ctx);
    if (this.runsForever(loop, ctx) && this.startsInBackground(loop.body)) {
      throw new Found("it starts processes in the background from a loop that never ends, a fork bomb: write a bounded loop (for i in 1 2 3) and wait for each process");
    }
    this.stmts(loop.body, ctx);
  }

  private runsForever(loop: Loop, ctx: Ctx): boolean {
    if (loop.kind === "cfor") return !loop.hasCondition;
    if (loop.kind === "for") return false;
    const only = loop.cond.length === 1 ? loop.cond[0]!.cmd : undefined;
    if (only?.type !== "CallExpr" || only.args.length !== 1) return false;
    const word = expandWord(only.args[0], ctx)[0] ?? "";
    return loop.kind === "while" ? word === ":" || word === "true" : word === "false";
  }

  private startsInBackground(body: readonly Stmt[]): boolean {
    let found = false;
    visit(body, (node) => {
      if (found || node.type === "FuncDecl") return false;
      if (node.type === "Stmt" && node.background) found = true;
      return !found;
    });
    return found;
  }

  private assign(a: Assign, ctx: Ctx): void {
    this.substitutions(a.value, ctx);
    for (const w of [...(a.array ?? []), ...a.indexWords]) this.substitutions(w, ctx);
    if (a.array) {
      const values = keepTelling(a.array.flatMap((w) => expandWord(w, ctx)));
      ctx.vars.set(a.name, a.append ? [...(ctx.vars.get(a.name) ?? []), ...values] : values);
      return;
    }
    if (!a.value || a.naked) return;
    ctx.vars.set(a.name, expandWord(a.value, ctx, false));
  }

  /** Commands run by `$(…)`, backticks and `<(…)` inside a word (also inside "…" and heredocs). */
  private substitutions(word: Word | undefined, ctx: Ctx): void {
    if (!word) return;
    const parts: WordPart[] = [...word.parts];
    while (parts.length) {
      const p = parts.pop()!;
      if (p.type === "CmdSubst") this.stmts(p.stmts, { ...ctx, upstream: undefined, vars: new Map(ctx.vars) });
      else if (p.type === "DblQuoted") parts.push(...p.parts);
      else if (p.type === "ParamExp" || p.type === "Opaque") for (const w of p.inner) parts.push(...w.parts);
    }
  }

  private call(cmd: CallExpr, stmt: Stmt, ctx: Ctx): void {
    for (const a of cmd.assigns) {
      this.substitutions(a.value, ctx);
      for (const w of a.array ?? []) this.substitutions(w, ctx);
    }
    for (const w of cmd.args) this.substitutions(w, ctx);
    if (cmd.args.length === 0) {
      for (const a of cmd.assigns) this.assign(a, ctx);
      return;
    }
    const argv = cmd.args.flatMap((w) => expandWord(w, ctx));
    const why = this.argv(argv, stmt, cmd.args, ctx);
    if (why) throw new Found(why);
  }

  /** Rules on one normalised argv; returns the reason or undefined. */
  private argv(raw: string[], stmt: Stmt, words: readonly Word[], ctx: Ctx, direct = true): string | undefined {
    const unwrapped = unwrap(raw);
    let argv = unwrapped.argv;
    if (argv.length === 0) return undefined;
    const cwd = unwrapped.cwd !== undefined ? changeDirectory(ctx.cwd, unwrapped.cwd) : ctx.cwd;
    const path = (p: string) => resolvePath(p, cwd);
    for (const w of unwrapped.writes) {
      const why = writeTargetProblem(path(w));
      if (why) return `\`${commandName(raw[0] ?? "")} -o ${show(w)}\` ${why}`;
    }
    const name = commandName(argv[0]!);

    // Commands that take their arguments from the pipeline: `echo / | xargs rm -rf`.
    if (unwrapped.fromStdin) {
      const text = this.stdinText(stmt, { ...ctx, upstream: undefined }) ?? (ctx.upstream ? undefined : "");
      const produced = text !== undefined ? (unwrapped.records ? text.split(/\u0000|\n/).filter(Boolean) : text.split(/\s+/).filter(Boolean)) : this.producedWords(ctx.upstream!.last, ctx);
      if (name === "rm") {
        const hit = produced.find((w) => criticalTarget(path(w)));
        if (hit) return `it pipes ${show(hit)} into \`xargs rm\`, which would delete ${criticalTarget(path(hit))}: delete paths inside the workspace instead`;
      }
      if (argv.includes("{}")) argv = argv.flatMap((a) => (a === "{}" ? produced : [a]));
      else if (argv.some((a) => a.includes("{}"))) argv = argv.map((a) => a.replaceAll("{}", produced.join(" ")));
      else if (SHELLS.has(name) && /^-[A-Za-z]*c$/.test(argv[argv.length - 1]!)) argv = [...argv, produced.join(" ")];
      else argv = [...argv, ...produced];
    }

    if (name === "cd" || name === "pushd") {
      ctx.cwd = changeDirectory(cwd, operandsOf(argv.slice(1))[0] ?? "~");
      return undefined;
    }
    const args = argv.slice(1);
    const rule = checkRules({ name, args, path });
    if (rule) return rule;

    // `curl -o x.sh URL && sh x.sh`: the same as piping it, one step later.
    if (DOWNLOADERS.has(name)) for (const f of downloadedFiles(name, args, stmt, ctx)) ctx.downloads.add(f);
    if (ctx.downloads.size) {
      const program = isInterpreter(name) && !interpreterReadsStdin(name, args) ? operandsOf(args)[0] : argv[0];
      if (program !== undefined && ctx.downloads.has(fileKey(program))) {
        return `it runs ${show(program)}, downloaded in the same command, unreviewed: download it in one call, read it, then run it`;
      }
    }

    // Code from the network run by an interpreter: `curl … | sh`, `bash <(curl …)`, `sh </dev/tcp/…`.
    const readsStdin = isInterpreter(name) && interpreterReadsStdin(name, args);
    if (isInterpreter(name)) {
      if (readsStdin && (ctx.upstream?.fetches || this.stdinFromNetwork(stmt, ctx))) {
        return `it pipes a download into ${name}, which runs it unreviewed: save it to a file in the workspace and read it first`;
      }
      if (readsStdin && ctx.upstream?.decodes) {
        return `it decodes text and pipes it into ${name}, which hides what runs: run the decoded command itself`;
      }
      const fed = [...(direct ? this.programWords(words, name, ctx) : []), ...(readsStdin ? stdinWords(stmt) : [])];
      if (fed.some((w) => this.contains(w, (c) => NETWORK_SOURCES.has(c), ctx))) {
        return `it runs downloaded code with ${name} unreviewed: save it to a file in the workspace and read it first`;
      }
    }

    // Code given as a string (`sh -c`, `eval`, `trap`) or fed to a shell's stdin (`sh <<EOF`, `echo … | sh`): parse it again.
    const fromStdin = SHELLS.has(name) && readsStdin ? this.stdinText(stmt, ctx) : undefined;
    const scripts = [inlineScript(name, args), fromStdin === undefined ? undefined : { code: fromStdin, positional: [] }];
    for (const script of scripts) {
      if (script === undefined) continue;
      if (ctx.depth >= MAX_DEPTH) {
        // Nobody nests shell code this deep by accident; stop parsing rather than let it hide.
        return `it nests shell code (\`${name}\` strings) more than ${MAX_DEPTH} levels deep: run the inner command directly`;
      }
      const vars = new Map(ctx.vars);
      script.positional.forEach((p, i) => vars.set(String(i), [p]));
      const code = script.code.replace(MAYBE_EMPTY_VAR, "").replaceAll(UNKNOWN, "x");
      const inner = screenScript(code, { depth: ctx.depth + 1, vars, cwd, downloads: new Set(), budget: ctx.budget });
      if (inner) return inner;
    }
    if (name === "find") return this.find(args, stmt, words, { ...ctx, cwd });
    return undefined;
  }

  /** `find ROOTS … -exec CMD {} ;` runs CMD on paths under ROOTS; `-delete` deletes them. */
  private find(args: string[], stmt: Stmt, words: readonly Word[], ctx: Ctx): string | undefined {
    const firstExpr = args.findIndex((a) => a.startsWith("-") || a === "(" || a === "!");
    const roots = firstExpr < 0 ? args : args.slice(0, firstExpr);
    const searched = roots.length ? roots : ["."];
    const critical = searched.map((r) => criticalTarget(resolvePath(r, ctx.cwd))).find(Boolean);
    if (critical && args.includes("-delete")) return `\`find ${searched.join(" ")} … -delete\` would delete ${critical}: search inside the workspace instead`;
    for (let i = 0; i < args.length; i++) {
      if (!/^-(?:exec|execdir|ok|okdir)$/.test(args[i]!)) continue;
      const end = args.findIndex((a, j) => j > i && (a === ";" || a === "+"));
      const inner = args.slice(i + 1, end < 0 ? undefined : end);
      i = end < 0 ? args.length : end;
      const expanded = inner.flatMap((a) => (a === "{}" ? searched : [a.replaceAll("{}", searched[0]!)]));
      const why = this.argv(expanded, stmt, words, ctx, false);
      if (why) return why;
    }
    return undefined;
  }

  /** The text a command reads on stdin when it is literal: a heredoc, a here-string, or `echo`/`printf` piped in. */
  private stdinText(stmt: Stmt, ctx: Ctx): string | undefined {
    for (const r of stmt.redirs) {
      const word = r.op === REDIR.heredoc || r.op === REDIR.heredocTabs ? r.hdoc : r.op === REDIR.hereString ? r.word : undefined;
      if (word) return wordText(word, ctx);
    }
    const cmd = ctx.upstream?.last.cmd;
    if (cmd?.type !== "CallExpr" || !cmd.args.length) return undefined;
    return echoOutput(unwrap(cmd.args.flatMap((w) => expandWord(w, ctx))).argv);
  }

  /** `sh </dev/tcp/host/port`, `cat < /dev/tcp/…`: a network socket as stdin. */
  private stdinFromNetwork(stmt: Stmt, ctx: Ctx): boolean {
    return stmt.redirs.some((r) => {
      if ((r.op === REDIR.in || r.op === REDIR.readWrite) && (r.fd ?? "0") === "0") return expandWord(r.word, ctx).some((t) => NET_DEVICE.test(t));
      return r.op === REDIR.dupIn && (r.fd ?? "0") === "0" && expandWord(r.word, ctx).some((t) => ctx.netFds?.has(t) === true);
    });
  }

  /** A stage that reads bash's /dev/tcp or /dev/udp (a redirection or an operand). */
  private readsNetwork(stage: Stmt, ctx: Ctx): boolean {
    let hit = false;
    visit([stage], (n) => {
      if (hit) return false;
      if (n.type === "Stmt") hit = this.stdinFromNetwork(n, ctx);
      else if (n.type === "CallExpr") hit = n.args.some((w) => expandWord(w, ctx).some((t) => NET_DEVICE.test(t)));
      return !hit;
    });
    return hit;
  }

  /** The word that holds the program of an interpreter call: `-c CODE`, the script operand, or every word of `eval`. */
  private programWords(words: readonly Word[], name: string, ctx: Ctx): Word[] {
    const first = (w: Word) => expandWord(w, { vars: new Map(), budget: ctx.budget })[0] ?? "";
    const at = words.findIndex((w) => commandName(first(w)) === name);
    const after = at < 0 ? [] : words.slice(at + 1);
    if (name === "eval") return after;
    for (let i = 0; i < after.length; i++) {
      const f = first(after[i]!);
      if (/^-[A-Za-z]*[ce]$/.test(f) || f === "--eval" || f === "--command") return after.slice(i + 1, i + 2);
      if (!f.startsWith("-")) return [after[i]!];
    }
    return [];
  }

  /** What a pipeline stage writes to stdin, as far as it is literal: the operands of `echo`, `printf`, `ls`, `find`. */
  private producedWords(stage: Stmt, ctx: Ctx): string[] {
    const out: string[] = [];
    visit([stage], (n) => {
      if (n.type === "CallExpr" && n.args.length) {
        const argv = unwrap(n.args.flatMap((w) => expandWord(w, ctx))).argv;
        for (const a of argv.slice(1)) if (!a.startsWith("-")) out.push(...a.split(/[\s\n]+|\\n|\\0/).filter(Boolean));
      }
      return true;
    });
    return out;
  }

  /** Whether a simple command under `node` (at any depth) satisfies `test`. */
  private contains(node: Stmt | Word, test: (name: string) => boolean, ctx: Ctx): boolean {
    let hit = false;
    const scope: Scope = { vars: new Map(), budget: ctx.budget };
    visit([node], (n) => {
      if (hit) return false;
      if (n.type === "CallExpr" && n.args.length) {
        const argv = unwrap(n.args.flatMap((w) => expandWord(w, scope))).argv;
        if (argv.length && test(commandName(argv[0]!))) hit = true;
      }
      return !hit;
    });
    return hit;
  }

  /** A function that starts itself in the background or in a pipeline: `:(){ :|:& };:`. */
  private forkBomb(fn: FuncDecl, ctx: Ctx): void {
    if (!fn.name || !fn.body) return;
    const scope: Scope = { vars: new Map(), budget: ctx.budget };
    const async = new Set<Stmt>();
    let found = false;
    visit([fn.body], (n) => {
      if (found) return false;
      if (n.type === "Stmt" && n.background) markAll(n, async);
      if (n.type === "Chain" && n.pipe) for (const s of n.stmts) markAll(s, async);
      if (n.type === "Stmt" && async.has(n) && n.cmd?.type === "CallExpr" && n.cmd.args.length) {
        const argv = unwrap(n.cmd.args.flatMap((w) => expandWord(w, scope))).argv;
        if (argv[0] !== undefined && commandName(argv[0]) === fn.name) found = true;
      }
      return !found;
    });
    if (found) throw new Found(`\`${fn.name}\` is a fork bomb (a function that starts copies of itself in the background or a pipeline): write a bounded loop instead`);
  }
}

/** Redirection operators (mvdan/sh `RedirOperator`) that write their target. */
const WRITE_REDIRECTS = new Set<number>([REDIR.out, REDIR.append, REDIR.readWrite, REDIR.dupOut, REDIR.clobber, REDIR.all, REDIR.appendAll]);

type Visited = Stmt | Command | Word;

/** Depth-first over statements, commands and words (substitutions included); `fn` returns false to skip children. */
function visit(roots: readonly Visited[], fn: (n: Visited) => boolean): void {
  const todo: Visited[] = [...roots].reverse();
  while (todo.length) {
    const n = todo.pop()!;
    if (!fn(n)) continue;
    const kids: Visited[] = [];
    switch (n.type) {
      case "Stmt":
        for (const r of n.redirs) kids.push(...[r.word, r.hdoc].filter((w): w is Word => w !== undefined));
        if (n.cmd) kids.push(n.cmd);
        break;
      case "CallExpr":
        kids.push(...n.assigns.flatMap(assignWords), ...n.args);
        break;
      case "Chain":
        kids.push(...n.stmts);
        break;
      case "FuncDecl":
        if (n.body) kids.push(n.body);
        break;
      case "Loop":
        kids.push(...(n.items ?? []), ...n.exprWords, ...n.cond, ...n.body);
        break;
      case "Group":
        kids.push(...n.assigns.flatMap(assignWords), ...n.stmts);
        break;
      case "Case":
        if (n.word) kids.push(n.word);
        for (const item of n.items) kids.push(...item.patterns, ...item.stmts);
        break;
      case "Exprs":
        kids.push(...n.words);
        break;
      case "Word":
        for (const p of n.parts) kids.push(...partChildren(p));
        break;
    }
    for (let i = kids.length - 1; i >= 0; i--) todo.push(kids[i]!);
  }
}

/**
 * A list (loop items, array elements) cut to the alternatives words keep, the telling ones
 * first (absolute, home, unknown or parent paths), so filler cannot push a danger out.
 */
function keepTelling(values: string[]): string[] {
  if (values.length <= MAX_FIELDS) return values;
  const telling = (v: string) => /^[/~\u0000\u0001]|^\.\./.test(v);
  return [...new Set([...values.filter(telling), ...values.filter((v) => !telling(v))])].slice(0, MAX_FIELDS);
}

function assignWords(a: Assign): Word[] {
  return [...(a.value ? [a.value] : []), ...(a.array ?? []), ...a.indexWords];
}

function partChildren(p: WordPart): Visited[] {
  if (p.type === "CmdSubst") return p.stmts;
  if (p.type === "DblQuoted") return p.parts.flatMap(partChildren);
  if (p.type === "ParamExp" || p.type === "Opaque") return p.inner;
  return [];
}

function markAll(s: Stmt, into: Set<Stmt>): void {
  visit([s], (n) => {
    if (n.type === "Stmt") into.add(n);
    return n.type !== "FuncDecl";
  });
}

/** Words fed to a command's stdin: `< FILE`, `<<< WORD`. */
function stdinWords(stmt: Stmt): Word[] {
  return stmt.redirs.filter((r) => (r.op === REDIR.in || r.op === REDIR.hereString) && r.word).map((r) => r.word!);
}

/** Files a downloader writes: `curl -o F`, `curl -O URL` (its last path segment), `wget -O F`, `> F`. */
function downloadedFiles(name: string, args: string[], stmt: Stmt, scope: Scope): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const long = /^--(?:output|output-document)=(.+)$/.exec(a);
    if (long) out.push(long[1]!);
    else if (a === "--output" || a === "--output-document") out.push(args[++i] ?? "");
    else if (/^-[A-Za-z]*[oO]$/.test(a) && !(name === "curl" && a.endsWith("O"))) out.push(args[++i] ?? "");
    else if (/^-[A-Za-z]*[oO].+$/.test(a) && name !== "curl") out.push(a.slice(a.search(/[oO]/) + 1));
    else if (name === "curl" && (a === "-O" || a === "--remote-name" || /^-[A-Za-z]*O$/.test(a))) {
      const url = args.slice(i + 1).find((u) => /^[a-z]+:\/\//i.test(u));
      if (url) out.push(url.replace(/[?#].*$/, "").split("/").pop() ?? "");
    }
  }
  if (name === "wget" && !out.length) {
    const url = args.find((u) => /^[a-z]+:\/\//i.test(u));
    if (url) out.push(url.replace(/[?#].*$/, "").split("/").pop() ?? "");
  }
  for (const r of stmt.redirs) if ((r.op === REDIR.out || r.op === REDIR.clobber) && r.word) out.push(...expandWord(r.word, scope));
  return out.filter((f) => f && f !== "-").map(fileKey);
}

function isInterpreter(name: string): boolean {
  return SHELLS.has(name) || SCRIPT_INTERPRETERS.test(name) || name === "source" || name === "." || name === "eval";
}

/** Whether the interpreter takes its program from stdin: no `-c`/`-e`/`-m` and no script file (or `-`, `-s`, /dev/stdin, /dev/fd/0). */
function interpreterReadsStdin(name: string, args: string[]): boolean {
  if (name === "source" || name === "." || name === "eval") return args.some((a) => STDIN_PATHS.test(a) || a.startsWith("/dev/fd/"));
  const opts = optionsOf(args);
  if (opts.some((o) => o === "-s" || o === "-")) return true;
  if (SHELLS.has(name) && opts.some((o) => /^-[^-]*c/.test(o))) return false;
  if (!SHELLS.has(name) && opts.some((o) => /^-[^-]*[cemrE]/.test(o) || o === "--eval" || o === "--print")) return false;
  const ops = operandsOf(args);
  return ops.length === 0 || STDIN_PATHS.test(ops[0]!) || args.includes("-");
}

/** The script of `sh -c CODE [ARG0 ARGS…]`, `eval WORDS…`, `su -c CODE`, or undefined. */
function inlineScript(name: string, args: string[]): { code: string; positional: string[] } | undefined {
  if (name === "eval") return args.length ? { code: args.join(" "), positional: [] } : undefined;
  if (name === "trap") return args[0] !== undefined && !args[0].startsWith("-") ? { code: args[0], positional: [] } : undefined;
  if (SHELLS.has(name) || name === "su" || name === "runuser") {
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a === "--") break;
      if (a === "--command" || (/^-[A-Za-z]*c[A-Za-z]*$/.test(a) && (SHELLS.has(name) || a === "-c"))) {
        const code = args[i + 1];
        return code === undefined ? undefined : { code, positional: args.slice(i + 2) };
      }
      if (a.startsWith("--command=")) return { code: a.slice(10), positional: [] };
    }
  }
  return undefined;
}
