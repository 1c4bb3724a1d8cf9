// Response encoders for /v1/chat/completions and /v1/completions: OpenAI's chunk and body
// shapes, `data: [DONE]`, stream_options.include_usage, logprobs in the chat form
// ({content: [{token, logprob, bytes, top_logprobs}]}) and the legacy completions form
// ({tokens, token_logprobs, top_logprobs, text_offset}), plus llama-server's `timings`.
#include "api/choice_state.h"
#include "api/json_fields.h"
#include "api/response_encoder.h"
#include "api/stream_framing.h"

namespace hearth::api {
namespace {

Json token_bytes(const std::string& piece) {
  Json bytes = Json::array();
  for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  return bytes;
}

Json chat_logprob_entry(const protocol::TokenOutput& t) {
  Json top = Json::array();
  for (const auto& alt : t.top) {
    top.push_back(Json{{"token", alt.piece}, {"logprob", alt.logprob}, {"bytes", token_bytes(alt.piece)}});
  }
  return Json{{"token", t.piece}, {"logprob", t.logprob}, {"bytes", token_bytes(t.piece)}, {"top_logprobs", std::move(top)}};
}

Json chat_logprobs(const std::vector<protocol::TokenOutput>& tokens) {
  Json content = Json::array();
  for (const auto& t : tokens) content.push_back(chat_logprob_entry(t));
  return Json{{"content", std::move(content)}, {"refusal", nullptr}};
}

// Legacy completions logprobs; `offset` is the byte offset of the first token in the choice text.
Json completion_logprobs(const std::vector<protocol::TokenOutput>& tokens, size_t offset) {
  Json out = {{"tokens", Json::array()}, {"token_logprobs", Json::array()}, {"top_logprobs", Json::array()},
              {"text_offset", Json::array()}};
  for (const auto& t : tokens) {
    out["tokens"].push_back(t.piece);
    out["token_logprobs"].push_back(t.logprob);
    Json top = Json::object();
    for (const auto& alt : t.top) top[alt.piece] = alt.logprob;
    out["top_logprobs"].push_back(std::move(top));
    out["text_offset"].push_back(offset);
    offset += t.piece.size();
  }
  return out;
}

Json llama_timings(const protocol::Timings& t) {
  return Json{{"prompt_n", t.prompt_n - t.cached_n},
              {"prompt_ms", t.prompt_ms},
              {"prompt_per_token_ms", t.prompt_n > t.cached_n ? t.prompt_ms / (t.prompt_n - t.cached_n) : 0.0},
              {"prompt_per_second", t.prompt_ms > 0 ? (t.prompt_n - t.cached_n) * 1000.0 / t.prompt_ms : 0.0},
              {"predicted_n", t.predicted_n},
              {"predicted_ms", t.predicted_ms},
              {"predicted_per_token_ms", t.predicted_n > 0 ? t.predicted_ms / t.predicted_n : 0.0},
              {"predicted_per_second", t.predicted_ms > 0 ? t.predicted_n * 1000.0 / t.predicted_ms : 0.0},
              {"cache_n", t.cached_n}};
}

// State and usage bookkeeping both OpenAI encoders share.
class OpenAiEncoderBase : public ResponseEncoder {
 public:
  OpenAiEncoderBase(const CompletionJob& job, ResponseMeta meta)
      : meta_(std::move(meta)),
        stream_(job.stream),
        include_usage_(job.include_usage),
        logprobs_(job.request.logprobs),
        n_per_prompt_(job.request.n_choices),
        choices_(job.request.prompts.size() * static_cast<size_t>(job.request.n_choices)) {}

  const char* content_type() const override { return stream_ ? "text/event-stream" : "application/json"; }
  std::string error_chunk(const Json& body) override { return sse_data(body); }

 protected:
  Json usage() const {
    int64_t prompt = 0, completion = 0, cached = 0, reasoning = 0;
    for (int32_t n : meta_.prompt_tokens) prompt += n;
    for (size_t i = 0; i < choices_.size(); ++i) {
      completion += choices_[i].timings.predicted_n;
      reasoning += choices_[i].timings.reasoning_n;
      if (i % static_cast<size_t>(n_per_prompt_) == 0) cached += choices_[i].timings.cached_n;
    }
    return Json{{"prompt_tokens", prompt},
                {"completion_tokens", completion},
                {"total_tokens", prompt + completion},
                {"prompt_tokens_details", {{"cached_tokens", cached}}},
                {"completion_tokens_details", {{"reasoning_tokens", reasoning}}}};
  }
  Json chunk_envelope(const char* object) const {
    Json c = {{"id", meta_.id}, {"object", object}, {"created", meta_.created}, {"model", meta_.model}};
    return c;
  }
  size_t prompt_of(int32_t choice) const { return static_cast<size_t>(choice / n_per_prompt_); }
  // The end of a stream: the usage-only chunk when the client asked for it, then [DONE].
  std::string stream_end(const char* chunk_object) const {
    std::string out;
    if (include_usage_) {
      Json c = chunk_envelope(chunk_object);
      c["choices"] = Json::array();
      c["usage"] = usage();
      out += sse_data(c);
    }
    return out + sse_done();
  }

  ResponseMeta meta_;
  bool stream_;
  bool include_usage_;
  bool logprobs_;
  int32_t n_per_prompt_;
  std::vector<ChoiceState> choices_;
};

class OpenAiChatEncoder final : public OpenAiEncoderBase {
 public:
  using OpenAiEncoderBase::OpenAiEncoderBase;

  std::string begin() override { return ""; }

  std::string on_event(int32_t choice, const protocol::Event& event) override {
    ChoiceState& c = choices_.at(static_cast<size_t>(choice));
    c.absorb(event);
    if (!stream_) return "";
    std::string out;
    if (!c.started) {
      c.started = true;
      out += chunk(choice, Json{{"role", "assistant"}, {"content", ""}}, nullptr, nullptr);
    }
    if (!event.reasoning.empty()) out += chunk(choice, Json{{"reasoning_content", event.reasoning}}, nullptr, nullptr);
    if (!event.text.empty() || (logprobs_ && !event.tokens.empty())) {
      out += chunk(choice, Json{{"content", event.text}}, logprobs_ ? chat_logprobs(event.tokens) : Json(), nullptr);
    }
    for (const auto& call : event.tool_calls) {
      // The whole call in one delta: index, id, type and name, then the arguments as one fragment.
      out += chunk(choice, Json{{"tool_calls", Json::array({tool_call_json(call, true)})}}, nullptr, nullptr);
    }
    if (event.kind == protocol::Event::Kind::kDone) {
      Json final_chunk = chunk_json(choice, Json::object(), nullptr, finish_reason(c));
      final_chunk["timings"] = llama_timings(c.timings);
      out += sse_data(final_chunk);
    }
    return out;
  }

  std::string end() override {
    if (stream_) return stream_end("chat.completion.chunk");
    Json body = chunk_envelope("chat.completion");
    body["choices"] = Json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
      const ChoiceState& c = choices_[i];
      Json message = {{"role", "assistant"}, {"content", c.text.empty() && !c.tool_calls.empty() ? Json() : Json(c.text)}};
      if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        message["tool_calls"] = Json::array();
        for (const auto& call : c.tool_calls) message["tool_calls"].push_back(tool_call_json(call, false));
      }
      body["choices"].push_back(Json{{"index", i},
                                     {"message", std::move(message)},
                                     {"logprobs", logprobs_ ? chat_logprobs(c.tokens) : Json()},
                                     {"finish_reason", finish_reason(c)}});
    }
    body["usage"] = usage();
    if (!choices_.empty()) body["timings"] = llama_timings(choices_[0].timings);
    return dump_json(body);
  }

 private:
  static const char* finish_reason(const ChoiceState& c) {
    return c.tool_calls.empty() ? finish_reason_stop_or_length(c.stop_reason) : "tool_calls";
  }
  static Json tool_call_json(const protocol::ToolCallOutput& call, bool with_index) {
    Json j = Json::object();
    if (with_index) j["index"] = call.index;
    j["id"] = call.id;
    j["type"] = "function";
    j["function"] = Json{{"name", call.name}, {"arguments", call.arguments}};
    return j;
  }
  Json chunk_json(int32_t choice, Json delta, Json logprobs, const char* finish) const {
    Json c = chunk_envelope("chat.completion.chunk");
    c["choices"] = Json::array({Json{{"index", choice},
                                     {"delta", std::move(delta)},
                                     {"logprobs", std::move(logprobs)},
                                     {"finish_reason", finish ? Json(finish) : Json()}}});
    if (include_usage_) c["usage"] = nullptr;
    return c;
  }
  std::string chunk(int32_t choice, Json delta, Json logprobs, const char* finish) const {
    return sse_data(chunk_json(choice, std::move(delta), std::move(logprobs), finish));
  }
};

class OpenAiCompletionEncoder final : public OpenAiEncoderBase {
 public:
  OpenAiCompletionEncoder(const CompletionJob& job, ResponseMeta meta)
      : OpenAiEncoderBase(job, std::move(meta)), echo_(job.echo), streamed_bytes_(choices_.size(), 0) {}

  std::string begin() override { return ""; }

  std::string on_event(int32_t choice, const protocol::Event& event) override {
    ChoiceState& c = choices_.at(static_cast<size_t>(choice));
    const std::string& prompt_text = echo_ ? meta_.prompt_texts.at(prompt_of(choice)) : empty_;
    c.absorb(event);
    if (!stream_) return "";
    std::string out;
    std::string text;
    if (!c.started) {
      c.started = true;
      text = prompt_text;
    }
    text += event.text;
    if (!text.empty() || (logprobs_ && !event.tokens.empty())) {
      Json lp = logprobs_ ? completion_logprobs(event.tokens, prompt_text.size() + streamed_bytes_[choice]) : Json();
      out += sse_data(chunk_json(choice, text, std::move(lp), nullptr));
    }
    streamed_bytes_[choice] += event.text.size();
    if (event.kind == protocol::Event::Kind::kDone) {
      Json final_chunk = chunk_json(choice, "", nullptr, finish_reason_stop_or_length(c.stop_reason));
      final_chunk["timings"] = llama_timings(c.timings);
      out += sse_data(final_chunk);
    }
    return out;
  }

  std::string end() override {
    if (stream_) return stream_end("text_completion");
    Json body = chunk_envelope("text_completion");
    body["choices"] = Json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
      const ChoiceState& c = choices_[i];
      const std::string& prompt_text = echo_ ? meta_.prompt_texts.at(prompt_of(static_cast<int32_t>(i))) : empty_;
      body["choices"].push_back(Json{{"text", prompt_text + c.text},
                                     {"index", i},
                                     {"logprobs", logprobs_ ? completion_logprobs(c.tokens, prompt_text.size()) : Json()},
                                     {"finish_reason", finish_reason_stop_or_length(c.stop_reason)}});
    }
    body["usage"] = usage();
    if (!choices_.empty()) body["timings"] = llama_timings(choices_[0].timings);
    return dump_json(body);
  }

 private:
  Json chunk_json(int32_t choice, const std::string& text, Json logprobs, const char* finish) const {
    Json c = chunk_envelope("text_completion");
    c["choices"] = Json::array({Json{{"text", text},
                                     {"index", choice},
                                     {"logprobs", std::move(logprobs)},
                                     {"finish_reason", finish ? Json(finish) : Json()}}});
    if (include_usage_) c["usage"] = nullptr;
    return c;
  }

  bool echo_;
  std::vector<size_t> streamed_bytes_;
  const std::string empty_;
};

}  // namespace

std::unique_ptr<ResponseEncoder> make_openai_chat_encoder(const CompletionJob& job, ResponseMeta meta) {
  return std::make_unique<OpenAiChatEncoder>(job, std::move(meta));
}

std::unique_ptr<ResponseEncoder> make_openai_completion_encoder(const CompletionJob& job, ResponseMeta meta) {
  return std::make_unique<OpenAiCompletionEncoder>(job, std::move(meta));
}

}  // namespace hearth::api
