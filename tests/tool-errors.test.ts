/**
 * One tool-error shape: every tool of createWorkbench, and every middleware wrapper that answers
 * for a tool, answers a failed call with a ToolMessage `status: "error"` whose content is
 * `{"error": "<what happened>. <how to fix the call>", ...details}`. run_command: a command that
 * ran is a result (any exit code); refused, out-of-range timeout and timed out are errors.
 * And every error class of the package extends WorkbenchError with a code.
 */
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { createAgent } from "langchain";
import { z } from "zod";
import { createWorkbench, WorkbenchError } from "../src/index.js";
import { tempRoot } from "./helpers/agentHarness.js";
import { WorkspacePathError } from "../src/workspace.js";
import { OpenRefusedError } from "../src/environment/fileOperations.js";
import { EnvironmentUnavailableError } from "../src/environment/threadEnvironment.js";
import { EntryChangedError } from "../src/environment/dirHandle.js";
import { SafeFetchError } from "../src/web/safeFetch.js";
import { TimeoutError } from "../src/web/retry.js";
import { TransferError } from "../src/artifacts/transfer.js";
import { MissingPackageError } from "../src/optional.js";
import { SnapshotNotFoundError } from "../src/snapshots/store.js";
import { RemoteSnapshotError } from "../src/snapshots/remoteWorkspace.js";
import { ListingFormatError } from "../src/snapshots/remoteListing.js";
import { PdfReadError } from "../src/media/pdf.js";
import { GlobLimitError } from "../src/search/globMatch.js";
import { RegexDeadlineError, RegexTimeoutError } from "../src/search/regexWorker.js";
import { FileToolError } from "../tools/fileToolSupport.js";
import { toolError, toolErrorContent } from "../tools/toolResult.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const thread = (id: string) => ({ configurable: { thread_id: id } });

/** The one shape: a JSON object whose first key is a non-empty `error` sentence. */
function assertErrorShape(m: ToolMessage, label: string): Record<string, unknown> {
  assert.equal(m.status, "error", `${label}: status ${m.status}: ${String(m.content)}`);
  assert.equal(typeof m.content, "string", label);
  let parsed: unknown;
  assert.doesNotThrow(() => (parsed = JSON.parse(m.content as string)), `${label}: not JSON: ${String(m.content)}`);
  assert.ok(parsed && typeof parsed === "object" && !Array.isArray(parsed), label);
  const body = parsed as Record<string, unknown>;
  assert.equal(Object.keys(body)[0], "error", `${label}: "error" comes first: ${String(m.content)}`);
  assert.equal(typeof body.error, "string", label);
  assert.ok((body.error as string).length > 15, `${label}: says what happened: ${String(body.error)}`);
  assert.doesNotMatch(body.error as string, /^Error:/, `${label}: no second "Error:" prefix`);
  return body;
}

async function runScript(tools: unknown[], middleware: unknown[], calls: Array<{ name: string; args: Record<string, unknown>; id: string }>, id: string) {
  const model = (await import("@langchain/core/testing")).fakeModel().respond(new AIMessage({ content: "", tool_calls: calls })).respond(new AIMessage("done"));
  const agent = createAgent({ model, tools: tools as never, middleware: middleware as never }) as unknown as {
    invoke(input: { messages: BaseMessage[] }, config: unknown): Promise<{ messages: BaseMessage[] }>;
  };
  const { messages } = await agent.invoke({ messages: [new HumanMessage("go")] }, thread(id));
  assert.equal(String(messages.at(-1)!.content), "done", "the run went on after the errors");
  return new Map(messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m)).map((m) => [m.tool_call_id, m]));
}

describe("one tool-error shape", () => {
  let root: string;
  let cleanup: () => Promise<void>;
  let wb: ReturnType<typeof createWorkbench>;
  before(async () => {
    ({ root, cleanup } = await tempRoot("wb-errors-"));
    wb = createWorkbench({ rootDir: root, enableShell: true, webTools: { env: { TAVILY_API_KEY: "tvly-unused" } } });
  });
  after(async () => {
    await wb.close();
    await cleanup();
  });

  it("every tool of createWorkbench answers a failing call with status error and the one shape", async () => {
    const calls = [
      { name: "read_file", args: { path: "missing.txt" }, id: "read-missing" },
      { name: "read_file", args: { path: 42 }, id: "read-bad-arg" },
      { name: "write_file", args: { path: "../escape.txt", content: "x" }, id: "write-escape" },
      { name: "patch", args: { path: "missing.txt", old_string: "a", new_string: "b" }, id: "patch-missing" },
      { name: "search_files", args: { pattern: "x", path: "no/such/dir" }, id: "search-missing" },
      { name: "get_current_time", args: { timezone: "Mars/Olympus_Mons" }, id: "time-zone" },
      { name: "run_command", args: { command: "shutdown -h now" }, id: "run-refused" },
      { name: "run_command", args: { command: "true", timeout: 100_000 }, id: "run-timeout-arg" },
      { name: "run_command", args: { command: "   " }, id: "run-empty" },
      { name: "web_search", args: { query: "   " }, id: "search-empty" },
      { name: "web_extract", args: { urls: [] }, id: "extract-none" },
    ];
    const names = wb.tools.map((t) => t.name).sort();
    assert.deepEqual([...new Set(calls.map((c) => c.name))].sort(), names, "every tool of the workbench is called (a new tool needs a case here)");
    const answers = await runScript(wb.tools, wb.middleware, calls, "errors-all");
    assert.equal(answers.size, calls.length);
    const bodies = new Map([...answers].map(([id, m]) => [id, assertErrorShape(m, id)]));
    // Informative: each says what happened and how to fix the call.
    assert.match(String(bodies.get("read-missing")!.error), /missing\.txt/);
    assert.match(String(bodies.get("read-bad-arg")!.error), /Invalid arguments for read_file: .*path.*Fix the arguments/);
    assert.match(String(bodies.get("write-escape")!.error), /not allowed/);
    assert.match(String(bodies.get("time-zone")!.error), /^unknown time zone "Mars\/Olympus_Mons"\. Use an IANA zone name/);
    assert.match(String(bodies.get("run-refused")!.error), /^command refused because `shutdown`.*ask the user/);
    assert.match(String(bodies.get("run-timeout-arg")!.error), /^timeout must be between 1 and 600 seconds .*Omit it/);
    assert.match(String(bodies.get("run-empty")!.error), /^`command` is empty\. Pass a bash command line/);
    assert.match(String(bodies.get("search-empty")!.error), /^query is empty: pass the words/);
    assert.equal(bodies.get("search-empty")!.success, false, "web_search keeps its documented `success` field");
    assert.match(String(bodies.get("extract-none")!.error), /^urls must hold 1 to \d+ URLs/);
    // Details sit beside the sentence.
    assert.equal(bodies.get("read-missing")!.path, "missing.txt");
    // run_command keeps how it ran as the artifact, on errors too.
    assert.equal(typeof (answers.get("run-refused")!.artifact as { sandboxed?: unknown })?.sandboxed, "boolean");
  });

  it("run_command: a command that ran is a result whatever its exit code; a timed-out one is an error that keeps its output", async () => {
    const answers = await runScript(
      wb.tools,
      wb.middleware,
      [
        { name: "run_command", args: { command: "echo partial; exit 3" }, id: "exit-3" },
        { name: "run_command", args: { command: "echo started; sleep 60", timeout: 1 }, id: "slow" },
      ],
      "errors-run",
    );
    const exited = answers.get("exit-3")!;
    assert.equal(exited.status, "success", String(exited.content));
    assert.match(String(exited.content), /^partial\n\[exit code 3\]$/);
    const slow = assertErrorShape(answers.get("slow")!, "slow");
    assert.match(String(slow.error), /^timed out after 1 s: the command and its child processes were killed\. Pass a larger timeout/);
    assert.match(String(slow.output), /started/);
  });

  it("middleware wrappers answer for tools in the same shape: a throwing tool, a refused path argument", async () => {
    const local = await tempRoot("wb-errors-mw-");
    const wb2 = createWorkbench({ rootDir: local.root, webTools: false, basicTools: false, fileTools: false, fileManager: { pathArgs: ["file"] } });
    try {
      const boom = tool(
        () => {
          throw new Error("the service said no.");
        },
        { name: "boom", description: "always throws", schema: z.object({}) },
      );
      const cat = tool(({ file }: { file: string }) => `read ${file}`, { name: "cat", description: "reads", schema: z.object({ file: z.string() }) });
      const answers = await runScript(
        [boom, cat],
        wb2.middleware,
        [
          { name: "boom", args: {}, id: "thrown" },
          { name: "cat", args: { file: "../../etc/passwd" }, id: "climbs-out" },
        ],
        "errors-mw",
      );
      const thrown = assertErrorShape(answers.get("thrown")!, "thrown");
      assert.equal(thrown.error, "boom failed: the service said no. Check the arguments against the tool's schema and try again, or use another tool.");
      const climbs = assertErrorShape(answers.get("climbs-out")!, "climbs-out");
      assert.match(String(climbs.error), /not allowed/);
    } finally {
      await wb2.close();
      await local.cleanup();
    }
  });

  it("the builder: a ToolMessage inside a run, the content alone on a direct call; `error` first and never overridden", () => {
    assert.equal(toolErrorContent("it broke. Do this", { error: "ignored", path: "a" }), '{"error":"it broke. Do this","path":"a"}');
    assert.equal(toolError("t", undefined, "it broke. Do this"), '{"error":"it broke. Do this"}');
    const m = toolError("t", { toolCall: { id: "c9" } }, "it broke. Do this", { path: "a" }, { how: 1 });
    assert.ok(ToolMessage.isInstance(m));
    assert.equal(m.status, "error");
    assert.equal(m.tool_call_id, "c9");
    assert.deepEqual(m.artifact, { how: 1 });
  });
});

describe("WorkbenchError", () => {
  it("every error class of the package extends it, keeps its name and instanceof, and has a code", () => {
    const samples: Array<[Error, new (...args: never[]) => Error, string]> = [
      [new WorkspacePathError("../x", "it climbs out"), WorkspacePathError, "WorkspacePathError"],
      [new OpenRefusedError("is a device"), OpenRefusedError, "OpenRefusedError"],
      [new EnvironmentUnavailableError("down"), EnvironmentUnavailableError, "EnvironmentUnavailableError"],
      [new EntryChangedError("a"), EntryChangedError, "EntryChangedError"],
      [new SafeFetchError("blocked", "http://x", "no"), SafeFetchError, "SafeFetchError"],
      [new TimeoutError(5), TimeoutError, "TimeoutError"],
      [new TransferError("invalid_path", "big"), TransferError, "TransferError"],
      [new MissingPackageError("exa-js", "The exa backend"), MissingPackageError, "MissingPackageError"],
      [new SnapshotNotFoundError("s1"), SnapshotNotFoundError, "SnapshotNotFoundError"],
      [new RemoteSnapshotError("remote"), RemoteSnapshotError, "RemoteSnapshotError"],
      [new ListingFormatError("bad"), ListingFormatError, "ListingFormatError"],
      [new PdfReadError("bad pdf"), PdfReadError, "PdfReadError"],
      [new GlobLimitError("too long"), GlobLimitError, "Error"],
      [new RegexTimeoutError("a.txt"), RegexTimeoutError, "Error"],
      [new RegexDeadlineError("late"), RegexDeadlineError, "Error"],
      [new FileToolError("fix it"), FileToolError, "FileToolError"],
    ];
    const codes = new Set<string>();
    for (const [err, Class, name] of samples) {
      assert.ok(err instanceof Class, name);
      assert.ok(err instanceof Error, name);
      assert.ok(err instanceof WorkbenchError, `${Class.name} extends WorkbenchError`);
      assert.equal(err.name, name, `${Class.name} keeps its name`);
      const code = (err as WorkbenchError).code;
      assert.match(code, /^[A-Z][A-Z0-9_]*$|^[a-z][a-z_]*$/, `${Class.name}.code ${code}`);
      if (Class !== SafeFetchError && Class !== TransferError) codes.add(code);
    }
    assert.equal(codes.size, samples.length - 2, "fixed codes are distinct");
  });

  it("no class under src/, tools/ or middleware/ extends Error directly (except the command screen's internal signals)", async () => {
    // The command screen lives in the guard layer, which imports nothing outside it; its three
    // classes are control flow caught inside the screen, never thrown to a caller.
    const internal = new Set(["src/guards/commands/walk.ts:Found", "src/guards/commands/budget.ts:BudgetExceeded", "src/guards/commands/syntax.ts:TooDeep"]);
    const direct: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await readdir(path.join(repo, dir), { withFileTypes: true })) {
        const rel = path.posix.join(dir, entry.name);
        if (entry.isDirectory()) await walk(rel);
        else if (entry.name.endsWith(".ts")) {
          const text = await readFile(path.join(repo, rel), "utf8");
          for (const m of text.matchAll(/class (\w+) extends Error\b/g)) {
            if (rel !== "src/workbenchError.ts" && !internal.has(`${rel}:${m[1]}`)) direct.push(`${rel}:${m[1]}`);
          }
        }
      }
    };
    for (const dir of ["src", "tools", "middleware"]) await walk(dir);
    assert.deepEqual(direct, []);
  });
});
