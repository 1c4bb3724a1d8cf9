// Renders every case of the real chat templates in shared/templates and compares with the
// golden prompt byte for byte (or expects an error where the golden says the template refuses).
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

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  DIR* dir = opendir(test::templates_dir().c_str());
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

TEST(TemplateGolden, AllCasesMatch) {
  HEARTH_REQUIRE_FILE(test::templates_dir() + "/README.md");
  std::vector<std::string> names = golden_names();
  ASSERT_EQ(names.size(), 8u);
  std::tm date{};
  date.tm_year = 2026 - 1900;
  date.tm_mon = 10;
  date.tm_mday = 21;
  date.tm_wday = 6;
  date.tm_yday = 324;
  for (const auto& name : names) {
    std::string base = test::templates_dir() + "/" + name;
    auto source = read_file(base + ".jinja");
    ASSERT_TRUE(source.ok()) << base;
    auto golden_text = read_file(base + ".golden.json");
    ASSERT_TRUE(golden_text.ok()) << base;
    auto golden = nlohmann::ordered_json::parse(*golden_text);
    auto tmpl = ChatTemplate::create(*source, "<s>", "</s>", name + ".jinja");
    ASSERT_TRUE(tmpl.ok()) << tmpl.error().message;
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
  }
}

}  // namespace
}  // namespace hearth
