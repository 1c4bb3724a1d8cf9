// `hearth run MODEL [PROMPT]` (see commands.h): a one-shot answer when a prompt is given or
// stdin is piped (stdin first, then the words, joined with a space, as ollama joins them),
// else the REPL. A model the server lacks is pulled first; a server that is not running is
// started in the background.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>

#include "cli/commands.h"
#include "cli/console.h"
#include "cli/human_format.h"
#include "cli/line_reader.h"
#include "cli/model_actions.h"
#include "cli/repl.h"
#include "cli/server_launcher.h"

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

const char* const kUsage = "hearth run MODEL [PROMPT] [options]";

std::vector<SettingSpec> run_settings() {
  std::vector<SettingSpec> specs = {
      SettingSpec{"format", 0, SettingType::kString, "", "response format (json)", ""}.with_choices({"json"}),
      {"keepalive", 0, SettingType::kString, "", "how long the model stays loaded (a duration: 5m, 1h, 0, -1 for ever)", ""},
      SettingSpec{"think", 0, SettingType::kString, "", "let a thinking model think: --think, --think=false, or a level (high, medium, low)", ""}
          .with_choices({"true", "false", "high", "medium", "low"}),
      {"hidethinking", 0, SettingType::kBool, "false", "do not print a thinking model's thoughts", ""},
      {"nowordwrap", 0, SettingType::kBool, "false", "do not wrap words at the terminal's edge", ""},
      {"verbose", 0, SettingType::kBool, "false", "print timings (load, prompt and reply token rates) after each reply", ""},
      {"insecure", 0, SettingType::kBool, "false", "pull over plain HTTP / without TLS checks", ""},
  };
  for (auto& spec : server_target_settings()) specs.push_back(spec);
  return specs;
}

int fail(const std::string& message, int status) {
  std::fprintf(stderr, "hearth run: %s\n", message.c_str());
  return status;
}

}  // namespace

std::vector<SettingSpec> server_target_settings() {
  return {SettingSpec{"host", 0, SettingType::kString, "127.0.0.1:11434", "server address, HOST[:PORT]", "HEARTH_HOST"}
              .with_env_fallback("OLLAMA_HOST"),
          {"api_key", 0, SettingType::kString, "", "API key the server requires", "HEARTH_API_KEY"}};
}

Result<ServerTarget> server_target(const Settings& s) {
  ServerTarget t;
  auto a = parse_server_address(s.get_string("host"));
  if (!a.ok()) return a.error().with_context("--host (or HEARTH_HOST / OLLAMA_HOST)");
  t.address = *a;
  t.api_key = s.get_string("api_key");
  return t;
}

Result<RunArgs> parse_run_args(const Args& args_in, const EnvLookup& env) {
  Args args = args_in;
  for (auto& a : args) {
    if (a == "--think") a = "--think=true";
  }
  Settings s(run_settings());
  HEARTH_TRY(s.parse(args, env));
  RunArgs r;
  if (s.help_requested()) {
    r.help_text = s.help_text(kUsage);
    return r;
  }
  if (s.positionals().empty()) return make_error(ErrorKind::kInvalidArgument, "no model given; usage: " + std::string(kUsage));
  r.session.model = s.positionals()[0];
  for (size_t i = 1; i < s.positionals().size(); ++i) r.prompt += (i > 1 ? " " : "") + s.positionals()[i];
  r.session.format = s.get_string("format");
  r.session.keep_alive = s.get_string("keepalive");
  const std::string think = s.get_string("think");
  if (think == "true" || think == "false") r.session.think = think == "true";
  else if (!think.empty()) r.session.think = think;
  r.session.hide_thinking = s.get_bool("hidethinking");
  r.session.word_wrap = !s.get_bool("nowordwrap");
  r.session.verbose = s.get_bool("verbose");
  r.session.insecure = s.get_bool("insecure");
  HEARTH_ASSIGN(r.server, server_target(s));
  return r;
}

int run_command(const Args& args) {
  auto parsed = parse_run_args(args);
  if (!parsed.ok()) return fail(parsed.error().message, 2);
  if (!parsed->help_text.empty()) {
    std::printf("%s", parsed->help_text.c_str());
    return 0;
  }
  RunArgs& r = *parsed;
  const ServerAddress* address = &r.server.address;
  Console console = system_console();

  const bool stdin_terminal = isatty(STDIN_FILENO) != 0;
  std::string prompt = r.prompt;
  if (!stdin_terminal) {
    std::string piped((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (!piped.empty()) prompt = prompt.empty() ? piped : piped + " " + prompt;
    r.session.word_wrap = false;
    if (prompt.empty()) return fail("nothing to send: stdin was empty and no PROMPT was given", 2);
  }
  const bool interactive = prompt.empty();
  if (interactive && !console.out_terminal) return fail("give a PROMPT or pipe one on stdin (stdout is not a terminal, so there is no REPL)", 2);

  OllamaClient client(*address, r.server.api_key);
  auto version = client.version();
  if (!version.ok() && version.error().kind == ErrorKind::kUnavailable) {
    if (!address->is_loopback()) return fail(version.error().message, 1);
    auto launched = start_background_server(client, 120);
    if (!launched.ok()) return fail(launched.error().message, 1);
    std::fprintf(stderr, "hearth: no server was running at %s; started `hearth serve` in the background (pid %d), log: %s\n",
                 address->to_string().c_str(), static_cast<int>(launched->pid), launched->log_path.c_str());
  } else if (!version.ok()) {
    return fail(version.error().message, 1);
  }

  auto shown = ensure_model(client, r.session.model, r.session.insecure, console);
  if (!shown.ok()) return fail(shown.error().message, 1);

  if (!interactive) {
    Json body = session_request(r.session);
    body["prompt"] = prompt;
    auto reply = stream_reply(client, "/api/generate", body, r.session, console);
    if (!reply.ok()) return fail(reply.error().message, 1);
    console.out << "\n";
    console.out.flush();
    if (reply->interrupted) return 130;
    if (r.session.verbose) console.err << "\n" << format_metrics(reply->stats);
    return 0;
  }
  if (Status st = preload_model(client, r.session); !st.ok()) return fail(st.error().message, 1);
  auto reader = make_terminal_line_reader(default_history_path());
  return run_repl(client, r.session, *reader, console);
}

}  // namespace hearth::cli
