// The table of `hearth` subcommands. Each command is a function taking the words after its
// name and returning the process exit status; it prints its own --help from its settings.
#pragma once

#include <string>
#include <vector>

namespace hearth::app {

using CommandArgs = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const CommandArgs& args);
};

const std::vector<Command>& all_commands();

int run_inspect(const CommandArgs& args);
int run_tokenize(const CommandArgs& args);
int run_render_template(const CommandArgs& args);
int run_generate(const CommandArgs& args);
int run_embed(const CommandArgs& args);
int run_perplexity(const CommandArgs& args);
int run_serve(const CommandArgs& args);
int run_chat(const CommandArgs& args);
int run_kv(const CommandArgs& args);
int run_runner(const CommandArgs& args);

}  // namespace hearth::app
