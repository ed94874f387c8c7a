/**
 * DockerSandbox with secrets: the container gets the trust variables, and the proxy's CA and the
 * bundle (system roots + that CA) are readable inside at /run/workbench-egress as the container's
 * user. (The test image has no TLS client; the interception itself is tested with curl in bwrap.)
 */
import assert from "node:assert/strict";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { X509Certificate } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { DockerSandbox } from "../src/environment/dockerSandbox.js";
import { createRunCommandTool } from "../tools/runCommand.js";
import { DOCKER, dockerUnavailable, IMAGE } from "./helpers/docker.js";

const skip = await dockerUnavailable();

describe("DockerSandbox egress with secrets: the proxy's CA is trusted inside", { skip }, () => {
  let rootDir: string;
  let sandbox: ReturnType<typeof DockerSandbox>;
  before(async () => {
    rootDir = await realpath(await mkdtemp(path.join(os.tmpdir(), "wb-docker-egress-tls-")));
    sandbox = DockerSandbox({
      image: IMAGE,
      rootDir,
      dockerPath: DOCKER,
      labels: { "workbench.test": "1" },
      network: { allow: ["api.github.com:443"] },
      secrets: { GITHUB_TOKEN: { value: "0123456789abcdef", hosts: ["api.github.com"] } },
    });
  });
  after(async () => {
    await sandbox?.close();
    await rm(rootDir, { recursive: true, force: true });
  });

  test("trust variables name the bundle and the CA; both are readable and the CA closes the bundle", async () => {
    const tool = createRunCommandTool({ rootDir, environment: sandbox });
    const run = async (command: string) => String(await tool.invoke({ command }, { configurable: { thread_id: "tls" } }));
    const b = "/run/workbench-egress/ca-bundle.pem";
    const vars = await run(`echo "$SSL_CERT_FILE|$CURL_CA_BUNDLE|$REQUESTS_CA_BUNDLE|$GIT_SSL_CAINFO|$NODE_EXTRA_CA_CERTS"`);
    assert.ok(vars.includes(`${b}|${b}|${b}|${b}|/run/workbench-egress/egress-ca.pem`), vars);
    const ca = await run("cat /run/workbench-egress/egress-ca.pem");
    const pem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(ca)?.[0];
    assert.ok(pem, ca);
    const cert = new X509Certificate(pem);
    assert.ok(cert.ca);
    assert.match(cert.subject, /langgraph-workbench egress proxy CA/);
    const count = await run(`grep -c 'BEGIN CERTIFICATE' ${b}; tail -c ${Buffer.byteLength(pem) + 2} ${b} | grep -c 'END CERTIFICATE'`);
    assert.match(count, /^\d{2,}\n1\b/, count);
    assert.ok((await run(`tail -n 30 ${b}`)).includes(pem.split("\n").slice(1, 3).join("\n")), "the bundle ends with the proxy's CA");
  });
});
