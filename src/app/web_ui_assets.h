// The web UI files compiled into this binary (generated at build time from webui/ by
// cmake/WebUi.cmake; empty when the build had no node), handed to the server to serve at /.
#pragma once

#include <span>

#include "server/web_ui.h"

namespace hearth::app {

std::span<const server::WebAsset> embedded_web_ui();

}  // namespace hearth::app
