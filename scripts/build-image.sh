#!/usr/bin/env bash
# Builds the hermes-janitor image from a staged context: the built CLI (bin/, dist/), package files and the
# production dependencies only. Arguments go to `docker build` (e.g. -t hermes-janitor, --build-arg BASE_IMAGE=...).
# DOCKER_HOST picks the engine, as for the docker CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run --silent build
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp -r package.json package-lock.json bin dist Dockerfile "$ctx"/
# Production dependencies, from the local npm cache when it has them; no lifecycle scripts (no build tools there).
(cd "$ctx" && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error)
docker build "$@" "$ctx"
