import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hasBinaryExtension, isImagePath, sniffBinary } from "../src/guards/binary.js";
import { credentialPathReason, isCredentialPath } from "../src/guards/credentials.js";
import { devicePathReason, nonRegularFileReason } from "../src/guards/devices.js";
import { writeTargetReason } from "../src/guards/writeTargets.js";

describe("devicePathReason (literal paths, no symlink resolution)", () => {
  const refused = [
    "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full", "/dev/stdin", "/dev/tty", "/dev/console", "/dev/stdout",
    "/dev/stderr", "/dev/fd/0", "/dev/fd/2", "/proc/self/fd/0", "/proc/1234/fd/1", "/proc/self/environ", "/proc/42/cmdline",
    "/proc/self/mem", "/proc/self/maps", "/proc/self/task/7/environ", "/dev//zero", "/dev/./stdin", "/proc/thread-self/environ",
  ];
  for (const p of refused) it(`refuses ${p}`, () => assert.ok(devicePathReason(p), p));
  for (const p of ["/dev/shm/x.txt", "/proc/cpuinfo", "/home/u/dev/zero", "dev/zero", "/tmp/proc/self/environ"]) {
    it(`allows ${p}`, () => assert.equal(devicePathReason(p), undefined));
  }
  it("explains non-regular files (FIFO, directory) without opening them", () => {
    assert.match(nonRegularFileReason("p", { type: "other", size: 0, mtimeMs: 0, mode: 0 })!, /FIFO/);
    assert.match(nonRegularFileReason("d", { type: "directory", size: 0, mtimeMs: 0, mode: 0 })!, /directory/);
    assert.equal(nonRegularFileReason("f", { type: "file", size: 0, mtimeMs: 0, mode: 0 }), undefined);
  });
});

describe("binary detection", () => {
  it("knows binary extensions, case-insensitively, and images", () => {
    for (const p of ["a.png", "B.JPG", "x/y.pdf", "lib.so", "m.sqlite", "w.safetensors", "d/.DS_Store"]) assert.ok(hasBinaryExtension(p), p);
    for (const p of ["a.txt", "b.ts", "Makefile", ".env", "x.json", "noext"]) assert.ok(!hasBinaryExtension(p), p);
    assert.ok(isImagePath("shot.PNG"));
    assert.ok(!isImagePath("doc.pdf"));
  });
  it("sniffs NUL bytes and invalid UTF-8, accepts text and a cut multi-byte char", () => {
    assert.ok(sniffBinary(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0])));
    assert.ok(sniffBinary(Buffer.from([0x41, 0xff, 0xfe, 0x41])));
    assert.ok(!sniffBinary(Buffer.from("héllo wörld ✓", "utf8")));
    const euro = Buffer.from("price: €", "utf8");
    assert.ok(!sniffBinary(euro.subarray(0, euro.length - 1)), "a character cut by the sample end is not binary");
    assert.ok(!sniffBinary(Buffer.alloc(0)));
  });
});

describe("credential paths", () => {
  it("covers the .env family but suggests and allows the templates", () => {
    for (const p of [".env", "app/.env", ".env.local", ".env.production", "config/prod.env"]) assert.ok(isCredentialPath(p), p);
    for (const p of [".env.example", ".env.sample", ".env.template", "environment.ts", "venv/lib.py"]) assert.ok(!isCredentialPath(p), p);
    assert.match(credentialPathReason(".env")!, /\.env\.example/);
  });
  it("covers registry logins, private keys and the tool's debug logs", () => {
    for (const p of [".npmrc", "home/.netrc", ".git-credentials", "id_rsa", ".ssh/id_ed25519", "certs/server.key", "tls.pem", "store.p12", ".aws/credentials", "logs/web_tools_debug_1234.json"]) {
      assert.ok(isCredentialPath(p), p);
    }
    for (const p of ["id_rsa.pub", ".ssh/known_hosts", "server.crt", "keys.ts", "monkey.txt", "logs/app.log"]) assert.ok(!isCredentialPath(p), p);
  });
  it("takes extra patterns (globs on the base name, RegExps on the path)", () => {
    assert.ok(!isCredentialPath("secrets/vault.json"));
    assert.ok(isCredentialPath("secrets/vault.json", ["vault.*"]));
    assert.ok(isCredentialPath("secrets/vault.json", [/^secrets\//]));
    assert.ok(isCredentialPath("a/b/service-account.json", ["b/service-*.json"]));
  });
});

describe("write targets (open mode)", () => {
  const home = "/home/alice";
  const refused = ["/etc/hosts", "/etc/passwd", "/etc/sudoers", "/boot/grub/grub.cfg", "/usr/lib/systemd/system/x.service", "/private/etc/x", "/private/var/db/x", "/var/run/docker.sock", "/run/docker.sock", `${home}/.ssh/authorized_keys`, `${home}/.aws/credentials`, `${home}/.gnupg/x`, `${home}/.kube/config`, `${home}/.docker/config.json`, `${home}/.netrc`, `${home}/.npmrc`, `${home}/.git-credentials`, `${home}/.ssh`];
  for (const p of refused) it(`refuses ${p}`, () => assert.ok(writeTargetReason([p], home), p));
  for (const p of ["/tmp/x.txt", `${home}/project/.ssh-notes.md`, `${home}/.sshrc-backup`, "/etcetera/x", "/var/run/other.sock"]) {
    it(`allows ${p}`, () => assert.equal(writeTargetReason([p], home), undefined));
  }
  it("checks every candidate (the raw path and the real path)", () => {
    assert.ok(writeTargetReason(["/tmp/innocent-link", `${home}/.ssh/authorized_keys`], home));
  });
});
