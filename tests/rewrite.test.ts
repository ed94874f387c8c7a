/**
 * Path rewriting everywhere: the scanner on a hostile corpus and against a naive oracle, and the
 * middleware on every content block type and the ToolMessage artifact, through a real agent.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { createFileManagerMiddleware, type FileManagerMiddleware } from "../middleware/index.js";
import { OTHER_WORKSPACE, PathRewriter, WORKSPACE_ROOT } from "../src/rewrite/paths.js";
import { rewriteContent, rewriteJsonStrings } from "../src/rewrite/values.js";
import { Workspace } from "../src/workspace.js";
import { makeAgent, tempRoot } from "./helpers/agentHarness.js";

// ── a naive oracle: every position, every spelling, longest first ──────────────────────────

const STYLES = ["/", "\\", "\\\\", "\\/", "%2F"];
const STOP = /[\s"'`<>()[\]{},;|]/;
const END = /[\s"'`<>()[\]{},;:|!?*]/;
const isWord = (c: string | undefined) => c !== undefined && /[\w.-]/.test(c);
const endAt = (t: string, p: number) => p >= t.length || END.test(t[p]!) || (t[p] === "." && !/[\w-]/.test(t[p + 1] ?? ""));
const sepAt = (t: string, p: number) => (/^(\\\\|\\\/)/.test(t.slice(p, p + 2)) ? 2 : t[p] === "/" || t[p] === "\\" ? 1 : /^%2[Ff]/.test(t.slice(p, p + 3)) ? 3 : 0);

/** After the own directory: a separator and a path (dropped), or an end (`.`, `./` before a full stop). */
function ownTail(text: string, end: number): [string, number] | undefined {
  const s = sepAt(text, end);
  // A JSON separator whose path cannot start is retried as a single `\`.
  for (const l of s === 2 && text[end] === "\\" ? [2, 1] : s ? [s] : []) {
    if (end + l < text.length && !STOP.test(text[end + l]!)) return ["", l];
  }
  for (const l of s === 2 ? [2, 1, 0] : s ? [s, 0] : [0]) {
    if (endAt(text, end + l)) return [text[end + l] === "." ? "./" : ".", l];
  }
  return undefined;
}

function oracle(text: string, own: string[], roots: string[], ownName: string): string {
  const spell = (p: string) => {
    const fwd = p.replace(/\\/g, "/");
    const list = STYLES.map((s) => fwd.replace(/\//g, s));
    if (encodeURI(fwd) !== fwd) list.push(encodeURI(fwd));
    return list;
  };
  const sps = [...own.flatMap((p) => spell(p).map((t) => ({ t, own: true }))), ...roots.flatMap((p) => spell(p).map((t) => ({ t, own: false })))];
  const seen = new Set<string>();
  const unique = sps.filter((s) => !seen.has(s.t) && seen.add(s.t)).sort((a, b) => b.t.length - a.t.length);
  const at = (i: number, s: string) => (/^[A-Za-z]:/.test(s) ? text.slice(i, i + s.length).toLowerCase() === s.toLowerCase() && text.slice(i + 1, i + s.length) === s.slice(1) : text.startsWith(s, i));
  let out = "";
  let i = 0;
  let from = 0;
  while (i < text.length) {
    let done = false;
    for (const sp of unique) {
      if (!at(i, sp.t) || (i > 0 && isWord(text[i - 1]))) continue;
      const end = i + sp.t.length;
      let rep: string | undefined;
      let consumed = 0;
      if (sp.own) {
        [rep, consumed] = ownTail(text, end) ?? [undefined, 0];
      } else {
        const s = sepAt(text, end);
        if (s > 0) {
          const m = /^(?:[\w~-]|\.(?=[\w~-]))+/.exec(text.slice(end + s));
          if (m && m[0] === ownName) {
            const [r, c] = ownTail(text, end + s + m[0].length) ?? [".", 0];
            [rep, consumed] = [r, s + m[0].length + c];
          } else if (m) [rep, consumed] = [OTHER_WORKSPACE, s + m[0].length];
          else [rep, consumed] = [WORKSPACE_ROOT, endAt(text, end + s) ? s : 0];
        } else if (endAt(text, end)) [rep, consumed] = [WORKSPACE_ROOT, 0];
      }
      if (rep === undefined) continue;
      let begin = i;
      if (i >= 7 && i - 7 >= from && text.slice(i - 7, i).toLowerCase() === "file://" && !isWord(text[i - 8])) begin = i - 7;
      out += text.slice(from, begin) + rep;
      from = i = end + consumed;
      done = true;
      break;
    }
    if (!done) i++;
  }
  return out + text.slice(from);
}

// ── the scanner ────────────────────────────────────────────────────────────────────────────

describe("path rewriting: hostile corpus", () => {
  const root = "/srv/agent_files";
  const t1 = Workspace.forThread(root, "t1");
  const cases: [string, string][] = [
    [`${root}/t1`, "."],
    [`${root}/t1/`, "."],
    [`${root}/t1/a`, "a"],
    [`${root}/t10/a`, `${OTHER_WORKSPACE}/a`],
    [`${root}/t1-x/a ${root}/t1/a`, `${OTHER_WORKSPACE}/a a`],
    [`${root}/t1.bak`, OTHER_WORKSPACE],
    [`${root}/encoded~0123abcd/x`, `${OTHER_WORKSPACE}/x`],
    [`${root}`, WORKSPACE_ROOT],
    [`${root}.`, `${WORKSPACE_ROOT}.`],
    [`${root}/`, WORKSPACE_ROOT],
    [`${root}/ünïcode/x`, `${WORKSPACE_ROOT}/ünïcode/x`],
    [`${root}x/t1/a`, `${root}x/t1/a`],
    [`/home${root}/t1/a`, `/home${root}/t1/a`],
    [`x${root}/t1/a`, `x${root}/t1/a`],
    [`"${root}/t1/a"`, '"a"'],
    [`file://${root}/t1/a.txt`, "a.txt"],
    [`FILE://${root}/t7/a.txt`, `${OTHER_WORKSPACE}/a.txt`],
    [`<a href="file://${root}">`, `<a href="${WORKSPACE_ROOT}">`],
    [encodeURIComponent(`${root}/t1/a b.txt`), "a%20b.txt"],
    [encodeURIComponent(`${root}/t3/x`), `${OTHER_WORKSPACE}%2Fx`],
    [`\\srv\\agent_files\\t1\\a`, "a"],
    [JSON.stringify(`${root}\\t1\\a`), '"a"'],
    [JSON.stringify({ p: `${root}/t2/a` }).replace(/\//g, "\\/"), `{"p":"${OTHER_WORKSPACE}\\/a"}`],
    [`${root}/t1\n${root}/t1/x\n${root}/t10`, `.\nx\n${OTHER_WORKSPACE}`],
    [`a:${root}/t1/b:3: match`, "a:b:3: match"],
    [`${root}/t1/a`.repeat(2), `a${root}/t1/a`],
  ];
  for (const [input, want] of cases) {
    it(`${JSON.stringify(input)} → ${JSON.stringify(want)}`, () => {
      assert.equal(t1.rewrite(input), want, `input ${JSON.stringify(input)}`);
    });
  }

  it("URL-encoded spellings of a root with spaces and non-ASCII names", () => {
    const ws = Workspace.forThread("/srv/agënt files", "t1");
    assert.equal(ws.rewrite("file:///srv/ag%C3%ABnt%20files/t1/x.txt"), "x.txt");
    assert.equal(ws.rewrite("/srv/agënt files/t2/y"), `${OTHER_WORKSPACE}/y`);
    assert.equal(ws.rewrite("/srv/agënt files"), WORKSPACE_ROOT);
  });

  it("a root without a name to anchor on (`/`) leaves text unchanged instead of failing", () => {
    assert.equal(PathRewriter.build({ own: [], roots: ["/"], ownName: "t1" }), null);
    const ws = Workspace.forThread("/", "t1");
    assert.equal(ws.rewrite("/t1/a and /t2/b"), "a and /t2/b");
  });

  const glue = ["/", "\\", "\\\\", "\\/", "%2F", "%2f", ".", "..", " ", "x", "-", "_", "~", ":", '"', "\n", ",", "t1", "t2", "0", "!", "*", "(", "file://", "\u00a0", "é", ""];
  /** Random texts of bases and glue (a fixed seed: failures reproduce). */
  function* randomTexts(bases: string[], count: number): Generator<string> {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let i = 0; i < count; i++) {
      let text = "";
      for (let k = 0, n = 1 + rand(9); k < n; k++) text += rand(3) === 0 ? bases[rand(bases.length)]! : glue[rand(glue.length)]!;
      yield text;
    }
  }

  it("agrees with a naive position-by-position oracle on random text", () => {
    const setups: { ws: Workspace; own: string[]; roots: string[]; bases: string[] }[] = [
      { ws: t1, own: [`${root}/t1`], roots: [root], bases: [root, `${root}/t1`, `${root}/t10`, "\\/srv\\/agent_files\\/t1", "\\srv\\agent_files", "%2Fsrv%2Fagent_files%2Ft1", "%2fsrv%2fagent_files%2ft1"] },
      {
        ws: Workspace.forThread("D:\\agent_files", "t1"),
        own: ["D:\\agent_files\\t1"],
        roots: ["D:\\agent_files"],
        bases: ["D:\\agent_files\\t1", "d:/agent_files/t1", "D:\\\\agent_files\\\\t1", "D:\\agent_files\\t10", "d:\\agent_files"],
      },
      { ws: Workspace.forThread("/t1", "t1"), own: ["/t1/t1"], roots: ["/t1"], bases: ["/t1", "/t1/t1", "\\t1\\t1", "/t1/t10", "t1"] },
    ];
    for (const { ws, own, roots, bases } of setups) {
      for (const text of randomTexts(bases, 4000)) assert.equal(ws.rewrite(text), oracle(text, own, roots, "t1"), `text ${JSON.stringify(text)}`);
    }
  });

  it("both engines agree with the oracle: realpaths, suffix- and prefix-related roots, a renamed symlink, odd names", () => {
    const setups: { own: string[]; roots: string[]; ownName: string; engine: "regex" | "anchor"; bases: string[] }[] = [
      // The root's real path ends with the root's path: matches that are suffixes of each other.
      { own: ["/srv/ws/t1", "/mnt/srv/ws/t1"], roots: ["/srv/ws", "/mnt/srv/ws"], ownName: "t1", engine: "regex", bases: ["/srv/ws", "/mnt/srv/ws/t1", "\\mnt\\srv\\ws\\t2", "/srv/ws/t1", "/mnt"] },
      // One root is the other plus a segment: a shorter spelling can fit where the longer fails.
      { own: ["/data/t1", "/data/ws/t1"], roots: ["/data", "/data/ws"], ownName: "t1", engine: "regex", bases: ["/data", "/data/ws", "/data/wsx", "/data/ws/t1", "/data/t1", "ws", "/data\\ws"] },
      // The thread directory is a symlink to a directory of another name.
      { own: ["/srv/ws/t1", "/srv/ws/real"], roots: ["/srv/ws"], ownName: "t1", engine: "anchor", bases: ["/srv/ws", "/srv/ws/t1", "/srv/ws/real", "/srv/ws/realx", "\\srv\\ws\\real"] },
      // A name that is not read whole after the root (a trailing dot).
      { own: ["/srv/ws/t1."], roots: ["/srv/ws"], ownName: "t1.", engine: "anchor", bases: ["/srv/ws", "/srv/ws/t1.", "/srv/ws/t1", "/srv/ws/t1./a"] },
      // Non-ASCII and a drive letter.
      { own: ["C:\\Usérs\\ws\\t1"], roots: ["C:\\Usérs\\ws"], ownName: "t1", engine: "regex", bases: ["c:\\Usérs\\ws\\t1", "C:/Usérs/ws", "C:/Us%C3%A9rs/ws/t1", "c:\\\\Usérs\\\\ws\\\\t3"] },
    ];
    for (const { own, roots, ownName, engine, bases } of setups) {
      const rw = PathRewriter.build({ own, roots, ownName })!;
      assert.equal(rw.engine, engine, `engine for ${JSON.stringify(own)}`);
      for (const text of randomTexts(bases, 3000)) assert.equal(rw.rewrite(text), oracle(text, own, roots, ownName), `own ${JSON.stringify(own)}, text ${JSON.stringify(text)}`);
    }
  });

  it("dense output keeps no root spelling at a path boundary", () => {
    const lines: string[] = [];
    for (let i = 0; i < 2000; i++) lines.push(i % 3 ? `${root}/t1/src/f${i}.ts:${i}: x` : `${root}/t${i}/x.ts:1: y`);
    const out = t1.rewrite(lines.join("\n"));
    assert.ok(!out.includes(root), "no host path survives");
    assert.equal(out.split("\n")[1], "src/f1.ts:1: x");
    assert.equal(out.split("\n")[3], `${OTHER_WORKSPACE}/x.ts:1: y`);
  });
});

// ── every string a result carries ─────────────────────────────────────────────────────────

describe("rewriting content blocks and artifacts", () => {
  const up = (t: string) => t.replace(/HOST/g, "ws");

  it("rewrites every string field of every block type, but not binary payloads", () => {
    const blocks = [
      { type: "text", text: "HOST/a" },
      { type: "image_url", image_url: { url: "HOST/b.png", detail: "auto" } },
      { type: "image_url", image_url: "HOST/c.png" },
      { type: "image", url: "HOST/d.png", data: "HOST/raw-bytes", mimeType: "image/png" },
      { type: "file", source_type: "base64", data: "SE9TVC9lbmNvZGVk", metadata: { filename: "HOST/e.pdf" } },
      { type: "image_url", image_url: { url: "data:image/png;base64,HOST" } },
      { type: "some_future_block", caption: "HOST/f" },
    ];
    const out = rewriteContent(blocks, up) as any[];
    assert.equal(out[0].text, "ws/a");
    assert.equal(out[1].image_url.url, "ws/b.png");
    assert.equal(out[1].image_url.detail, "auto");
    assert.equal(out[2].image_url, "ws/c.png");
    assert.equal(out[3].url, "ws/d.png");
    assert.equal(out[3].data, "HOST/raw-bytes", "a block's data field is a payload");
    assert.equal(out[4].metadata.filename, "ws/e.pdf");
    assert.equal(out[4].data, "SE9TVC9lbmNvZGVk");
    assert.equal(out[5].image_url.url, "data:image/png;base64,HOST", "data: URLs are payloads");
    assert.equal(out[6].caption, "ws/f");
    assert.equal(blocks[0]!.text, "HOST/a", "the input is not mutated");
    const clean = [{ type: "text", text: "nothing" }];
    assert.equal(rewriteContent(clean, up), clean, "same array when nothing changed");
  });

  it("rewrites artifact strings deeply and keeps non-plain objects as they are", () => {
    class Handle {
      path = "HOST/kept";
    }
    const when = new Date(0);
    const bytes = Buffer.from("HOST");
    const handle = new Handle();
    const artifact = { files: ["HOST/a", { p: "HOST/b", n: 3 }], when, bytes, handle, nothing: null };
    const out = rewriteJsonStrings(artifact, up) as any;
    assert.deepEqual(out.files, ["ws/a", { p: "ws/b", n: 3 }]);
    assert.equal(out.when, when);
    assert.equal(out.bytes, bytes);
    assert.equal(out.handle, handle);
    assert.equal(handle.path, "HOST/kept");
    assert.equal(artifact.files[0], "HOST/a", "the input is not mutated");
    const plain = { a: [1, 2, { b: "x" }] };
    assert.equal(rewriteJsonStrings(plain, up), plain, "same object when nothing changed");
    const cyclic: any = { a: "HOST" };
    cyclic.self = cyclic;
    assert.equal(rewriteJsonStrings(cyclic, up).a, "ws", "a cycle ends at the depth limit instead of overflowing");
  });
});

describe("the middleware rewrites every block and the artifact", () => {
  let root: string;
  let cleanup: () => Promise<void>;
  const opened: FileManagerMiddleware[] = [];
  before(async () => {
    ({ root, cleanup } = await tempRoot("wb-rw-"));
  });
  after(async () => {
    await Promise.all(opened.map((m) => m.close()));
    await cleanup();
  });

  it("image_url and url fields, artifact JSON, the root and other threads → no host path in the checkpoint", async () => {
    const own = path.join(root, "blocks");
    const other = path.join(root, "someone-else");
    const shot = tool(
      (_input, config) =>
        new ToolMessage({
          content: [
            { type: "text", text: `rendered ${own}/page.png (copied from ${other}/page.png); root is ${root}` },
            { type: "image_url", image_url: { url: `file://${own}/page.png` } },
            { type: "image", source_type: "base64", data: "iVBORw0KGgo=", mime_type: "image/png" },
          ],
          artifact: { saved: [`${own}/page.png`], meta: { cwd: own, sibling: `${other}/x` }, count: 1 },
          tool_call_id: config.toolCall?.id ?? "",
          name: "shot",
        }),
      { name: "shot", description: "x", schema: z.object({}) },
    );
    const fm = createFileManagerMiddleware({ rootDir: root, onError: () => undefined });
    opened.push(fm);
    const { agent } = await makeAgent({ script: [[{ name: "shot", args: {}, id: "s" }], "ok"], tools: [shot], middleware: [fm] });
    await agent.invoke({ messages: [new HumanMessage("go")] }, { configurable: { thread_id: "blocks" } });
    const state = await agent.graph.getState({ configurable: { thread_id: "blocks" } });
    const msg = (state.values.messages as BaseMessage[]).find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    const content = msg.content as any[];
    assert.equal(content[0].text, `rendered page.png (copied from ${OTHER_WORKSPACE}/page.png); root is ${WORKSPACE_ROOT}`);
    assert.equal(content[1].image_url.url, "page.png");
    assert.equal(content[2].data, "iVBORw0KGgo=", "base64 payload untouched");
    assert.deepEqual(msg.artifact, { saved: ["page.png"], meta: { cwd: ".", sibling: `${OTHER_WORKSPACE}/x` }, count: 1 });
    assert.ok(!JSON.stringify(state.values.messages).includes(root), "no host path anywhere in the checkpointed messages");
  });
});
