// `hearth run` with no server listening starts one, as ollama's desktop app does for its
// CLI: the same executable (/proc/self/exe) runs `hearth serve` in its own session, detached
// from the terminal (so Ctrl-C in the REPL does not reach it), with stdout and stderr appended
// to a log file, ~/.hearth/logs/server.log (HEARTH_LOG_DIR overrides the folder). It inherits
// the environment, so it binds HEARTH_HOST / OLLAMA_HOST like the client reads them. Only for
// a loopback address: a remote server cannot be started from here.
#pragma once

#include <sys/types.h>

#include <string>

#include "cli/ollama_client.h"

namespace hearth::cli {

struct LaunchedServer {
  pid_t pid = -1;
  std::string log_path;
};

// The folder of the server log (created 0700 on first use by start_background_server).
std::string server_log_dir();
// Starts the server and waits (up to timeout_seconds) until it answers and has left its
// loading state (/health is not 503). Errors quote the end of the log.
Result<LaunchedServer> start_background_server(OllamaClient& client, int timeout_seconds);

}  // namespace hearth::cli
