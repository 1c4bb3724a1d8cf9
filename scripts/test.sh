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
if [ "$fuzz_seconds" -gt 0 ]; then
  scripts/build.sh fuzz
  for target in build/fuzz/tests/fuzz/fuzz_*; do
    [ -x "$target" ] || continue
    name=$(basename "$target")
    corpus_seed="tests/fuzz/corpus/${name#fuzz_}"
    work=$(mktemp -d)
    [ -d "$corpus_seed" ] && cp -r "$corpus_seed"/. "$work"/
    echo "== $name for ${fuzz_seconds}s"
    if "$target" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
         "$work" >"$work.log" 2>&1; then
      fuzz_passed=$((fuzz_passed + 1))
      grep -E 'stat::number_of_executed_units' "$work.log" || true
    else
      fuzz_failed=$((fuzz_failed + 1))
      tail -60 "$work.log"
      echo "$name FAILED" >&2
    fi
    rm -rf "$work" "$work.log"
  done
fi

echo "test.sh: took $(( $(date +%s) - start ))s"
echo "hearth: $((passed + fuzz_passed)) passed, $((failed + fuzz_failed)) failed"
[ "$ctest_rc" -eq 0 ] && [ "$fuzz_failed" -eq 0 ]
