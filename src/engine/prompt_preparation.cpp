// Prompt rendering, tokenization and request shaping (see prompt_preparation.h). Nothing here
// checks token ids or lengths: the serving engine does that for every request, once.
#include "engine/prompt_preparation.h"

#include <algorithm>
#include <cstdint>

#include "chat_output/chat_output_parser.h"
#include "engine/tool_call_grammar.h"

#include "sampler/grammar/json_schema_grammar.h"
#include "template/go_template.h"

namespace hearth::engine {
namespace {

// A chat's messages for a single-turn Go template: text content only (parts are joined).
std::vector<GoTemplateMessage> go_template_messages(const nlohmann::ordered_json& messages) {
  std::vector<GoTemplateMessage> out;
  for (const auto& m : messages) {
    GoTemplateMessage g;
    if (m.contains("role") && m["role"].is_string()) g.role = m["role"].get<std::string>();
    if (m.contains("content")) {
      const auto& c = m["content"];
      if (c.is_string()) {
        g.content = c.get<std::string>();
      } else if (c.is_array()) {
        for (const auto& part : c) {
          if (part.is_object() && part.contains("text") && part["text"].is_string()) g.content += part["text"].get<std::string>();
        }
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

// How the reply to a chat prompt is split: the template's tool-call family when tools were
// offered, and reasoning (in the family's markers) when the template knows it and the request did
// not turn it off. gpt-oss always reasons in its analysis channel: its replies are always split.
protocol::PromptInfo::OutputFormat chat_output_format(const ChatTemplate& chat_template, const nlohmann::ordered_json& chat,
                                                      const std::string& prompt) {
  protocol::PromptInfo::OutputFormat format;
  const std::string& source = chat_template.source();
  const ChatOutputFamily family = detect_chat_output_family(source);
  format.family = chat_output_family_name(family);
  format.tool_calls = chat.contains("tools") && chat["tools"].is_array() && !chat["tools"].empty();
  const bool thinking_off = chat.contains("enable_thinking") && chat["enable_thinking"].is_boolean() && !chat["enable_thinking"].get<bool>();
  format.reasoning = (!thinking_off && template_writes_reasoning(source)) || family == ChatOutputFamily::kGptOss;
  const ReasoningMarkers markers = reasoning_markers(family);
  const std::string open_tag(markers.open);
  size_t last_open = prompt.rfind(open_tag);
  format.reasoning_open = format.reasoning && last_open != std::string::npos &&
                          prompt.find(markers.close, last_open) == std::string::npos &&
                          prompt.find_first_not_of(" \n", last_open + open_tag.size()) == std::string::npos;
  format.framed = family_frames_replies(family);
  // An assistant prefill (the template appends it as is): the parser reads it first, so a call
  // it opened ("<tool_call>", a name-first family's opener) is parsed as a call.
  if (const auto m = chat.find("messages"); m != chat.end() && m->is_array() && !m->empty()) {
    const auto& last = m->back();
    if (last.is_object() && last.value("role", "") == "assistant" && last.contains("content") && last["content"].is_string()) {
      format.prefilled = last["content"].get<std::string>();
    }
  }
  return format;
}

// The chat's thinking budget in tokens (the API layer puts it there as "thinking_budget"), or -1.
int32_t chat_thinking_budget(const nlohmann::ordered_json& chat) {
  if (!chat.is_object() || !chat.contains("thinking_budget") || !chat["thinking_budget"].is_number_integer()) return -1;
  const int64_t v = chat["thinking_budget"].get<int64_t>();
  return v < 0 ? -1 : static_cast<int32_t>(std::min<int64_t>(v, INT32_MAX));
}

// Tokens of `ids` (the chat's rendered prompt) that its leading system (or developer) messages
// render to alone: the part a new conversation with the same system prompt shares. 0 when the
// chat has none or the template does not render them on their own.
int32_t system_prefix_tokens(const PromptModel& model, const protocol::PromptSource& source, const std::vector<int32_t>& ids) {
  if (!source.chat.is_object() || !source.chat.contains("messages") || !source.chat["messages"].is_array()) return 0;
  nlohmann::ordered_json head = source.chat;
  head["messages"] = nlohmann::ordered_json::array();
  for (const auto& m : source.chat["messages"]) {
    const std::string role = m.is_object() ? m.value("role", "") : "";
    if (role != "system" && role != "developer") break;
    head["messages"].push_back(m);
  }
  if (head["messages"].empty() || head["messages"].size() == source.chat["messages"].size()) return 0;
  head["add_generation_prompt"] = false;
  auto text = model.chat_template.render(head);
  if (!text.ok()) return 0;
  std::vector<int32_t> head_ids = source.prefix_tokens;
  auto encoded = model.tokenizer.encode(*text, source.add_special, /*parse_special=*/true);
  head_ids.insert(head_ids.end(), encoded.begin(), encoded.end());
  const auto common = std::mismatch(head_ids.begin(), head_ids.end(), ids.begin(), ids.end());
  return static_cast<int32_t>(common.second - ids.begin());
}

}  // namespace

Result<protocol::PromptInfo> render_prompt(const PromptModel& model, const protocol::PromptSource& source) {
  using Kind = protocol::PromptSource::Kind;
  const Tokenizer& tok = model.tokenizer;
  protocol::PromptInfo out;
  out.ids = source.prefix_tokens;
  switch (source.kind) {
    case Kind::kChat: {
      if (source.untemplated_text && model.info.chat_template_builtin) {
        out.text = *source.untemplated_text;
        auto ids = tok.encode(out.text, source.add_special, /*parse_special=*/false);
        out.ids.insert(out.ids.end(), ids.begin(), ids.end());
        break;
      }
      HEARTH_ASSIGN(out.text, model.chat_template.render(source.chat));
      auto ids = tok.encode(out.text, source.add_special, /*parse_special=*/true);
      out.ids.insert(out.ids.end(), ids.begin(), ids.end());
      out.output = chat_output_format(model.chat_template, source.chat, out.text);
      out.n_shared = system_prefix_tokens(model, source, out.ids);
      break;
    }
    case Kind::kText: {
      out.text = source.text;
      if (source.fill_in_middle) {
        const protocol::ModelInfo& info = model.info;
        if (info.fim_prefix < 0 || info.fim_suffix < 0 || info.fim_middle < 0) {
          return make_error(ErrorKind::kUnsupported, "'suffix' needs a model with fill-in-the-middle tokens; '" +
                                                         info.name + "' has none");
        }
        if (source.add_special && tok.add_bos() && tok.bos_id() >= 0) out.ids.push_back(tok.bos_id());
        out.ids.push_back(info.fim_prefix);
        auto pre = tok.encode(source.text, false, false);
        out.ids.insert(out.ids.end(), pre.begin(), pre.end());
        out.ids.push_back(info.fim_suffix);
        auto suf = tok.encode(source.suffix, false, false);
        out.ids.insert(out.ids.end(), suf.begin(), suf.end());
        out.ids.push_back(info.fim_middle);
      } else {
        auto ids = tok.encode(source.text, source.add_special, /*parse_special=*/true);
        out.ids.insert(out.ids.end(), ids.begin(), ids.end());
      }
      break;
    }
    case Kind::kGoTemplate: {
      if (source.chat.is_object() && source.chat.contains("messages")) {
        HEARTH_ASSIGN(out.text, render_go_template_chat(source.text, go_template_messages(source.chat["messages"])));
      } else {
        HEARTH_ASSIGN(out.text, render_go_template(source.text, source.template_fields));
      }
      auto ids = tok.encode(out.text, source.add_special, /*parse_special=*/true);
      out.ids.insert(out.ids.end(), ids.begin(), ids.end());
      break;
    }
    case Kind::kTokens:
      out.ids.insert(out.ids.end(), source.tokens.begin(), source.tokens.end());
      out.text = tok.decode(source.tokens, /*special=*/true);
      break;
  }
  out.n_tokens = static_cast<int32_t>(out.ids.size());
  return out;
}

Result<std::string> constraint_grammar(const protocol::OutputConstraint& constraint) {
  using Kind = protocol::OutputConstraint::Kind;
  switch (constraint.kind) {
    case Kind::kNone: return std::string();
    case Kind::kGbnf: return constraint.text;
    case Kind::kJsonObject: return sampler::json_object_gbnf();
    case Kind::kJsonSchema: {
      auto gbnf = sampler::json_schema_to_gbnf(constraint.schema);
      if (!gbnf.ok()) return make_error(gbnf.error().kind, "'" + constraint.field + "': " + gbnf.error().message);
      return gbnf;
    }
  }
  return std::string();
}

Result<PreparedPrompts> prepare_completion(const PromptModel& model, const protocol::CompletionRequest& request) {
  GenerationRequest base;
  base.sampling = request.sampling;
  base.n_predict = request.n_predict;
  base.stop = request.stop;
  base.ignore_eos = request.ignore_eos;
  HEARTH_ASSIGN(base.grammar, constraint_grammar(request.constraint));
  base.grammar_field = request.constraint.field;
  base.logprobs = request.logprobs;
  base.top_logprobs = request.top_logprobs;
  base.truncate = request.truncate;
  base.n_keep = request.n_keep;
  base.cache_prompt = request.cache_prompt;
  base.slot = request.slot;
  base.n_ctx = request.num_ctx;
  base.tag = request.tag;
  if (base.sampling.dry_multiplier > 0.0f) {
    std::vector<std::string> breakers = request.dry_sequence_breakers;
    if (breakers.empty()) breakers = {"\n", ":", "\"", "*"};  // llama-server's defaults
    base.sampling.dry_breakers.clear();
    for (const auto& b : breakers) {
      for (int32_t id : model.tokenizer.encode(b, false, false)) base.sampling.dry_breakers.push_back(id);
    }
  }

  PreparedPrompts out;
  for (const auto& source : request.prompts) {
    HEARTH_ASSIGN(protocol::PromptInfo prompt, render_prompt(model, source));
    ToolCallGrammar tool_grammar;
    if (source.kind == protocol::PromptSource::Kind::kChat && prompt.output.tool_calls) {
      ChatOutputFamily family = ChatOutputFamily::kPlain;
      chat_output_family_from_name(prompt.output.family, family);
      HEARTH_ASSIGN(tool_grammar, tool_call_grammar(family, source.chat));
      const bool forced = source.chat.contains("tool_choice");  // the API layer keeps only forcing choices
      if (forced && !tool_grammar.gbnf.empty() && !base.grammar.empty()) {
        return make_error(ErrorKind::kInvalidArgument, "a forced 'tool_choice' cannot be combined with '" + base.grammar_field + "'");
      }
      // tool_choice "auto" with the request's own grammar: that grammar holds, calls are free.
      if (!forced && !base.grammar.empty()) tool_grammar = ToolCallGrammar{};
      // A grammar from the first token (forced, generic reply, prefilled opener) starts with the call.
      if (!tool_grammar.gbnf.empty() && tool_grammar.triggers.empty()) prompt.output.reasoning_open = false;
    }
    ChatOutputFamily output_family = ChatOutputFamily::kPlain;
    chat_output_family_from_name(prompt.output.family, output_family);
    const ReasoningMarkers markers = reasoning_markers(output_family);
    const int32_t thinking_budget = source.kind == protocol::PromptSource::Kind::kChat && prompt.output.reasoning
                                        ? chat_thinking_budget(source.chat)
                                        : -1;
    for (int32_t j = 0; j < request.n_choices; ++j) {
      GenerationRequest r = base;
      if (!tool_grammar.gbnf.empty()) {
        r.grammar = tool_grammar.gbnf;
        r.grammar_triggers = tool_grammar.triggers;
        r.grammar_field = "tool_choice";
      }
      r.prompt = prompt.ids;
      r.shared_prefix = prompt.n_shared;
      r.print_markers = prompt.output.active();
      // The reasoning is tracked whenever the reply is split (reasoning tokens are counted, a
      // lazy grammar's trigger is watched only outside it); a budget also cuts it.
      if (source.kind == protocol::PromptSource::Kind::kChat && prompt.output.reasoning) {
        r.thinking_budget = thinking_budget;
        r.thinking_open = prompt.output.reasoning_open;
        r.thinking_start = std::string(markers.open);
        r.thinking_end = std::string(markers.close);
        if (thinking_budget >= 0) r.thinking_close = model.tokenizer.encode(std::string(markers.cut), false, /*parse_special=*/true);
      }
      if (j > 0 && r.sampling.seed != 0xFFFFFFFFu) r.sampling.seed += static_cast<uint64_t>(j);
      out.requests.push_back(std::move(r));
    }
    out.prompts.push_back(std::move(prompt));
  }
  return out;
}

std::vector<EmbeddingInput> prepare_embedding(const Tokenizer& tokenizer, const protocol::EmbeddingRequest& request) {
  std::vector<EmbeddingInput> out;
  auto add = [&](std::vector<int32_t> ids) {
    EmbeddingInput in;
    in.tokens = std::move(ids);
    in.normalize = request.normalize;
    in.truncate = request.truncate;
    out.push_back(std::move(in));
  };
  for (const auto& text : request.texts) add(tokenizer.encode(text, true, false));
  for (const auto& ids : request.token_inputs) add(ids);
  return out;
}

}  // namespace hearth::engine
