#!/usr/bin/env bash
# Enforces the layering of docs/architecture.md: a module may include only itself and the
# modules below it. Prints each offending include and fails if there is one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "${1:-$root/src}"
# module: the modules it may include (besides itself).
declare -A allowed=(
  [util]=""
  [protocol]="util"
  [tensor]="util"
  [gguf]="util tensor"
  # device/: the compute devices (Vulkan) and their memory, no math; kernels/vulkan/ runs on it.
  [device]="util"
  [kernels]="util tensor gguf device"
  [tokenizer]="util gguf"
  [template]="util chat_output"
  # Splits generated chat text into answer, reasoning and tool calls (no model, no HTTP).
  [chat_output]="util"
  [kv]="util tensor device kernels"
  [sampler]="util protocol tensor kernels"
  [model]="util tensor gguf device kernels kv"
  [engine]="util protocol tensor gguf device kernels kv model sampler tokenizer template chat_output"
  # The HTTP side holds no model: protocol types only, nothing engine-side.
  [api]="util protocol"
  [store]="util tensor gguf"
  [registry]="util store"
  # The glue of pull and push: the store's files meet the registry's protocol here only.
  [transfer]="util store registry"
  [router]="util protocol store"
  # The child side of router mode: serves a backend the app hands it; links no engine itself.
  [runner]="util protocol"
  [server]="util protocol api router store transfer chat_output"
  [cli]="util protocol store"
  # The executables wire the layers together; devtools makes models, so it sits on the engine.
  [devtools]="util protocol tensor gguf device kernels tokenizer template kv model sampler engine"
  [app]="util protocol tensor gguf device kernels tokenizer template chat_output kv model sampler engine api server router runner store registry transfer cli"
)
bad=0
for dir in */; do
  mod=${dir%/}
  if [ -z "${allowed[$mod]+x}" ]; then
    echo "layering: src/$mod/ is not in scripts/check_layers.sh; add it with the modules it may include" >&2
    bad=1
    continue
  fi
  ok=" $mod ${allowed[$mod]} "
  while IFS= read -r line; do
    file=${line%%:*}
    # A bash match, not a sed per line: CI runs this script 16 times (tests/layers).
    [[ "$line" =~ \#include\ \"([a-z_]+)/ ]] || continue
    inc=${BASH_REMATCH[1]}
    if [[ "$ok" != *" $inc "* ]]; then
      echo "layering: src/$file includes $inc/ (not allowed for $mod/)" >&2
      bad=1
    fi
  done < <(grep -rnE '#include "[a-z_]+/' "$mod" || true)
done
exit $bad
