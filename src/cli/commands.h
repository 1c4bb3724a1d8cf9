// The model commands of the `hearth` executable that are clients of a server, as ollama's
// CLI has them: run, pull, push, list (ls), ps, show, rm, cp, create, stop. Each takes the
// words after its name and returns the exit status: 0 done, 1 the server or the model failed
// (with its message), 2 bad usage.
#pragma once

#include <string>
#include <vector>

#include "cli/chat_turn.h"
#include "cli/ollama_client.h"
#include "util/result.h"
#include "util/settings.h"

namespace hearth::cli {

using Args = std::vector<std::string>;

int run_command(const Args& args);
int pull_command(const Args& args);
int push_command(const Args& args);
int list_command(const Args& args);
int ps_command(const Args& args);
int show_command(const Args& args);
int rm_command(const Args& args);
int cp_command(const Args& args);
int create_command(const Args& args);
int stop_command(const Args& args);

// The server a command talks to: --host (HEARTH_HOST, else OLLAMA_HOST) and --api-key
// (HEARTH_API_KEY, for a server started with --api-key). Every client command has both.
struct ServerTarget {
  ServerAddress address;
  std::string api_key;
};
std::vector<SettingSpec> server_target_settings();
// Errors say where a bad address came from.
Result<ServerTarget> server_target(const Settings& settings);

// `hearth run`'s words read into a session: model, prompt words, flags. `--think` alone
// means --think=true (ollama's optional value). help_text is set for -h/--help.
struct RunArgs {
  SessionOptions session;
  ServerTarget server;
  std::string prompt;  // the words after MODEL, joined with spaces
  std::string help_text;
};
Result<RunArgs> parse_run_args(const Args& args, const EnvLookup& env = process_env());

// `hearth create`'s words: NAME, -f FILE (default ./Modelfile) or --from FILE.gguf, -q TYPE.
struct CreateArgs {
  std::string name;
  std::string modelfile = "Modelfile";
  std::string from_file;  // --from: a GGUF registered in place by the server (absolute path)
  std::string quantize;
  ServerTarget server;
  std::string help_text;
};
Result<CreateArgs> parse_create_args(const Args& args, const EnvLookup& env = process_env());

}  // namespace hearth::cli
