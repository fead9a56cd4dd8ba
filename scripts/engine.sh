#!/usr/bin/env bash
# Idempotently provides local engines for hermes-janitor's integration tests and benchmarks.
#   scripts/engine.sh start [docker|podman]   install (root + apt only) and start the engine if needed,
#                                             import the test image (default: docker)
#   scripts/engine.sh status [docker|podman]  exit 0 when the engine answers and the test image exists
#   scripts/engine.sh stop [docker|podman]    stop an engine that this script started
#   scripts/engine.sh image                   import the test image into the Docker engine DOCKER_HOST names
#                                             (a test's engine of its own), if it lacks it
#   scripts/engine.sh shells                  install zsh and fish (root + apt only) if missing; `start docker`
#                                             does it too, so that no shell test skips
# Docker listens on /var/run/docker.sock; Podman's Docker-compatible API on $PODMAN_SOCK
# (default /run/hermes-janitor/podman.sock: use DOCKER_HOST=unix://$PODMAN_SOCK).
# Environment: HERMES_JANITOR_TEST_IMAGE (default hermes-janitor/busybox:test),
#              ENGINE_START_TIMEOUT seconds to wait for the engine (default 60).
set -euo pipefail

IMAGE="${HERMES_JANITOR_TEST_IMAGE:-hermes-janitor/busybox:test}"
SOCK=/var/run/docker.sock
PIDFILE=/var/run/hermes-janitor-dockerd.pid
LOG=/tmp/hermes-janitor-dockerd.log
WAIT="${ENGINE_START_TIMEOUT:-60}"
PODMAN_SOCK="${PODMAN_SOCK:-/run/hermes-janitor/podman.sock}"
PODMAN_PIDFILE=/run/hermes-janitor/podman.pid
PODMAN_LOG=/tmp/hermes-janitor-podman.log

say() { echo "engine: $*" >&2; }
die() { echo "engine: $*" >&2; exit 1; }

# wait_until CHECK NAME LOG: polls CHECK every 0.25 s for up to $WAIT seconds; fails with the log's tail.
wait_until() {
  local i=0
  until "$1"; do
    i=$((i + 1))
    if [ "$i" -ge $((WAIT * 4)) ]; then
      tail -n 20 "$3" >&2 || true
      die "$2 did not answer within ${WAIT}s (log: $3)"
    fi
    sleep 0.25
  done
}

engine_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

install_engine() {
  if command -v dockerd >/dev/null 2>&1 && command -v busybox >/dev/null 2>&1 && command -v docker >/dev/null 2>&1; then
    return 0
  fi
  [ "$(id -u)" = 0 ] || die "dockerd/busybox are missing and this is not root: install docker.io and busybox-static, or run as root"
  command -v apt-get >/dev/null 2>&1 || die "dockerd/busybox are missing and apt-get is not available: install a Docker engine and busybox by hand"
  say "installing docker.io busybox-static iptables with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends docker.io busybox-static iptables >/dev/null
}

# The shells whose start-up snippets and completion scripts the tests run (shell-init, completion): installed with the
# engine so that no shell test skips. Without root or apt it says so and goes on (under CI those tests then fail).
install_test_shells() {
  local missing=() sh
  for sh in zsh fish; do command -v "$sh" >/dev/null 2>&1 || missing+=("$sh"); done
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "${missing[*]} missing and not installable here (needs root with apt): their shell tests cannot run"
    return 0
  fi
  say "installing ${missing[*]} with apt-get (for the shell-init and completion tests)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

start_daemon() {
  if engine_up; then return 0; fi
  install_engine
  if ! engine_up; then
    [ "$(id -u)" = 0 ] || die "no engine answers on $SOCK and only root can start dockerd here"
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      say "dockerd (pid $(cat "$PIDFILE")) is starting; waiting"
    else
      # dockerd refuses to start over the pid file of one that was killed (SIGKILL leaves it behind).
      if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
        say "removing the stale /var/run/docker.pid of a dockerd that is gone"
        rm -f /var/run/docker.pid
      fi
      say "starting dockerd (log: $LOG)"
      setsid dockerd --host "unix://$SOCK" >"$LOG" 2>&1 < /dev/null &
      echo $! > "$PIDFILE"
    fi
    wait_until engine_up dockerd "$LOG"
  fi
  say "engine up: $(docker version --format 'server {{.Server.Version}}, API {{.Server.APIVersion}}')"
}

podman_up() { DOCKER_HOST="unix://$PODMAN_SOCK" docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start_podman() {
  if ! command -v podman >/dev/null 2>&1 || [ ! -x /usr/libexec/podman/catatonit ] || ! command -v busybox >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || die "podman/catatonit/busybox are missing: install podman, catatonit and busybox-static (needs root with apt)"
    say "installing podman catatonit busybox-static with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends podman catatonit busybox-static >/dev/null
  fi
  command -v docker >/dev/null 2>&1 || die "the docker CLI is needed to talk to Podman's Docker API: install docker.io"
  start_podman_service
  say "podman up: $(DOCKER_HOST="unix://$PODMAN_SOCK" docker version --format 'server {{.Server.Version}}, API {{.Server.APIVersion}}')"
  if ! podman image exists "$IMAGE"; then
    make_rootfs | podman import - "$IMAGE" >/dev/null
    say "imported test image $IMAGE into podman"
  fi
  # A service can answer pings and still fail every start through the API ("write child: broken pipe", seen after a
  # long-lived service outlived restarts of dockerd). One it started is restarted once; otherwise it is an error.
  local err
  if ! err=$(podman_runs 2>&1 | tr '\n' ' '; exit "${PIPESTATUS[0]}"); then
    if [ -f "$PODMAN_PIDFILE" ] && kill -0 "$(cat "$PODMAN_PIDFILE")" 2>/dev/null; then
      say "podman service answers but cannot run a container ($err); restarting it"
      stop_podman
      start_podman_service
      err=$(podman_runs 2>&1 | tr '\n' ' '; exit "${PIPESTATUS[0]}") || die "podman service cannot run a container after a restart: $err (log: $PODMAN_LOG)"
    else
      die "the podman service on unix://$PODMAN_SOCK cannot run a container: $err (restart it, or stop it and run: scripts/engine.sh start podman)"
    fi
  fi
}

start_podman_service() {
  if podman_up; then return 0; fi
  mkdir -p "$(dirname "$PODMAN_SOCK")"
  if [ -f "$PODMAN_PIDFILE" ] && kill -0 "$(cat "$PODMAN_PIDFILE")" 2>/dev/null; then
    say "podman service (pid $(cat "$PODMAN_PIDFILE")) is starting; waiting"
  else
    rm -f "$PODMAN_SOCK"
    say "starting podman system service on unix://$PODMAN_SOCK (log: $PODMAN_LOG)"
    setsid podman system service --time=0 "unix://$PODMAN_SOCK" >"$PODMAN_LOG" 2>&1 < /dev/null &
    echo $! > "$PODMAN_PIDFILE"
  fi
  wait_until podman_up podman "$PODMAN_LOG"
}

# Stops the service this script started (its pid file), waiting up to $WAIT seconds for it to go.
stop_podman() {
  local pid i=0
  if [ -f "$PODMAN_PIDFILE" ] && pid=$(cat "$PODMAN_PIDFILE") && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    while kill -0 "$pid" 2>/dev/null && [ "$i" -lt $((WAIT * 4)) ]; do sleep 0.25; i=$((i + 1)); done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    rm -f "$PODMAN_PIDFILE" "$PODMAN_SOCK"
    say "stopped podman service"
  else
    say "no podman service started by this script is running"
  fi
}

# Creates, starts, waits for and removes one container through the service's Docker API. This machine's podman
# cannot raise the default rlimits (no CAP_SYS_RESOURCE), hence the explicit ones, as the tests use (RUN_EXTRA).
podman_runs() {
  local id
  id=$(DOCKER_HOST="unix://$PODMAN_SOCK" timeout 30 docker create --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$IMAGE" true) || return 1
  DOCKER_HOST="unix://$PODMAN_SOCK" timeout 30 docker start "$id" >/dev/null &&
    DOCKER_HOST="unix://$PODMAN_SOCK" timeout 30 docker wait "$id" >/dev/null
  local rc=$?
  DOCKER_HOST="unix://$PODMAN_SOCK" timeout 30 docker rm -f "$id" >/dev/null 2>&1 || true
  return $rc
}

# A tarball of a directory holding /bin/busybox and its applet links, on stdout.
make_rootfs() {
  local bb root
  bb=$(command -v busybox) || die "busybox is missing: apt-get install busybox-static"
  root=$(mktemp -d)
  mkdir -p "$root/bin" "$root/tmp"
  cp "$bb" "$root/bin/busybox"
  for c in sh true false sleep echo cat ls; do ln -s busybox "$root/bin/$c"; done
  tar -C "$root" -c .
  rm -rf "$root"
}

import_image() {
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then return 0; fi
  make_rootfs | docker import - "$IMAGE" >/dev/null
  say "imported test image $IMAGE"
}

ENGINE="${2:-docker}"
case "$ENGINE" in docker|podman) ;; *) echo "usage: scripts/engine.sh start|status|stop [docker|podman] | image | shells" >&2; exit 2 ;; esac

case "${1:-}:$ENGINE" in
  start:docker)
    install_test_shells
    start_daemon
    import_image
    ;;
  shells:docker)
    install_test_shells
    ;;
  start:podman)
    start_podman
    ;;
  image:docker)
    import_image
    ;;
  status:podman)
    if podman_up; then echo "podman: up on unix://$PODMAN_SOCK"; else echo "podman: down"; exit 1; fi
    ;;
  stop:podman)
    stop_podman
    ;;
  status:docker)
    if engine_up; then
      echo "engine: up ($(docker version --format '{{.Server.Version}}'))"
      if docker image inspect "$IMAGE" >/dev/null 2>&1; then echo "image: $IMAGE present"; else echo "image: $IMAGE missing"; exit 1; fi
    else
      echo "engine: down"; exit 1
    fi
    ;;
  stop:docker)
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      kill "$(cat "$PIDFILE")"; rm -f "$PIDFILE"; say "stopped dockerd"
    else
      say "no dockerd started by this script is running"
    fi
    ;;
  *)
    echo "usage: scripts/engine.sh start|status|stop [docker|podman] | image | shells" >&2; exit 2 ;;
esac
