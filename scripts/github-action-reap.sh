#!/usr/bin/env bash
# The reap step of action.yml: builds the command from INPUT_* variables, runs it with --json, appends a Markdown
# summary to $GITHUB_STEP_SUMMARY, sets the exit-code and report outputs, and exits with the reap's code.
set -uo pipefail
here="${GITHUB_ACTION_PATH:-$(cd "$(dirname "$0")/.." && pwd)}"
report="${RUNNER_TEMP:-/tmp}/hermes-janitor-reap.json"
args=(reap --json)
[ -n "${INPUT_PROFILE:-}" ] && args+=(--profile "$INPUT_PROFILE")
case "${INPUT_ALL_PROFILES:-false}" in true|True|TRUE|1|yes) args+=(--all-profiles) ;; esac
[ -n "${INPUT_LIFETIME:-}" ] && args+=(--lifetime "$INPUT_LIFETIME")
case "${INPUT_DRY_RUN:-false}" in true|True|TRUE|1|yes) args+=(--dry-run) ;; esac
# shellcheck disable=SC2206 # extra arguments are split on whitespace by design
extra=(${INPUT_ARGS:-})
node "$here/bin/hermes-janitor.js" "${args[@]}" "${extra[@]}" > "$report"
code=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  node "$here/scripts/github-step-summary.js" "$report" >> "$GITHUB_STEP_SUMMARY"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  { echo "exit-code=$code"; echo "report=$report"; } >> "$GITHUB_OUTPUT"
fi
cat "$report"
exit "$code"
