#!/usr/bin/env bash
# scripts/check_layers.sh must pass on the tree and fail when the HTTP side (server/, api/)
# includes anything engine-side, or when a module is missing from its table.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/scripts/check_layers.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for mod in engine model tokenizer template kv kernels sampler; do
  for side in server api; do
    rm -rf "$work/src" && cp -r "$root/src" "$work/src"
    echo "#include \"$mod/x.h\"" >>"$work/src/$side/$(ls "$work/src/$side" | grep '\.cpp$' | head -1)"
    if "$root/scripts/check_layers.sh" "$work/src" 2>/dev/null; then
      echo "check_layers.sh accepted $side/ including $mod/" >&2
      exit 1
    fi
  done
done
rm -rf "$work/src" && cp -r "$root/src" "$work/src" && mkdir "$work/src/newmodule"
if "$root/scripts/check_layers.sh" "$work/src" 2>/dev/null; then
  echo "check_layers.sh accepted a module missing from its table" >&2
  exit 1
fi
echo "check_layers: 1 passed, 0 failed"
