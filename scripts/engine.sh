#!/usr/bin/env bash
# Idempotently provides a local Docker engine for hermes-janitor's integration tests and benchmarks.
#   scripts/engine.sh start    install (root + apt only) and start dockerd if needed, import the test image
#   scripts/engine.sh status   exit 0 when the engine answers and the test image exists
#   scripts/engine.sh stop     stop a dockerd that this script started
# Environment: HERMES_JANITOR_TEST_IMAGE (default hermes-janitor/busybox:test),
#              ENGINE_START_TIMEOUT seconds to wait for dockerd (default 60).
set -euo pipefail

IMAGE="${HERMES_JANITOR_TEST_IMAGE:-hermes-janitor/busybox:test}"
SOCK=/var/run/docker.sock
PIDFILE=/var/run/hermes-janitor-dockerd.pid
LOG=/tmp/hermes-janitor-dockerd.log
WAIT="${ENGINE_START_TIMEOUT:-60}"

say() { echo "engine: $*" >&2; }
die() { echo "engine: $*" >&2; exit 1; }

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

start_daemon() {
  if engine_up; then return 0; fi
  install_engine
  if ! engine_up; then
    [ "$(id -u)" = 0 ] || die "no engine answers on $SOCK and only root can start dockerd here"
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      say "dockerd (pid $(cat "$PIDFILE")) is starting; waiting"
    else
      say "starting dockerd (log: $LOG)"
      setsid dockerd --host "unix://$SOCK" >"$LOG" 2>&1 < /dev/null &
      echo $! > "$PIDFILE"
    fi
    local i=0
    until engine_up; do
      i=$((i + 1))
      if [ "$i" -ge $((WAIT * 4)) ]; then
        tail -n 20 "$LOG" >&2 || true
        die "dockerd did not answer within ${WAIT}s (log: $LOG)"
      fi
      sleep 0.25
    done
  fi
  say "engine up: $(docker version --format 'server {{.Server.Version}}, API {{.Server.APIVersion}}')"
}

import_image() {
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then return 0; fi
  local bb root
  bb=$(command -v busybox) || die "busybox is missing: apt-get install busybox-static"
  root=$(mktemp -d)
  trap 'rm -rf "$root"' RETURN
  mkdir -p "$root/bin" "$root/tmp"
  cp "$bb" "$root/bin/busybox"
  for c in sh true false sleep echo cat ls; do ln -s busybox "$root/bin/$c"; done
  tar -C "$root" -c . | docker import - "$IMAGE" >/dev/null
  say "imported test image $IMAGE"
}

case "${1:-}" in
  start)
    start_daemon
    import_image
    ;;
  status)
    if engine_up; then
      echo "engine: up ($(docker version --format '{{.Server.Version}}'))"
      if docker image inspect "$IMAGE" >/dev/null 2>&1; then echo "image: $IMAGE present"; else echo "image: $IMAGE missing"; exit 1; fi
    else
      echo "engine: down"; exit 1
    fi
    ;;
  stop)
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      kill "$(cat "$PIDFILE")"; rm -f "$PIDFILE"; say "stopped dockerd"
    else
      say "no dockerd started by this script is running"
    fi
    ;;
  *)
    echo "usage: scripts/engine.sh start|status|stop" >&2; exit 2 ;;
esac
