/**
 * The regex command screen that src/guards/commands.ts replaced, kept only as the anchor of
 * bench/commands.bench.ts (not shipped, not imported by the package).
 *
 * A static screen for shell commands that can wreck the machine rather than the workspace:
 * deleting or re-permissioning `/` or the home directory, formatting or overwriting disks, fork
 * bombs, piping a download into a shell, powering the machine off.
 *
 * It is a seatbelt, not a sandbox: it reads the command the way a shell would (quotes, escapes,
 * `;` `&&` `||` `|` `&`, `$(…)`, redirections, `sudo`/`env` prefixes, `bash -c '…'`) so that
 * `echo "rm -rf /"` passes and `sudo  rm -fr -- "$HOME"` does not, but a determined caller can
 * always hide intent (variables, base64). Pair it with human approval for real safety.
 */

interface Segment {
  words: string[];
  /** Targets of output redirections (`>`, `>>`, `&>`, `2>`…). */
  writes: string[];
  /** The operator that ended this segment (`|`, `;`, `&&`, …; `""` at the end). */
  op: string;
}

const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox"]);
const DOWNLOADERS = new Set(["curl", "wget", "fetch", "aria2c"]);
const POWER = new Set(["shutdown", "reboot", "halt", "poweroff"]);
const WRAPPERS = new Set(["sudo", "doas", "command", "builtin", "exec", "nohup", "nice", "time", "env", "stdbuf", "ionice", "timeout"]);
const ROOT_DIRS = ["bin", "boot", "dev", "etc", "home", "lib", "lib64", "opt", "proc", "root", "sbin", "sys", "usr", "var", "Users", "System", "Library"];
const BLOCK_DEVICE = /^\/dev\/(?:sd[a-z]|nvme\d|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d|dm-\d|md\d|mapper\/|loop\d|root\b)/;
const FORK_BOMB = /([A-Za-z_:.][\w:.-]*)\s*\(\)\s*\{\s*\1\s*\|\s*\1\s*&?\s*;?\s*\}/;
const SHELL_FROM_DOWNLOAD = /\b(?:ba|z|da|k)?sh\b[^;&|\n]*(?:<\(|\$\(|`)\s*(?:curl|wget)\b/;
const MAX_DEPTH = 4;

/**
 * Why `command` looks destructive beyond the workspace, or `null` when nothing matched.
 * Never throws.
 */
export function isDangerousCommand(command: string): string | null {
  if (typeof command !== "string") return null;
  try {
    return screen(command, 0);
  } catch {
    return null;
  }
}

function screen(command: string, depth: number): string | null {
  const flat = command.replace(/\s+/g, " ");
  if (FORK_BOMB.test(flat)) return "it is a fork bomb (a function that pipes into itself in the background)";
  if (SHELL_FROM_DOWNLOAD.test(flat)) return "it runs a downloaded script in a shell without review";
  const segments = splitSegments(command);
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    for (const target of seg.writes) {
      if (BLOCK_DEVICE.test(target)) return `it writes directly to the block device ${target}`;
    }
    const words = stripWrappers(seg.words);
    const cmd = baseName(words[0] ?? "");
    const args = words.slice(1);
    const why = screenCommand(cmd, args, depth);
    if (why) return why;
    if (DOWNLOADERS.has(cmd) && seg.op === "|") {
      const next = segments[i + 1];
      const nextCmd = next ? baseName(stripWrappers(next.words)[0] ?? "") : "";
      if (SHELLS.has(nextCmd)) return `it pipes a download (${cmd}) straight into a shell (${nextCmd})`;
    }
  }
  return null;
}

function screenCommand(cmd: string, args: string[], depth: number): string | null {
  if (cmd === "rm") {
    if (args.includes("--no-preserve-root")) return "rm --no-preserve-root can delete the whole filesystem";
    if (hasRecursiveFlag(args)) {
      const hit = operands(args).find(isCriticalTarget);
      if (hit !== undefined) return `rm -r of ${hit} would delete the system or home directory`;
    }
  }
  if (/^mkfs(?:\..+)?$/.test(cmd) || cmd === "mke2fs" || cmd === "wipefs") return `${cmd} formats or wipes a filesystem`;
  if (cmd === "dd") {
    const out = args.find((a) => a.startsWith("of="));
    if (out && BLOCK_DEVICE.test(out.slice(3))) return `dd writes directly to the block device ${out.slice(3)}`;
  }
  if (cmd === "chmod" || cmd === "chown" || cmd === "chgrp") {
    if (hasRecursiveFlag(args)) {
      const hit = operands(args).find(isCriticalTarget);
      if (hit !== undefined) return `${cmd} -R on ${hit} would change permissions across the system`;
    }
  }
  if (POWER.has(cmd)) return `${cmd} would power off or restart the machine`;
  if ((cmd === "init" || cmd === "telinit") && (args[0] === "0" || args[0] === "6")) return `${cmd} ${args[0]} would power off or restart the machine`;
  if (cmd === "systemctl" && args.some((a) => ["poweroff", "reboot", "halt", "kexec", "emergency", "rescue"].includes(a))) {
    return "systemctl would power off or restart the machine";
  }
  if (cmd === "find" && isCriticalTarget(args[0] ?? "") && args.some((a) => a === "-delete" || a === "rm")) {
    return `find ${args[0]} … -delete would delete across the system`;
  }
  if (depth < MAX_DEPTH) {
    if (SHELLS.has(cmd)) {
      const c = args.findIndex((a) => /^-[a-z]*c[a-z]*$/.test(a));
      if (c >= 0 && args[c + 1] !== undefined) return screen(args[c + 1]!, depth + 1);
    }
    if (cmd === "eval" || cmd === "xargs") {
      const inner = cmd === "eval" ? args.join(" ") : operands(args).join(" ");
      if (inner) return screen(inner, depth + 1);
    }
  }
  return null;
}

function hasRecursiveFlag(args: string[]): boolean {
  return args.some((a) => a === "--recursive" || /^-[A-Za-z]*[rR][A-Za-z]*$/.test(a));
}

/** Arguments that are not options (everything after `--` counts). */
function operands(args: string[]): string[] {
  const out: string[] = [];
  let endOfOptions = false;
  for (const a of args) {
    if (!endOfOptions && a === "--") endOfOptions = true;
    else if (endOfOptions || !a.startsWith("-")) out.push(a);
  }
  return out;
}

/** `/`, `/*`, `~`, `$HOME` and top-level system directories, with or without `/`, `/*`, `/.`. */
function isCriticalTarget(target: string): boolean {
  const t = target.replace(/^\$\{HOME\}|^\$HOME/, "~").replace(/(?:\/\*|\/\.|\/)+$/, "");
  if (t === "") return target.startsWith("/");
  if (t === "~") return true;
  const m = /^\/+([^/]+)$/.exec(t);
  return m !== null && ROOT_DIRS.includes(m[1]!);
}

function baseName(word: string): string {
  const i = word.lastIndexOf("/");
  return i >= 0 ? word.slice(i + 1) : word;
}

/** Drops `VAR=value` prefixes and wrappers such as `sudo -u root`, `env -i`, `nice -n 5`, `timeout 5`. */
function stripWrappers(words: string[]): string[] {
  let i = 0;
  while (i < words.length) {
    const w = words[i]!;
    if (/^[A-Za-z_]\w*=/.test(w)) {
      i++;
      continue;
    }
    const name = baseName(w);
    if (!WRAPPERS.has(name)) break;
    i++;
    while (i < words.length && (words[i]!.startsWith("-") || /^[A-Za-z_]\w*=/.test(words[i]!))) {
      // Options that take a value: sudo -u USER, nice -n N, timeout's duration handled below.
      const opt = words[i]!;
      i++;
      if (/^-[ugnCDhprTU]$/.test(opt) && i < words.length) i++;
    }
    if (name === "timeout" && i < words.length && /^\d/.test(words[i]!)) i++;
  }
  return words.slice(i);
}

/**
 * Splits a command line into simple commands the way a shell tokenizer would: quotes and
 * backslashes group characters into one word; `;` `&` `|` `&&` `||` newlines `(` `)` backticks
 * and `$(` end a command; `>`-style redirections record their target.
 */
function splitSegments(input: string): Segment[] {
  const segments: Segment[] = [];
  let words: string[] = [];
  let writes: string[] = [];
  let word = "";
  let inWord = false;
  let pendingWrite = false;

  const endWord = () => {
    if (!inWord) return;
    if (pendingWrite) {
      writes.push(word);
      pendingWrite = false;
    } else {
      words.push(word);
    }
    word = "";
    inWord = false;
  };
  const endSegment = (op: string) => {
    endWord();
    if (words.length > 0 || writes.length > 0) segments.push({ words, writes, op });
    else if (segments.length > 0 && op !== "") segments[segments.length - 1]!.op ||= op;
    words = [];
    writes = [];
    pendingWrite = false;
  };

  for (let i = 0; i < input.length; i++) {
    const ch = input[i]!;
    const next = input[i + 1];
    if (ch === "'") {
      const close = input.indexOf("'", i + 1);
      const end = close < 0 ? input.length : close;
      word += input.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (ch === '"') {
      let j = i + 1;
      for (; j < input.length && input[j] !== '"'; j++) {
        if (input[j] === "\\" && j + 1 < input.length) word += input[++j];
        else word += input[j];
      }
      inWord = true;
      i = j;
    } else if (ch === "\\") {
      if (next !== undefined && next !== "\n") word += next;
      inWord = inWord || next !== "\n";
      i++;
    } else if (ch === " " || ch === "\t") {
      endWord();
    } else if (ch === ">" || (ch === "&" && next === ">")) {
      if (inWord && /^\d+$/.test(word)) {
        word = "";
        inWord = false;
      } else {
        endWord();
      }
      if (ch === "&") i++;
      while (input[i + 1] === ">" || input[i + 1] === "|" || input[i + 1] === "&") i++;
      if (input[i] === "&" && /\d|-/.test(input[i + 1] ?? "")) continue; // 2>&1: fd duplication
      pendingWrite = true;
    } else if (ch === "<" && next === "(") {
      endSegment("<(");
      i++;
    } else if (ch === "$" && next === "(") {
      endSegment("$(");
      i++;
    } else if (ch === "|" || ch === "&" || ch === ";" || ch === "\n" || ch === "(" || ch === ")" || ch === "`") {
      const two = next === ch && (ch === "|" || ch === "&" || ch === ";");
      endSegment(two ? ch + ch : ch);
      if (two) i++;
    } else {
      word += ch;
      inWord = true;
    }
  }
  endSegment("");
  return segments;
}
