#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a while, from its committed seed corpus.
# Usage: scripts/fuzz-smoke.sh BUILD_DIR SECONDS. Prints each target's executions; exits 1 when
# a target found a crash, a sanitizer report, a failed check or a hang (its input is kept in
# BUILD_DIR/findings/). New inputs go to BUILD_DIR/corpus/<target>, never to fuzz/corpus.
set -uo pipefail

build=${1:?usage: fuzz-smoke.sh BUILD_DIR SECONDS}
seconds=${2:-60}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
targets=(tool_calls sse_openai sse_anthropic transcript queue settings glob)

export UBSAN_OPTIONS="suppressions=$source_dir/tests/ubsan.supp:print_stacktrace=1"
mkdir -p "$build/findings"
failed=()
summary=""
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  log="$build/findings/$t.log"
  # -timeout: one input running this long is a hang (generous: the machine may be loaded).
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/findings/$t-" \
    "$build/corpus/$t" "$source_dir/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  line=$(printf '%-14s %10s executions  %s' "$t" "${execs:-?}" \
    "$([[ $rc -eq 0 ]] && echo ok || echo "FOUND (exit $rc, see $log)")")
  echo "$line"
  summary+="$line"$'\n'
  [[ $rc -eq 0 ]] || failed+=("$t")
done
printf '%s' "$summary" >"$build/findings/summary.txt"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz-smoke: findings in: ${failed[*]}" >&2
  exit 1
fi
