/**
 * Summarisation of a 1 MB page (split into 100,000-character chunks, summarised concurrently,
 * then synthesised) with a fake chat model that takes 100 ms per call: wall time against the
 * sequential sum of the model calls measured in the same run.
 */
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { summarizeContent } from "../src/web/summarize.js";

const CALL_MS = 100;
const PAGE_CHARS = 1024 * 1024;

/** Answers every call after a fixed delay and records each call's duration. */
class SlowModel extends BaseChatModel {
  durations: number[] = [];
  constructor(private readonly delayMs: number) {
    super({});
  }
  _llmType(): string {
    return "bench-slow";
  }
  async _generate(): Promise<ChatResult> {
    const t0 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    this.durations.push(performance.now() - t0);
    const text = "Summary with `code`, | a | table | and 42 figures.";
    return { generations: [{ text, message: new AIMessage(text) }] };
  }
}

function pageOf(chars: number): string {
  const paragraph = "The workbench keeps code blocks, tables and key figures when it condenses long pages. ".repeat(8) + "\n\n";
  return paragraph.repeat(Math.ceil(chars / paragraph.length)).slice(0, chars);
}

export async function run(opts: { quick: boolean }): Promise<string> {
  const content = pageOf(PAGE_CHARS);
  const concurrencies = opts.quick ? [1, 4] : [1, 2, 4, 8];
  const rows: string[] = [];
  for (const concurrency of concurrencies) {
    const model = new SlowModel(CALL_MS);
    const t0 = performance.now();
    const result = await summarizeContent(content, { model, concurrency });
    const wall = performance.now() - t0;
    if (!result.summarized) throw new Error(`summarisation failed: ${result.note}`);
    const sequential = model.durations.reduce((a, b) => a + b, 0);
    rows.push(
      `| ${concurrency}${concurrency === 4 ? " (default)" : ""} | ${model.durations.length} | ${fmt(wall)} | ${fmt(sequential)} | ` +
        `${(wall / sequential).toFixed(2)}× | ${result.compression_ratio} |`,
    );
  }
  return [
    "## Summarisation (`summarizeContent`)",
    "",
    `A ${PAGE_CHARS.toLocaleString("en")}-character page, 100,000-character chunks summarised concurrently (p-limit) ` +
      `then one synthesis call; a fake chat model that takes ${CALL_MS} ms per call. Anchor: the sequential sum of ` +
      "every call's duration, measured in the same run (what a one-at-a-time summariser would take).",
    "",
    "| concurrency | model calls | wall time | sequential sum (anchor) | wall / anchor | compression ratio |",
    "|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}

function fmt(ms: number): string {
  return `${Math.round(ms)} ms`;
}
