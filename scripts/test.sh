#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite: unit and integration tests under ASan+UBSan,
# the layering check, then each fuzz target for a bounded time. Fails on any failed test and
# on any skipped test (a skip means test data was missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fuzz_seconds=${HEARTH_FUZZ_SECONDS:-60}
start=$(date +%s)

scripts/setup.sh
scripts/check_layers.sh

scripts/build.sh asan
log=$(mktemp)
set +e
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$(nproc)" --timeout 900 2>&1 | tee "$log"
ctest_rc=${PIPESTATUS[0]}
set -e
echo "test.sh: the slowest tests (seconds):"
grep -E '^ *[0-9]+/[0-9]+ Test +#' "$log" | sed -E 's/.* Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' |
  sort -rn | head -15 || true
total=$(grep -Eo 'tests? failed out of [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1 || true)
failed=$(grep -Eo '[0-9]+ tests? failed out of' "$log" | grep -Eo '^[0-9]+' | tail -1 || true)
total=${total:-0}
failed=${failed:-0}
passed=$((total - failed))
skipped=$(grep -c '(Skipped)' "$log" || true)
if [ "$skipped" -gt 0 ]; then
  echo "test.sh: $skipped test(s) were skipped (missing test data?); that counts as a failure" >&2
  ctest_rc=1
fi
if [ "${total:-0}" -eq 0 ]; then
  echo "test.sh: no tests ran" >&2
  ctest_rc=1
fi

fuzz_failed=0
fuzz_passed=0
# Fuzz targets run side by side, one per core: each still gets its full time, and the stage
# takes (targets / cores) x fuzz_seconds instead of targets x fuzz_seconds.
fuzz_one() {
  local target=$1 name work corpus_seed
  name=$(basename "$target")
  corpus_seed="tests/fuzz/corpus/${name#fuzz_}"
  work=$(mktemp -d)
  [ -d "$corpus_seed" ] && cp -r "$corpus_seed"/. "$work"/
  if "$target" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       "$work" >"$work.log" 2>&1; then
    echo "== $name: passed ($(grep -Eo 'number_of_executed_units: *[0-9]+' "$work.log" | grep -Eo '[0-9]+$' || echo '?') inputs in ${fuzz_seconds}s)"
    rm -rf "$work" "$work.log"
    return 0
  fi
  tail -60 "$work.log"
  echo "$name FAILED" >&2
  rm -rf "$work" "$work.log"
  return 1
}
if [ "$fuzz_seconds" -gt 0 ]; then
  # Only the fuzz targets and the modules they link: the rest of the tree is built once, above.
  fuzz_targets=()
  for src in tests/fuzz/fuzz_*.cpp; do fuzz_targets+=(--target "$(basename "$src" .cpp)"); done
  scripts/build.sh fuzz "${fuzz_targets[@]}"
  fuzz_jobs=$(nproc)
  pids=()
  for target in build/fuzz/tests/fuzz/fuzz_*; do
    [ -x "$target" ] || continue
    while [ "$(jobs -rp | wc -l)" -ge "$fuzz_jobs" ]; do sleep 1; done
    fuzz_one "$target" &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do
    if wait "$pid"; then fuzz_passed=$((fuzz_passed + 1)); else fuzz_failed=$((fuzz_failed + 1)); fi
  done
fi

echo "test.sh: took $(( $(date +%s) - start ))s"
echo "hearth: $((passed + fuzz_passed)) passed, $((failed + fuzz_failed)) failed"
[ "$ctest_rc" -eq 0 ] && [ "$fuzz_failed" -eq 0 ]
