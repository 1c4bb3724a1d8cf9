// Renders every case of the real chat templates in shared/templates and in tests/template/corpus
// (more real templates, with goldens from the reference engine: see corpus/README.md) and compares
// with the golden prompt byte for byte (or expects an error where the golden says the template
// refuses).
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/test_paths.h"
#include "template/chat_render.h"
#include "util/file_io.h"

namespace hearth {
namespace {

std::vector<std::string> golden_names(const std::string& dir_path) {
  std::vector<std::string> names;
  DIR* dir = opendir(dir_path.c_str());
  if (!dir) return names;
  while (dirent* entry = readdir(dir)) {
    std::string file = entry->d_name;
    const std::string suffix = ".golden.json";
    if (file.size() > suffix.size() && file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0) {
      names.push_back(file.substr(0, file.size() - suffix.size()));
    }
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

// Checks every golden of every template in `dir`; returns {cases matching, cases}.
std::pair<int, int> check_goldens(const std::string& dir, const std::vector<std::string>& names) {
  std::tm date{};
  date.tm_year = 2026 - 1900;
  date.tm_mon = 10;
  date.tm_mday = 21;
  date.tm_wday = 6;
  date.tm_yday = 324;
  int total_passed = 0, total = 0;
  for (const auto& name : names) {
    std::string base = dir + "/" + name;
    auto source = read_file(base + ".jinja");
    EXPECT_TRUE(source.ok()) << base;
    auto golden_text = read_file(base + ".golden.json");
    EXPECT_TRUE(golden_text.ok()) << base;
    if (!source.ok() || !golden_text.ok()) continue;
    auto golden = nlohmann::ordered_json::parse(*golden_text);
    total += static_cast<int>(golden.size());
    auto tmpl = ChatTemplate::create(*source, "<s>", "</s>", name + ".jinja");
    if (!tmpl.ok()) {
      ADD_FAILURE() << tmpl.error().message;
      continue;
    }
    int passed = 0;
    for (auto it = golden.begin(); it != golden.end(); ++it) {
      const auto& c = it.value();
      jinja::RenderOptions options;
      options.now = date;
      auto rendered = tmpl->render(c["request"], options);
      if (c.contains("error")) {
        EXPECT_FALSE(rendered.ok()) << name << " case " << it.key() << " should fail";
        if (!rendered.ok()) ++passed;
      } else {
        if (!rendered.ok()) {
          ADD_FAILURE() << name << " case " << it.key() << ": " << rendered.error().message;
          continue;
        }
        const std::string want = c["prompt"].get<std::string>();
        if (*rendered == want) {
          ++passed;
          continue;
        }
        size_t at = 0;
        while (at < want.size() && at < rendered->size() && want[at] == (*rendered)[at]) ++at;
        size_t from = at > 60 ? at - 60 : 0;
        ADD_FAILURE() << name << " case " << it.key() << " differs at byte " << at << "\n--- golden:\n"
                      << want.substr(from, 200) << "\n--- rendered:\n" << rendered->substr(from, 200);
      }
    }
    std::printf("golden %s: %d/%zu\n", name.c_str(), passed, golden.size());
    total_passed += passed;
  }
  return {total_passed, total};
}

TEST(TemplateGolden, SharedTemplatesMatch) {
  HEARTH_REQUIRE_FILE(test::templates_dir() + "/README.md");
  std::vector<std::string> names = golden_names(test::templates_dir());
  ASSERT_EQ(names.size(), 8u);
  auto [passed, total] = check_goldens(test::templates_dir(), names);
  std::printf("shared templates: %d/%d cases byte-identical\n", passed, total);
}

TEST(TemplateGolden, CorpusTemplatesMatch) {
  std::string dir = test::source_dir() + "/tests/template/corpus";
  std::vector<std::string> names = golden_names(dir);
  ASSERT_GE(names.size(), 19u);
  auto [passed, total] = check_goldens(dir, names);
  std::printf("corpus templates: %d/%d cases byte-identical\n", passed, total);
}

}  // namespace
}  // namespace hearth
