// Files in and out for apps: workbench.uploads(thread).put → the next model call's tree shows the
// file → the agent writes → workbench.artifacts(thread) lists what the run produced and packs
// it as zip or tar. Credential files never leave; paths never escape.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { MemorySaver } from "@langchain/langgraph";
import { unzipSync } from "fflate";
import { createAgent } from "langchain";
import { createWorkbench, type Workbench } from "../src/workbench.js";
import { TransferError } from "../src/artifacts/transfer.js";

const run = promisify(execFile);
let root = "";
const benches: Workbench[] = [];
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "wb-xfer-"));
});
after(async () => {
  await Promise.all(benches.map((b) => b.close()));
  await rm(root, { recursive: true, force: true });
});

function bench(): Workbench {
  const wb = createWorkbench({ rootDir: root, webTools: false, basicTools: false, fileManager: { tracker: { kind: "polling" } } });
  benches.push(wb);
  return wb;
}

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function textOf(messages: BaseMessage[]): string {
  return messages.map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content))).join("\n");
}

test("upload → the tree shows it → the agent writes → artifacts of the run, as zip and tar", async () => {
  const wb = bench();
  const put = await wb.uploads("t-round").put("data/input.csv", "a,b\n1,2\n");
  assert.deepEqual(put, { path: "data/input.csv", bytes: 8 });
  await writeFile(path.join(root, "t-round", ".env"), "KEY=1\n");
  await new Promise((r) => setTimeout(r, 20));

  const model = fakeModel()
    .respond(
      new AIMessage({
        content: "",
        tool_calls: [
          { name: "write_file", args: { path: "out/report.md", content: "# Report\nrows: 1\n" }, id: "w1", type: "tool_call" },
          { name: "write_file", args: { path: `out/${"long-name-".repeat(12)}.txt`, content: "long\n" }, id: "w2", type: "tool_call" },
        ],
      }),
    )
    .respond(new AIMessage("done"));
  const agent = createAgent({ model, tools: wb.tools, middleware: wb.middleware, checkpointer: new MemorySaver() });
  const out = await agent.invoke({ messages: [new HumanMessage("summarise the upload")] }, { configurable: { thread_id: "t-round" } });
  const firstCall = model.calls[0]!.messages as BaseMessage[];
  assert.match(textOf(firstCall), /input\.csv/, "the first model call's tree shows the uploaded file");

  // Default cut-off: the start of this run — the upload is older, the agent's files are listed.
  const produced = await wb.artifacts("t-round");
  assert.equal(produced.since.getTime(), (out as { startWorkTime?: number }).startWorkTime);
  assert.deepEqual(
    produced.files.map((f) => [f.path, f.size]),
    [
      [`out/${"long-name-".repeat(12)}.txt`, 5],
      ["out/report.md", 17],
    ],
  );
  const all = await wb.artifacts("t-round", { since: 0 });
  assert.deepEqual(all.files.map((f) => f.path).sort(), ["data/input.csv", `out/${"long-name-".repeat(12)}.txt`, "out/report.md"], "never the .env");
  const fromState = await wb.artifacts("t-round", { since: out as { startWorkTime?: number } });
  assert.equal(fromState.files.length, 2);

  const zip = unzipSync(await bytesOf(produced.archive("zip")));
  assert.deepEqual(Object.keys(zip).sort(), produced.files.map((f) => f.path).sort());
  assert.equal(new TextDecoder().decode(zip["out/report.md"]), "# Report\nrows: 1\n");

  const tarFile = path.join(root, "out.tar");
  await writeFile(tarFile, await bytesOf(all.archive("tar")));
  const { stdout: listing } = await run("tar", ["-tf", tarFile]);
  assert.deepEqual(listing.trim().split("\n").sort(), all.files.map((f) => f.path).sort());
  const unpacked = path.join(root, "unpacked");
  await mkdir(unpacked);
  await run("tar", ["-xf", tarFile, "-C", unpacked]);
  assert.equal(await readFile(path.join(unpacked, "data", "input.csv"), "utf8"), "a,b\n1,2\n");
  assert.equal(await readFile(path.join(unpacked, "out", `${"long-name-".repeat(12)}.txt`), "utf8"), "long\n");
});

test("uploads refuse escapes, credential files, directories and oversize files with a TransferError", async () => {
  const wb = bench();
  await wb.uploads("t-refuse").put("dir/keep.txt", "k");
  const refused = async (name: string, code: string, data: Uint8Array | string = "x", maxBytes?: number) => {
    await assert.rejects(wb.uploads("t-refuse").put(name, data, maxBytes ? { maxBytes } : undefined), (err: unknown) => {
      assert.ok(err instanceof TransferError, `TransferError for ${name}`);
      assert.equal(err.code, code, `${name}: ${err.message}`);
      assert.ok(!err.message.includes(root), "no host path in the message");
      return true;
    });
  };
  await refused("../escape.txt", "invalid_path");
  await refused(".env", "permission_denied");
  await refused("dir", "is_directory");
  await refused("big.bin", "permission_denied", new Uint8Array(100), 10);
  const binary = await wb.uploads("t-refuse").put("img/pic.png", new Uint8Array([0x89, 0x50, 0, 1]));
  assert.equal(binary.bytes, 4);
  assert.deepEqual(new Uint8Array(await readFile(path.join(root, "t-refuse", "img", "pic.png"))), new Uint8Array([0x89, 0x50, 0, 1]));
});
