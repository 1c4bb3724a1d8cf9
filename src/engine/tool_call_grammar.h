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
#include "tokenizer/tokenizer.h"
#include "sampler/sampler_chain.h"
#include "util/result.h"

namespace hearth::engine {

// GBNF for `chat` (a chat body whose "tool_choice" is "required" or {"name": ...}, with "tools"
// and optionally "parallel_tool_calls": false); "" when nothing is forced. Errors name
// 'tool_choice' or the tool whose schema cannot be enforced.
Result<std::string> forced_tool_call_grammar(ChatOutputFamily family, const nlohmann::ordered_json& chat);

// The generic family's reply grammar when tools are offered and not forced ("auto" or no
// tool_choice): the whole reply is {"tool_calls": [...]} with schema-valid arguments, or
// {"response": "..."} (as the reference engine's generic mode, which is never lazy); "" without
// tools or with tool_choice "none".
Result<std::string> generic_reply_grammar(const nlohmann::ordered_json& chat);

// Whether token `id` is a control token whose text is a template family's structural marker
// (harmony's <|channel|>, [TOOL_CALLS], ...): printed as text when a request asks for markers or
// has a grammar, and matched by grammars, so a forced call can use the model's own token.
bool is_printed_marker(const Tokenizer& tokenizer, int32_t id);
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
