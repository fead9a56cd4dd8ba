#!/usr/bin/env bash
# The whole test suite: build, make sure the real engine is up (fails if it cannot start), run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run --silent build
bash scripts/engine.sh start
exec node --import tsx --test test/unit/*.test.ts test/integration/*.test.ts
