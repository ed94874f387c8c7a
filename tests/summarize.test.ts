import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { fakeModel } from "@langchain/core/testing";
import { ChatOpenAI } from "@langchain/openai";
import { splitIntoChunks, summarizeContent, summarizerFromEnv } from "../src/web/summarize.js";

/**
 * A chat model that answers after a short delay and records how many calls overlap, so bounded
 * concurrency can be asserted without timing assertions.
 */
class RecordingModel extends BaseChatModel {
  inFlight = 0;
  maxInFlight = 0;
  prompts: string[] = [];
  constructor(
    private readonly reply: (prompt: string, call: number) => string | Error,
    private readonly delayMs = 5,
  ) {
    super({});
  }
  _llmType(): string {
    return "recording";
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const prompt = messages.map((m) => m.text).join("\n---\n");
    const call = this.prompts.push(prompt);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      const out = this.reply(prompt, call);
      if (out instanceof Error) throw out;
      return { generations: [{ text: out, message: new AIMessage(out) }] };
    } finally {
      this.inFlight--;
    }
  }
}

const page = (chars: number) => Array.from({ length: Math.ceil(chars / 50) }, (_, i) => `line ${i} `.padEnd(49, "x") + "\n").join("").slice(0, chars);
const fast = { retryDelayMs: 1 };

describe("summarizeContent: thresholds", () => {
  it("returns content under minChars raw, without calling the model", async () => {
    const model = fakeModel(); // no queued replies: any call would throw
    const result = await summarizeContent("short page", { model });
    assert.deepEqual(result, { content: "short page", summarized: false, original_chars: 10 });
    assert.equal(model.callCount, 0);
  });

  it("summarises mid-sized content in one call with a prompt that keeps code, tables and figures", async () => {
    const model = fakeModel().respond(new AIMessage("A tight summary."));
    const content = page(20_000);
    const result = await summarizeContent(content, { model, url: "https://example.com/doc" });
    assert.equal(result.summarized, true);
    assert.equal(result.content, "A tight summary.");
    assert.equal(result.original_chars, 20_000);
    assert.equal(result.compression_ratio, Math.round((20_000 / "A tight summary.".length) * 100) / 100);
    assert.equal(model.callCount, 1);
    const prompt = model.calls[0]!.messages.map((m) => m.text).join("\n");
    assert.match(prompt, /code blocks/);
    assert.match(prompt, /tables/);
    assert.match(prompt, /key figures/);
    assert.match(prompt, /at most 5000 characters/);
    assert.match(prompt, /URL: https:\/\/example\.com\/doc/);
    assert.ok(prompt.includes(content));
  });

  it("caps the output at maxOutputChars and says so", async () => {
    const model = fakeModel().respond(new AIMessage("y".repeat(9_000)));
    const result = await summarizeContent(page(10_000), { model, maxOutputChars: 1_000 });
    assert.equal(result.content.length, 1_000);
    assert.match(result.note ?? "", /cut to 1000 characters/);
  });

  it("refuses content over refuseAbove with guidance, keeping the start", async () => {
    const model = fakeModel();
    const content = page(3_000);
    const result = await summarizeContent(content, { model, minChars: 10, refuseAbove: 2_000, maxOutputChars: 500 });
    assert.equal(result.summarized, false);
    assert.equal(result.content, content.slice(0, 500));
    assert.match(result.note ?? "", /over the 2000-character summarisation limit.*Fetch a more specific page/);
    assert.equal(model.callCount, 0);
  });

  it("validates options", async () => {
    await assert.rejects(summarizeContent(page(10_000), { model: fakeModel(), concurrency: 0 }), RangeError);
    await assert.rejects(summarizeContent("x", { model: undefined as never }), TypeError);
  });
});

describe("summarizeContent: chunking", () => {
  const opts = { minChars: 10, chunkAbove: 5_000, chunkChars: 1_000, ...fast };

  it("splits at line boundaries into chunks of at most chunkChars that rebuild the content", () => {
    const content = page(10_500);
    const chunks = splitIntoChunks(content, 1_000);
    assert.equal(chunks.join(""), content);
    assert.ok(chunks.every((c) => c.length <= 1_000));
    assert.ok(chunks.slice(0, -1).every((c) => c.endsWith("\n")));
  });

  it("summarises chunks with at most `concurrency` in flight, then synthesises", async () => {
    const model = new RecordingModel((prompt) => (prompt.includes("You merge") ? "FINAL SYNTHESIS" : `summary of ${/Part (\d+) of/.exec(prompt)?.[1]}`));
    const progress: string[] = [];
    const result = await summarizeContent(page(12_000), {
      model,
      ...opts,
      url: "https://example.com/big",
      onProgress: (stage, done, total) => progress.push(`${stage} ${done}/${total}`),
    });
    const chunkCount = splitIntoChunks(page(12_000), 1_000).length;
    assert.equal(result.summarized, true);
    assert.equal(result.content, "FINAL SYNTHESIS");
    assert.equal(model.prompts.length, chunkCount + 1);
    assert.ok(model.maxInFlight <= 4, `max in flight ${model.maxInFlight}`);
    assert.ok(model.maxInFlight > 1, "chunks run concurrently");
    const synthesis = model.prompts.at(-1)!;
    for (let i = 1; i <= chunkCount; i++) assert.ok(synthesis.includes(`## Part ${i} of ${chunkCount}\nsummary of ${i}`), `part ${i}`);
    assert.deepEqual(progress, [
      `chunks 0/${chunkCount}`,
      ...Array.from({ length: chunkCount }, (_, i) => `chunks ${i + 1}/${chunkCount}`),
      "synthesize 0/1",
      "synthesize 1/1",
    ]);
  });

  it("honours a lower concurrency bound", async () => {
    const model = new RecordingModel(() => "s");
    await summarizeContent(page(8_000), { model, ...opts, concurrency: 2 });
    assert.equal(model.maxInFlight, 2);
  });

  it("keeps going when some chunks fail, and says which part is missing", async () => {
    const model = new RecordingModel((prompt) =>
      prompt.includes("You merge") ? "merged" : prompt.includes("Part 2 of") ? new Error("rate limited") : "ok",
    );
    const result = await summarizeContent(page(6_000), { model, ...opts, retries: 1 });
    assert.equal(result.summarized, true);
    assert.equal(result.content, "merged");
    assert.match(result.note ?? "", /1 of 6 chunks could not be summarised/);
    assert.match(model.prompts.at(-1)!, /## Part 2 of 6\n\(this part could not be summarised\)/);
  });

  it("falls back to the joined part summaries when synthesis fails", async () => {
    const model = new RecordingModel((prompt) => (prompt.includes("You merge") ? new Error("boom") : "part summary"));
    const result = await summarizeContent(page(6_000), { model, ...opts, retries: 0 });
    assert.equal(result.summarized, true);
    assert.match(result.content, /^## Part 1 of 6\npart summary/);
    assert.match(result.note ?? "", /synthesis failed \(boom\)/);
  });
});

describe("summarizeContent: failures never lose the page", () => {
  it("retries with backoff, then returns the truncated raw content with a note", async () => {
    const model = fakeModel().alwaysThrow(new Error("upstream 500"));
    const content = page(9_000);
    const result = await summarizeContent(content, { model, retries: 2, ...fast });
    assert.equal(model.callCount, 3);
    assert.equal(result.summarized, false);
    assert.equal(result.content, content.slice(0, 5_000));
    assert.equal(result.original_chars, 9_000);
    assert.match(result.note ?? "", /summarisation failed \(upstream 500\); showing the first 5000 of 9000 characters/);
  });

  it("succeeds on a retry", async () => {
    const model = fakeModel().respond(new Error("flaky")).respond(new AIMessage("second time lucky"));
    const result = await summarizeContent(page(9_000), { model, ...fast });
    assert.equal(result.content, "second time lucky");
    assert.equal(model.callCount, 2);
  });

  it("treats an empty reply as a failure", async () => {
    const model = fakeModel().respond(new AIMessage("")).respond(new AIMessage("   ")).respond(new AIMessage(""));
    const result = await summarizeContent(page(9_000), { model, ...fast });
    assert.equal(result.summarized, false);
    assert.match(result.note ?? "", /empty summary/);
  });

  it("falls back when every chunk fails", async () => {
    const model = new RecordingModel(() => new Error("down"));
    const result = await summarizeContent(page(6_000), { model, minChars: 10, chunkAbove: 5_000, chunkChars: 1_000, retries: 0 });
    assert.equal(result.summarized, false);
    assert.match(result.note ?? "", /summarisation failed for all 6 chunks/);
  });
});

describe("summarizerFromEnv", () => {
  it("is undefined without WORKBENCH_SUMMARY_MODEL", async () => {
    assert.equal(await summarizerFromEnv({}), undefined);
  });

  it("builds a ChatOpenAI from the OpenAI settings", async () => {
    const model = await summarizerFromEnv({
      WORKBENCH_SUMMARY_MODEL: "gpt-4o-mini",
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
    });
    assert.ok(model instanceof ChatOpenAI);
    assert.equal(model.model, "gpt-4o-mini");
  });
});

describe("importing the package root", () => {
  it("loads neither @langchain/openai nor the HTML and HTTP libraries of the web tools", async () => {
    // A resolve hook refuses the heavy modules, so any eager import of them fails the import of
    // src/index.ts; require.cache covers CommonJS loads the hook cannot see. The summariser is
    // then built on purpose, which must hit the hook: proof that the hook really is in place.
    const heavy = ["@langchain/openai", "linkedom", "@mozilla/readability", "turndown", "undici"];
    const hooks =
      `export async function resolve(specifier, context, next) {` +
      `  if (${JSON.stringify(heavy)}.some((name) => specifier === name || specifier.startsWith(name + "/")))` +
      `    throw new Error("BLOCKED " + specifier);` +
      `  return next(specifier, context);` +
      `}`;
    const register =
      `import { register } from "node:module";` +
      `register("data:text/javascript," + encodeURIComponent(${JSON.stringify(hooks)}), import.meta.url);`;
    const child = `
      const { createRequire } = await import("node:module");
      await import(${JSON.stringify(new URL("../src/index.ts", import.meta.url).href)});
      const cached = Object.keys(createRequire(import.meta.url).cache).filter((file) =>
        ${JSON.stringify(heavy)}.some((name) => file.includes("/node_modules/" + name + "/")));
      let built = "not attempted";
      const { summarizerFromEnv } = await import(${JSON.stringify(new URL("../src/web/index.ts", import.meta.url).href)});
      try { await summarizerFromEnv({ WORKBENCH_SUMMARY_MODEL: "gpt-4o-mini" }); built = "built"; }
      catch (error) { built = String(error.message).split("\\n")[0]; }
      console.log(JSON.stringify({ cached, built }));`;
    const { execFile } = await import("node:child_process");
    const output = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ["--import", "tsx", "--import", `data:text/javascript,${encodeURIComponent(register)}`, "--input-type=module", "-e", child],
        { cwd: new URL("..", import.meta.url).pathname, timeout: 60_000 },
        (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
      ),
    );
    const result = JSON.parse(output.trim().split("\n").pop()!) as { cached: string[]; built: string };
    assert.deepEqual(result.cached, []);
    assert.match(result.built, /BLOCKED @langchain\/openai/);
  });
});
