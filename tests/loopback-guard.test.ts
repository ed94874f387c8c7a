// Proves the loopback-only guard loaded before every test file (tests/setup/loopback-only.mjs).
import test from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import http from "node:http";
test("tests cannot connect outside loopback, by address or by resolved name; loopback works", async () => {
  const err = await new Promise<Error>((res) => { const s = net.connect(80, "10.1.2.3"); s.on("error", res); s.on("connect", () => res(new Error("connected!"))); });
  assert.match(err.message, /refused 10.1.2.3/);
  const err2 = await new Promise<Error>((res) => { const s = net.connect({ port: 80, host: "public.test", lookup: (h: string, o: any, cb: any) => o.all ? cb(null, [{address:"93.184.216.34", family:4}]) : cb(null, "93.184.216.34", 4) }); s.on("error", res); s.on("connect", () => res(new Error("connected!"))); });
  assert.match(err2.message, /refused public.test/);
  const srv = http.createServer((q, r) => r.end("ok")); await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as net.AddressInfo).port;
  const body = await (await fetch(`http://localhost:${port}/`)).text(); assert.equal(body, "ok");
  const body2 = await (await fetch(`http://127.0.0.1:${port}/`)).text(); assert.equal(body2, "ok");
  srv.close();
});
