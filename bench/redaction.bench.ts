/**
 * Secret redaction: recall and false positives on the corpus (tests/fixtures/redaction-corpus),
 * throughput on a 10 MB mixed file, and the cost inside read_file on a 1 MB file. Contenders in
 * the same run: the package's `redactSecrets`; the anchor (`redactSecrets` from main before the
 * span engine, bench/redactionAnchor.ts); secretlint's recommended preset
 * (`@secretlint/core` `lintSource`, its reported ranges masked), the candidate pattern source.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { lintSource } from "@secretlint/core";
import { creator as recommendPreset } from "@secretlint/secretlint-rule-preset-recommend";
import { redactSecrets } from "../src/guards/redact.js";
import { createReadFileTool } from "../tools/readFile.js";
import { loadCorpus, score, type Score } from "../tests/fixtures/redaction-corpus/index.js";
import { anchorRedactSecrets } from "./redactionAnchor.js";
import { median } from "./fixtures.js";

const secretlintConfig = { rules: [{ id: "@secretlint/secretlint-rule-preset-recommend", rule: recommendPreset }] };

async function secretlintRedact(text: string): Promise<string> {
  const res = await lintSource({
    source: { content: text, filePath: "/corpus/sample.txt", contentType: "text" },
    options: { config: secretlintConfig as never, noPhysicFilePath: true },
  });
  const ranges = res.messages.map((m) => m.range).sort((a, b) => b[0] - a[0]);
  let out = text;
  for (const [s, e] of ranges) out = out.slice(0, s) + "«redacted»" + out.slice(e);
  return out;
}

/** `score` for an async redactor: precompute outputs, then score a lookup. */
async function scoreAsync(redact: (t: string) => Promise<string>): Promise<Score> {
  const corpus = loadCorpus();
  const outputs = new Map<string, string>();
  for (const t of [...corpus.secrets.map((c) => c.text), ...corpus.benign]) if (!outputs.has(t)) outputs.set(t, await redact(t));
  return score((t) => outputs.get(t) ?? t, corpus);
}

/** A mixed file: config and code lines with a secret every ~40 lines (about 2.5% of lines). */
function mixedText(bytes: number): string {
  const { secrets, benign } = loadCorpus();
  const parts: string[] = [];
  let size = 0;
  let i = 0;
  while (size < bytes) {
    const line = i % 40 === 39 ? secrets[i % secrets.length]!.text : benign[i % benign.length]!;
    parts.push(line);
    size += line.length + 1;
    i++;
  }
  return parts.join("\n");
}

function throughput(fn: (t: string) => string, text: string, runs: number): { mbps: number; ms: number } {
  fn(text.slice(0, 100_000)); // warm up
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    fn(text);
    times.push(performance.now() - t0);
  }
  const ms = median(times);
  return { ms, mbps: text.length / 1024 ** 2 / (ms / 1000) };
}

/** This repository's own sources and docs (not tests, fixtures or the bench, which hold fake keys on purpose). */
function repoLines(): { files: number; lines: number; texts: string[] } {
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const list = execFileSync("git", ["ls-files", "src", "tools", "middleware", "docs", "README.md", "examples"], { cwd: repoRoot, encoding: "utf8" })
    .split("\n")
    .filter((f) => /\.(ts|md|mjs|json)$/.test(f) && !f.startsWith("docs/benchmarks"));
  const texts = list.map((f) => readFileSync(path.join(repoRoot, f), "utf8"));
  return { files: list.length, lines: texts.reduce((n, t) => n + t.split("\n").length, 0), texts };
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const f1 = (v: number) => v.toFixed(1);

export async function run(opts: { quick: boolean }): Promise<string> {
  const mine = score((t, o) => redactSecrets(t, o));
  const anchor = score((t) => anchorRedactSecrets(t));
  const t0 = performance.now();
  const lint = await scoreAsync(secretlintRedact);
  const lintCorpusMs = performance.now() - t0;

  const bytes = opts.quick ? 1024 ** 2 : 10 * 1024 ** 2;
  const text = mixedText(bytes);
  const runs = opts.quick ? 3 : 5;
  const tMine = throughput((t) => redactSecrets(t), text, runs);
  const tAnchor = throughput((t) => anchorRedactSecrets(t), text, runs);
  const lintSample = text.slice(0, 1024 ** 2);
  const l0 = performance.now();
  await secretlintRedact(lintSample);
  const lintMs = performance.now() - l0;
  const lintMbps = lintSample.length / 1024 ** 2 / (lintMs / 1000);

  // read_file on a 1 MB file: the real tool, redaction on and off (2,000-line window, ~100 kB).
  const root = await mkdtemp(path.join(tmpdir(), "redact-bench-"));
  let readOn = 0;
  let readOff = 0;
  let windowMine = 0;
  let windowAnchor = 0;
  try {
    await mkdir(path.join(root, "t"), { recursive: true });
    const file = mixedText(1024 ** 2).split("\n").map((l) => l.slice(0, 48)).join("\n");
    await writeFile(path.join(root, "t", "big.txt"), file);
    const config = { configurable: { thread_id: "t" } };
    const on = createReadFileTool({ rootDir: root });
    const off = createReadFileTool({ rootDir: root, redactSecrets: false });
    const call = async (tool: typeof on) => {
      const times: number[] = [];
      for (let r = 0; r < 15; r++) {
        const s = performance.now();
        await tool.invoke({ path: "big.txt", offset: 1 + r * 1000, limit: 2000 }, config);
        times.push(performance.now() - s);
      }
      return median(times);
    };
    await call(on);
    readOff = await call(off);
    readOn = await call(on);
    const window = file.split("\n").slice(0, 2000).join("\n");
    windowMine = throughput((t) => redactSecrets(t, { startsMidFile: true }), window, 15).ms;
    windowAnchor = throughput((t) => anchorRedactSecrets(t), window, 15).ms;
  } finally {
    await rm(root, { recursive: true, force: true });
  }

  const repo = repoLines();
  const changedLines = (fn: (t: string) => string) => {
    let n = 0;
    for (const text of repo.texts) {
      const a = text.split("\n");
      const b = fn(text).split("\n");
      for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) n++;
    }
    return n;
  };
  const repoMine = changedLines((t) => redactSecrets(t));
  const repoAnchor = changedLines((t) => anchorRedactSecrets(t));
  const repoText = repo.texts.join("\n");
  const tRepoMine = throughput((t) => redactSecrets(t), repoText, runs);
  const tRepoAnchor = throughput((t) => anchorRedactSecrets(t), repoText, runs);

  const row = (name: string, s: Score, mbps: string) =>
    `| ${name} | ${s.caught}/${s.secrets} (${pct(s.recall)}) | ${s.falsePositives.length}/${s.benign} (${pct(s.fpRate)}) | ${mbps} |`;
  const missedFormats = (s: Score) => [...new Set(s.misses.map((m) => m.format))];
  return [
    "## redaction",
    "",
    `Corpus: ${mine.secrets} synthetic secrets in ${mine.formats} formats/contexts and ${mine.benign} benign lines of config and code (near-misses included), tests/fixtures/redaction-corpus. ` +
      `Recall = secrets whose value (or any 12 characters of it) no longer shows; false positive = a benign line changed. ` +
      `Throughput on a ${f1(bytes / 1024 ** 2)} MB mixed file (a secret every 40 lines), median of ${runs}; secretlint on its first 1 MB. ` +
      "The corpus was written together with the rules, so its recall is an upper bound for text of these kinds.",
    "",
    "| redactor | recall | false positives | throughput |",
    "|---|---|---|---|",
    row("redactSecrets (span engine)", mine, `${f1(tMine.mbps)} MB/s`),
    row("anchor: redactSecrets on main", anchor, `${f1(tAnchor.mbps)} MB/s`),
    row("secretlint preset-recommend 10.2.1", lint, `${f1(lintMbps)} MB/s (async only; corpus took ${f1(lintCorpusMs / 1000)} s)`),
    "",
    `Throughput ratio to the anchor: ${(tMine.mbps / tAnchor.mbps).toFixed(2)}× on the mixed file (dense with secrets and secret-named keys, the worst case for the key-name rule); ` +
      `on this repository's own code (${f1(repoText.length / 1024 ** 2)} MB) ${f1(tRepoMine.mbps)} MB/s vs the anchor's ${f1(tRepoAnchor.mbps)} MB/s (${(tRepoMine.mbps / tRepoAnchor.mbps).toFixed(2)}×).`,
    `read_file on a 1 MB file (2,000-line windows, median of 15): ${f1(readOn)} ms with redaction, ${f1(readOff)} ms without; ` +
      `redacting one window takes ${windowMine.toFixed(2)} ms (anchor ${windowAnchor.toFixed(2)} ms).`,
    "",
    `Real code as a second benign sample: this repository's ${repo.files} source and doc files outside tests and the bench (${repo.lines.toLocaleString("en-US")} lines): ` +
      `${repoMine} lines changed by redactSecrets, ${repoAnchor} by the anchor (lines that show example keys such as \`sk-demo-…\` in docs and examples are expected).`,
    "",
    `Missed by the anchor (${anchor.misses.length}): ${missedFormats(anchor).join(", ") || "none"}.`,
    `Anchor false positives: ${anchor.falsePositives.map((f) => `\`${f.line.trim().slice(0, 50)}\``).join(", ") || "none"}.`,
    `Missed by secretlint (${lint.misses.length}): ${missedFormats(lint).join(", ") || "none"}.`,
    `Missed by redactSecrets (${mine.misses.length}): ${missedFormats(mine).join(", ") || "none"}.`,
  ].join("\n");
}
