import { stepOverhead } from "./stepOverhead.js";
import { BENCH_DATA_DIR, benchWorkspace } from "./fixtures.js";
await benchWorkspace(100_000);
console.log(await stepOverhead(BENCH_DATA_DIR, "ws-100000", { rounds: 5, short: 5, long: 25 }));
