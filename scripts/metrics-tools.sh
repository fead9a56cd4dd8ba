#!/usr/bin/env bash
# The Prometheus tools the metrics tests load the janitor's output with: promtool (Debian's `prometheus` package) and
# node_exporter (Debian's `prometheus-node-exporter`). Only their binaries are unpacked, under $HERMES_JANITOR_TOOLS
# (default /var/cache/hermes-janitor/tools/bin): no package is configured, no service started, no user added.
#   scripts/metrics-tools.sh            fetch them when missing (root with apt-get), then print the directory
# Without root or apt-get it says so and exits 0: the tests that need them skip (and fail under CI=true).
set -euo pipefail
DIR="${HERMES_JANITOR_TOOLS:-/var/cache/hermes-janitor/tools}"
BIN="$DIR/bin"
say() { echo "metrics-tools: $*" >&2; }

have() { [ -x "$BIN/$1" ] || command -v "$1" >/dev/null 2>&1; }

fetch() { # fetch PACKAGE PATH-IN-PACKAGE NAME
  local pkg=$1 inside=$2 name=$3 work
  have "$name" && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "$name is missing: run this as root on Debian, or install $pkg"
    return 0
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  say "fetching $name from Debian's $pkg package"
  (cd "$work" && apt-get download -qq "$pkg" >/dev/null 2>&1) || { apt-get update -qq >/dev/null && (cd "$work" && apt-get download -qq "$pkg" >/dev/null 2>&1); }
  mkdir -p "$work/x" "$BIN"
  dpkg-deb -x "$work"/"$pkg"_*.deb "$work/x"
  install -m 0755 "$work/x/$inside" "$BIN/$name"
}

fetch prometheus usr/bin/promtool promtool
fetch prometheus-node-exporter usr/bin/prometheus-node-exporter node_exporter
echo "$BIN"
