#!/bin/sh
# Runs GPU tests (a test binary and a gtest filter) under the Khronos validation layer with
# synchronization validation on, and fails on any validation message: a missing barrier
# (a shader reading an upload the layer cannot see ordered before it, a download racing a
# dispatch) is reported as a SYNC-HAZARD even where the driver (lavapipe) happens to run it
# right. The layer is Debian's vulkan-validationlayers (scripts/setup.sh installs it); without
# it this test fails rather than passing unchecked.
# Usage: vulkan_validation_test.sh TEST_BINARY GTEST_FILTER
set -u
binary=$1
filter=$2
layer_json=""
for d in /usr/share/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d; do
  if [ -f "$d/VkLayer_khronos_validation.json" ]; then layer_json="$d/VkLayer_khronos_validation.json"; fi
done
if [ -z "$layer_json" ]; then
  echo "FAIL: the Vulkan validation layer is not installed (apt-get install vulkan-validationlayers; scripts/setup.sh does)"
  exit 1
fi
dir=$(mktemp -d)
log="$dir/log"
trap 'rm -rf "$dir"' EXIT
# Without a settings file the layer reports to no one (no debug messenger is installed): log
# errors and warnings to stdout, with synchronization validation on.
cat >"$dir/vk_layer_settings.txt" <<'SETTINGS'
khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG
khronos_validation.report_flags = error,warn
khronos_validation.log_filename = stdout
khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
SETTINGS
# The layer itself leaks (megabytes, all inside libVkLayer_khronos_validation.so), so an ASan
# build's leak check is off for this run; the same tests run leak-checked without the layer.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
VK_LAYER_SETTINGS_PATH="$dir" VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation \
  "$binary" --gtest_filter="$filter" >"$log" 2>&1
status=$?
cat "$log"
if ! grep -q "^\[ device   \]" "$log"; then
  echo "FAIL: no test opened a Vulkan device"
  exit 1
fi
if grep -q -E "Validation (Error|Warning)|VUID-|SYNC-HAZARD" "$log"; then
  echo "FAIL: the validation layer reported the messages above"
  exit 1
fi
if grep -q "\[  SKIPPED \]" "$log"; then
  echo "FAIL: tests were skipped (no device or model)"
  exit 1
fi
exit $status
