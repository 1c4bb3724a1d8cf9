// `hearth chat [MESSAGE...]`: talks to a running `hearth serve` (or ollama) over its native
// API. With words after the options it sends them as one message and prints the reply;
// otherwise it reads messages line by line (a REPL on a terminal, or a script from a pipe).
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "app/commands.h"
#include "cli/chat_repl.h"
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
      {"verbose", 'v', SettingType::kBool, "false", "print token counts and speed after each reply", ""},
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

  cli::ChatReplOptions o;
  o.model = s.get_string("model");
  if (o.model.empty()) {
    auto names = client.model_names();
    if (!names.ok()) return fail(names.error().message, 1);
    if (names->empty()) return fail("the server has no models", 1);
    o.model = names->front();
  }
  o.system = s.get_string("system");
  if (s.is_set("temp")) o.options["temperature"] = s.get_float("temp");
  if (s.is_set("seed")) o.options["seed"] = s.get_int("seed");
  if (s.is_set("num_predict")) o.options["num_predict"] = s.get_int("num_predict");
  if (s.is_set("num_ctx")) o.options["num_ctx"] = s.get_int("num_ctx");
  o.show_stats = s.get_bool("verbose");

  if (!s.positionals().empty()) {
    std::string message;
    for (const auto& w : s.positionals()) message += (message.empty() ? "" : " ") + w;
    return cli::run_chat_once(client, o, message, std::cout, std::cerr);
  }
  o.interactive = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  return cli::run_chat_repl(client, o, std::cin, std::cout, std::cerr);
}

}  // namespace hearth::app
