#!/usr/bin/env bash
# The whole test suite: build, start the real engines (fails if one cannot start), run every test, then run the
# engine suites again against Podman's Docker-compatible API.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run --silent build
npm run --silent lint
bash scripts/engine.sh start docker
bash scripts/engine.sh start podman
# promtool and node_exporter, the Prometheus tools the metrics tests load the janitor's output with (their binaries only).
bash scripts/metrics-tools.sh >/dev/null

# Test files that talk to a real engine: they run against Docker, then against Podman (simulator-parity asserts
# Podman's documented differences explicitly; faults holds the 20-process race on the real engine).
ENGINE_SUITES=(test/integration/reap.test.ts test/integration/run-modes.test.ts test/integration/simulator-parity.test.ts test/integration/faults.test.ts test/integration/idle-volumes.test.ts test/integration/status.test.ts test/integration/metrics.test.ts test/integration/metrics-homes.test.ts test/integration/watch.test.ts test/integration/sandbox-dirs.test.ts test/integration/idle-in-use.test.ts test/integration/stop-cost.test.ts test/integration/exec-clients.test.ts test/integration/multiplexer.test.ts test/integration/hermes-settings.test.ts test/integration/execution-targets.test.ts)

echo "== unit and integration tests (Docker engine) =="
node --import tsx --test test/unit/*.test.ts test/integration/*.test.ts

echo "== engine suites against Podman =="
HERMES_JANITOR_TEST_ENGINE=podman DOCKER_HOST="unix://${PODMAN_SOCK:-/run/hermes-janitor/podman.sock}" \
  node --import tsx --test "${ENGINE_SUITES[@]}"
