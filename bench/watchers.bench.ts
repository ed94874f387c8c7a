/**
 * Watcher ready time and memory at 100k files: @parcel/watcher vs chokidar 4 vs the polling
 * tracker. Each runs in its own child process so the RSS figure is its own. Anchor: chokidar,
 * the watcher the design names.
 */
import { spawn } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createChangeTracker, DEFAULT_TRACKER_KIND, type TrackerKind } from "../src/changes/index.js";
import { benchWorkspace, fmt, median } from "./fixtures.js";

interface ChildResult {
  kind: TrackerKind;
  readyMs: number;
  rssMb: number;
  baseRssMb: number;
  eventSeen: boolean;
  fellBack: boolean;
  refreshMs?: number;
  error?: string;
}

const KINDS: TrackerKind[] = ["chokidar", "parcel", "polling"];
const ANCHOR: TrackerKind = "chokidar";
const CHILD_TIMEOUT_MS = 120_000;

export async function run({ quick }: { quick: boolean }): Promise<string> {
  const files = quick ? 1_000 : 100_000;
  const dir = await benchWorkspace(files);
  const results: ChildResult[] = [];
  for (const kind of KINDS) results.push(await measureInChild(kind, dir));
  const anchor = results.find((r) => r.kind === ANCHOR);
  const rows = results.map((r) => {
    if (r.error) return `| ${r.kind} | failed: ${r.error.replace(/\|/g, "\\|")} | | | | |`;
    const ready = anchor && !anchor.error ? `${fmt(r.readyMs / anchor.readyMs)}×` : "n/a";
    const rss = anchor && !anchor.error ? `${fmt(r.rssMb / anchor.rssMb)}×` : "n/a";
    const note = [r.fellBack ? "fell back to polling" : "", r.eventSeen ? "" : "no event seen"].filter(Boolean).join(", ");
    return `| ${r.kind}${r.kind === DEFAULT_TRACKER_KIND ? " (default)" : ""} | ${fmt(r.readyMs)} ms | ${ready} | ${fmt(r.rssMb)} MB (+${fmt(r.rssMb - r.baseRssMb)}) | ${rss} | ${note || "ok"} |`;
  });
  const poll = results.find((r) => r.kind === "polling" && r.refreshMs !== undefined);
  return [
    "## Change trackers: ready time and memory",
    "",
    `Workspace: ${files.toLocaleString("en-US")} files in 1,020 directories. Each tracker runs alone in a child`,
    "process (`node --import tsx`); RSS is that process's after `start()` resolved, with the",
    "increase over the same process before starting in brackets (tsx and the module graph",
    "account for the base). \"Ready\" is `start()` until it resolves. After ready, a file is",
    "created and the tracker must report a structural change within 5 s (\"ok\").",
    `Anchor: ${ANCHOR}. Target for the default: ready ≤ 500 ms, RSS ≤ 100 MB.`,
    "",
    "| tracker | ready | vs anchor | RSS | vs anchor | event check |",
    "|---|---|---|---|---|---|",
    ...rows,
    "",
    poll ? `Polling steady state: one \`refresh()\` (stat of every directory, nothing changed) takes ${fmt(poll.refreshMs!)} ms (median of 5).` : "",
  ].join("\n");
}

function measureInChild(kind: TrackerKind, dir: string): Promise<ChildResult> {
  return new Promise((resolve) => {
    const self = fileURLToPath(import.meta.url);
    const child = spawn(process.execPath, ["--import", "tsx", self, "--child", kind, dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), CHILD_TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      const line = out.trim().split("\n").pop() ?? "";
      try {
        resolve(JSON.parse(line) as ChildResult);
      } catch {
        resolve({ kind, readyMs: NaN, rssMb: NaN, baseRssMb: NaN, eventSeen: false, fellBack: false, error: `exit ${code}: ${err.trim().split("\n").slice(-3).join(" ")}` });
      }
    });
  });
}

async function child(kind: TrackerKind, dir: string): Promise<void> {
  const mb = () => process.memoryUsage.rss() / 1024 / 1024;
  const errors: string[] = [];
  const tracker = createChangeTracker(dir, { kind, onError: (e) => errors.push(e.message) });
  const baseRssMb = mb();
  const t0 = performance.now();
  await tracker.start();
  const readyMs = performance.now() - t0;
  const rssMb = mb();
  const probe = path.join(dir, `probe-${process.pid}.txt`);
  const before = tracker.generation;
  await writeFile(probe, "x");
  const deadline = Date.now() + 5000;
  while (tracker.generation === before && Date.now() < deadline) {
    await tracker.refresh();
    await new Promise((r) => setTimeout(r, 10));
  }
  const eventSeen = tracker.generation !== before;
  await rm(probe, { force: true });
  let refreshMs: number | undefined;
  if (kind === "polling") {
    await tracker.refresh();
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const s = performance.now();
      await tracker.refresh();
      times.push(performance.now() - s);
    }
    refreshMs = median(times);
  }
  const fellBack = "fellBack" in tracker && (tracker as { fellBack: boolean }).fellBack;
  await tracker.close();
  const result: ChildResult = { kind, readyMs, rssMb, baseRssMb, eventSeen, fellBack, refreshMs };
  if (errors.length) result.error = errors.join("; ");
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === "--child") {
  child(process.argv[3] as TrackerKind, process.argv[4]!).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
