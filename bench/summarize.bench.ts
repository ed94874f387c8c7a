/**
 * Summarisation of a 1 MB page (split into 100,000-character chunks, summarised concurrently,
 * then synthesised) with a fake chat model that takes 100 ms per call: wall time against the
 * sequential sum of the model calls measured in the same run.
 */
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { parseHTML } from "linkedom";
import { htmlToMarkdown } from "../src/web/htmlToMarkdown.js";
import { summarizeContent } from "../src/web/summarize.js";
import { htmlPageOf } from "./fixtures.js";

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


/** The fetch backend's CPU cost per page: the whole conversion against the bare DOM parse it starts with. */
function htmlSection(quick: boolean): string {
  const sizes = quick ? [100_000] : [100_000, 900_000, 5_000_000];
  htmlToMarkdown(htmlPageOf(20_000)); // warm-up, so the first row does not pay for JIT compilation
  const rows = sizes.map((size) => {
    const html = htmlPageOf(size);
    let t0 = performance.now();
    parseHTML(html);
    const parse = performance.now() - t0;
    t0 = performance.now();
    const page = htmlToMarkdown(html, "https://example.com/");
    const full = performance.now() - t0;
    const path = html.length <= 1_000_000 ? "Readability + turndown" : "whole body + turndown";
    return `| ${(html.length / 1e6).toFixed(1)} MB | ${path} | ${fmt(parse)} | ${fmt(full)} | ${(full / parse).toFixed(1)}× | ${page.markdown.length.toLocaleString("en")} |`;
  });
  return [
    "### HTML → Markdown (`htmlToMarkdown`, fetch backend)",
    "",
    "Synchronous CPU time per page. Anchor: linkedom's bare parse of the same HTML, measured in the same run.",
    "",
    "| HTML size | path | DOM parse (anchor) | full conversion | full / anchor | Markdown chars |",
    "|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
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
    "",
    htmlSection(opts.quick),
  ].join("\n");
}

function fmt(ms: number): string {
  return `${Math.round(ms)} ms`;
}
