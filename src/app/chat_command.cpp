// `hearth chat [MESSAGE...]`: talks to a running `hearth serve` (or ollama) over its native
// API. With words after the options it sends them as one message and prints the reply;
// otherwise it runs the same REPL as `hearth run` (cli/repl.h): with line editing on a
// terminal, or reading a script line by line from a pipe.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/commands.h"
#include "cli/human_format.h"
#include "cli/line_reader.h"
#include "cli/repl.h"
#include "util/settings.h"

namespace hearth::app {
namespace {

const char* const kUsage = "hearth chat [--model NAME] [options] [MESSAGE...]";

std::vector<SettingSpec> chat_settings() {
  return {
      {"host", 0, SettingType::kString, "127.0.0.1:11434", "server address, HOST or HOST:PORT", "HEARTH_HOST"},
      {"model", 'm', SettingType::kString, "", "model name (default: the first one the server lists)", ""},
      {"system", 's', SettingType::kString, "", "system message that starts the conversation", ""},
      {"api_key", 0, SettingType::kString, "", "API key the server requires", "HEARTH_API_KEY"},
      {"temp", 0, SettingType::kFloat, "0.8", "temperature (sent only when given)", "", SettingRange::at_least(0)},
      {"seed", 0, SettingType::kInt, "-1", "random seed (-1: random; sent only when given)", "", SettingRange::at_least(-1)},
      {"num_predict", 'n', SettingType::kInt, "-1", "most tokens per reply (-1: no limit, -2: fill the context; sent only when given)",
       "", SettingRange::between(-2, SettingRange::kInt32Max)},
      {"num_ctx", 0, SettingType::kInt, "", "context size to ask for (sent only when given)", "",
       SettingRange::between(1, SettingRange::kInt32Max)},
      {"verbose", 'v', SettingType::kBool, "false", "print timings (token counts, durations, rates) after each reply", ""},
  };
}

int fail(const std::string& message, int status = 2) {
  std::fprintf(stderr, "hearth chat: %s\n", message.c_str());
  return status;
}

}  // namespace

int run_chat(const CommandArgs& args) {
  Settings s(chat_settings());
  if (auto st = s.parse(args); !st.ok()) return fail(st.error().message);
  if (s.help_requested()) {
    std::printf("%s", s.help_text(kUsage).c_str());
    return 0;
  }
  auto address = cli::parse_server_address(s.get_string("host"));
  if (!address.ok()) return fail("--host: " + address.error().message);
  cli::OllamaClient client(*address, s.get_string("api_key"));

  cli::SessionOptions o;
  o.model = s.get_string("model");
  if (o.model.empty()) {
    auto names = client.model_names();
    if (!names.ok()) return fail(names.error().message, 1);
    if (names->empty()) return fail("the server has no models", 1);
    o.model = names->front();
  }
  o.system = s.get_string("system");
  if (s.is_set("temp")) o.parameters["temperature"] = s.get_float("temp");
  if (s.is_set("seed")) o.parameters["seed"] = s.get_int("seed");
  if (s.is_set("num_predict")) o.parameters["num_predict"] = s.get_int("num_predict");
  if (s.is_set("num_ctx")) o.parameters["num_ctx"] = s.get_int("num_ctx");
  o.verbose = s.get_bool("verbose");
  cli::Console console = cli::system_console();

  if (!s.positionals().empty()) {
    std::string message;
    for (const auto& w : s.positionals()) message += (message.empty() ? "" : " ") + w;
    nlohmann::json body = cli::session_request(o);
    body["messages"] = nlohmann::json::array();
    if (!o.system.empty()) body["messages"].push_back({{"role", "system"}, {"content", o.system}});
    body["messages"].push_back({{"role", "user"}, {"content", message}});
    auto reply = cli::stream_reply(client, "/api/chat", body, o, console);
    if (!reply.ok()) return fail(reply.error().message, 1);
    console.out << "\n";
    if (o.verbose) console.err << "\n" << cli::format_metrics(reply->stats);
    return 0;
  }
  const bool interactive = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  std::ostringstream no_prompts;
  auto reader = interactive ? cli::make_terminal_line_reader(cli::default_history_path())
                            : cli::make_stream_line_reader(std::cin, no_prompts);
  return cli::run_repl(client, o, *reader, console);
}

}  // namespace hearth::app
