#!/usr/bin/env bash
# Enforces the layering of docs/architecture.md: a module may include only itself and the
# modules below it. Prints each offending include and fails if there is one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/src"
# module: the modules it may include (besides itself).
declare -A allowed=(
  [util]=""
  [tensor]="util"
  [gguf]="util tensor"
  [kernels]="util tensor gguf"
  [tokenizer]="util gguf"
  [template]="util"
  [kv]="util tensor kernels"
  [sampler]="util tensor kernels"
  [model]="util tensor gguf kernels kv"
  [engine]="util tensor gguf kernels kv model sampler tokenizer template"
  [api]="util engine template tokenizer sampler"
  [store]="util gguf"
  [registry]="util store"
  [router]="util store engine"
  [server]="util api engine router store template tokenizer sampler"
  [cli]="util store"
)
bad=0
for dir in */; do
  mod=${dir%/}
  [ -n "${allowed[$mod]+x}" ] || continue  # app/ and others wire everything together
  ok=" $mod ${allowed[$mod]} "
  while IFS= read -r line; do
    file=${line%%:*}
    inc=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$line")
    if [[ "$ok" != *" $inc "* ]]; then
      echo "layering: src/$file includes $inc/ (not allowed for $mod/)" >&2
      bad=1
    fi
  done < <(grep -rnE '#include "[a-z_]+/' "$mod" || true)
done
exit $bad
