// `hearth render-template -t TEMPLATE.jinja [--date YYYY-MM-DD] [--bos S] [--eos S]`: reads an
// OpenAI-style chat body from stdin and prints exactly the prompt the model would see. It is
// how a user (or a test) checks a chat template without loading a model; template errors are
// reported as "<file>:<line>: <message>".
#include <cstdio>
#include <ctime>
#include <iostream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "template/chat_render.h"
#include "util/file_io.h"
#include "util/settings.h"

namespace hearth::app {
namespace {

const char* const kUsage = "hearth render-template -t TEMPLATE.jinja [--date YYYY-MM-DD] [--bos S] [--eos S] < request.json";

std::vector<SettingSpec> render_template_settings() {
  return {
      {"template", 't', SettingType::kString, "", "chat template file (Jinja)", ""},
      {"date", 0, SettingType::kString, "", "date seen by strftime_now, YYYY-MM-DD (default: today)", ""},
      {"bos", 0, SettingType::kString, "<s>", "bos_token given to the template", ""},
      {"eos", 0, SettingType::kString, "</s>", "eos_token given to the template", ""},
  };
}

// Parses YYYY-MM-DD into a normalized calendar date (weekday and day of year filled in).
bool parse_date(const std::string& text, std::tm* out) {
  int year = 0, month = 0, day = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c", &year, &month, &day, &tail) != 3) return false;
  if (year < 1900 || year > 9999 || month < 1 || month > 12 || day < 1 || day > 31) return false;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = 12;
  std::time_t t = timegm(&tm);
  if (t == static_cast<std::time_t>(-1) || tm.tm_mday != day) return false;  // e.g. 2026-02-30
  *out = tm;
  return true;
}

}  // namespace

int run_render_template(const CommandArgs& args) {
  Settings settings(render_template_settings());
  Status parsed = settings.parse(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "hearth render-template: %s\n\n%s", parsed.error().message.c_str(),
                 settings.help_text(kUsage).c_str());
    return 2;
  }
  if (settings.help_requested()) {
    std::printf("%s", settings.help_text(kUsage).c_str());
    return 0;
  }
  const std::string path = settings.get_string("template");
  if (path.empty() || !settings.positionals().empty()) {
    std::fprintf(stderr, "hearth render-template: expected -t TEMPLATE.jinja and the request on stdin\n\n%s",
                 settings.help_text(kUsage).c_str());
    return 2;
  }
  jinja::RenderOptions options;
  if (settings.is_set("date")) {
    std::tm date{};
    if (!parse_date(settings.get_string("date"), &date)) {
      std::fprintf(stderr, "hearth render-template: --date must be a valid YYYY-MM-DD date, got '%s'\n",
                   settings.get_string("date").c_str());
      return 2;
    }
    options.now = date;
  }
  auto source = read_file(path);
  if (!source.ok()) {
    std::fprintf(stderr, "hearth render-template: %s\n", source.error().message.c_str());
    return 1;
  }
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  auto request = nlohmann::ordered_json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) {
    std::fprintf(stderr, "hearth render-template: stdin is not valid JSON (expected a chat request object)\n");
    return 1;
  }
  auto tmpl = ChatTemplate::create(*source, settings.get_string("bos"), settings.get_string("eos"), path);
  if (!tmpl.ok()) {
    std::fprintf(stderr, "hearth render-template: %s\n", tmpl.error().message.c_str());
    return 1;
  }
  auto prompt = tmpl->render(request, options);
  if (!prompt.ok()) {
    std::fprintf(stderr, "hearth render-template: %s\n", prompt.error().message.c_str());
    return 1;
  }
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  return 0;
}

}  // namespace hearth::app
