// The list of subcommands, in the order --help shows them.
#include "app/commands.h"

#include "cli/commands.h"

namespace hearth::app {

const std::vector<Command>& all_commands() {
  static const std::vector<Command> kCommands = {
      {"inspect", "show a GGUF file's metadata and tensors", run_inspect},
      {"tokenize", "turn text into token ids with a model's vocabulary", run_tokenize},
      {"render-template", "render a chat template for an OpenAI-style chat body", run_render_template},
      {"generate", "continue a prompt with a model and print the text", run_generate},
      {"embed", "print the embedding of each text", run_embed},
      {"perplexity", "measure a model's perplexity on a text file", run_perplexity},
      {"serve", "serve a model over HTTP (ollama, OpenAI and Anthropic APIs)", run_serve},
      {"chat", "chat with a running server", run_chat},
      {"kv", "list and limit the KV memory of serving processes (ls, top, limit, gc)", run_kv},
      {"runner", "serve one model to a router (started by `hearth serve`; not run by hand)", run_runner},
      {"run", "run a model: a one-shot answer or an interactive session (starts a server if none runs)", cli::run_command},
      {"pull", "pull a model from a registry", cli::pull_command},
      {"push", "push a model to a registry", cli::push_command},
      {"list", "list the server's models", cli::list_command},
      {"ls", "list the server's models (list)", cli::list_command},
      {"ps", "list the running models", cli::ps_command},
      {"show", "show a model's details, parameters, template, system message or license", cli::show_command},
      {"rm", "remove models", cli::rm_command},
      {"cp", "copy a model", cli::cp_command},
      {"create", "create a model from a Modelfile", cli::create_command},
      {"stop", "unload a running model", cli::stop_command},
  };
  return kCommands;
}

}  // namespace hearth::app
