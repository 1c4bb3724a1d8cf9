// The interactive session of `hearth run MODEL` (ollama's REPL): streamed, word-wrapped
// replies; `"""` multi-line input; /set (parameter, system, format, noformat, verbose, quiet,
// think, nothink, wordwrap, nowordwrap, history, nohistory), /show (info, license, modelfile,
// parameters, system, template), /load, /save, /clear, /bye, /? and /help. Ctrl-C stops a
// reply and stays; Ctrl-C at an empty prompt says how to leave; Ctrl-D leaves.
#pragma once

#include "cli/chat_turn.h"
#include "cli/console.h"
#include "cli/line_reader.h"
#include "cli/ollama_client.h"

namespace hearth::cli {

// Returns the exit status: 0 when the user leaves (/bye, Ctrl-D, end of input).
int run_repl(OllamaClient& client, SessionOptions& options, LineReader& reader, Console& console);

}  // namespace hearth::cli
