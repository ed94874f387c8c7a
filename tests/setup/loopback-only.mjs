/**
 * Loaded before every test file (see the `test:unit` script) and into the processes tests spawn
 * (NODE_OPTIONS): refuses any TCP connection to an address outside the loopback range, so no
 * test — through a bug, an SDK default, analytics or a DNS answer — can send traffic off this
 * machine. Host names are judged by the addresses they resolve to (tests inject DNS answers for
 * made-up names). A refused connection fails loudly. Plain JavaScript so any Node process can
 * load it without a TypeScript loader.
 */
import dns from "node:dns";
import net from "node:net";

const isLoopback = (address) => /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/i.test(address.replace(/^\[|\]$/g, ""));

function refusal(host) {
  return Object.assign(new Error(`tests may only connect to loopback addresses; refused ${host}`), { code: "ECONNREFUSED" });
}

/** Wraps a lookup so that every address it answers with is checked before the socket uses it. */
function guardedLookup(inner) {
  return (host, options, callback) =>
    inner(host, options, (err, address, family) => {
      if (err) return callback(err);
      const all = Array.isArray(address) ? address.map((a) => a.address) : [address];
      const bad = all.find((a) => !isLoopback(a));
      if (bad !== undefined) return callback(refusal(`${host} (${bad})`));
      callback(null, address, family);
    });
}

const originalConnect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(...args) {
  let opts;
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (first && typeof first === "object") opts = { ...first };
  else if (typeof first === "number") opts = { port: first, host: typeof args[1] === "string" ? args[1] : "localhost" };
  if (opts === undefined || opts.path !== undefined) return originalConnect.apply(this, args); // unix socket
  const host = String(opts.host ?? "localhost");
  if (net.isIP(host.replace(/^\[|\]$/g, ""))) {
    if (!isLoopback(host)) {
      process.nextTick(() => this.destroy(refusal(host)));
      return this;
    }
    return originalConnect.apply(this, args);
  }
  const rest = args.slice(typeof first === "number" ? (typeof args[1] === "string" ? 2 : 1) : 1).filter((a) => typeof a === "function");
  opts.lookup = guardedLookup(opts.lookup ?? dns.lookup);
  return originalConnect.call(this, opts, ...rest);
};
