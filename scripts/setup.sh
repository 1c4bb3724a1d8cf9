#!/usr/bin/env bash
# Installs every Debian 12 package Hearth's build, tests and fuzzers need. Safe to run again:
# it only calls apt-get when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev            # libFuzzer targets
  libgtest-dev libgmock-dev libbenchmark-dev
  libssl-dev libpcre2-dev libutf8proc-dev nlohmann-json3-dev
  libcpp-httplib-dev zlib1g-dev libbrotli-dev   # HTTP server/client (its pkg-config needs zlib, brotli)
  libcurl4-openssl-dev                # registry client (pull/push)
  docker-registry curl openssl        # the registry the tests start (openssl: its token-auth test certificate); curl: the pull benchmark's baseline
  libedit-dev                         # line editing and history in the `hearth run` REPL
  tmux                                # the REPL's end-to-end test drives a terminal through it
  chromium                            # the web UI's browser tests (tests/webui, playwright-core drives it)
  libvulkan-dev glslc                 # the Vulkan backend: headers (the loader is dlopened) and the shader compiler
  mesa-vulkan-drivers                 # lavapipe: Vulkan on the CPU, so the GPU tests run everywhere
  vulkan-validationlayers             # the Khronos validation layer: GPU tests run under it (tests/device/vulkan_validation_test.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm run the end-to-end tests (tests/e2e). A node installed another way (a newer
# release) is fine, so look for the commands, not the Debian packages.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
