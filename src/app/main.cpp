// Entry point of the `hearth` executable: picks the subcommand and hands it the rest of argv.
#include <cstdio>
#include <string>
#include <vector>

#include "app/commands.h"

namespace {

void print_usage(FILE* out) {
  std::fprintf(out, "Hearth %s: a local LLM runtime\n\nUsage: hearth COMMAND [options]\n\nCommands:\n", HEARTH_VERSION);
  for (const auto& c : hearth::app::all_commands()) std::fprintf(out, "  %-18s %s\n", c.name, c.summary);
  std::fprintf(out, "\nRun 'hearth COMMAND --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    print_usage(stdout);
    return 0;
  }
  if (args[0] == "--version" || args[0] == "-v" || args[0] == "version") {
    std::printf("hearth version %s\n", HEARTH_VERSION);
    return 0;
  }
  for (const auto& c : hearth::app::all_commands()) {
    if (args[0] == c.name) return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  std::fprintf(stderr, "hearth: unknown command '%s'\n\n", args[0].c_str());
  print_usage(stderr);
  return 2;
}
