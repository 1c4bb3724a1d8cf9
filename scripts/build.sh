#!/usr/bin/env bash
# Configures and builds one flavour of Hearth: release (default), asan or fuzz.
# Usage: scripts/build.sh [release|asan|fuzz] [cmake --build args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
flavour=${1:-release}
shift || true
jobs=${HEARTH_JOBS:-$(nproc)}
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_SANITIZE=ON -DHEARTH_BUILD_BENCH=OFF) ;;
  fuzz) flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++) ;;
  *) echo "build.sh: unknown flavour '$flavour' (release, asan or fuzz)" >&2; exit 2 ;;
esac
dir="$root/build/$flavour"
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S "$root" -B "$dir" -G Ninja "${flags[@]}" >/dev/null
fi
cmake --build "$dir" -j "$jobs" "$@"
