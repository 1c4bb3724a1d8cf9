// Prompt preparation, the engine side of a protocol request: renders the chat template (or
// takes raw text or token ids), builds fill-in-the-middle prompts, tokenizes, turns an output
// constraint into GBNF and resolves the sampler fields that need the vocabulary (DRY sequence
// breakers). The result is one tokenized GenerationRequest per choice, ready for the serving
// engine, which checks them against the model (ids, length, grammar, sampler ranges) once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/serving_types.h"
#include "protocol/model_info.h"
#include "protocol/requests.h"
#include "template/chat_render.h"
#include "tokenizer/tokenizer.h"

namespace hearth::engine {

// What preparation reads: the model's tokenizer, chat template and description.
struct PromptModel {
  const Tokenizer& tokenizer;
  const ChatTemplate& chat_template;
  const protocol::ModelInfo& info;
};

// The token ids and text of one prompt source.
Result<protocol::PromptInfo> render_prompt(const PromptModel& model, const protocol::PromptSource& source);

// One request per choice, prompt-major (all choices of prompt 0, then prompt 1, ...), and what
// each prompt became. Choice j > 0 of a seeded request gets seed + j, so n choices differ but
// stay reproducible.
struct PreparedPrompts {
  std::vector<GenerationRequest> requests;
  std::vector<protocol::PromptInfo> prompts;
};
Result<PreparedPrompts> prepare_completion(const PromptModel& model, const protocol::CompletionRequest& request);

// GBNF for an output constraint ("" for none). Errors name the constraint's field.
Result<std::string> constraint_grammar(const protocol::OutputConstraint& constraint);

// One tokenized input per text or token list of an embeddings request.
std::vector<EmbeddingInput> prepare_embedding(const Tokenizer& tokenizer, const protocol::EmbeddingRequest& request);

}  // namespace hearth::engine
