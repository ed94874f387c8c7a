/**
 * Commands that run another command given in their arguments (`sudo`, `env`, `nice`, `timeout`,
 * `chroot`, `xargs`, `busybox`, …): peeled off the front of an argv so the rules see the command
 * that really runs, with what the wrapper changes about it (a working directory, stdin words).
 */
import { commandName } from "./paths.js";

export interface Unwrapped {
  argv: string[];
  /** The command also gets the words of its stdin as arguments (xargs, parallel without `:::`). */
  fromStdin?: boolean;
  /** xargs `-0` / `-d`: stdin items are whole lines or records, not words. */
  records?: boolean;
  /** A working directory set by the wrapper (`env -C DIR`, `sudo -D DIR`). */
  cwd?: string;
  /** Files a wrapper itself writes (`time -o F`, `strace -o F`). */
  writes: string[];
}

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
  ltrace: new Set(["-o", "-e", "-p", "-s", "-u", "-n"]),
  chroot: new Set([]),
  nsenter: new Set(["-t", "--target", "-S", "--setuid", "-G", "--setgid"]),
  setpriv: new Set([]),
  prlimit: new Set(["-p", "--pid"]),
  "systemd-run": new Set(["-p", "--property", "-u", "--unit", "--description", "-E", "--setenv", "--uid", "--gid", "--slice", "-M", "--machine", "--working-directory", "--on-active", "--on-calendar"]),
  fakeroot: new Set(["-l", "--lib", "--faked", "-s", "-i"]),
  faketime: new Set(["-m", "-f"]),
  numactl: new Set(["-C", "-N", "-m", "-p", "-i", "--physcpubind", "--cpunodebind", "--membind", "--preferred", "--interleave"]),
  valgrind: new Set([]),
  "xvfb-run": new Set(["-n", "--server-num", "-s", "--server-args", "-f", "--auth-file", "-e", "--error-file", "-p", "--xauth-protocol", "-l"]),
  unbuffer: new Set([]),
  firejail: new Set([]),
  catchsegv: new Set([]),
  proxychains: new Set(["-f"]),
  proxychains4: new Set(["-f"]),
  torsocks: new Set([]),
  rlwrap: new Set([]),
  "dbus-run-session": new Set([]),
  sg: new Set([]),
};

/** Wrappers whose first operand is not the command: a duration, a priority, a mask, a lock file, a root. */
const LEADING_OPERAND = new Set(["timeout", "chrt", "taskset", "flock", "chroot", "faketime"]);

/** Strips `VAR=value`, `sudo`, `env`, `nice`, `timeout`, `xargs`, `busybox`, `parallel`, `chroot` … from the front. */
export function unwrap(input: readonly string[]): Unwrapped {
  let argv = [...input];
  let fromStdin = false;
  let records = false;
  let cwd: string | undefined;
  const writes: string[] = [];
  for (let guard = 0; guard < 24 && argv.length > 0; guard++) {
    const name = commandName(argv[0]!);
    if (/^[A-Za-z_]\w*=/.test(argv[0]!)) {
      argv = argv.slice(1);
      continue;
    }
    if (name === "busybox" || name === "toybox") {
      argv = argv.slice(1).filter((a, i) => i > 0 || !a.startsWith("-"));
      continue;
    }
    if (name === "command" && argv.slice(1).some((a) => a === "-v" || a === "-V")) return { argv: [], writes };
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
    if (name === "script") {
      const rest = argv.slice(1);
      const c = rest.findIndex((a) => a === "-c" || a === "--command" || /^-[a-z]*c$/.test(a));
      if (c >= 0 && rest[c + 1] !== undefined) {
        argv = ["sh", "-c", rest[c + 1]!];
        continue;
      }
      const inline = rest.find((a) => a.startsWith("--command="));
      if (inline) {
        argv = ["sh", "-c", inline.slice(10)];
        continue;
      }
      break;
    }
    if (name === "xargs") {
      const { rest, replace, delimited } = skipXargsOptions(argv.slice(1));
      fromStdin = true;
      records ||= delimited;
      argv = rest.length ? rest : ["echo"];
      if (replace) argv = argv.map((a) => a.replaceAll(replace, "{}"));
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
      if ((name === "env" || name === "sudo") && (a === "-C" || a === "-D" || a === "--chdir")) {
        const dir = name === "env" && a === "-D" ? undefined : argv[i + 1];
        if (dir !== undefined && !(name === "sudo" && a === "-C")) cwd = dir;
      } else if ((name === "env" || name === "sudo") && a.startsWith("--chdir=")) cwd = a.slice(8);
      else if (name === "env" && /^-C./.test(a)) cwd = a.slice(2);
      else if ((name === "time" || name === "strace" || name === "ltrace") && (a === "-o" || a === "--output")) writes.push(argv[i + 1] ?? "");
      else if ((name === "time" || name === "strace" || name === "ltrace") && a.startsWith("--output=")) writes.push(a.slice(9));
      i++;
      if (valueOpts.has(a) && !a.includes("=")) i++;
      else if (name === "nice" && /^-\d+$/.test(a)) continue;
    }
    // Paths inside `chroot DIR` are the new root's: judged as written, which errs on refusing.
    if (LEADING_OPERAND.has(name) && i < argv.length) i++;
    if (name === "watch" && argv.length - i === 1) {
      argv = ["sh", "-c", argv[i]!];
      continue;
    }
    argv = argv.slice(i);
  }
  return { argv, fromStdin, records, cwd, writes };
}

function skipXargsOptions(args: string[]): { rest: string[]; replace?: string; delimited: boolean } {
  const withValue = new Set(["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--max-lines", "--process-slot-var", "--replace"]);
  let replace: string | undefined;
  let delimited = false;
  let i = 0;
  while (i < args.length && args[i]!.startsWith("-")) {
    const a = args[i]!;
    if (a === "--") {
      i++;
      break;
    }
    if (a === "-0" || a === "--null" || a === "-d" || a.startsWith("--delimiter") || /^-d./.test(a)) delimited = true;
    if (a === "-I" || a === "--replace") replace = args[i + 1];
    else if (a.startsWith("-I")) replace = a.slice(2);
    else if (a.startsWith("--replace=")) replace = a.slice(10);
    else if (a === "-i" || a.startsWith("-i")) replace = a.length > 2 ? a.slice(2) : "{}";
    i += withValue.has(a) ? 2 : 1;
  }
  return { rest: args.slice(i), replace: replace === "" ? undefined : replace, delimited };
}
