// The grammar that enforces tool_choice: forced ("required" or a named function), the reply is
// one call (or several, when parallel calls are allowed) in the template family's own syntax,
// each call's arguments matching that function's parameter schema; "auto" (tools offered,
// nothing forced), the same grammar is lazy: free text until the family's call opener, the
// calls from there on.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat_output/chat_output_parser.h"
#include "sampler/sampler_chain.h"
#include "util/result.h"

namespace hearth::engine {

// GBNF for `chat` (a chat body whose "tool_choice" is "required" or {"name": ...}, with "tools"
// and optionally "parallel_tool_calls": false); "" when nothing is forced. Errors name
// 'tool_choice' or the tool whose schema cannot be enforced.
Result<std::string> forced_tool_call_grammar(ChatOutputFamily family, const nlohmann::ordered_json& chat);

// The grammar of a reply to `chat` that offers tools: forced (no triggers) as above, or for
// tool_choice "auto" the same calls as a lazy grammar with the family's triggers (or, when an
// assistant prefill ends inside the call opener, the rest of that call from the first token,
// with no triggers). Empty gbnf:
// no tools, or a family whose calls Hearth cannot constrain (auto then stays free text).
struct ToolCallGrammar {
  std::string gbnf;
  std::vector<sampler::GrammarTrigger> triggers;  // empty: the grammar holds from the first token
};
Result<ToolCallGrammar> tool_call_grammar(ChatOutputFamily family, const nlohmann::ordered_json& chat);

}  // namespace hearth::engine
