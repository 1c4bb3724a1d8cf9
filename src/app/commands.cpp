// The list of subcommands, in the order --help shows them.
#include "app/commands.h"

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
  };
  return kCommands;
}

}  // namespace hearth::app
