/**
 * Append mode's tree diff (middleware/treeUpdate.ts) and the persisted view it reads and writes
 * (middleware/treeView.ts), as pure functions: one test per edge case listed at the top of
 * treeUpdate.ts. The whole-agent behaviour is in tree-append.test.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { BaseMessage } from "@langchain/core/messages";
import { isWorkspaceChangeMessage } from "../middleware/treeMessage.js";
import { CLOCK_SLACK_MS, MAX_UNLISTED_CHECKS, messageChars, nextTreeUpdate, treeUpdateProbes, type HostFacts } from "../middleware/treeUpdate.js";
import { knownEntriesOf, knownSum, MAX_KNOWN_CHARS, treeViewSchema, viewAfterFullTree, type KnownEntries, type TreeView } from "../middleware/treeView.js";
import type { TreeListing } from "../src/treeListing.js";

const T0 = Date.UTC(2025, 0, 1);
const T1 = T0 + 60_000;
/** A budget no change message here reaches. */
const ROOMY = 1_000_000;

const listing = (entries: string[], more: Partial<TreeListing> = {}): TreeListing => ({ entries, complete: true, partial: [], ...more });

/** What the model knows right after a full tree listing `entries`. */
function afterTree(entries: string[], basePartial: string[] = []): { view: TreeView; known: KnownEntries } {
  return { view: viewAfterFullTree(listing(entries), T0)!, known: { base: entries, known: entries, basePartial } };
}

function update(start: { view: TreeView; known: KnownEntries }, next: TreeListing, host: HostFacts = new Map(), treeChars = ROOMY) {
  return nextTreeUpdate(start.view, next, { known: start.known, host, at: T1, changedAt: T1, treeChars });
}

/** The change lines of a change message. */
function lines(message: BaseMessage | undefined): string[] {
  assert.ok(message, "a change message");
  assert.ok(isWorkspaceChangeMessage(message));
  const body = /<workspace_changes [^>]*>\n([\s\S]*)\n<\/workspace_changes>/.exec(String(message.content));
  return body![1]!.split("\n");
}

const BASE = ["README.md", "src/", "src/a.ts", "src/b.ts"];

describe("nextTreeUpdate", () => {
  it("first view: after a full tree nothing is told since, and the view fingerprints the tree's entries", () => {
    const view = viewAfterFullTree(listing(BASE), T0)!;
    assert.deepEqual(view, { added: "", removed: "", sum: knownSum(BASE), ids: [], chars: 0, at: T0 });
    assert.equal(knownSum([...BASE].reverse()), view.sum, "order-free");
    assert.equal(treeViewSchema.safeParse(view).success, true);
  });

  it("first view: a tree with too many entries to diff against records no view (the next change sends a full tree)", () => {
    const big = Array.from({ length: Math.ceil(MAX_KNOWN_CHARS / 10) + 1 }, (_, i) => `file-${String(i).padStart(4, "0")}`);
    assert.equal(viewAfterFullTree(listing(big), T0), undefined);
  });

  it("no change: no message, the view keeps its record and moves its time", () => {
    const start = afterTree(BASE);
    assert.deepEqual(treeUpdateProbes(start.view, start.known, listing(BASE)), []);
    const out = update(start, listing(BASE))!;
    assert.equal(out.message, undefined);
    assert.deepEqual(out.view, { ...start.view, at: T1, partial: undefined });
  });

  it("added entries are told with +, and recorded as added to the tree", () => {
    const start = afterTree(BASE);
    const out = update(start, listing([...BASE, "src/c.ts", "notes.md"]))!;
    assert.deepEqual(lines(out.message), ["+ src/c.ts", "+ notes.md"]);
    assert.equal(out.view.added, "src/c.ts\nnotes.md");
    assert.equal(out.view.removed, "");
    assert.deepEqual(out.view.ids, [out.message!.id]);
    assert.equal(out.view.chars, messageChars(out.message!));
  });

  it("removed entries are told with -, a removed directory's entries folded into its line", () => {
    const start = afterTree(BASE);
    const out = update(start, listing(["README.md"]))!;
    assert.deepEqual(lines(out.message), ["- src/"]);
    assert.equal(out.view.removed, "src/\nsrc/a.ts\nsrc/b.ts");
  });

  it("renamed: one removal and one addition in one directory, and a directory whose entries all moved", () => {
    const start = afterTree(BASE);
    assert.deepEqual(lines(update(start, listing(["README.md", "src/", "src/a.ts", "src/c.ts"]))!.message), ["renamed src/b.ts => src/c.ts"]);
    assert.deepEqual(lines(update(start, listing(["README.md", "lib/", "lib/a.ts", "lib/b.ts"]))!.message), ["renamed src/ => lib/"]);
  });

  it("a delete and an unrelated create in one step stay - and +", () => {
    const start = afterTree(BASE);
    assert.deepEqual(lines(update(start, listing(["README.md", "src/", "src/a.ts", "src/b.ts", "docs/"].filter((k) => k !== "src/b.ts")))!.message), [
      "- src/b.ts",
      "+ docs/",
    ]);
  });

  it(`too many changes (over ${MAX_UNLISTED_CHECKS} added + missing): a full tree is due`, () => {
    const start = afterTree(BASE);
    const many = listing([...BASE, ...Array.from({ length: MAX_UNLISTED_CHECKS + 1 }, (_, i) => `new-${i}.txt`)]);
    assert.equal(treeUpdateProbes(start.view, start.known, many), undefined);
    assert.equal(update(start, many), undefined);
    const exactly = listing([...BASE, ...Array.from({ length: MAX_UNLISTED_CHECKS }, (_, i) => `new-${i}.txt`)]);
    assert.ok(update(start, exactly)?.message, "at the bound: still a change message");
  });

  it("a missing entry whose name was shortened or escaped cannot be checked: a full tree is due", () => {
    for (const opaque of ["long-...(+40 chars)...name.txt", "bad\\x1bname.txt"]) {
      const start = afterTree([...BASE, opaque]);
      assert.equal(treeUpdateProbes(start.view, start.known, listing(BASE)), undefined, opaque);
      assert.equal(update(start, listing(BASE)), undefined, opaque);
    }
  });

  it("budget cut: an entry that only dropped out of the listing is asked about, kept and not told", () => {
    const start = afterTree(BASE);
    const cut = listing(["README.md", "src/", "src/a.ts"], { complete: false, partial: ["src/"] });
    assert.deepEqual(treeUpdateProbes(start.view, start.known, cut), ["src/b.ts"]);
    const kept = update(start, cut, new Map([["src/b.ts", T0 - 1]]))!;
    assert.equal(kept.message, undefined);
    assert.equal(kept.view.removed, "");
    assert.equal(kept.view.partial, "src/", "the listing's partial directories differ from the tree's: recorded");
    const unasked = update(start, cut)!;
    assert.equal(unasked.message, undefined, "not asked: not assumed gone");
  });

  it("budget cut: an entry the host says is gone is told as removed", () => {
    const start = afterTree(BASE);
    const cut = listing(["README.md", "src/", "src/a.ts"], { complete: false, partial: ["src/"] });
    const out = update(start, cut, new Map([["src/b.ts", null]]))!;
    assert.deepEqual(lines(out.message), ["- src/b.ts"]);
    assert.equal(out.view.removed, "src/b.ts");
  });

  it("a complete listing needs no question: a missing entry is gone", () => {
    const start = afterTree(BASE);
    assert.deepEqual(treeUpdateProbes(start.view, start.known, listing(["README.md", "src/", "src/a.ts"])), []);
  });

  it("partial directory: a newly listed old entry is learnt silently, a recently modified one is told", () => {
    const start = afterTree(["README.md", "src/", "src/a.ts"], ["src/"]);
    const more = listing(["README.md", "src/", "src/a.ts", "src/old.ts"]);
    assert.deepEqual(treeUpdateProbes(start.view, start.known, more), ["src/old.ts"]);
    const old = update(start, more, new Map([["src/old.ts", T0 - CLOCK_SLACK_MS - 1]]))!;
    assert.equal(old.message, undefined);
    assert.equal(old.view.added, "src/old.ts", "known from now on");
    const fresh = update(start, more, new Map([["src/old.ts", T0 - CLOCK_SLACK_MS]]))!;
    assert.deepEqual(lines(fresh.message), ["+ src/old.ts"], "within the clock slack: new");
    assert.equal(update(start, more, new Map([["src/old.ts", null]]))!.message, undefined, "vanished since: not told");
  });

  it("character-budget cut (*): any newly listed entry may be old", () => {
    const start = afterTree(["README.md", "src/"], ["*"]);
    const more = listing(["README.md", "src/", "top.txt"]);
    assert.deepEqual(treeUpdateProbes(start.view, start.known, more), ["top.txt"]);
    assert.equal(update(start, more, new Map([["top.txt", T0 - 10 * CLOCK_SLACK_MS]]))!.message, undefined);
  });

  it("the view's own partial directories win over the tree's", () => {
    const start = afterTree(["README.md", "src/", "src/a.ts"], ["src/"]);
    const view = { ...start.view, partial: "" };
    const more = listing(["README.md", "src/", "src/a.ts", "src/new.ts"]);
    assert.deepEqual(treeUpdateProbes(view, start.known, more), [], "src/ was listed whole since");
    assert.deepEqual(lines(nextTreeUpdate(view, more, { known: start.known, host: new Map(), at: T1, changedAt: T1, treeChars: ROOMY })!.message), ["+ src/new.ts"]);
  });

  it("under a directory told as added in the same update, entries are new without asking", () => {
    const start = afterTree(BASE);
    const more = listing([...BASE, "pkg/", "pkg/index.ts", "pkg/deep/", "pkg/deep/x.ts"]);
    assert.deepEqual(treeUpdateProbes(start.view, start.known, more), []);
    assert.deepEqual(lines(update(start, more)!.message), ["+ pkg/", "+ pkg/index.ts", "+ pkg/deep/", "+ pkg/deep/x.ts"]);
  });

  it("under an unknown directory that was not found new, entries are asked about (parents first, none missed)", () => {
    const start = afterTree(["README.md", "src/"], ["src/"]);
    const more = listing(["README.md", "src/", "src/lib/", "src/lib/x.ts"]);
    assert.deepEqual(treeUpdateProbes(start.view, start.known, more), ["src/lib/", "src/lib/x.ts"]);
    const oldDir = update(start, more, new Map([["src/lib/", T0 - 10 * CLOCK_SLACK_MS], ["src/lib/x.ts", T0 - 10 * CLOCK_SLACK_MS]]))!;
    assert.equal(oldDir.message, undefined);
    const newDir = update(start, more, new Map([["src/lib/", T1], ["src/lib/x.ts", T0 - 10 * CLOCK_SLACK_MS]]))!;
    assert.deepEqual(lines(newDir.message), ["+ src/lib/", "+ src/lib/x.ts"], "the directory is new, so are its entries");
  });

  it("too much to remember (known keys over MAX_KNOWN_CHARS): a full tree is due", () => {
    const long = `${"d".repeat(MAX_KNOWN_CHARS - 20)}.txt`;
    const start = afterTree([long]);
    assert.ok(start.view, "the tree itself fits");
    assert.equal(update(start, listing([long, "a-new-file-name.txt"])), undefined);
  });

  it("the change messages since the tree outgrowing a fresh tree: a full tree is due", () => {
    const start = afterTree(BASE);
    const next = listing([...BASE, "c.txt"]);
    const one = update(start, next)!;
    const size = messageChars(one.message!);
    assert.ok(update(start, next, new Map(), size)?.message, "exactly a tree's worth: still a change message");
    assert.equal(update(start, next, new Map(), size - 1), undefined);
    assert.equal(update({ ...start, view: { ...start.view, chars: 1 } }, next, new Map(), size), undefined, "earlier change messages count");
  });

  it("successive updates: ids and characters add up, and the view rebuilds what the model knows from the tree", () => {
    const tree = ".\n|-- README.md\n`-- src/\n    |-- a.ts\n    `-- b.ts";
    const known0 = knownEntriesOf(viewAfterFullTree(listing(BASE), T0)!, tree)!;
    assert.deepEqual(known0, { base: BASE, known: BASE, basePartial: [] });
    const first = nextTreeUpdate(viewAfterFullTree(listing(BASE), T0)!, listing([...BASE, "c.txt"]), { known: known0, host: new Map(), at: T1, changedAt: T1, treeChars: ROOMY })!;
    const known1 = knownEntriesOf(first.view, tree)!;
    assert.deepEqual(known1.known, [...BASE, "c.txt"]);
    const after = ["README.md", "src/", "src/a.ts", "c.txt"];
    const second = nextTreeUpdate(first.view, listing(after), { known: known1, host: new Map(), at: T1 + 1, changedAt: T1 + 1, treeChars: ROOMY })!;
    assert.deepEqual(lines(second.message), ["- src/b.ts"]);
    assert.deepEqual(second.view.ids, [first.message!.id, second.message!.id]);
    assert.equal(second.view.chars, messageChars(first.message!) + messageChars(second.message!));
    assert.deepEqual(knownEntriesOf(second.view, tree)!.known, after);
    assert.equal(treeViewSchema.safeParse(second.view).success, true);
  });

  it("a re-added entry leaves the removed record, so the rebuilt list matches the fingerprint", () => {
    const tree = ".\n|-- README.md\n`-- src/\n    |-- a.ts\n    `-- b.ts";
    const start = afterTree(BASE);
    const gone = update(start, listing(["README.md", "src/", "src/a.ts"]))!;
    const known1 = knownEntriesOf(gone.view, tree)!;
    const back = nextTreeUpdate(gone.view, listing(BASE), { known: known1, host: new Map(), at: T1, changedAt: T1, treeChars: ROOMY })!;
    assert.equal(back.view.removed, "");
    assert.equal(back.view.added, "");
    assert.deepEqual(knownEntriesOf(back.view, tree)!.known, BASE);
  });
});

describe("the persisted tree view", () => {
  const tree = ".\n|-- README.md\n`-- src/ ... 3 more entries";

  it("the tree's partial directories come back with its entries", () => {
    assert.deepEqual(knownEntriesOf(viewAfterFullTree(listing(["README.md", "src/"]), T0)!, tree), {
      base: ["README.md", "src/"],
      known: ["README.md", "src/"],
      basePartial: ["src/"],
    });
  });

  it("a tree message altered since (its entries no longer match the fingerprint) is not trusted", () => {
    const view = viewAfterFullTree(listing(["README.md", "src/"]), T0)!;
    assert.equal(knownEntriesOf(view, ".\n`-- README.md"), undefined);
  });

  it("an older checkpoint's full `known` record is used as it is, and not carried forward", () => {
    const legacy: TreeView = { known: "README.md\nsrc/\nextra.txt", ids: [], chars: 0, at: T0 };
    const known = knownEntriesOf(legacy, tree)!;
    assert.deepEqual(known.known, ["README.md", "src/", "extra.txt"]);
    const out = nextTreeUpdate(legacy, listing(["README.md", "src/"], { complete: false, partial: ["src/"] }), { known, host: new Map([["extra.txt", null]]), at: T1, changedAt: T1, treeChars: ROOMY })!;
    assert.deepEqual(lines(out.message), ["- extra.txt"]);
    assert.equal("known" in out.view, false);
    assert.equal(out.view.sum, knownSum(["README.md", "src/"]));
    assert.equal(out.view.partial, undefined, "same partial directories as the tree's: not recorded");
  });

  it("the stored record is not strict: a checkpoint with a field from a later version still reads", () => {
    assert.equal(treeViewSchema.safeParse({ ids: [], chars: 0, at: T0, later: 1 }).success, true);
  });
});
