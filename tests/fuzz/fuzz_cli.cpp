// Fuzzes the CLI's text readers: the create planner over the store's Modelfile parser (never
// crash; an error names a line), `"""` assembly, and the streaming word wrap (no output line wider than
// the width; the same text in one piece or two gives the same output).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cli/create_plan.h"
#include "cli/multiline_input.h"
#include "cli/word_wrap.h"

using namespace hearth::cli;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto modelfile = hearth::store::parse_modelfile(text);
  if (modelfile.ok()) {
    auto plan = plan_create(*modelfile, "/nonexistent-fuzz-dir", "m", "");
    if (!plan.ok() && plan.error().message.rfind("Modelfile line ", 0) != 0) std::abort();  // so does a plan error
  } else if (modelfile.error().message.rfind("Modelfile line ", 0) != 0 &&
             modelfile.error().message.rfind("Modelfile has no FROM", 0) != 0) {
    std::abort();  // every parse error names its line (or says FROM is missing)
  }

  MultilineAssembler lines;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) (void)lines.feed(text.substr(start, nl - start));

  const int width = size > 0 ? 2 + data[0] % 40 : 10;  // a wide character takes 2 columns
  WordWrapper whole(width);
  const std::string once = whole.feed(text) + whole.flush();
  const size_t cut = size > 1 ? data[1] % size : 0;
  WordWrapper split(width);
  const std::string twice = split.feed(text.substr(0, cut)) + split.feed(text.substr(cut)) + split.flush();
  if (once != twice) std::abort();
  size_t line_start = 0;
  for (size_t i = 0; i <= once.size(); ++i) {
    if (i == once.size() || once[i] == '\n') {
      if (display_width(std::string_view(once).substr(line_start, i - line_start)) > width) std::abort();
      line_start = i + 1;
    }
  }
  return 0;
}
