/**
 * Reading an argv the way its command would: options, operands, and the values of the options
 * a command takes (`-o FILE`, `-oFILE`, `-so FILE`, `--output=FILE`, `--output FILE`).
 */

/** The options of a command that take a value, and among them the ones this screen wants. */
export interface OptionSpec {
  /** Short options (letters) that take a value. */
  valuedShort: string;
  /** Long options (without `--`) that take a separate value when given without `=`. */
  valuedLong?: readonly string[];
}

export function optionsOf(args: readonly string[]): string[] {
  const end = args.indexOf("--");
  return (end < 0 ? args : args.slice(0, end)).filter((a) => a.startsWith("-") && a.length > 1);
}

/** Arguments that are not options (everything after `--` counts). */
export function operandsOf(args: readonly string[]): string[] {
  const out: string[] = [];
  let endOfOptions = false;
  for (const a of args) {
    if (!endOfOptions && a === "--") endOfOptions = true;
    else if (endOfOptions || !a.startsWith("-") || a === "-") out.push(a);
  }
  return out;
}

export interface ParsedArgs {
  /** Option name (`-o`, `--output`) → its values, in order. */
  values: Map<string, string[]>;
  /** Flags seen (`-r` from `-rf` counts as `-r`; long flags as written, without `=…`). */
  flags: Set<string>;
  operands: string[];
}

/** Splits `args` by `spec`: values of valued options, flags, and operands (the values excluded). */
export function parseArgs(args: readonly string[], spec: OptionSpec): ParsedArgs {
  const values = new Map<string, string[]>();
  const flags = new Set<string>();
  const operands: string[] = [];
  const put = (k: string, v: string | undefined) => {
    if (v === undefined) return;
    const list = values.get(k) ?? [];
    list.push(v);
    values.set(k, list);
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const key = eq < 0 ? a : a.slice(0, eq);
      if (eq >= 0) put(key, a.slice(eq + 1));
      else if (spec.valuedLong?.includes(key.slice(2))) put(key, args[++i]);
      else flags.add(key);
      continue;
    }
    if (a.startsWith("-") && a.length > 1) {
      for (let j = 1; j < a.length; j++) {
        const c = a[j]!;
        if (spec.valuedShort.includes(c)) {
          put(`-${c}`, j + 1 < a.length ? a.slice(j + 1) : args[++i]);
          break;
        }
        flags.add(`-${c}`);
      }
      continue;
    }
    operands.push(a);
  }
  return { values, flags, operands };
}
