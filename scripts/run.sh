#!/usr/bin/env bash
# Sets up, builds (release) and starts Hearth: scripts/run.sh [hearth arguments...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" release --target hearth >&2
exec "$root/build/release/src/app/hearth" "$@"
