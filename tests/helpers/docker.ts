/**
 * The real Docker engine for tests. `.ci/docker.sh up` starts dockerd and builds the images;
 * `.ci/docker.sh env` exports WORKBENCH_TEST_DOCKER (the CLI, docker.io's /usr/bin/docker by
 * default, matching its daemon's API), WORKBENCH_TEST_DOCKER_IMAGE (no ripgrep) and
 * WORKBENCH_TEST_DOCKER_RG_IMAGE (with ripgrep). Locally, a missing engine or image skips the
 * tests with the reason; under CI (`CI=true`) it is a failure.
 */
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { randomBytes } from "node:crypto";

export const DOCKER =
  process.env.WORKBENCH_TEST_DOCKER ??
  (() => {
    try {
      accessSync("/usr/bin/docker", constants.X_OK);
      return "/usr/bin/docker";
    } catch {
      return "docker";
    }
  })();
export const IMAGE = process.env.WORKBENCH_TEST_DOCKER_IMAGE ?? "workbench-test:bookworm-1";
export const RG_IMAGE = process.env.WORKBENCH_TEST_DOCKER_RG_IMAGE ?? "workbench-test:bookworm-rg-1";
/** On every container the tests start, so `.ci/docker.sh up` removes a crashed run's leftovers. */
export const TEST_LABEL = "workbench.test=1";

/** Runs the docker CLI (no shell), bounded at 60 s. */
export function docker(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(DOCKER, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", (e) => {
      clearTimeout(timer);
      resolve({ code: -1, stdout, stderr: String(e) });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

/** Why the real-Docker tests cannot run here, or `undefined`. Under CI this throws instead. */
export async function dockerUnavailable(image = IMAGE): Promise<string | undefined> {
  let reason: string | undefined;
  const version = await docker("version", "--format", "{{.Server.Version}}");
  if (version.code !== 0) {
    reason = `no Docker engine answers ${DOCKER} (.ci/docker.sh up starts one): ${version.stderr.trim().split("\n")[0]}`;
  } else if ((await docker("image", "inspect", image)).code !== 0) {
    reason = `image ${image} is missing (.ci/docker.sh up builds it)`;
  }
  if (reason && process.env.CI === "true") throw new Error(`CI=true but ${reason}`);
  return reason;
}

/** Starts a hardened test container (`--network none`, no capabilities) with `mounts` bound at the same path. */
export async function startContainer(options: { mounts?: string[]; user?: string; image?: string } = {}): Promise<string> {
  const name = `wb-test-${randomBytes(5).toString("hex")}`;
  const args = ["run", "-d", "--name", name, "--label", TEST_LABEL, "--init", "--network", "none"];
  args.push("--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pids-limit", "256");
  if (options.user) args.push("--user", options.user);
  for (const m of options.mounts ?? []) args.push("--mount", `type=bind,source=${m},target=${m}`);
  args.push(options.image ?? IMAGE, "sleep", "infinity");
  const run = await docker(...args);
  if (run.code !== 0) throw new Error(`docker run failed: ${run.stderr}`);
  return name;
}

/** Process command lines inside a container, read from /proc (the image has no `ps`). */
export async function containerProcesses(container: string): Promise<string[]> {
  const out = await docker(
    "exec", container, "sh", "-c",
    'for d in /proc/[0-9]*; do [ "${d#/proc/}" = "$$" ] && continue; tr "\\0" " " < "$d/cmdline" 2>/dev/null; echo; done',
  );
  return out.stdout.split("\n").map((l) => l.trim()).filter(Boolean);
}
