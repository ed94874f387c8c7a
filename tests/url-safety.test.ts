import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { checkUrlSafety } from "../src/guards/url.js";

/** Resolves every name to the given addresses, so no test depends on real DNS. */
const answers = (...addresses: string[]) => async () => addresses;

describe("checkUrlSafety: what the WHATWG URL parser normalises", () => {
  // The guard relies on these: legacy IPv4 spellings reach it already in dotted-quad form.
  for (const [input, host] of [
    ["http://2130706433/", "127.0.0.1"],
    ["http://0x7f000001/", "127.0.0.1"],
    ["http://0177.0.0.1/", "127.0.0.1"],
    ["http://0x7f.1/", "127.0.0.1"],
    ["http://127.1/", "127.0.0.1"],
    ["http://017700000001/", "127.0.0.1"],
    ["http://0/", "0.0.0.0"],
    ["http://0x7f.0x0.0x0.0x1/", "127.0.0.1"],
    ["http://127.000.000.001/", "127.0.0.1"],
    ["http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "127.0.0.1"],
    ["http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1]"],
    ["http://METADATA.Google.Internal./", "metadata.google.internal."],
  ] as const) {
    it(`${input} → ${host}`, () => assert.equal(new URL(input).hostname, host));
  }
});

describe("checkUrlSafety: blocked forms (literal IPs are only checked, never connected to)", () => {
  const blocked: Array<[string, RegExp]> = [
    ["http://127.0.0.1/", /loopback/],
    ["http://2130706433/", /loopback/],
    ["http://0x7f000001/", /loopback/],
    ["http://0177.0.0.1/", /loopback/],
    ["http://0x7f.1/", /loopback/],
    ["http://127.1/", /loopback/],
    ["http://017700000001/", /loopback/],
    ["http://0x7f.0x0.0x0.0x1/", /loopback/],
    ["http://127.000.000.001/", /loopback/],
    ["http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", /loopback/],
    ["http://user:pass@127.0.0.1/", /loopback/],
    ["http://0/", /unspecified/],
    ["http://0.0.0.0:8080/", /unspecified/],
    ["http://10.0.0.1/", /private/],
    ["http://172.16.5.4/", /private/],
    ["http://192.168.1.1/", /private/],
    ["http://100.64.0.1/", /carrierGradeNat/],
    ["http://169.254.1.1/", /link-local/],
    ["http://224.0.0.1/", /multicast/],
    ["http://255.255.255.255/", /broadcast/],
    ["http://240.0.0.1/", /reserved/],
    ["http://192.0.2.10/", /reserved/],
    ["http://[::1]/", /loopback/],
    ["http://[::]/", /unspecified/],
    ["http://[fc00::1]/", /uniqueLocal/],
    ["http://[fd12:3456::1]/", /uniqueLocal/],
    ["http://[fe80::1]/", /linkLocal/],
    ["http://[ff02::1]/", /multicast/],
    ["http://[2001:db8::1]/", /reserved/],
    ["http://[::ffff:127.0.0.1]/", /loopback/],
    ["http://[::ffff:a00:1]/", /private/],
    ["http://[::127.0.0.1]/", /loopback/],
    ["http://[::10.0.0.1]/", /private/],
    ["http://[64:ff9b::7f00:1]/", /loopback/],
    ["http://[64:ff9b::10.1.1.1]/", /private/],
    ["http://[2002:7f00:1::]/", /loopback/],
    ["http://169.254.169.254/latest/meta-data/", /metadata/],
    ["http://169.254.170.2/v2/credentials", /metadata/],
    ["http://100.100.100.200/latest/meta-data/", /metadata/],
    ["http://[fd00:ec2::254]/", /metadata/],
    ["http://[::ffff:169.254.169.254]/", /metadata/],
    ["http://[64:ff9b::a9fe:a9fe]/", /metadata/],
    ["http://168.63.129.16/machine?comp=goalstate", /metadata/],
    ["http://[::ffff:168.63.129.16]/", /metadata/],
    // Local-use NAT64 embedding 169.254.169.254 at the /48 position, with a public-looking tail.
    ["http://[64:ff9b:1:a9fe:a9:fe00:808:808]/", /local-use NAT64/],
    ["http://[64:ff9b:1::a9fe:a9fe]/", /metadata|local-use NAT64/],
    ["http://[64:ff9b:1::808:808]/", /local-use NAT64/],
    ["http://metadata.google.internal/computeMetadata/v1/", /metadata host/],
    ["http://METADATA.GOOGLE.INTERNAL./", /metadata host/],
    ["http://metadata.goog/", /metadata host/],
    ["ftp://example.com/file", /only http and https/],
    ["file:///etc/passwd", /only http and https/],
    ["javascript:alert(1)", /only http and https/],
    ["data:text/html,hi", /only http and https/],
    ["gopher://127.0.0.1:25/", /only http and https/],
    ["http://", /not a valid absolute URL/],
    ["not a url", /not a valid absolute URL/],
    ["/relative/path", /not a valid absolute URL/],
  ];
  for (const [url, reason] of blocked) {
    it(`blocks ${url}`, async () => {
      const verdict = await checkUrlSafety(url, { allowPrivate: false, lookup: answers("93.184.216.34") });
      assert.equal(verdict.safe, false);
      assert.match(verdict.reason ?? "", reason);
      assert.equal(verdict.addresses, undefined);
    });
  }
});

describe("checkUrlSafety: DNS answers", () => {
  it("allows a public literal and returns it as the vetted address", async () => {
    assert.deepEqual(await checkUrlSafety("https://93.184.216.34/x", { allowPrivate: false }), {
      safe: true,
      addresses: ["93.184.216.34"],
    });
    const v6 = await checkUrlSafety("http://[2606:2800:220:1:248:1893:25c8:1946]/", { allowPrivate: false });
    assert.equal(v6.safe, true);
  });

  it("allows a host whose every answer is public, and returns every answer", async () => {
    const verdict = await checkUrlSafety("https://docs.example.com/page", {
      allowPrivate: false,
      lookup: answers("93.184.216.34", "2606:2800:220:1::1"),
    });
    assert.deepEqual(verdict, { safe: true, addresses: ["93.184.216.34", "2606:2800:220:1::1"] });
  });

  it("blocks a host when any one answer is private", async () => {
    const verdict = await checkUrlSafety("https://mixed.example.com/", {
      allowPrivate: false,
      lookup: answers("93.184.216.34", "10.0.0.7"),
    });
    assert.equal(verdict.safe, false);
    assert.match(verdict.reason ?? "", /10\.0\.0\.7.*private/);
  });

  it("judges IPv4-mapped and NAT64 DNS answers by the embedded IPv4", async () => {
    for (const answer of ["::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "::ffff:10.0.0.1", "64:ff9b:1:a9fe:a9:fe00:808:808", "168.63.129.16"]) {
      const verdict = await checkUrlSafety("http://sneaky.example.com/", { allowPrivate: false, lookup: answers(answer) });
      assert.equal(verdict.safe, false, answer);
    }
  });

  it("blocks when DNS fails, naming the error", async () => {
    const verdict = await checkUrlSafety("http://nowhere.invalid/", {
      lookup: async () => {
        throw Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.invalid"), { code: "ENOTFOUND" });
      },
    });
    assert.equal(verdict.safe, false);
    assert.match(verdict.reason ?? "", /DNS lookup of nowhere\.invalid failed \(ENOTFOUND\)/);
  });

  it("judges a name by its answers, not its spelling (127.0.0.1.nip.io style)", async () => {
    const verdict = await checkUrlSafety("http://127.0.0.1.nip.io/", { allowPrivate: false, lookup: answers("127.0.0.1") });
    assert.equal(verdict.safe, false);
  });

  it("blocks when DNS returns no address or garbage", async () => {
    assert.equal((await checkUrlSafety("http://empty.example/", { lookup: answers() })).safe, false);
    assert.equal((await checkUrlSafety("http://garbage.example/", { lookup: answers("not-an-ip") })).safe, false);
  });

  it("uses the system resolver by default (localhost resolves locally, to loopback)", async () => {
    const verdict = await checkUrlSafety("http://localhost:9/", { allowPrivate: false });
    assert.equal(verdict.safe, false);
    assert.match(verdict.reason ?? "", /loopback/);
  });
});

describe("checkUrlSafety: allowPrivate and allowHosts", () => {
  const saved = process.env.WORKBENCH_ALLOW_PRIVATE_URLS;
  afterEach(() => {
    if (saved === undefined) delete process.env.WORKBENCH_ALLOW_PRIVATE_URLS;
    else process.env.WORKBENCH_ALLOW_PRIVATE_URLS = saved;
  });

  it("allowPrivate opens private, loopback, CGNAT and ULA targets", async () => {
    for (const url of ["http://127.0.0.1:3000/", "http://10.1.2.3/", "http://100.64.1.1/", "http://[fd12::1]/", "http://[::1]/"]) {
      assert.equal((await checkUrlSafety(url, { allowPrivate: true })).safe, true, url);
    }
  });

  it("metadata and 169.254/16 stay blocked even with allowPrivate and allowHosts", async () => {
    const options = {
      allowPrivate: true,
      allowHosts: ["169.254.169.254", "169.254.0.0/16", "metadata.google.internal", "fd00::/8", "100.100.100.200"],
    };
    for (const url of [
      "http://169.254.169.254/",
      "http://169.254.170.2/",
      "http://169.254.10.10/",
      "http://100.100.100.200/",
      "http://[fd00:ec2::254]/",
      "http://metadata.google.internal/",
      "http://metadata.goog/",
    ]) {
      assert.equal((await checkUrlSafety(url, options)).safe, false, url);
    }
    const viaDns = await checkUrlSafety("http://innocent.example/", { ...options, lookup: answers("169.254.169.254") });
    assert.equal(viaDns.safe, false);
  });

  it("multicast, broadcast and reserved stay blocked with allowPrivate", async () => {
    for (const url of ["http://224.0.0.1/", "http://255.255.255.255/", "http://240.0.0.1/", "http://0.0.0.0/"]) {
      assert.equal((await checkUrlSafety(url, { allowPrivate: true })).safe, false, url);
    }
  });

  it("allowHosts with an exact host opens only that host", async () => {
    const options = { allowPrivate: false, allowHosts: ["127.0.0.1", "Intranet.Local"] };
    assert.equal((await checkUrlSafety("http://127.0.0.1:8080/", options)).safe, true);
    assert.equal((await checkUrlSafety("http://127.0.0.2/", options)).safe, false);
    assert.equal((await checkUrlSafety("http://intranet.local/", { ...options, lookup: answers("10.9.8.7") })).safe, true);
    assert.equal((await checkUrlSafety("http://other.local/", { ...options, lookup: answers("10.9.8.7") })).safe, false);
  });

  it("allowHosts with a CIDR opens addresses inside it only", async () => {
    const options = { allowPrivate: false, allowHosts: ["10.1.0.0/16"] };
    assert.equal((await checkUrlSafety("http://wiki.corp/", { ...options, lookup: answers("10.1.2.3") })).safe, true);
    assert.equal((await checkUrlSafety("http://wiki.corp/", { ...options, lookup: answers("10.2.0.1") })).safe, false);
    assert.equal((await checkUrlSafety("http://10.1.200.1/", options)).safe, true);
  });

  it("reads the default from WORKBENCH_ALLOW_PRIVATE_URLS; an explicit option wins", async () => {
    process.env.WORKBENCH_ALLOW_PRIVATE_URLS = "true";
    assert.equal((await checkUrlSafety("http://10.0.0.1/")).safe, true);
    assert.equal((await checkUrlSafety("http://10.0.0.1/", { allowPrivate: false })).safe, false);
    process.env.WORKBENCH_ALLOW_PRIVATE_URLS = "false";
    assert.equal((await checkUrlSafety("http://10.0.0.1/")).safe, false);
  });
});
