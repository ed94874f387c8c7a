/**
 * The command screen: refuses shell command lines that could wreck the machine rather than the
 * workspace (deleting or re-permissioning `/` or the home directory, formatting or overwriting
 * disks, fork bombs, powering off, killing every process, running downloaded code, writing system
 * configuration).
 *
 * It is defence in depth, not the wall: the sandbox around `run_command` is what contains a
 * command. The screen parses the line with a real bash parser (mvdan/sh, the parser behind
 * `shfmt`) and checks every simple command the shell would run — in pipelines, lists, `{ …; }`
 * groups, subshells, functions, `$(…)` and backticks (also inside double quotes and heredocs),
 * `<(…)`, and `bash -c` / `eval` / `trap` strings or heredocs and `echo … |` fed to a shell,
 * parsed again — after normalising the command word (`/bin/rm`, `\rm`, `'r'm`, `${IFS}`,
 * variables assigned earlier in the line) and unwrapping `sudo`, `env`, `xargs`, `find -exec`,
 * `busybox` and the like. It follows a `cd` into later relative paths and a `curl -o` into a
 * later run of that file. Text that only mentions a command (`echo 'rm -rf /'`, a commit message)
 * is data to the parser and passes. A determined caller can still hide intent (values computed at
 * run time, base64, a script written first); that is what the sandbox is for.
 */
import { BINARY, PARAM_EXP, REDIR, loadShellParser, parseShell, walk as walkTree, type ShNode } from "./shellAst.js";

type Node = ShNode & Record<string, any>; // fields vary by node type

const walk = walkTree as (node: Node | undefined, visit: (node: Node) => boolean) => void;

/** Loads the parser now rather than on the first screened command (e.g. while the tools are built). */
export function initCommandScreen(): void {
  loadShellParser();
}

// ---------------------------------------------------------------------------------------------
// Vocabulary.

const MAX_DEPTH = 4;
/** Brace expansion and word products stop here: enough to see `/{bin,etc}`, bounded for `{1..99999}`. */
const MAX_FIELDS = 64;
/** Unknown text that may be empty at run time: an unset variable, kept as `MAYBE_EMPTY name MAYBE_EMPTY`. */
const MAYBE_EMPTY = "\u0000";
const MAYBE_EMPTY_VAR = /\u0000([^\u0000]*)\u0000/g;
/** Unknown text that is never empty (`$(…)`, `$PWD`, `${x:?}`). */
const UNKNOWN = "\u0001";

const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash", "yash", "posh"]);
const SCRIPT_INTERPRETERS = /^(?:python[\d.]*|pypy[\d.]*|perl[\d.]*|ruby[\d.]*|node|nodejs|php[\d.]*|lua[\d.]*|deno|bun|Rscript|tclsh|osascript)$/;
const DOWNLOADERS = new Set(["curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request", "GET"]);
/** Commands that turn encoded text back into a script (`echo … | base64 -d | sh`). */
const DECODERS = new Set(["base64", "base32", "basenc", "xxd", "uudecode", "gunzip", "zcat", "rev", "openssl"]);
const POWER = new Set(["shutdown", "reboot", "halt", "poweroff"]);
const SYSTEMCTL_POWER = new Set(["poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep", "suspend-then-hibernate", "rescue", "emergency", "soft-reboot"]);
const FORMATTERS = /^(?:mkfs(?:\..+)?|mke2fs|mkswap|mkdosfs|mkntfs|wipefs|blkdiscard)$/;
const ROOT_DIRS = new Set(["bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt", "proc", "root", "run", "sbin", "srv", "sys", "usr", "var", "snap", "Users", "System", "Library", "Applications", "private"]);
const BLOCK_DEVICE = /^\/dev\/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|dm-\d|md\d|mapper\/|loop\d|nbd\d|sr\d|zram\d|root$|mem$|kmem$|port$|disk\/)/;
/** System locations a command has no business writing (device files are judged separately). */
const SYSTEM_WRITE = /^\/(?:etc|boot|bin|sbin|lib|lib32|lib64|libx32|sys|usr(?!\/(?:local|src)(?:\/|$)))(?:\/|$)|^\/proc\/(?:sys(?:rq-trigger)?(?:\/|$))|^\/var\/spool\/cron(?:\/|$)/;
/** System trees where deleting or re-owning anything at any depth breaks the machine. */
const SYSTEM_TREE = /^\/(?:etc|boot|bin|sbin|lib|lib32|lib64|libx32|sys|proc|usr(?!\/(?:local|src)(?:\/|$)))(?:\/|$)/;
/** Redirection operators (mvdan/sh `RedirOperator`) that write their target. */
const WRITE_REDIRECTS = new Set<number>([REDIR.out, REDIR.append, REDIR.readWrite, REDIR.dupOut, REDIR.clobber, REDIR.all, REDIR.appendAll]);
const PIPE_OPS = new Set<number>([BINARY.pipe, BINARY.pipeAll]);
/** `${x-y}` `${x:-y}` `${x=y}` `${x:=y}`: the default is what runs when x is unset. */
const EXP_DEFAULT = new Set<number>([PARAM_EXP.default, PARAM_EXP.colonDefault, PARAM_EXP.assign, PARAM_EXP.colonAssign]);
/** `${x?}` `${x:?}`: the shell stops when x is unset, so it is never empty. */
/** Commands whose relative operands a preceding `cd` moves (`cd / && rm -rf *`). */
const RESOLVES_OPERANDS = new Set(["rm", "chmod", "chown", "chgrp", "find", "mv", "shred"]);
const EXP_REQUIRED = new Set<number>([PARAM_EXP.error, PARAM_EXP.colonError]);

/** Options that take a separate value, per wrapper (the rest are flags). */
const WRAPPER_VALUE_OPTS: Record<string, Set<string>> = {
  sudo: new Set(["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R", "--user", "--group", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--close-from", "--command-timeout", "--chroot"]),
  doas: new Set(["-u", "-C"]),
  env: new Set(["-u", "-C", "-P", "--unset", "--chdir"]),
  nice: new Set(["-n", "--adjustment"]),
  ionice: new Set(["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"]),
  timeout: new Set(["-s", "-k", "--signal", "--kill-after"]),
  stdbuf: new Set(["-i", "-o", "-e", "--input", "--output", "--error"]),
  exec: new Set(["-a"]),
  time: new Set(["-f", "-o", "--format", "--output"]),
  setsid: new Set([]),
  nohup: new Set([]),
  command: new Set([]),
  builtin: new Set([]),
  chrt: new Set([]),
  taskset: new Set([]),
  flock: new Set(["-w", "-E", "--timeout", "--conflict-exit-code"]),
  unshare: new Set([]),
  runuser: new Set(["-u", "-g", "-G", "--user", "--group"]),
  caffeinate: new Set([]),
  watch: new Set(["-n", "--interval", "-d"]),
  strace: new Set(["-o", "-e", "-p", "-s", "-u"]),
};

// ---------------------------------------------------------------------------------------------
// Entry points.

/**
 * Why `command` looks destructive beyond the workspace (a short sentence that fits after
 * "refused because"), or `undefined` when nothing matched. Never throws.
 *
 * Input the parser rejects is refused only when it contains a dangerous-looking word (bash would
 * most likely reject it too, and the sandbox contains it either way); otherwise it passes.
 */
export function screenCommand(command: string): string | undefined {
  if (typeof command !== "string" || command.trim() === "") return undefined;
  try {
    return screenScript(command, { depth: 0, vars: new Map(), downloads: new Set() });
  } catch {
    // The parser failed to load or crashed: judge by the words alone, like unparseable input.
    return unparseable(command);
  }
}

interface Ctx {
  depth: number;
  /** Values of variables assigned earlier in the same line (and positional parameters of `sh -c`). */
  vars: Map<string, string>;
  /** Earlier stages of the pipeline this command reads from. */
  upstream?: Node[];
  /** Where an earlier `cd` went (absolute, `~…`, or relative to the workspace); unset = the workspace. */
  cwd?: string;
  /** Files an earlier `curl -o` / `wget -O` / `curl … > F` in the same line wrote. */
  downloads?: Set<string>;
}

class Found extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

function screenScript(src: string, ctx: Ctx): string | undefined {
  let file: Node;
  try {
    file = parseShell(src);
  } catch {
    return unparseable(src);
  }
  try {
    new Walker(src).stmts(file.Stmts, ctx);
  } catch (err) {
    if (err instanceof Found) return err.reason;
    // A stack overflow on absurd nesting, or a node shape this version does not know.
    return unparseable(src);
  }
  return undefined;
}

/** Words whose presence makes an unparseable line worth refusing rather than passing. */
const DANGEROUS_TOKEN =
  /(?:^|[^\w.-])(?:rm|mkfs(?:\.\w+)?|mke2fs|wipefs|dd|shutdown|reboot|halt|poweroff|init|telinit|systemctl|kill|pkill|killall5?|chmod|chown|chgrp|crontab|curl|wget|eval|busybox|xargs|find)(?![\w.-])|:\s*\(\s*\)|\/dev\/|\/etc\//;

function unparseable(src: string): string | undefined {
  const m = DANGEROUS_TOKEN.exec(src);
  if (!m) return undefined;
  const token = m[0].replace(/^[^\w:/]/, "").trim();
  return `the command could not be parsed and it contains \`${token}\`: simplify the command (close quotes and brackets, one step per call) so it can be checked`;
}

// ---------------------------------------------------------------------------------------------
// The walk.

class Walker {
  private readonly bytes: Buffer;

  constructor(src: string) {
    this.bytes = Buffer.from(src, "utf8");
  }

  /** The source text of a node that kept its position (redirections, extended globs), for messages. */
  private text(node: Node): string {
    return node.pos === undefined ? "" : this.bytes.subarray(node.pos, node.end).toString("utf8");
  }

  stmts(list: Node[] | null | undefined, ctx: Ctx): void {
    for (const s of list ?? []) this.stmt(s, ctx);
  }

  stmt(stmt: Node, ctx: Ctx): void {
    if (!stmt) return;
    for (const r of stmt.Redirs ?? []) this.redirect(r, ctx);
    this.command(stmt.Cmd, stmt, ctx);
  }

  private redirect(r: Node, ctx: Ctx): void {
    if (r.Word) this.substitutions(r.Word, ctx);
    if (r.Hdoc) this.substitutions(r.Hdoc, ctx);
    if (!WRITE_REDIRECTS.has(r.Op) || !r.Word) return;
    for (const target of this.fields(r.Word, ctx)) {
      if (r.Op === REDIR.dupOut && /^(?:\d+|-)$/.test(target)) continue; // >&2: duplicates a descriptor
      const why = writeTargetProblem(target);
      if (why) throw new Found(`the redirection \`${this.text(r).trim()}\` ${why}`);
    }
  }

  private command(cmd: Node, stmt: Node, ctx: Ctx): void {
    if (!cmd) return;
    switch (typeOf(cmd)) {
      case "CallExpr":
        return this.call(cmd, stmt, ctx);
      case "BinaryCmd":
        if (PIPE_OPS.has(cmd.Op)) {
          const stages = this.pipeline(cmd);
          stages.forEach((s, i) => this.stmt(s, { ...ctx, upstream: [...(ctx.upstream ?? []), ...stages.slice(0, i)] }));
        } else {
          this.stmt(cmd.X, ctx);
          this.stmt(cmd.Y, ctx);
        }
        return;
      case "FuncDecl":
        this.forkBomb(cmd);
        return this.stmt(cmd.Body, { ...ctx, upstream: undefined });
      case "DeclClause":
        for (const a of cmd.Args ?? []) this.assign(a, ctx);
        return this.generic(cmd, ctx);
      default:
        // if/while/for/case/{ }/( )/[[ ]]/(( ))/time/coproc: every statement inside, same context.
        return this.generic(cmd, ctx);
    }
  }

  /** Visits the statements and substitutions under `node` that the cases above do not model. */
  private generic(node: Node, ctx: Ctx): void {
    walk(node, (n) => {
      if (!n || n === node) return true;
      const t = typeOf(n);
      if (t === "Stmt") {
        this.stmt(n, ctx);
        return false;
      }
      if (t === "CmdSubst" || t === "ProcSubst") {
        this.stmts(n.Stmts, { ...ctx, upstream: undefined });
        return false;
      }
      return true;
    });
  }

  /** Commands run by `$(…)`, backticks and `<(…)` inside a word (also inside "…" and heredocs). */
  private substitutions(node: Node, ctx: Ctx): void {
    this.generic(node, { ...ctx, upstream: undefined });
  }

  private pipeline(cmd: Node): Node[] {
    const out: Node[] = [];
    const add = (s: Node) => {
      const c = s?.Cmd;
      if (c && typeOf(c) === "BinaryCmd" && PIPE_OPS.has(c.Op) && !s.Background && (s.Redirs ?? []).length === 0) {
        add(c.X);
        add(c.Y);
      } else out.push(s);
    };
    add(cmd.X);
    add(cmd.Y);
    return out;
  }

  private assign(a: Node, ctx: Ctx): void {
    if (!a?.Name || !a.Value || a.Naked) return;
    const value = this.fields(a.Value, ctx, false)[0];
    if (value !== undefined) ctx.vars.set(a.Name.Value, value);
  }

  private call(cmd: Node, stmt: Node, ctx: Ctx): void {
    for (const a of cmd.Assigns ?? []) {
      if (a.Value) this.substitutions(a.Value, ctx);
      if (a.Array) this.substitutions(a.Array, ctx);
    }
    for (const w of cmd.Args ?? []) this.substitutions(w, ctx);
    const args: Node[] = cmd.Args ?? [];
    if (args.length === 0) {
      for (const a of cmd.Assigns ?? []) this.assign(a, ctx);
      return;
    }
    const argv = args.flatMap((w: Node) => this.fields(w, ctx));
    const why = this.argv(argv, stmt, args, ctx);
    if (why) throw new Found(why);
  }

  /** Rules on one normalised argv; returns the reason or undefined. */
  private argv(raw: string[], stmt: Node, words: Node[], ctx: Ctx, direct = true): string | undefined {
    const unwrapped = unwrap(raw);
    let argv = unwrapped.argv;
    if (argv.length === 0) return undefined;
    const name = commandName(argv[0]!);

    // Commands that take their arguments from the pipeline: `echo / | xargs rm -rf`.
    const literalInput = unwrapped.fromStdin ? this.stdinScript(stmt, { ...ctx, upstream: undefined }) : undefined;
    if (unwrapped.fromStdin && (ctx.upstream?.length || literalInput)) {
      const produced = literalInput ? literalInput.code.split(/\s+/).filter(Boolean) : this.producedWords(ctx.upstream![ctx.upstream!.length - 1]!, ctx);
      if (name === "rm" && produced.some((w) => criticalTarget(w))) {
        return `it pipes ${show(produced.find((w) => criticalTarget(w))!)} into \`xargs rm\`, which would delete ${criticalTarget(produced.find((w) => criticalTarget(w))!)}: delete paths inside the workspace instead`;
      }
      argv = argv.includes("{}") ? argv.flatMap((a) => (a === "{}" ? produced : [a])) : [...argv, ...produced];
    }

    if (name === "cd" || name === "pushd") {
      const to = operandsOf(argv.slice(1))[0] ?? "~";
      ctx.cwd = to === "-" ? undefined : ctx.cwd && !/^[/~]/.test(to) ? joinPath(ctx.cwd, to) : to;
      return undefined;
    }
    if (ctx.cwd !== undefined && RESOLVES_OPERANDS.has(name)) {
      // After `cd /`, `rm -rf *` deletes `/*`.
      argv = [argv[0]!, ...argv.slice(1).map((a) => (/^[-/~+]/.test(a) || a.includes("=") ? a : joinPath(ctx.cwd!, a)))];
    }

    const rule = rules(name, argv.slice(1));
    if (rule) return rule;

    // `curl -o x.sh URL && sh x.sh`: the same as piping it, one step later.
    if (isDownloader(name)) for (const f of downloadedFiles(name, argv.slice(1), stmt, (w) => this.fields(w, ctx))) ctx.downloads?.add(f);
    if (ctx.downloads?.size) {
      const program = isInterpreter(name) && !interpreterReadsStdin(name, argv.slice(1)) ? operandsOf(argv.slice(1))[0] : argv[0];
      if (program !== undefined && ctx.downloads.has(fileKey(program))) {
        return `it runs ${show(program)}, downloaded in the same command, unreviewed: download it in one call, read it, then run it`;
      }
    }

    // Code from the network run by an interpreter: `curl … | sh`, `bash <(curl …)`, `eval "$(wget -O- …)"`.
    if (isInterpreter(name)) {
      const readsStdin = interpreterReadsStdin(name, argv.slice(1));
      if (readsStdin && ctx.upstream?.some((s) => this.contains(s, isDownloader))) {
        return `it pipes a download into ${name}, which runs it unreviewed: save it to a file in the workspace and read it first`;
      }
      if (readsStdin && ctx.upstream?.some((s) => this.contains(s, (c) => DECODERS.has(c)))) {
        return `it decodes text and pipes it into ${name}, which hides what runs: run the decoded command itself`;
      }
      const fed = [...(direct ? this.programWords(words, name) : []), ...(readsStdin ? stdinWords(stmt) : [])];
      if (fed.some((w: Node) => this.contains(w, isDownloader))) {
        return `it runs downloaded code with ${name} unreviewed: save it to a file in the workspace and read it first`;
      }
    }

    // Code given as a string (`sh -c`, `eval`, `trap`) or fed to a shell's stdin (`sh <<EOF`, `echo … | sh`): parse it again.
    const scripts = [inlineScript(name, argv.slice(1)), SHELLS.has(name) && interpreterReadsStdin(name, argv.slice(1)) ? this.stdinScript(stmt, ctx) : undefined];
    for (const script of scripts) {
      if (script === undefined) continue;
      if (ctx.depth >= MAX_DEPTH) {
        // Nobody nests shell code this deep by accident; stop parsing rather than let it hide.
        return `it nests shell code (\`${name}\` strings) more than ${MAX_DEPTH} levels deep: run the inner command directly`;
      }
      const vars = new Map(ctx.vars);
      script.positional.forEach((p, i) => vars.set(String(i), p));
      const inner = screenScript(script.code.replace(MAYBE_EMPTY_VAR, "").replaceAll(UNKNOWN, "x"), { depth: ctx.depth + 1, vars, cwd: ctx.cwd });
      if (inner) return inner;
    }
    if (name === "find") return this.find(argv.slice(1), stmt, words, ctx);
    return undefined;
  }

  /** `find ROOTS … -exec CMD {} ;` runs CMD on paths under ROOTS; `-delete` deletes them. */
  private find(args: string[], stmt: Node, words: Node[], ctx: Ctx): string | undefined {
    const firstExpr = args.findIndex((a) => a.startsWith("-") || a === "(" || a === "!");
    const roots = firstExpr < 0 ? args : args.slice(0, firstExpr);
    const searched = roots.length ? roots : ["."];
    const critical = searched.map(criticalTarget).find(Boolean);
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

  /** The script a shell reads from stdin when it is literal: a heredoc, a here-string, or `echo`/`printf` piped in. */
  private stdinScript(stmt: Node, ctx: Ctx): { code: string; positional: string[] } | undefined {
    for (const r of stmt?.Redirs ?? []) {
      const word = r.Op === REDIR.heredoc || r.Op === REDIR.heredocTabs ? r.Hdoc : r.Op === REDIR.hereString ? r.Word : undefined;
      if (word) return { code: this.fields(word, ctx, false)[0] ?? "", positional: [] };
    }
    const last = ctx.upstream?.[ctx.upstream.length - 1];
    const cmd = last?.Cmd;
    if (typeOf(cmd) !== "CallExpr" || !cmd.Args?.length) return undefined;
    const argv = unwrap((cmd.Args as Node[]).flatMap((w) => this.fields(w, ctx))).argv;
    const producer = commandName(argv[0] ?? "");
    if (producer !== "echo" && producer !== "printf") return undefined;
    const text = operandsOf(argv.slice(1)).join(" ");
    return { code: producer === "printf" || argv.includes("-e") ? text.replace(/\\n/g, "\n") : text, positional: [] };
  }

  /** The word that holds the program of an interpreter call: `-c CODE`, the script operand, or every word of `eval`. */
  private programWords(words: Node[], name: string): Node[] {
    const at = words.findIndex((w) => commandName(this.fields(w, { depth: 0, vars: new Map() })[0] ?? "") === name);
    const after = at < 0 ? [] : words.slice(at + 1);
    if (name === "eval") return after;
    for (let i = 0; i < after.length; i++) {
      const f = this.fields(after[i]!, { depth: 0, vars: new Map() })[0] ?? "";
      if (/^-[A-Za-z]*[ce]$/.test(f) || f === "--eval" || f === "--command") return after.slice(i + 1, i + 2);
      if (!f.startsWith("-")) return [after[i]!];
    }
    return [];
  }

  /** What a pipeline stage writes to stdin, as far as it is literal: the operands of `echo`, `printf`, `ls`, `find`. */
  private producedWords(stage: Node, ctx: Ctx): string[] {
    const out: string[] = [];
    walk(stage, (n) => {
      if (n && typeOf(n) === "CallExpr" && (n.Args ?? []).length) {
        const argv = unwrap((n.Args as Node[]).flatMap((w) => this.fields(w, ctx))).argv;
        for (const a of argv.slice(1)) if (!a.startsWith("-")) out.push(...a.split(/[\s\n]+|\\n/).filter(Boolean));
      }
      return true;
    });
    return out;
  }

  /** Whether a simple command under `node` (at any depth) satisfies `test`. */
  private contains(node: Node, test: (name: string) => boolean): boolean {
    let hit = false;
    walk(node, (n) => {
      if (hit || !n) return false;
      if (typeOf(n) === "CallExpr" && (n.Args ?? []).length) {
        const argv = unwrap((n.Args as Node[]).flatMap((w) => this.fields(w, { depth: 0, vars: new Map() }))).argv;
        if (argv.length && test(commandName(argv[0]!))) hit = true;
      }
      return !hit;
    });
    return hit;
  }

  /** A function that starts itself in the background or in a pipeline: `:(){ :|:& };:`. */
  private forkBomb(fn: Node): void {
    const name: string = fn.Name?.Value ?? "";
    if (!name || !fn.Body) return;
    const callsSelf = (n: Node) => this.contains(n, (c) => c === name);
    let found = false;
    walk(fn.Body, (n) => {
      if (found || !n) return false;
      const t = typeOf(n);
      if ((t === "Stmt" && n.Background && callsSelf(n.Cmd)) || (t === "BinaryCmd" && PIPE_OPS.has(n.Op) && callsSelf(n))) found = true;
      return !found;
    });
    if (found) throw new Found(`\`${name}\` is a fork bomb (a function that starts copies of itself in the background or a pipeline): write a bounded loop instead`);
  }

  /**
   * The fields a word expands to, statically: quotes removed, escapes applied, `${IFS}` splits,
   * `{a,b}` expands, known variables substituted; other expansions become the unknown markers.
   * With `split` false the word is one field (assignment values).
   */
  fields(word: Node, ctx: Ctx, split = true): string[] {
    let fields: string[][] = [[""]]; // alternatives per field, product built as we go
    let current = [""];
    const append = (alts: string[]) => {
      const next: string[] = [];
      for (const c of current) for (const a of alts) if (next.length < MAX_FIELDS) next.push(c + a);
      current = next;
    };
    const breakField = () => {
      if (current.some((c) => c !== "")) fields.push(current);
      current = [""];
    };
    fields = [];
    const parts: Node[] = word?.Parts ?? [];
    for (const part of parts) {
      switch (typeOf(part)) {
        case "Lit":
          append(braceExpand(unescapeUnquoted(part.Value)));
          break;
        case "SglQuoted":
          append([part.Dollar ? ansiC(part.Value) : part.Value]);
          break;
        case "DblQuoted":
          append([this.quoted(part.Parts ?? [], ctx)]);
          break;
        case "ParamExp": {
          const value = this.param(part, ctx);
          if (split && /[ \t\n]/.test(value)) {
            // Unquoted expansion with IFS whitespace (`rm${IFS}-rf${IFS}/`): word splitting.
            value.split(/[ \t\n]+/).forEach((piece, i) => {
              if (i > 0) breakField();
              if (piece) append([piece]);
            });
          } else append([value]);
          break;
        }
        default: // CmdSubst, ArithmExp, ProcSubst, ExtGlob, BraceExp
          append([typeOf(part) === "ExtGlob" ? this.text(part) : UNKNOWN]);
      }
    }
    breakField();
    if (!split) return [fields.flat()[0] ?? ""];
    return fields.flat().filter((f) => f !== "");
  }

  private quoted(parts: Node[], ctx: Ctx): string {
    let out = "";
    for (const p of parts) {
      const t = typeOf(p);
      if (t === "Lit") out += String(p.Value).replace(/\\([$`"\\\n])/g, (_m, c: string) => (c === "\n" ? "" : c));
      else if (t === "ParamExp") out += this.param(p, ctx);
      else out += UNKNOWN;
    }
    return out;
  }

  private param(p: Node, ctx: Ctx): string {
    const name: string = p.Param?.Value ?? "";
    if (p.Length || p.Excl || p.Index || p.Slice || p.Repl || p.Names) return UNKNOWN;
    const op: number | undefined = p.Exp?.Op;
    const known = knownVariable(name, ctx);
    if (op !== undefined && EXP_REQUIRED.has(op)) return known ?? UNKNOWN;
    if (op !== undefined && EXP_DEFAULT.has(op)) {
      if (known !== undefined && known !== "") return known;
      // Unset here: the default is what runs.
      return p.Exp.Word ? this.fields(p.Exp.Word, ctx, false)[0] ?? "" : "";
    }
    if (op !== undefined) return UNKNOWN;
    return known ?? `${MAYBE_EMPTY}${name}${MAYBE_EMPTY}`;
  }
}

/** Words fed to a command's stdin: `< FILE`, `<<< WORD`. */
function stdinWords(stmt: Node): Node[] {
  return (stmt?.Redirs ?? []).filter((r: Node) => (r.Op === REDIR.in || r.Op === REDIR.hereString) && r.Word).map((r: Node) => r.Word);
}

/** Files a downloader writes: `curl -o F`, `curl -O URL` (its last path segment), `wget -O F`, `> F`. */
function downloadedFiles(name: string, args: string[], stmt: Node, fields: (w: Node) => string[]): string[] {
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
  for (const r of stmt?.Redirs ?? []) if ((r.Op === REDIR.out || r.Op === REDIR.clobber) && r.Word) out.push(...fields(r.Word));
  return out.filter((f) => f && f !== "-").map(fileKey);
}

function fileKey(path: string): string {
  return path.replace(/^(?:\.\/)+/, "");
}

function typeOf(node: Node | undefined): string {
  return node?.type ?? "";
}

function knownVariable(name: string, ctx: Ctx): string | undefined {
  if (ctx.vars.has(name)) return ctx.vars.get(name);
  if (name === "HOME") return "~";
  if (name === "IFS") return " ";
  if (name === "PWD" || name === "OLDPWD" || name === "TMPDIR" || name === "USER" || name === "PATH") return UNKNOWN;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Word helpers.

function unescapeUnquoted(s: string): string {
  return s.replace(/\\(\n|.)/g, (_m, c: string) => (c === "\n" ? "" : c));
}

function ansiC(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/g, (_m, e: string) => {
    const simple: Record<string, string> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", e: "\x1b", E: "\x1b", f: "\f", v: "\v" };
    if (e[0] === "x" || e[0] === "u" || e[0] === "U") return String.fromCodePoint(parseInt(e.slice(1), 16));
    if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8));
    if (e[0] === "c") return String.fromCharCode(e.charCodeAt(1) & 31);
    return simple[e] ?? e;
  });
}

/** Bash brace expansion of unquoted text: `{a,b}`, `{1..3}`, nested; bounded by MAX_FIELDS. */
function braceExpand(s: string): string[] {
  const open = s.indexOf("{");
  if (open < 0) return [s];
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
          if (!range) return braceExpand(s.slice(i + 1)).map((r) => s.slice(0, i + 1) + r).slice(0, MAX_FIELDS);
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

function joinPath(dir: string, rel: string): string {
  const r = rel.replace(/^(?:\.\/)+/, "");
  return r === "." || r === "" ? dir : `${dir.replace(/\/+$/, "")}/${r}`;
}

function commandName(word: string): string {
  const i = word.lastIndexOf("/");
  return i >= 0 ? word.slice(i + 1) : word;
}

// ---------------------------------------------------------------------------------------------
// Wrappers: commands that run another command given in their arguments.

interface Unwrapped {
  argv: string[];
  /** The command also gets the words of its stdin as arguments (xargs, parallel without `:::`). */
  fromStdin?: boolean;
}

/** Strips `VAR=value`, `sudo`, `env`, `nice`, `timeout`, `xargs`, `busybox`, `parallel` … from the front. */
function unwrap(input: string[]): Unwrapped {
  let argv = input;
  let fromStdin = false;
  for (let guard = 0; guard < 16 && argv.length > 0; guard++) {
    const name = commandName(argv[0]!);
    if (/^[A-Za-z_]\w*=/.test(argv[0]!)) {
      argv = argv.slice(1);
      continue;
    }
    if (name === "busybox" || name === "toybox") {
      argv = argv.slice(1).filter((a, i) => i > 0 || !a.startsWith("-"));
      continue;
    }
    if (name === "command" && argv.slice(1).some((a) => a === "-v" || a === "-V")) return { argv: [] };
    if (name === "env") {
      const rest = argv.slice(1);
      const s = rest.findIndex((a) => a === "-S" || a.startsWith("--split-string") || /^-[^-]*S/.test(a));
      if (s >= 0) {
        const a = rest[s]!;
        const inline = a.startsWith("--split-string=") ? a.slice(15) : /^-[^-]*S(.+)$/.exec(a)?.[1];
        const str = inline ?? rest[s + 1] ?? "";
        argv = [...str.split(/\s+/).filter(Boolean), ...rest.slice(s + (inline ? 1 : 2))];
        continue;
      }
    }
    if (name === "xargs") {
      const { rest, replace } = skipXargsOptions(argv.slice(1));
      fromStdin = true;
      argv = rest.length ? rest : ["echo"];
      if (replace) argv = argv.map((a) => (a === replace ? "{}" : a));
      continue;
    }
    if (name === "parallel") {
      const rest = argv.slice(1);
      let i = 0;
      while (i < rest.length && rest[i]!.startsWith("-") && rest[i] !== ":::") i++;
      const sep = rest.findIndex((a) => a === ":::" || a === "::::" || a === ":::+");
      const cmd = rest.slice(i, sep < 0 ? undefined : sep);
      const inputs = sep < 0 ? [] : rest.slice(sep + 1).filter((a) => !a.startsWith(":::"));
      if (sep < 0) fromStdin = true;
      argv = cmd.some((a) => a.includes("{}")) ? cmd.flatMap((a) => (a === "{}" ? inputs : [a])) : [...cmd, ...inputs];
      if (cmd.length === 1 && inputs.length === 0 && /\s/.test(cmd[0]!)) argv = ["sh", "-c", cmd[0]!];
      continue;
    }
    if (name === "runuser" && argv.some((a) => a === "-c" || a.startsWith("--command"))) break;
    const valueOpts = WRAPPER_VALUE_OPTS[name];
    if (!valueOpts || (name === "time" && argv.length === 1)) break;
    let i = 1;
    while (i < argv.length) {
      const a = argv[i]!;
      if (a === "--") {
        i++;
        break;
      }
      if (/^[A-Za-z_]\w*=/.test(a) && (name === "env" || name === "sudo")) {
        i++;
        continue;
      }
      if (!a.startsWith("-") || a === "-") break;
      i++;
      if (valueOpts.has(a) && !a.includes("=")) i++;
      else if (name === "nice" && /^-\d+$/.test(a)) continue;
    }
    if (name === "timeout" && i < argv.length) i++; // the duration
    if ((name === "chrt" || name === "taskset") && i < argv.length) i++; // priority / mask
    if (name === "flock" && i < argv.length) i++; // the lock file
    if (name === "watch" && argv.length - i === 1) {
      argv = ["sh", "-c", argv[i]!];
      continue;
    }
    argv = argv.slice(i);
  }
  return { argv, fromStdin };
}

function skipXargsOptions(args: string[]): { rest: string[]; replace?: string } {
  const withValue = new Set(["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--max-lines", "--process-slot-var", "--replace"]);
  let replace: string | undefined;
  let i = 0;
  while (i < args.length && args[i]!.startsWith("-")) {
    const a = args[i]!;
    if (a === "--") {
      i++;
      break;
    }
    if (a === "-I" || a === "--replace") replace = args[i + 1];
    else if (a.startsWith("-I")) replace = a.slice(2);
    else if (a.startsWith("--replace=")) replace = a.slice(10);
    else if (a === "-i" || a.startsWith("-i")) replace = a.length > 2 ? a.slice(2) : "{}";
    i += withValue.has(a) ? 2 : 1;
  }
  return { rest: args.slice(i), replace };
}

// ---------------------------------------------------------------------------------------------
// Rules on a normalised argv.

function rules(name: string, args: string[]): string | undefined {
  const opts = optionsOf(args);
  const ops = operandsOf(args);

  if (name === "rm") {
    if (args.includes("--no-preserve-root")) return "`rm --no-preserve-root` can delete the whole filesystem: delete paths inside the workspace instead";
    if (opts.some((o) => o === "--recursive" || (/^-[^-]/.test(o) && /[rR]/.test(o)))) {
      for (const t of ops) {
        const what = criticalTarget(t);
        if (what) return `\`rm -r ${show(t)}\` would delete ${what}${emptyHint(t)}: delete paths inside the workspace instead (e.g. rm -rf ./build)`;
      }
    }
  }

  if (name === "chmod" || name === "chown" || name === "chgrp") {
    if (opts.some((o) => o === "--recursive" || (/^-[^-]/.test(o) && o.includes("R")))) {
      for (const t of ops) {
        const what = criticalTarget(t);
        if (what) return `\`${name} -R\` on ${show(t)} would change ${what}${emptyHint(t)}: change files inside the workspace instead`;
      }
    }
  }

  if (name === "mv") {
    for (const t of ops.slice(0, -1)) {
      const what = criticalTarget(t);
      if (what) return `\`mv ${show(t)}\` would move ${what} away${emptyHint(t)}: move files inside the workspace instead`;
    }
  }

  if (FORMATTERS.test(name)) return `\`${name}\` formats or wipes a disk or filesystem: this tool works on files in the workspace`;

  if (name === "dd") {
    for (const a of args) {
      if (!a.startsWith("of=")) continue;
      const why = writeTargetProblem(a.slice(3));
      if (why) return `\`dd ${show(a)}\` ${why}`;
    }
  }

  const writes = writtenOperands(name, args, ops);
  for (const t of writes) {
    const why = writeTargetProblem(t);
    if (why) return `\`${name}\` to ${show(t)} ${why}`;
  }

  if (POWER.has(name)) return `\`${name}\` would power off or restart the machine: ask the user to do it`;
  if ((name === "init" || name === "telinit") && /^[016sS]$/.test(ops[0] ?? "")) return `\`${name} ${ops[0]}\` would power off, restart or change the run level of the machine: ask the user to do it`;
  if ((name === "systemctl" || name === "loginctl") && ops.some((o) => SYSTEMCTL_POWER.has(o) || o === "isolate")) {
    return `\`${name} ${ops.find((o) => SYSTEMCTL_POWER.has(o) || o === "isolate")}\` would power off, suspend or restart the machine: ask the user to do it`;
  }

  if (name === "kill") {
    const targets = killTargets(args);
    if (targets.includes("-1")) return "`kill … -1` signals every process you can reach (the agent included): kill the one process you started, by its PID";
    if (targets.includes("1")) return "`kill 1` signals init, the process that keeps the system up: kill the one process you started, by its PID";
  }
  if (name === "killall5") return "`killall5` signals every process on the machine: kill the one process you started, by its PID";
  if (name === "pkill" || name === "killall") {
    const valued = new Set(["-u", "-U", "-g", "-G", "-P", "-s", "-t", "--signal", "--user", "--uid", "--group", "--parent", "--session", "--terminal", "-o", "-y"]);
    const patterns = args.filter((a, i) => !a.startsWith("-") && !valued.has(args[i - 1] ?? ""));
    if (patterns.some((p) => /^(?:\.[*+]?|\^|\$|\^\.\*\$?|\.\*\$|)$/.test(p))) {
      return `\`${name}\` with a pattern that matches every process would kill the agent and the system: name the one process you started`;
    }
    if (patterns.length === 0 && args.some((a) => a === "-u" || a === "--user" || a.startsWith("--user="))) {
      return `\`${name} -u\` without a process name kills every process of that user, the agent included: name the one process you started`;
    }
  }

  if (name === "crontab" && opts.some((o) => /^-[^-]*r/.test(o))) return "`crontab -r` deletes every scheduled job of the user without asking: edit the crontab instead (crontab -l to see it)";

  if ((name === "sed" || name === "perl") && opts.some((o) => /^-[^-]*i/.test(o) || o.startsWith("--in-place"))) {
    for (const t of ops) if (SYSTEM_WRITE.test(normalisePath(t) ?? "")) return `\`${name} -i\` on ${show(t)} would edit system configuration: work on files inside the workspace`;
  }
  return undefined;
}

/** Operands a command writes to: `tee FILE…`, `cp/mv/install/ln … DEST`, `shred/truncate FILE…`. */
function writtenOperands(name: string, args: string[], ops: string[]): string[] {
  if (name === "tee" || name === "shred" || name === "truncate") return ops;
  if (name === "cp" || name === "mv" || name === "install" || name === "ln" || name === "rsync") {
    const t = args.findIndex((a) => a === "-t" || a === "--target-directory");
    if (t >= 0 && args[t + 1]) return [args[t + 1]!];
    const inline = args.find((a) => a.startsWith("--target-directory="));
    if (inline) return [inline.slice(19)];
    return ops.length >= 2 ? [ops[ops.length - 1]!] : [];
  }
  return [];
}

/** Why writing `target` is out of bounds, as the end of a sentence, or undefined. */
function writeTargetProblem(target: string): string | undefined {
  const p = normalisePath(target);
  if (!p) return undefined;
  if (BLOCK_DEVICE.test(p)) return "writes straight to a disk or memory device and can destroy the system: write to a file in the workspace instead";
  if (SYSTEM_WRITE.test(p)) return "writes system configuration outside the workspace: write to a file in the workspace instead";
  return undefined;
}

function optionsOf(args: string[]): string[] {
  const end = args.indexOf("--");
  return (end < 0 ? args : args.slice(0, end)).filter((a) => a.startsWith("-") && a.length > 1);
}

/** Arguments that are not options (everything after `--` counts). */
function operandsOf(args: string[]): string[] {
  const out: string[] = [];
  let endOfOptions = false;
  for (const a of args) {
    if (!endOfOptions && a === "--") endOfOptions = true;
    else if (endOfOptions || !a.startsWith("-") || a === "-") out.push(a);
  }
  return out;
}

/** The PIDs `kill` would signal: `kill -9 -1`, `kill -s KILL -- -1`, `kill -1` (alone). */
function killTargets(args: string[]): string[] {
  let i = 0;
  if (args[0] === "-s" || args[0] === "-n" || args[0] === "--signal") i = 2;
  else if (args[0] === "-l" || args[0] === "-L" || args[0] === "--list") return [];
  else if (args.length > 1 && /^-(?:\d+|[A-Z][A-Z0-9+-]*|SIG\w+)$/.test(args[0] ?? "")) i = 1;
  if (args[i] === "--") i++;
  return args.slice(i);
}

/**
 * Lexically normalised absolute or home path (`~` kept as the first segment), or undefined for
 * relative paths and unknown prefixes. A possibly-empty variable counts as empty.
 */
function normalisePath(target: string): string | undefined {
  if (target.startsWith(UNKNOWN)) return undefined;
  const t = target.replace(MAYBE_EMPTY_VAR, "");
  if (!t.startsWith("/") && !t.startsWith("~")) return undefined;
  const out: string[] = [];
  const segs = t.split("/");
  const home = segs[0]!.startsWith("~") ? segs.shift()! : undefined;
  for (const s of segs) {
    if (s === "" || s === ".") continue;
    if (s === "..") out.pop();
    else out.push(s);
  }
  return (home ?? "") + "/" + out.join("/");
}

/** What deleting or re-owning `target` would hit, when that is the system or a home directory. */
function criticalTarget(target: string): string | undefined {
  const rel = target.replace(MAYBE_EMPTY_VAR, "");
  if (!target.startsWith(UNKNOWN) && !rel.startsWith("/") && !rel.startsWith("~")) {
    const segs: string[] = [];
    for (const seg of rel.split("/")) {
      if (seg === "" || seg === ".") continue;
      if (seg === ".." && segs.length > 0 && segs[segs.length - 1] !== "..") segs.pop();
      else segs.push(seg);
    }
    if (segs.length > 0 && segs[0] === ".." && segs.every((s) => s === ".." || /^[*?]+$/.test(s))) return "directories above the workspace";
    return undefined;
  }
  const p = normalisePath(target);
  if (p === undefined) return undefined;
  const segs = p.split("/").filter(Boolean);
  const glob = (s: string) => /[*?[]/.test(s);
  if (p.startsWith("~")) {
    const [, ...rest] = segs;
    if (rest.length === 0 || (rest.length === 1 && glob(rest[0]!) && /^\.?[*?[]/.test(rest[0]!))) return "the home directory";
    return undefined;
  }
  if (segs.length === 0) return "the whole filesystem";
  if (glob(segs[0]!)) return "every top-level directory of the system";
  if (SYSTEM_TREE.test(p)) return segs.length === 1 ? "a system directory" : "system files";
  if (!ROOT_DIRS.has(segs[0]!)) return undefined;
  if (segs.length === 1 || (segs.length === 2 && glob(segs[1]!) && !/[A-Za-z0-9]{3}/.test(segs[1]!))) return "a system directory";
  if ((segs[0] === "home" || segs[0] === "Users") && segs.length === 2) return "a home directory";
  return undefined;
}

function show(arg: string): string {
  return arg.replace(MAYBE_EMPTY_VAR, "$$$1").replaceAll(UNKNOWN, "…");
}

function emptyHint(arg: string): string {
  const name = new RegExp(MAYBE_EMPTY_VAR.source).exec(arg)?.[1];
  return name === undefined ? "" : ` if $${name} is empty (guard it: \${${name}:?})`;
}

function isDownloader(name: string): boolean {
  return DOWNLOADERS.has(name);
}

function isInterpreter(name: string): boolean {
  return SHELLS.has(name) || SCRIPT_INTERPRETERS.test(name) || name === "source" || name === "." || name === "eval";
}

/** Whether the interpreter takes its program from stdin: no `-c`/`-e`/`-m` and no script file (or `-`, `-s`, /dev/stdin). */
function interpreterReadsStdin(name: string, args: string[]): boolean {
  if (name === "source" || name === "." || name === "eval") return args.some((a) => a === "/dev/stdin" || a === "-" || a.startsWith("/dev/fd/") || a === "/proc/self/fd/0");
  const opts = optionsOf(args);
  if (opts.some((o) => o === "-s" || o === "-")) return true;
  if (SHELLS.has(name) && opts.some((o) => /^-[^-]*c/.test(o))) return false;
  if (!SHELLS.has(name) && opts.some((o) => /^-[^-]*[cemrE]/.test(o) || o === "--eval" || o === "--print")) return false;
  const ops = operandsOf(args);
  return ops.length === 0 || ops[0] === "-" || ops[0] === "/dev/stdin";
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
