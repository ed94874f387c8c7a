/**
 * The rules: one row per command family, each a pure check of one normalised, unwrapped argv.
 * Paths go through `call.path` (which applies a `cd` earlier in the line and `/proc/*\/root`)
 * before they are judged. Reasons are short sentences that fit after "refused because".
 */
import { optionsOf, operandsOf, parseArgs, type OptionSpec } from "./argv.js";
import { criticalTarget, emptyHint, normalisePath, show, writeTargetProblem } from "./paths.js";
import { FORMATTERS, PARTITIONERS, POWER, SYSTEMCTL_POWER, SYSTEM_WRITE } from "./vocabulary.js";

export interface Call {
  name: string;
  /** Arguments after the command name. */
  args: string[];
  /** A path as the command sees it: after a `cd` earlier in the line, `/proc/*\/root` followed. */
  path(p: string): string;
}

interface Rule {
  names: ReadonlySet<string> | RegExp;
  check(call: Call): string | undefined;
}

/** Options that write a file (`files`) or into a directory (`dirs`), per command, with the command's valued options. */
interface WriteOptions extends OptionSpec {
  files: readonly string[];
  dirs?: readonly string[];
  /** Operand positions written (0-based; -1 = last, when there are at least two). */
  operands?: readonly number[];
}

const WRITE_OPTIONS: Record<string, WriteOptions> = {
  curl: { valuedShort: "AbcCdDeEFHKmoPQrTuUwxXyYzt", valuedLong: ["output", "dump-header", "cookie-jar", "trace", "trace-ascii", "stderr", "etag-save", "output-dir", "header", "data", "request", "user", "url", "config"], files: ["-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "--etag-save"], dirs: ["--output-dir"] },
  wget: { valuedShort: "OoaPeiBtTwUQlARDXI", valuedLong: ["output-document", "output-file", "append-output", "directory-prefix"], files: ["-O", "--output-document", "-o", "--output-file", "-a", "--append-output"], dirs: ["-P", "--directory-prefix"] },
  sort: { valuedShort: "oktST", valuedLong: ["output", "key", "field-separator", "buffer-size", "temporary-directory"], files: ["-o", "--output"] },
  gcc: { valuedShort: "oIlLDUx", files: ["-o"] },
  patch: { valuedShort: "oipdDrBbFgVYz", valuedLong: ["output", "input", "directory", "reject-file"], files: ["-o", "--output", "-r", "--reject-file"] },
  iconv: { valuedShort: "oft", valuedLong: ["output", "from-code", "to-code"], files: ["-o", "--output"] },
  gpg: { valuedShort: "oruk", valuedLong: ["output", "recipient", "local-user", "homedir"], files: ["-o", "--output"] },
  "ssh-keygen": { valuedShort: "fbCNtZOnIsVzaEmP", files: ["-f"] },
  uniq: { valuedShort: "fsw", files: [], operands: [1] },
  xxd: { valuedShort: "cgloOsn", files: [], operands: [1] },
  unzip: { valuedShort: "dx", files: [], dirs: ["-d"] },
  ld: { valuedShort: "olLTe", files: ["-o"] },
};
for (const cc of ["cc", "c++", "g++", "clang", "clang++", "as", "tcc"]) WRITE_OPTIONS[cc] = WRITE_OPTIONS.gcc!;
WRITE_OPTIONS.gpg2 = WRITE_OPTIONS.gpg!;

/** The commands that write their last operand (with `-t DIR` / `--target-directory` instead when given). */
const COPIERS = new Set(["cp", "mv", "install", "ln", "rsync", "scp"]);
const COPIER_SPEC: OptionSpec = { valuedShort: "tSmogTe", valuedLong: ["target-directory", "suffix", "mode", "owner", "group"] };
const TAR_SPEC: OptionSpec = { valuedShort: "fCbgHKLNTVX", valuedLong: ["file", "directory", "exclude", "files-from", "format", "transform", "owner", "group", "mode"] };

const RULES: Rule[] = [
  { names: new Set(["rm"]), check: rm },
  { names: new Set(["chmod", "chown", "chgrp", "chattr", "setfacl"]), check: permissions },
  { names: new Set(["mv"]), check: move },
  { names: FORMATTERS, check: (c) => `\`${c.name}\` formats or wipes a disk or filesystem: this tool works on files in the workspace` },
  { names: PARTITIONERS, check: partition },
  { names: new Set(["dd"]), check: dd },
  { names: new Set(["tee", "shred", "truncate", "touch", "mkdir"]), check: (c) => writesAny(c, operandsOf(c.args)) },
  { names: COPIERS, check: copyDestination },
  { names: new Set(["tar", "bsdtar", "gtar"]), check: tar },
  { names: new Set(Object.keys(WRITE_OPTIONS)), check: writeOptions },
  { names: new Set(["openssl"]), check: (c) => writesAny(c, c.args.flatMap((a, i) => (a === "-out" ? [c.args[i + 1] ?? ""] : []))) },
  { names: POWER, check: (c) => `\`${c.name}\` would power off or restart the machine: ask the user to do it` },
  { names: new Set(["init", "telinit"]), check: runLevel },
  { names: new Set(["systemctl", "loginctl"]), check: systemctl },
  { names: new Set(["kill"]), check: kill },
  { names: new Set(["killall5"]), check: () => "`killall5` signals every process on the machine: kill the one process you started, by its PID" },
  { names: new Set(["pkill", "killall"]), check: killByName },
  { names: new Set(["crontab"]), check: (c) => (optionsOf(c.args).some((o) => /^-[^-]*r/.test(o)) ? "`crontab -r` deletes every scheduled job of the user without asking: edit the crontab instead (crontab -l to see it)" : undefined) },
  { names: new Set(["sed", "perl"]), check: inPlace },
];

/** The first rule's reason for `call`, or undefined. */
export function checkRules(call: Call): string | undefined {
  for (const rule of RULES) {
    const hit = rule.names instanceof RegExp ? rule.names.test(call.name) : rule.names.has(call.name);
    if (!hit) continue;
    const why = rule.check(call);
    if (why) return why;
  }
  return undefined;
}

/** Why writing any of `targets` is out of bounds, worded for `call`. */
export function writesAny(call: Call, targets: readonly string[]): string | undefined {
  for (const t of targets) {
    const why = writeTargetProblem(call.path(t));
    if (why) return `\`${call.name}\` to ${show(t)} ${why}`;
  }
  return undefined;
}

function intoDirectory(call: Call, dirs: readonly string[]): string | undefined {
  for (const d of dirs) {
    const p = normalisePath(call.path(d));
    const why = writeTargetProblem(call.path(d)) ?? (p === "/" ? "writes into the root of the filesystem: write inside the workspace instead" : undefined);
    if (why) return `\`${call.name}\` into ${show(d)} ${why}`;
  }
  return undefined;
}

function rm(c: Call): string | undefined {
  if (c.args.includes("--no-preserve-root")) return "`rm --no-preserve-root` can delete the whole filesystem: delete paths inside the workspace instead";
  if (!optionsOf(c.args).some((o) => o === "--recursive" || (/^-[^-]/.test(o) && /[rR]/.test(o)))) return undefined;
  for (const t of operandsOf(c.args)) {
    const what = criticalTarget(c.path(t));
    if (what) return `\`rm -r ${show(t)}\` would delete ${what}${emptyHint(t)}: delete paths inside the workspace instead (e.g. rm -rf ./build)`;
  }
  return undefined;
}

function permissions(c: Call): string | undefined {
  const recursive = optionsOf(c.args).some((o) => o === "--recursive" || (/^-[^-]/.test(o) && o.includes("R")));
  const ops = operandsOf(c.args);
  const targets = c.args.some((a) => a.startsWith("--reference")) || c.name === "chattr" || c.name === "setfacl" ? ops : ops.slice(1);
  for (const t of targets) {
    const p = c.path(t);
    const what = recursive ? criticalTarget(p) : SYSTEM_WRITE.test(normalisePath(p) ?? "") ? "system files" : undefined;
    if (what) return `\`${c.name}${recursive ? " -R" : ""}\` on ${show(t)} would change ${what}${emptyHint(t)}: change files inside the workspace instead`;
  }
  return undefined;
}

function move(c: Call): string | undefined {
  const parsed = parseArgs(c.args, COPIER_SPEC);
  const target = parsed.values.get("-t") ?? parsed.values.get("--target-directory");
  const sources = target ? parsed.operands : parsed.operands.slice(0, -1);
  for (const t of sources) {
    const what = criticalTarget(c.path(t));
    if (what) return `\`mv ${show(t)}\` would move ${what} away${emptyHint(t)}: move files inside the workspace instead`;
  }
  return undefined;
}

function partition(c: Call): string | undefined {
  const listing = c.name === "parted" ? /^(?:-l|--list|-v|--version|-h|--help)$/ : /^(?:-l|--list|-s|--show-size|-d|--dump|-J|--json|-V|--verify|-p|--print|-v|--version|-h|--help|--list-free|-F)$/;
  const opts = optionsOf(c.args);
  if (opts.length > 0 && opts.every((o) => listing.test(o))) return undefined;
  if (c.name === "parted" && operandsOf(c.args).slice(1).every((o) => o === "print" || o === "p") && operandsOf(c.args).length > 1) return undefined;
  return `\`${c.name}\` edits a disk's partition table and can destroy every filesystem on it: this tool works on files in the workspace (\`${c.name} -l\` only lists)`;
}

function dd(c: Call): string | undefined {
  for (const a of c.args) {
    if (!a.startsWith("of=")) continue;
    const why = writeTargetProblem(c.path(a.slice(3)));
    if (why) return `\`dd ${show(a)}\` ${why}`;
  }
  return undefined;
}

function copyDestination(c: Call): string | undefined {
  const parsed = parseArgs(c.args, COPIER_SPEC);
  const target = [...(parsed.values.get("-t") ?? []), ...(parsed.values.get("--target-directory") ?? [])];
  if (target.length) return writesAny(c, target);
  return parsed.operands.length >= 2 ? writesAny(c, [parsed.operands[parsed.operands.length - 1]!]) : undefined;
}

function tar(c: Call): string | undefined {
  const args = c.args[0] && /^[A-Za-z]+$/.test(c.args[0]) && /[cxtru]/.test(c.args[0]) ? [`-${c.args[0]}`, ...c.args.slice(1)] : c.args;
  const parsed = parseArgs(args, TAR_SPEC);
  const has = (short: string, long: string) => parsed.flags.has(short) || parsed.flags.has(long);
  if (has("-c", "--create") || has("-r", "--append") || has("-u", "--update")) {
    const files = [...(parsed.values.get("-f") ?? []), ...(parsed.values.get("--file") ?? [])].filter((f) => f !== "-");
    const why = writesAny(c, files);
    if (why) return why;
  }
  if (has("-x", "--extract") || parsed.flags.has("--get")) {
    return intoDirectory(c, [...(parsed.values.get("-C") ?? []), ...(parsed.values.get("--directory") ?? [])]);
  }
  return undefined;
}

function writeOptions(c: Call): string | undefined {
  const spec = WRITE_OPTIONS[c.name]!;
  const parsed = parseArgs(c.args, spec);
  const files = spec.files.flatMap((k) => parsed.values.get(k) ?? []).filter((f) => f !== "-");
  const ops = spec.operands?.map((i) => parsed.operands[i]).filter((o): o is string => o !== undefined) ?? [];
  return writesAny(c, [...files, ...ops]) ?? intoDirectory(c, (spec.dirs ?? []).flatMap((k) => parsed.values.get(k) ?? []));
}

function runLevel(c: Call): string | undefined {
  const op = operandsOf(c.args)[0] ?? "";
  return /^[016sS]$/.test(op) ? `\`${c.name} ${op}\` would power off, restart or change the run level of the machine: ask the user to do it` : undefined;
}

function systemctl(c: Call): string | undefined {
  const op = operandsOf(c.args).find((o) => SYSTEMCTL_POWER.has(o) || o === "isolate");
  return op ? `\`${c.name} ${op}\` would power off, suspend or restart the machine: ask the user to do it` : undefined;
}

/** The PIDs `kill` would signal: `kill -9 -1`, `kill -s KILL -- -1`, `kill -1` (alone). */
function kill(c: Call): string | undefined {
  const args = c.args;
  let i = 0;
  if (args[0] === "-s" || args[0] === "-n" || args[0] === "--signal") i = 2;
  else if (args[0] === "-l" || args[0] === "-L" || args[0] === "--list") return undefined;
  else if (args.length > 1 && /^-(?:\d+|[A-Z][A-Z0-9+-]*|SIG\w+)$/.test(args[0] ?? "")) i = 1;
  if (args[i] === "--") i++;
  const targets = args.slice(i);
  if (targets.includes("-1")) return "`kill … -1` signals every process you can reach (the agent included): kill the one process you started, by its PID";
  if (targets.includes("1")) return "`kill 1` signals init, the process that keeps the system up: kill the one process you started, by its PID";
  return undefined;
}

function killByName(c: Call): string | undefined {
  const valued = new Set(["-u", "-U", "-g", "-G", "-P", "-s", "-t", "--signal", "--user", "--uid", "--group", "--parent", "--session", "--terminal", "-o", "-y"]);
  const patterns = c.args.filter((a, i) => !a.startsWith("-") && !valued.has(c.args[i - 1] ?? ""));
  if (patterns.some((p) => /^(?:\.[*+]?|\^|\$|\^\.\*\$?|\.\*\$|)$/.test(p))) {
    return `\`${c.name}\` with a pattern that matches every process would kill the agent and the system: name the one process you started`;
  }
  if (patterns.length === 0 && c.args.some((a) => a === "-u" || a === "--user" || a.startsWith("--user="))) {
    return `\`${c.name} -u\` without a process name kills every process of that user, the agent included: name the one process you started`;
  }
  return undefined;
}

function inPlace(c: Call): string | undefined {
  if (!optionsOf(c.args).some((o) => /^-[^-]*i/.test(o) || o.startsWith("--in-place"))) return undefined;
  for (const t of operandsOf(c.args)) {
    if (SYSTEM_WRITE.test(normalisePath(c.path(t)) ?? "")) return `\`${c.name} -i\` on ${show(t)} would edit system configuration: work on files inside the workspace`;
  }
  return undefined;
}
