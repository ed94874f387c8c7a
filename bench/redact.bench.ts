/**
 * Redaction at the field's level (issue 23 item 8): recall and false positives on the generated
 * field corpus (tests/fixtures/redact-field-corpus.json, ≥ 1,000 secrets, ≥ 150 formats, 18
 * context shapes, benign look-alikes) and on the older corpus (tests/fixtures/redaction-corpus),
 * and throughput on a 10 MB mixed file, against the anchor in the same run: `redactSecrets` as it
 * was before the detector split and the gitleaks rule set (commit 75d97d5, read with `git show`
 * into .bench-data/, so no second copy lives in the repository). Per-detector times come last.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { redactSecrets } from "../src/guards/redact.js";
import { SECRET_DETECTORS } from "../src/guards/redact/engine.js";
import { TextScan } from "../src/guards/redact/scan.js";
import { loadCorpus, score } from "../tests/fixtures/redaction-corpus/index.js";
import { loadFieldCorpus, scoreField, type FieldScore } from "../tests/fixtures/redactFieldCorpus.js";
import { median } from "./fixtures.js";

const ANCHOR_COMMIT = "75d97d5";
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

type Redact = (text: string, opts?: { startsMidFile?: boolean }) => string;

/** `redactSecrets` of the anchor commit, written out of git into .bench-data/ and imported. */
async function anchorRedact(): Promise<Redact> {
  const dir = path.join(repoRoot, ".bench-data", `redact-anchor-${ANCHOR_COMMIT}`);
  mkdirSync(dir, { recursive: true });
  for (const f of ["redact.ts", "secretPatterns.ts", "regexp.ts"]) {
    writeFileSync(path.join(dir, f), execFileSync("git", ["show", `${ANCHOR_COMMIT}:src/guards/${f}`], { cwd: repoRoot }));
  }
  const mod = (await import(pathToFileURL(path.join(dir, "redact.ts")).href)) as { redactSecrets: Redact };
  return mod.redactSecrets;
}

/** Config and code lines with a secret every 40 lines (the mix bench/redaction.bench.ts uses). */
function mixedText(bytes: number): string {
  const { secrets, benign } = loadCorpus();
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = i % 40 === 39 ? secrets[i % secrets.length]!.text : benign[i % benign.length]!;
    parts.push(line);
    size += line.length + 1;
  }
  return parts.join("\n");
}

/**
 * Median CPU ms (user + system of this process; the work is single-threaded) of each contender,
 * runs interleaved: other work on a shared machine moves wall-clock times far more than this.
 */
function interleaved(fns: Array<(t: string) => unknown>, text: string, runs: number): number[] {
  for (const fn of fns) fn(text.slice(0, 200_000));
  const times = fns.map(() => [] as number[]);
  for (let r = 0; r < runs; r++) {
    fns.forEach((fn, k) => {
      const c0 = process.cpuUsage();
      fn(text);
      const c = process.cpuUsage(c0);
      times[k]!.push((c.user + c.system) / 1000);
    });
  }
  return times.map(median);
}

/** Median CPU ms of one detector given a scan already made (the shared literal scan is timed on its own). */
function detectorMs(detect: (typeof SECRET_DETECTORS)[number]["detect"], text: string, runs: number): number {
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const scan = new TextScan(text);
    scan.literals();
    const c0 = process.cpuUsage();
    detect(text, {}, scan);
    const c = process.cpuUsage(c0);
    times.push((c.user + c.system) / 1000);
  }
  return median(times);
}

/** This repository's sources and docs, repeated to `bytes`: ordinary code as a second sample. */
function repoText(bytes: number): string {
  const files = execFileSync("git", ["ls-files", "src", "tools", "middleware", "docs", "README.md", "examples"], { cwd: repoRoot, encoding: "utf8" })
    .split("\n")
    .filter((f) => /\.(ts|md|mjs|json)$/.test(f) && existsSync(path.join(repoRoot, f)));
  const one = files.map((f) => readFileSync(path.join(repoRoot, f), "utf8")).join("\n");
  let text = one;
  while (text.length < bytes) text += "\n" + one;
  return text.slice(0, bytes);
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const mbps = (bytes: number, ms: number) => (bytes / 1024 ** 2 / (ms / 1000)).toFixed(1);

export async function run(opts: { quick: boolean }): Promise<string> {
  const anchor = await anchorRedact();
  const field = loadFieldCorpus();
  const mine = scoreField((t) => redactSecrets(t), field);
  const old = scoreField((t) => anchor(t), field);
  const mineOld = score((t, o) => redactSecrets(t, o));
  const anchorOld = score((t, o) => anchor(t, o));

  const bytes = opts.quick ? 1024 ** 2 : 10 * 1024 ** 2;
  const runs = opts.quick ? 3 : 7;
  const text = mixedText(bytes);
  const [msMine = 0, msAnchor = 0] = interleaved([(t) => redactSecrets(t), (t) => anchor(t)], text, runs);
  const code = repoText(bytes);
  const [codeMine = 0, codeAnchor = 0] = interleaved([(t) => redactSecrets(t), (t) => anchor(t)], code, runs);
  const scanMs = interleaved([(t) => new TextScan(t).literals()], text, 3)[0]!;
  const detectors = SECRET_DETECTORS.map((d) => ({ name: d.name, ms: detectorMs(d.detect, text, 3) }));

  const row = (name: string, s: FieldScore) =>
    `| ${name} | ${s.caught}/${s.secrets} (${pct(s.recall)}) | ${s.falsePositives.length}/${s.benign} (${pct(s.fpRate)}) |`;
  const byShape = (s: FieldScore) => {
    const n = new Map<string, number>();
    for (const m of s.misses) n.set(m.shape, (n.get(m.shape) ?? 0) + 1);
    return [...n].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(", ") || "none";
  };
  return [
    "## redact",
    "",
    `Field corpus (scripts/gen-redact-corpus.ts): ${mine.secrets} secrets in ${mine.formats} formats × ${mine.shapes} context shapes, ${mine.benign} benign look-alikes ` +
      "(placeholders such as `ghp_xxxx…`/`AKIAXXXXXXXXXXXXXXXX`, zeros, sequences, templates `${VAR:?…}`/`%s`/`{TOKEN}`, references, credential-free connection strings). " +
      `Anchor: \`redactSecrets\` at ${ANCHOR_COMMIT} (before the detector split and the gitleaks rule set). The corpus was written with the rules, so its recall is an upper bound.`,
    "",
    "| redactor | recall | false positives |",
    "|---|---|---|",
    row("redactSecrets (detectors + gitleaks rules)", mine),
    row(`anchor ${ANCHOR_COMMIT}`, old),
    "",
    `Older corpus (tests/fixtures/redaction-corpus): ${mineOld.caught}/${mineOld.secrets} caught, ${mineOld.falsePositives.length}/${mineOld.benign} false positives; anchor ${anchorOld.caught}/${anchorOld.secrets}, ${anchorOld.falsePositives.length}/${anchorOld.benign}.`,
    `Anchor misses by shape: ${byShape(old)}. Misses now: ${byShape(mine)}.`,
    "",
    `Throughput (CPU time of this process, median of ${runs} interleaved runs) on a ${(bytes / 1024 ** 2).toFixed(0)} MB mixed file (a secret every 40 lines): ` +
      `${mbps(text.length, msMine)} MB/s vs the anchor's ${mbps(text.length, msAnchor)} MB/s (${(msAnchor / msMine).toFixed(2)}×); ` +
      `on this repository's own code (${(bytes / 1024 ** 2).toFixed(0)} MB) ${mbps(code.length, codeMine)} MB/s vs ${mbps(code.length, codeAnchor)} MB/s (${(codeAnchor / codeMine).toFixed(2)}×).`,
    `Per detector (CPU ms on the mixed file, median of 3): the shared literal scan ${scanMs.toFixed(0)} (vendor needles, gitleaks keywords, the literals the context rules, shapes, webhooks and needle-led vendor patterns are anchored on, ESC and invisible characters), then each detector given that scan: ${detectors.map((d) => `${d.name} ${d.ms.toFixed(0)}`).join(", ")}.`,
  ].join("\n");
}
