// PLACEHOLDER (replaced by the real command during this session).
#include <cstdio>
#include "app/commands.h"
namespace hearth::app {
int run_tokenize(const CommandArgs&) { std::fprintf(stderr, "not built yet\n"); return 1; }
}  // namespace hearth::app
