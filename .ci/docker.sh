#!/usr/bin/env bash
# A Docker engine and the test image for tests/docker-real.test.ts, with no registry access.
#   .ci/docker.sh up     starts dockerd unless one already answers (idempotent), then builds the
#                        test image(s) unless the tag exists (the tag is the cache between runs)
#   .ci/docker.sh down   stops the dockerd that `up` started (no-op when `up` found one running)
#   .ci/docker.sh env    prints the `export` lines the tests read
# dockerd runs without iptables and without the default bridge: test containers use
# `--network none`, so the engine never touches the host's firewall or routes.
# Images: `debootstrap --variant=minbase bookworm` (Debian's mirror, ~1 min) + `docker import`.
#   workbench-test:bookworm-1      no ripgrep: search_files must take its fallback walk
#   workbench-test:bookworm-rg-1   the same plus Debian's ripgrep package (fetched with the host's
#                                  `apt-get download`, installed by a `--network none` build, ~6 s;
#                                  skipped with a note when the host's apt cannot fetch it)
set -euo pipefail

DOCKER="${WORKBENCH_TEST_DOCKER:-/usr/bin/docker}"          # docker.io's client matches its daemon
[[ -x "$DOCKER" ]] || DOCKER="$(command -v docker || true)"
IMAGE="${WORKBENCH_TEST_DOCKER_IMAGE:-workbench-test:bookworm-1}"
RG_IMAGE="${WORKBENCH_TEST_DOCKER_RG_IMAGE:-workbench-test:bookworm-rg-1}"
STATE_DIR="${WORKBENCH_DOCKER_STATE:-/tmp/workbench-dockerd}"
PIDFILE="$STATE_DIR/started.pid"
LOG="$STATE_DIR/dockerd.log"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

SUDO=()
[[ "$(id -u)" -eq 0 ]] || SUDO=(sudo)
as_root() { "${SUDO[@]}" "$@"; }

engine_ready() { "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start_engine() {
  if engine_ready; then
    echo ".ci/docker.sh: a Docker engine already answers; using it"
    return
  fi
  command -v dockerd >/dev/null 2>&1 || { echo ".ci/docker.sh: dockerd missing (apt-get install docker.io)" >&2; exit 1; }
  mkdir -p "$STATE_DIR"
  local t0=$SECONDS group
  group="$(id -gn)" # the socket's group, so a non-root CI user reaches it
  # setsid: dockerd gets its own session, so a Ctrl-C of the CI run reaches it only via `down`.
  # Not through the as_root function: $! must be dockerd (or sudo, which forwards signals).
  "${SUDO[@]}" setsid dockerd --iptables=false --ip-masq=false --bridge=none --group "$group" \
    >"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 120); do # bounded: 60 s
    if engine_ready; then
      echo ".ci/docker.sh: dockerd ready after $((SECONDS - t0)) s (log: $LOG)"
      return
    fi
    as_root kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break
    sleep 0.5
  done
  echo ".ci/docker.sh: dockerd did not come up; last log lines:" >&2
  tail -n 30 "$LOG" >&2 || true
  exit 1
}

# True (and says so) when the tag already exists: the tag is the cache between runs.
image_cached() { # TAG
  "$DOCKER" image inspect "$1" >/dev/null 2>&1 || return 1
  echo ".ci/docker.sh: image $1 cached"
}

build_image() { # TAG
  local tag=$1
  image_cached "$tag" && return
  local t0=$SECONDS root
  root="$(mktemp -d /tmp/workbench-rootfs.XXXXXX)"
  # shellcheck disable=SC2064
  trap "as_root rm -rf '$root'" RETURN
  echo ".ci/docker.sh: building $tag with debootstrap (minbase bookworm)"
  as_root debootstrap --variant=minbase bookworm "$root" "$MIRROR" \
    >"$STATE_DIR/debootstrap-${tag//[:\/]/_}.log" 2>&1 ||
    { tail -n 30 "$STATE_DIR/debootstrap-${tag//[:\/]/_}.log" >&2; exit 1; }
  # apt lists and caches are not needed to run commands; they are a third of the root.
  as_root rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc \
    "$root"/usr/share/man "$root"/usr/share/locale
  as_root tar -C "$root" -c . | "$DOCKER" import - "$tag" >/dev/null
  echo ".ci/docker.sh: built $tag in $((SECONDS - t0)) s, $("$DOCKER" image inspect "$tag" --format '{{.Size}}' | awk '{printf "%d MB", $1/1e6}')"
}

build_rg_image() {
  image_cached "$RG_IMAGE" && return
  local t0=$SECONDS ctx
  ctx="$(mktemp -d /tmp/workbench-rgctx.XXXXXX)"
  # shellcheck disable=SC2064
  trap "rm -rf '$ctx'" RETURN
  chmod 777 "$ctx" # apt's download user (_apt) writes here
  if ! (cd "$ctx" && apt-get download ripgrep >/dev/null 2>&1); then
    echo ".ci/docker.sh: NOTE: apt-get download ripgrep failed; $RG_IMAGE not built (tests that need it skip)"
    return
  fi
  printf 'FROM %s\nCOPY *.deb /tmp/\nRUN dpkg -i /tmp/*.deb && rm /tmp/*.deb\n' "$IMAGE" >"$ctx/Dockerfile"
  "$DOCKER" build --network none -q -t "$RG_IMAGE" "$ctx" >/dev/null
  echo ".ci/docker.sh: built $RG_IMAGE in $((SECONDS - t0)) s"
}

case "${1:-}" in
  up)
    mkdir -p "$STATE_DIR"
    start_engine
    build_image "$IMAGE"
    build_rg_image
    # Containers left by a crashed earlier run (DockerSandbox and the tests label theirs).
    leftovers="$("$DOCKER" ps -aq --filter label=workbench.test=1)"
    if [[ -n "$leftovers" ]]; then "$DOCKER" rm -f $leftovers >/dev/null; fi
    ;;
  down)
    if [[ -f "$PIDFILE" ]]; then
      pid="$(cat "$PIDFILE")"
      rm -f "$PIDFILE"
      as_root kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 40); do # bounded: 20 s, then KILL
        as_root kill -0 "$pid" 2>/dev/null || exit 0
        sleep 0.5
      done
      as_root kill -KILL "$pid" 2>/dev/null || true
    fi
    ;;
  env)
    echo "export WORKBENCH_TEST_DOCKER=$(printf %q "$DOCKER")"
    echo "export WORKBENCH_TEST_DOCKER_IMAGE=$(printf %q "$IMAGE")"
    if "$DOCKER" image inspect "$RG_IMAGE" >/dev/null 2>&1; then
      echo "export WORKBENCH_TEST_DOCKER_RG_IMAGE=$(printf %q "$RG_IMAGE")"
    fi
    ;;
  *)
    echo "usage: .ci/docker.sh up|down|env" >&2
    exit 2
    ;;
esac
