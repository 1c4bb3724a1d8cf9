// pull, push, list, ps, show, rm, cp, create and stop (see commands.h): thin clients of the
// server's routes, with ollama's output.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/console.h"
#include "cli/create_plan.h"
#include "cli/model_actions.h"
#include "cli/show_format.h"
#include "store/model_name.h"
#include "util/file_io.h"

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

int fail(const char* command, const std::string& message, int status) {
  std::fprintf(stderr, "hearth %s: %s\n", command, message.c_str());
  return status;
}

// Parses the flags (and --host) and checks the count of positionals; prints help or a usage
// error. Returns -1 to go on, else the exit status.
int parse(const char* command, const char* usage, Settings& s, const Args& args, size_t min_words, size_t max_words) {
  std::vector<SettingSpec> specs = s.specs();
  for (auto& spec : server_target_settings()) specs.push_back(spec);
  s = Settings(specs);
  if (auto st = s.parse(args); !st.ok()) return fail(command, st.error().message, 2);
  if (s.help_requested()) {
    std::printf("%s", s.help_text(usage).c_str());
    return 0;
  }
  const size_t n = s.positionals().size();
  if (n < min_words || n > max_words) return fail(command, std::string("usage: ") + usage, 2);
  return -1;
}

// A client for the address --host / HEARTH_HOST / OLLAMA_HOST names; nullptr (after a
// message) when the address is bad.
std::unique_ptr<OllamaClient> connect(const char* command, const Settings& s) {
  auto target = server_target(s);
  if (!target.ok()) {
    fail(command, target.error().message, 2);
    return nullptr;
  }
  return std::make_unique<OllamaClient>(target->address, target->api_key);
}

std::vector<SettingSpec> insecure_settings() {
  return {{"insecure", 0, SettingType::kBool, "false", "use plain HTTP / skip TLS checks with the registry", ""}};
}

int transfer(const char* command, const char* route, const Args& args) {
  Settings s(insecure_settings());
  const std::string usage = std::string("hearth ") + command + " NAME [--insecure]";
  if (int st = parse(command, usage.c_str(), s, args, 1, 1); st >= 0) return st;
  auto client = connect(command, s);
  if (!client) return 2;
  Console console = system_console();
  Json body = {{"model", s.positionals()[0]}, {"stream", true}};
  if (s.get_bool("insecure")) body["insecure"] = true;
  Status st = stream_progress(*client, route, body, console);
  if (!st.ok()) return fail(command, st.error().message, 1);
  return 0;
}

double unix_now() { return static_cast<double>(std::time(nullptr)); }

}  // namespace

int pull_command(const Args& args) { return transfer("pull", "/api/pull", args); }
int push_command(const Args& args) { return transfer("push", "/api/push", args); }

int list_command(const Args& args) {
  Settings s({});
  if (int st = parse("list", "hearth list", s, args, 0, 0); st >= 0) return st;
  auto client = connect("list", s);
  if (!client) return 2;
  auto tags = client->call("GET", "/api/tags", nullptr);
  if (!tags.ok()) return fail("list", tags.error().message, 1);
  std::cout << format_model_list(*tags, unix_now());
  return 0;
}

int ps_command(const Args& args) {
  Settings s({});
  if (int st = parse("ps", "hearth ps", s, args, 0, 0); st >= 0) return st;
  auto client = connect("ps", s);
  if (!client) return 2;
  auto ps = client->call("GET", "/api/ps", nullptr);
  if (!ps.ok()) return fail("ps", ps.error().message, 1);
  std::cout << format_running_list(*ps, unix_now());
  return 0;
}

int show_command(const Args& args) {
  Settings s({
      {"modelfile", 0, SettingType::kBool, "false", "the Modelfile of the model", ""},
      {"parameters", 0, SettingType::kBool, "false", "the parameters of the model", ""},
      {"template", 0, SettingType::kBool, "false", "the prompt template of the model", ""},
      {"system", 0, SettingType::kBool, "false", "the system message of the model", ""},
      {"license", 0, SettingType::kBool, "false", "the license of the model", ""},
  });
  if (int st = parse("show", "hearth show NAME [--modelfile|--parameters|--template|--system|--license]", s, args, 1, 1); st >= 0) {
    return st;
  }
  std::string field;
  for (const char* f : {"modelfile", "parameters", "template", "system", "license"}) {
    if (!s.get_bool(f)) continue;
    if (!field.empty()) return fail("show", "only one of --license, --modelfile, --parameters, --system or --template can be given", 2);
    field = f;
  }
  auto client = connect("show", s);
  if (!client) return 2;
  auto shown = show_model(*client, s.positionals()[0]);
  if (!shown.ok()) return fail("show", shown.error().message, 1);
  if (field.empty()) {
    std::cout << "\n" << format_show_summary(*shown);
    return 0;
  }
  auto it = shown->find(field);
  std::string text = it != shown->end() && it->is_string() ? it->get<std::string>() : "";
  std::cout << text << (text.empty() || text.back() == '\n' ? "" : "\n");
  return 0;
}

int rm_command(const Args& args) {
  Settings s({});
  if (int st = parse("rm", "hearth rm NAME [NAME...]", s, args, 1, SIZE_MAX); st >= 0) return st;
  auto client = connect("rm", s);
  if (!client) return 2;
  int status = 0;
  for (const auto& name : s.positionals()) {
    Json body = {{"model", name}};
    auto r = client->call("DELETE", "/api/delete", &body);
    if (!r.ok()) {
      status = fail("rm", r.error().message, 1);
      if (r.error().kind == ErrorKind::kUnavailable) return status;
      continue;
    }
    std::cout << "deleted '" << name << "'\n";
  }
  return status;
}

int cp_command(const Args& args) {
  Settings s({});
  if (int st = parse("cp", "hearth cp SOURCE DESTINATION", s, args, 2, 2); st >= 0) return st;
  auto client = connect("cp", s);
  if (!client) return 2;
  Json body = {{"source", s.positionals()[0]}, {"destination", s.positionals()[1]}};
  auto r = client->call("POST", "/api/copy", &body);
  if (!r.ok()) return fail("cp", r.error().message, 1);
  std::cout << "copied '" << s.positionals()[0] << "' to '" << s.positionals()[1] << "'\n";
  return 0;
}

Result<CreateArgs> parse_create_args(const Args& args, const EnvLookup& env) {
  std::vector<SettingSpec> specs = {
      {"file", 'f', SettingType::kString, "Modelfile", "the Modelfile to read", ""},
      {"quantize", 'q', SettingType::kString, "", "quantize the model to this type (q8_0, q4_0, q4_K_M, ...)", ""},
      {"from", 0, SettingType::kString, "",
       "register this GGUF file in place (hard link or reflink, no copy, no upload); the server must run on this "
       "machine with --allow-local-files",
       ""},
  };
  for (auto& spec : server_target_settings()) specs.push_back(spec);
  Settings s(specs);
  HEARTH_TRY(s.parse(args, env));
  CreateArgs c;
  if (s.help_requested()) {
    c.help_text = s.help_text("hearth create NAME [-f Modelfile | --from FILE.gguf] [-q TYPE]");
    return c;
  }
  if (s.positionals().size() != 1) {
    return make_error(ErrorKind::kInvalidArgument, "usage: hearth create NAME [-f Modelfile | --from FILE.gguf] [-q TYPE]");
  }
  c.name = s.positionals()[0];
  // Refused here, before any upload, by the rules the server's store applies.
  if (auto name = store::parse_model_name(c.name); !name.ok()) return name.error();
  c.modelfile = s.get_string("file");
  c.quantize = s.get_string("quantize");
  if (const std::string from = s.get_string("from"); !from.empty()) {
    if (s.is_set("file")) return make_error(ErrorKind::kInvalidArgument, "give -f Modelfile or --from FILE.gguf, not both");
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(from, ec);
    if (ec || !std::filesystem::is_regular_file(absolute, ec)) {
      return make_error(ErrorKind::kInvalidArgument, "--from: '" + from + "' is not a file");
    }
    c.from_file = absolute.lexically_normal().string();
  }
  HEARTH_ASSIGN(c.server, server_target(s));
  return c;
}

int create_command(const Args& args) {
  auto c = parse_create_args(args);
  if (!c.ok()) return fail("create", c.error().message, 2);
  if (!c->help_text.empty()) {
    std::printf("%s", c->help_text.c_str());
    return 0;
  }
  if (!c->from_file.empty()) {
    // The server reads the file where it is; nothing is uploaded.
    CreatePlan plan;
    plan.request = {{"model", c->name}, {"from", c->from_file}};
    if (!c->quantize.empty()) plan.request["quantize"] = c->quantize;
    auto client = std::make_unique<OllamaClient>(c->server.address, c->server.api_key);
    Console console = system_console();
    Status st = create_model(*client, std::move(plan), console);
    if (!st.ok()) return fail("create", st.error().message, 1);
    return 0;
  }
  auto text = read_file(c->modelfile);
  if (!text.ok()) return fail("create", "cannot read the Modelfile '" + c->modelfile + "': " + text.error().message, 2);
  auto modelfile = store::parse_modelfile(*text);
  if (!modelfile.ok()) return fail("create", c->modelfile + ": " + modelfile.error().message, 2);
  const size_t slash = c->modelfile.find_last_of('/');
  const std::string base = slash == std::string::npos ? "." : c->modelfile.substr(0, slash);
  auto plan = plan_create(*modelfile, base, c->name, c->quantize);
  if (!plan.ok()) return fail("create", c->modelfile + ": " + plan.error().message, 2);
  auto client = std::make_unique<OllamaClient>(c->server.address, c->server.api_key);
  Console console = system_console();
  Status st = create_model(*client, std::move(*plan), console);
  if (!st.ok()) return fail("create", st.error().message, 1);
  return 0;
}

int stop_command(const Args& args) {
  Settings s({});
  if (int st = parse("stop", "hearth stop MODEL", s, args, 1, 1); st >= 0) return st;
  auto client = connect("stop", s);
  if (!client) return 2;
  const std::string& name = s.positionals()[0];
  // The store's name rules (default host, namespace and tag; case) decide which model is meant.
  auto wanted = store::parse_model_name(name);
  if (!wanted.ok()) return fail("stop", wanted.error().message, 2);
  auto ps = client->call("GET", "/api/ps", nullptr);
  if (!ps.ok()) return fail("stop", ps.error().message, 1);
  bool running = false;
  for (const auto& m : ps->value("models", Json::array())) {
    const std::string n = m.value("name", "");
    auto have = store::parse_model_name(n);
    if (n == name || m.value("model", "") == name || (have.ok() && have->same_as(*wanted))) running = true;
  }
  if (!running) return fail("stop", "model '" + name + "' is not running (see `hearth ps`)", 1);
  Json body = {{"model", name}, {"keep_alive", 0}, {"stream", false}};
  auto r = client->call("POST", "/api/generate", &body);
  if (!r.ok()) return fail("stop", r.error().message, 1);
  return 0;
}

}  // namespace hearth::cli
