import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { renderDirectoryTree, TREE_BRANCH, TREE_LAST, TREE_PIPE } from "../src/tree.js";
import { BENCH_DATA_DIR } from "./fixtures.js";
const ascii = await renderDirectoryTree(`${BENCH_DATA_DIR}/ws-100000`, { rootLabel: "." });
const box = ascii.replaceAll(TREE_BRANCH, "├── ").replaceAll(TREE_LAST, "└── ").replaceAll(TREE_PIPE, "│   ");
const serde = new JsonPlusSerializer();
const mk = (tree: string, turns: number) => {
  const msgs: any[] = [new HumanMessage({ content: "tick", id: "h" }), new HumanMessage({ content: tree, id: "tree" })];
  for (let i = 0; i < turns; i++) { msgs.push(new AIMessage({ content: "", id: `a${i}`, tool_calls: [{ name: "get_current_time", args: {}, id: `c${i}` }] })); msgs.push(new ToolMessage({ content: "2026-11-30T19:00:00+00:00\nMonday, November 30, 2026 at 7:00:00 PM UTC (UTC)", tool_call_id: `c${i}`, id: `t${i}` })); }
  return { v: 4, id: "x", ts: "t", channel_values: { messages: msgs }, channel_versions: {}, versions_seen: {} };
};
for (const turns of [5, 20, 35]) {
  const cases = { ascii: mk(ascii, turns), box: mk(box, turns) };
  const res: Record<string, number[]> = { ascii: [], box: [] };
  for (let r = 0; r < 7; r++) for (const [k, cp] of Object.entries(cases)) {
    const N = 300; const c0 = process.cpuUsage();
    for (let i = 0; i < N; i++) await serde.dumpsTyped(cp);
    const c = process.cpuUsage(c0); res[k]!.push((c.user + c.system) / N);
  }
  const med = (a: number[]) => a.sort((x, y) => x - y)[3]!;
  console.log(`turns ${turns}: ascii ${med(res.ascii!).toFixed(0)} µs, box ${med(res.box!).toFixed(0)} µs per checkpoint serialisation`);
}
