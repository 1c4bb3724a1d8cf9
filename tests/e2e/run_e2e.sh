#!/usr/bin/env bash
# Runs the end-to-end tests (a real `hearth serve` driven by the ollama, OpenAI and Anthropic npm
# clients) the way CTest does: installs the pinned clients with `npm ci` into WORK_DIR once per
# package-lock.json (a stamp holds the lock's hash), copies the test files beside them, then
# runs node's test runner. Usage: run_e2e.sh WORK_DIR [--setup-only | test files...]
# Needs HEARTH_BIN (the built hearth); models come from HEARTH_SHARED_DIR / HEARTH_TEST_MODELS.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: run_e2e.sh WORK_DIR [test files...]}
shift
: "${HEARTH_BIN:?HEARTH_BIN must name the hearth executable}"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "run_e2e: '$tool' not found; scripts/setup.sh installs nodejs and npm" >&2
    exit 1
  fi
done

mkdir -p "$work"
lock_hash=$(sha256sum "$src/package-lock.json" "$src/package.json" | sha256sum | cut -d' ' -f1)
if [ ! -d "$work/node_modules" ] || [ "$(cat "$work/.npm-ci-stamp" 2>/dev/null)" != "$lock_hash" ]; then
  cp "$src/package.json" "$src/package-lock.json" "$work/"
  echo "run_e2e: npm ci in $work"
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$lock_hash" >"$work/.npm-ci-stamp"
fi

# Fresh copies of the tests, so edits in the source tree need no reconfigure.
rm -rf "$work/lib"
cp -r "$src/lib" "$work/lib"
rm -f "$work"/*.test.mjs
cp "$src"/*.test.mjs "$work/"

if [ "${1:-}" = "--setup-only" ]; then
  exit 0
fi

cd "$work"
export HEARTH_SOURCE_DIR=${HEARTH_SOURCE_DIR:-$(cd "$src/../.." && pwd)}
if [ $# -eq 0 ]; then
  set -- ./*.test.mjs
fi
flags=(--test)
# One test file at a time: each starts its own servers, and CI has two cores. (Node 18 runs
# files one at a time anyway and lacks the flag.)
if [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ]; then
  flags+=(--test-concurrency=1)
fi
exec node "${flags[@]}" --test-reporter=spec "$@"
