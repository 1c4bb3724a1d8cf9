// JSON forms of the protocol types (see codec.h). Each type has a to_json and a read_ function;
// the reader checks every field's type and range and keeps the first problem, so a decoder
// fed arbitrary bytes returns an error instead of throwing or aborting. A missing field keeps
// its default (an older sender's message still decodes); an unknown field is ignored.
#include "protocol/codec.h"

#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "util/json_nesting.h"

namespace hearth::protocol {
namespace {

using Json = nlohmann::ordered_json;

Json float_json(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

constexpr EnumName<PromptSource::Kind> kPromptKinds[] = {
    {PromptSource::Kind::kChat, "chat"},
    {PromptSource::Kind::kText, "text"},
    {PromptSource::Kind::kTokens, "tokens"},
    {PromptSource::Kind::kGoTemplate, "go_template"}};
constexpr EnumName<OutputConstraint::Kind> kConstraintKinds[] = {{OutputConstraint::Kind::kNone, "none"},
                                                                 {OutputConstraint::Kind::kGbnf, "gbnf"},
                                                                 {OutputConstraint::Kind::kJsonObject, "json_object"},
                                                                 {OutputConstraint::Kind::kJsonSchema, "json_schema"}};
constexpr EnumName<Event::Kind> kEventKinds[] = {{Event::Kind::kText, "text"},
                                                 {Event::Kind::kDone, "done"},
                                                 {Event::Kind::kError, "error"},
                                                 {Event::Kind::kEmbedding, "embedding"}};
constexpr EnumName<ErrorKind> kErrorKinds[] = {
    {ErrorKind::kInvalidArgument, "invalid_argument"}, {ErrorKind::kNotFound, "not_found"},
    {ErrorKind::kIo, "io"},                            {ErrorKind::kCorrupt, "corrupt"},
    {ErrorKind::kUnsupported, "unsupported"},          {ErrorKind::kOutOfRange, "out_of_range"},
    {ErrorKind::kTypeMismatch, "type_mismatch"},       {ErrorKind::kUnavailable, "unavailable"},
    {ErrorKind::kInternal, "internal"}};

template <typename E, size_t N>
const char* enum_name(const EnumName<E> (&table)[N], E value) {
  for (const auto& e : table) {
    if (e.value == value) return e.name;
  }
  return table[0].name;
}

// Reads the fields of one JSON object into native values, remembering the first problem.
class Reader {
 public:
  Reader(const Json& value, std::string path, std::optional<Error>& error) : path_(std::move(path)), error_(error) {
    if (!value.is_object()) {
      fail("", "an object");
    } else {
      obj_ = &value;
    }
  }

  const Json* find(const char* key) const {
    if (obj_ == nullptr || error_) return nullptr;
    auto it = obj_->find(key);
    return it == obj_->end() || it->is_null() ? nullptr : &*it;
  }

  template <typename T>
  void integer(const char* key, T& out, T min = std::numeric_limits<T>::min(), T max = std::numeric_limits<T>::max()) {
    const Json* v = find(key);
    if (!v) return;
    if (v->is_number_unsigned()) {
      const uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(max)) return fail(key, "a smaller integer");
      if (min > 0 && u < static_cast<uint64_t>(min)) return fail(key, "a larger integer");
      out = static_cast<T>(u);
      return;
    }
    if (!v->is_number_integer()) return fail(key, "an integer");
    const int64_t i = v->get<int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0) return fail(key, "a non-negative integer");
      if (static_cast<uint64_t>(i) > static_cast<uint64_t>(max) || static_cast<uint64_t>(i) < static_cast<uint64_t>(min)) {
        return fail(key, "an integer in range");
      }
    } else {
      if (i < static_cast<int64_t>(min) || i > static_cast<int64_t>(max)) return fail(key, "an integer in range");
    }
    out = static_cast<T>(i);
  }

  template <typename F>
  void real(const char* key, F& out) {
    const Json* v = find(key);
    if (!v) return;
    if (auto x = to_float(*v)) {
      out = narrow<F>(*x);
    } else {
      fail(key, "a number");
    }
  }

  void boolean(const char* key, bool& out) {
    const Json* v = find(key);
    if (!v) return;
    if (!v->is_boolean()) return fail(key, "a boolean");
    out = v->get<bool>();
  }

  void string(const char* key, std::string& out) {
    const Json* v = find(key);
    if (!v) return;
    if (!v->is_string()) return fail(key, "a string");
    out = v->get<std::string>();
  }

  void optional_string(const char* key, std::optional<std::string>& out) {
    if (!find(key)) return;
    out.emplace();
    string(key, *out);
  }

  void optional_integer(const char* key, std::optional<int64_t>& out) {
    if (!find(key)) return;
    out.emplace();
    integer<int64_t>(key, *out);
  }

  void strings(const char* key, std::vector<std::string>& out) {
    const Json* v = find(key);
    if (!v) return;
    if (!v->is_array()) return fail(key, "an array of strings");
    out.clear();
    for (const auto& s : *v) {
      if (!s.is_string()) return fail(key, "an array of strings");
      out.push_back(s.get<std::string>());
    }
  }

  void ids(const char* key, std::vector<int32_t>& out) {
    const Json* v = find(key);
    if (!v) return;
    if (!v->is_array()) return fail(key, "an array of token ids");
    out.clear();
    out.reserve(v->size());
    for (const auto& t : *v) {
      if (!t.is_number_integer() || t.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
          t.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return fail(key, "an array of token ids");
      }
      out.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
  }

  void any(const char* key, Json& out) {
    if (const Json* v = find(key)) out = *v;
  }

  template <typename E, size_t N>
  void enumeration(const char* key, const EnumName<E> (&table)[N], E& out) {
    const Json* v = find(key);
    if (!v) return;
    if (v->is_string()) {
      for (const auto& e : table) {
        if (v->get<std::string>() == e.name) {
          out = e.value;
          return;
        }
      }
    }
    fail(key, "a known name");
  }

  // Calls read(element_reader_path, element) for each element of the array at `key`.
  template <typename Fn>
  void each(const char* key, Fn&& read) {
    const Json* v = find(key);
    if (!v) return;
    if (!v->is_array()) return fail(key, "an array");
    for (size_t i = 0; i < v->size() && !error_; ++i) read(path_ + key + "[" + std::to_string(i) + "].", (*v)[i]);
  }

  std::string path(const char* key) const { return path_ + key + "."; }

  void fail(const std::string& key, const char* expected) {
    if (error_) return;
    const std::string where = key.empty() ? (path_.empty() ? std::string("the message") : path_.substr(0, path_.size() - 1))
                                          : path_ + key;
    error_ = make_error(ErrorKind::kCorrupt, "protocol: '" + where + "' must be " + expected);
  }

  // A double beyond a float's range becomes an infinity (a plain cast would be undefined).
  template <typename F>
  static F narrow(double x) {
    if constexpr (std::is_same_v<F, float>) {
      if (x > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
      if (x < -std::numeric_limits<float>::max()) return -std::numeric_limits<float>::infinity();
    }
    return static_cast<F>(x);
  }

  static std::optional<double> to_float(const Json& v) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    return std::nullopt;
  }

 private:
  const Json* obj_ = nullptr;
  std::string path_;
  std::optional<Error>& error_;
};

// --- sampling options --------------------------------------------------------------------

Json to_json(const SamplingOptions& p) {
  Json bias = Json::array();
  for (const auto& [id, b] : p.logit_bias) bias.push_back(Json::array({id, float_json(b)}));
  Json order = Json::array();
  for (SamplerKind k : p.order) order.push_back(std::string(sampler_kind_name(k)));
  return Json{{"seed", p.seed},
              {"temperature", float_json(p.temperature)},
              {"dynatemp_range", float_json(p.dynatemp_range)},
              {"dynatemp_exponent", float_json(p.dynatemp_exponent)},
              {"top_k", p.top_k},
              {"top_p", float_json(p.top_p)},
              {"min_p", float_json(p.min_p)},
              {"typical_p", float_json(p.typical_p)},
              {"top_n_sigma", float_json(p.top_n_sigma)},
              {"xtc_probability", float_json(p.xtc_probability)},
              {"xtc_threshold", float_json(p.xtc_threshold)},
              {"repeat_last_n", p.repeat_last_n},
              {"repeat_penalty", float_json(p.repeat_penalty)},
              {"presence_penalty", float_json(p.presence_penalty)},
              {"frequency_penalty", float_json(p.frequency_penalty)},
              {"dry_multiplier", float_json(p.dry_multiplier)},
              {"dry_base", float_json(p.dry_base)},
              {"dry_allowed_length", p.dry_allowed_length},
              {"dry_last_n", p.dry_last_n},
              {"dry_breakers", p.dry_breakers},
              {"mirostat", p.mirostat},
              {"mirostat_tau", float_json(p.mirostat_tau)},
              {"mirostat_eta", float_json(p.mirostat_eta)},
              {"min_keep", p.min_keep},
              {"n_probs", p.n_probs},
              {"logit_bias", std::move(bias)},
              {"order", std::move(order)}};
}

void read_sampling(Reader& r, SamplingOptions& p) {
  r.integer<uint64_t>("seed", p.seed);
  r.real("temperature", p.temperature);
  r.real("dynatemp_range", p.dynatemp_range);
  r.real("dynatemp_exponent", p.dynatemp_exponent);
  r.integer<int32_t>("top_k", p.top_k);
  r.real("top_p", p.top_p);
  r.real("min_p", p.min_p);
  r.real("typical_p", p.typical_p);
  r.real("top_n_sigma", p.top_n_sigma);
  r.real("xtc_probability", p.xtc_probability);
  r.real("xtc_threshold", p.xtc_threshold);
  r.integer<int32_t>("repeat_last_n", p.repeat_last_n);
  r.real("repeat_penalty", p.repeat_penalty);
  r.real("presence_penalty", p.presence_penalty);
  r.real("frequency_penalty", p.frequency_penalty);
  r.real("dry_multiplier", p.dry_multiplier);
  r.real("dry_base", p.dry_base);
  r.integer<int32_t>("dry_allowed_length", p.dry_allowed_length);
  r.integer<int32_t>("dry_last_n", p.dry_last_n);
  r.ids("dry_breakers", p.dry_breakers);
  r.integer<int32_t>("mirostat", p.mirostat);
  r.real("mirostat_tau", p.mirostat_tau);
  r.real("mirostat_eta", p.mirostat_eta);
  r.integer<size_t>("min_keep", p.min_keep);
  r.integer<int32_t>("n_probs", p.n_probs);
  if (const Json* bias = r.find("logit_bias")) {
    if (!bias->is_array()) return r.fail("logit_bias", "an array of [id, bias] pairs");
    p.logit_bias.clear();
    for (const auto& pair : *bias) {
      std::optional<double> b;
      if (pair.is_array() && pair.size() == 2) b = Reader::to_float(pair[1]);
      if (!b || !pair[0].is_number_integer() || pair[0].get<int64_t>() < 0 ||
          pair[0].get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return r.fail("logit_bias", "an array of [id, bias] pairs");
      }
      p.logit_bias.emplace_back(static_cast<int32_t>(pair[0].get<int64_t>()), Reader::narrow<float>(*b));
    }
  }
  std::vector<std::string> order;
  if (r.find("order")) {
    r.strings("order", order);
    p.order.clear();
    for (const auto& name : order) {
      auto kind = sampler_kind_from_name(name);
      if (!kind.ok()) return r.fail("order", "an array of sampler names");
      p.order.push_back(*kind);
    }
  }
}

// --- requests ----------------------------------------------------------------------------

Json to_json(const PromptSource& s) {
  Json j{{"kind", enum_name(kPromptKinds, s.kind)}};
  // kGoTemplate renders over chat["messages"] too (ollama /api/chat with a stored TEMPLATE).
  if (s.kind == PromptSource::Kind::kChat || (!s.chat.is_null() && !s.chat.empty())) j["chat"] = s.chat;
  if (!s.text.empty()) j["text"] = s.text;
  if (!s.tokens.empty()) j["tokens"] = s.tokens;
  if (!s.template_fields.empty()) j["template_fields"] = s.template_fields;
  if (s.fill_in_middle) {
    j["fill_in_middle"] = true;
    j["suffix"] = s.suffix;
  }
  if (!s.prefix_tokens.empty()) j["prefix_tokens"] = s.prefix_tokens;
  j["add_special"] = s.add_special;
  if (s.untemplated_text) j["untemplated_text"] = *s.untemplated_text;
  return j;
}

void read_prompt(Reader& r, PromptSource& s) {
  r.enumeration("kind", kPromptKinds, s.kind);
  r.any("chat", s.chat);
  r.string("text", s.text);
  r.ids("tokens", s.tokens);
  if (const Json* fields = r.find("template_fields")) {
    if (!fields->is_object()) return r.fail("template_fields", "an object of strings");
    for (auto it = fields->begin(); it != fields->end(); ++it) {
      if (!it->is_string()) return r.fail("template_fields", "an object of strings");
      s.template_fields[it.key()] = it->get<std::string>();
    }
  }
  r.boolean("fill_in_middle", s.fill_in_middle);
  r.string("suffix", s.suffix);
  r.ids("prefix_tokens", s.prefix_tokens);
  r.boolean("add_special", s.add_special);
  r.optional_string("untemplated_text", s.untemplated_text);
}

Json to_json(const OutputConstraint& c) {
  Json j{{"kind", enum_name(kConstraintKinds, c.kind)}};
  if (c.kind == OutputConstraint::Kind::kNone) return j;
  j["field"] = c.field;
  if (c.kind == OutputConstraint::Kind::kGbnf) j["text"] = c.text;
  if (c.kind == OutputConstraint::Kind::kJsonSchema) j["schema"] = c.schema;
  return j;
}

void read_constraint(Reader& r, OutputConstraint& c) {
  r.enumeration("kind", kConstraintKinds, c.kind);
  r.string("field", c.field);
  r.string("text", c.text);
  r.any("schema", c.schema);
}

Json to_json(const CompletionRequest& q) {
  Json prompts = Json::array();
  for (const auto& p : q.prompts) prompts.push_back(to_json(p));
  Json j{{"model", q.model},
         {"prompts", std::move(prompts)},
         {"n_choices", q.n_choices},
         {"sampling", to_json(q.sampling)},
         {"dry_sequence_breakers", q.dry_sequence_breakers},
         {"n_predict", q.n_predict},
         {"stop", q.stop},
         {"ignore_eos", q.ignore_eos},
         {"constraint", to_json(q.constraint)},
         {"logprobs", q.logprobs},
         {"top_logprobs", q.top_logprobs},
         {"truncate", q.truncate},
         {"n_keep", q.n_keep},
         {"cache_prompt", q.cache_prompt},
         {"slot", q.slot},
         {"num_ctx", q.num_ctx},
         {"tag", q.tag}};
  if (q.keep_alive_ms) j["keep_alive_ms"] = *q.keep_alive_ms;
  return j;
}

void read_completion(Reader& r, CompletionRequest& q, std::optional<Error>& error) {
  r.string("model", q.model);
  r.each("prompts", [&](std::string path, const Json& v) {
    Reader pr(v, std::move(path), error);
    q.prompts.emplace_back();
    read_prompt(pr, q.prompts.back());
  });
  r.integer<int32_t>("n_choices", q.n_choices);
  if (const Json* s = r.find("sampling")) {
    Reader sr(*s, r.path("sampling"), error);
    read_sampling(sr, q.sampling);
  }
  r.strings("dry_sequence_breakers", q.dry_sequence_breakers);
  r.integer<int32_t>("n_predict", q.n_predict);
  r.strings("stop", q.stop);
  r.boolean("ignore_eos", q.ignore_eos);
  if (const Json* c = r.find("constraint")) {
    Reader cr(*c, r.path("constraint"), error);
    read_constraint(cr, q.constraint);
  }
  r.boolean("logprobs", q.logprobs);
  r.integer<int32_t>("top_logprobs", q.top_logprobs);
  r.boolean("truncate", q.truncate);
  r.integer<int32_t>("n_keep", q.n_keep);
  r.boolean("cache_prompt", q.cache_prompt);
  r.integer<int32_t>("slot", q.slot);
  r.integer<int32_t>("num_ctx", q.num_ctx);
  r.optional_integer("keep_alive_ms", q.keep_alive_ms);
  r.string("tag", q.tag);
}

// --- events ------------------------------------------------------------------------------

// A token's piece may be part of a UTF-8 character, which a JSON string cannot hold: it
// travels as an array of byte values.
Json bytes_json(const std::string& s) {
  Json a = Json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

void read_bytes(Reader& r, const char* key, std::string& out) {
  const Json* v = r.find(key);
  if (!v) return;
  if (!v->is_array()) return r.fail(key, "an array of bytes");
  out.clear();
  for (const auto& b : *v) {
    if (!b.is_number_integer() || b.get<int64_t>() < 0 || b.get<int64_t>() > 255) return r.fail(key, "an array of bytes");
    out.push_back(static_cast<char>(b.get<int64_t>()));
  }
}

Json token_json(int32_t id, const std::string& piece, float logprob) {
  return Json{{"id", id}, {"piece", bytes_json(piece)}, {"logprob", float_json(logprob)}};
}

Json to_json(const Event& e) {
  Json j{{"kind", enum_name(kEventKinds, e.kind)}};
  switch (e.kind) {
    case Event::Kind::kText:
    case Event::Kind::kDone: {
      j["text"] = bytes_json(e.text);
      Json tokens = Json::array();
      for (const auto& t : e.tokens) {
        Json tj = token_json(t.token, t.piece, t.logprob);
        if (!t.top.empty()) {
          Json top = Json::array();
          for (const auto& a : t.top) top.push_back(token_json(a.token, a.piece, a.logprob));
          tj["top"] = std::move(top);
        }
        tokens.push_back(std::move(tj));
      }
      j["tokens"] = std::move(tokens);
      if (e.kind == Event::Kind::kDone) {
        const Timings& t = e.timings;
        j["stop_reason"] = stop_reason_name(e.stop_reason);
        j["stop_word"] = e.stop_word;
        j["timings"] = Json{{"prompt_n", t.prompt_n},         {"cached_n", t.cached_n},
                            {"truncated_n", t.truncated_n},   {"queue_ms", float_json(t.queue_ms)},
                            {"prompt_ms", float_json(t.prompt_ms)}, {"predicted_n", t.predicted_n},
                            {"predicted_ms", float_json(t.predicted_ms)}, {"ttft_ms", float_json(t.ttft_ms)},
                            {"reasoning_n", t.reasoning_n}};
        j["slot"] = e.slot;
        if (e.eog_token >= 0) j["eog_token"] = e.eog_token;
        j["seed"] = e.seed;
      }
      break;
    }
    case Event::Kind::kError:
      j["error"] = Json{{"kind", enum_name(kErrorKinds, e.error.kind)}, {"message", e.error.message}};
      break;
    case Event::Kind::kEmbedding: {
      Json v = Json::array();
      for (float x : e.embedding) v.push_back(float_json(x));
      j["embedding"] = std::move(v);
      j["n_tokens"] = e.n_tokens;
      break;
    }
  }
  return j;
}

void read_token(Reader& r, TokenLogprob& t) {
  r.integer<int32_t>("id", t.token);
  read_bytes(r, "piece", t.piece);
  r.real("logprob", t.logprob);
}

void read_event(Reader& r, Event& e, std::optional<Error>& error) {
  r.enumeration("kind", kEventKinds, e.kind);
  read_bytes(r, "text", e.text);
  r.each("tokens", [&](std::string path, const Json& v) {
    Reader tr(v, path, error);
    TokenLogprob head;
    read_token(tr, head);
    TokenOutput out{head.token, std::move(head.piece), head.logprob, {}};
    tr.each("top", [&](std::string top_path, const Json& a) {
      Reader ar(a, std::move(top_path), error);
      out.top.emplace_back();
      read_token(ar, out.top.back());
    });
    e.tokens.push_back(std::move(out));
  });
  if (const Json* reason = r.find("stop_reason")) {
    if (!reason->is_string() || !stop_reason_from_name(reason->get<std::string>(), e.stop_reason)) {
      r.fail("stop_reason", "a stop reason");
    }
  }
  r.string("stop_word", e.stop_word);
  if (const Json* t = r.find("timings")) {
    Reader tr(*t, r.path("timings"), error);
    tr.integer<int32_t>("prompt_n", e.timings.prompt_n);
    tr.integer<int32_t>("cached_n", e.timings.cached_n);
    tr.integer<int32_t>("truncated_n", e.timings.truncated_n);
    tr.real("queue_ms", e.timings.queue_ms);
    tr.real("prompt_ms", e.timings.prompt_ms);
    tr.integer<int32_t>("predicted_n", e.timings.predicted_n);
    tr.real("predicted_ms", e.timings.predicted_ms);
    tr.real("ttft_ms", e.timings.ttft_ms);
    tr.integer<int32_t>("reasoning_n", e.timings.reasoning_n, 0);
  }
  r.integer<int32_t>("slot", e.slot);
  r.integer<int32_t>("eog_token", e.eog_token, 0);
  r.integer<uint64_t>("seed", e.seed);
  if (const Json* err = r.find("error")) {
    Reader er(*err, r.path("error"), error);
    er.enumeration("kind", kErrorKinds, e.error.kind);
    er.string("message", e.error.message);
  }
  if (const Json* v = r.find("embedding")) {
    if (!v->is_array()) return r.fail("embedding", "an array of numbers");
    e.embedding.reserve(v->size());
    for (const auto& x : *v) {
      auto f = Reader::to_float(x);
      if (!f) return r.fail("embedding", "an array of numbers");
      e.embedding.push_back(Reader::narrow<float>(*f));
    }
  }
  r.integer<int32_t>("n_tokens", e.n_tokens);
}

// --- model info --------------------------------------------------------------------------

Json to_json(const ModelInfo& m) {
  return Json{{"name", m.name},
              {"aliases", m.aliases},
              {"path", m.path},
              {"architecture", m.architecture},
              {"parameter_size", m.parameter_size},
              {"parameter_count", m.parameter_count},
              {"quantization", m.quantization},
              {"size_bytes", m.size_bytes},
              {"size_vram", m.size_vram},
              {"digest", m.digest},
              {"modified_unix", m.modified_unix},
              {"chat_template", m.chat_template},
              {"chat_template_builtin", m.chat_template_builtin},
              {"context_length", m.context_length},
              {"n_ctx_slot", m.n_ctx_slot},
              {"n_slots", m.n_slots},
              {"embedding_only", m.embedding_only},
              {"supports_tools", m.supports_tools},
              {"model_info", m.model_info},
              {"bos_token", m.bos_token},
              {"eos_token", m.eos_token},
              {"fim", Json::array({m.fim_prefix, m.fim_suffix, m.fim_middle})}};
}

void read_model_info(Reader& r, ModelInfo& m) {
  r.string("name", m.name);
  r.strings("aliases", m.aliases);
  r.string("path", m.path);
  r.string("architecture", m.architecture);
  r.string("parameter_size", m.parameter_size);
  r.integer<uint64_t>("parameter_count", m.parameter_count);
  r.string("quantization", m.quantization);
  r.integer<uint64_t>("size_bytes", m.size_bytes);
  r.integer<uint64_t>("size_vram", m.size_vram);
  r.string("digest", m.digest);
  r.integer<int64_t>("modified_unix", m.modified_unix);
  r.string("chat_template", m.chat_template);
  r.boolean("chat_template_builtin", m.chat_template_builtin);
  r.integer<int32_t>("context_length", m.context_length);
  r.integer<int32_t>("n_ctx_slot", m.n_ctx_slot);
  r.integer<int32_t>("n_slots", m.n_slots);
  r.boolean("embedding_only", m.embedding_only);
  r.boolean("supports_tools", m.supports_tools);
  if (const Json* info = r.find("model_info")) {
    if (!info->is_object()) return r.fail("model_info", "an object");
    m.model_info = *info;
  }
  r.string("bos_token", m.bos_token);
  r.string("eos_token", m.eos_token);
  std::vector<int32_t> fim;
  r.ids("fim", fim);
  if (!fim.empty()) {
    if (fim.size() != 3) return r.fail("fim", "three token ids");
    m.fim_prefix = fim[0];
    m.fim_suffix = fim[1];
    m.fim_middle = fim[2];
  }
}

template <typename T, typename ReadFn>
Result<T> decode(std::string_view bytes, ReadFn&& read) {
  if (!json_nesting_within(bytes)) {
    return make_error(ErrorKind::kCorrupt, "protocol: the message nests deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  }
  Json j = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error(ErrorKind::kCorrupt, "protocol: the message is not JSON");
  std::optional<Error> error;
  T out;
  {
    Reader r(j, "", error);
    read(r, out, error);
  }
  if (error) return *error;
  return out;
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

std::string encode(const CompletionRequest& request) { return dump(to_json(request)); }
std::string encode(const EmbeddingRequest& request) {
  return dump(Json{{"model", request.model},
                   {"texts", request.texts},
                   {"token_inputs", request.token_inputs},
                   {"normalize", request.normalize},
                   {"truncate", request.truncate}});
}
std::string encode(const Event& event) { return dump(to_json(event)); }
std::string encode(const ModelInfo& info) { return dump(to_json(info)); }

Result<CompletionRequest> decode_completion_request(std::string_view bytes) {
  return decode<CompletionRequest>(bytes, [](Reader& r, CompletionRequest& q, std::optional<Error>& e) { read_completion(r, q, e); });
}

Result<EmbeddingRequest> decode_embedding_request(std::string_view bytes) {
  return decode<EmbeddingRequest>(bytes, [](Reader& r, EmbeddingRequest& q, std::optional<Error>& error) {
    r.string("model", q.model);
    r.strings("texts", q.texts);
    r.each("token_inputs", [&](std::string path, const Json& v) {
      q.token_inputs.emplace_back();
      Json holder{{"ids", v}};
      Reader ir(holder, std::move(path), error);
      ir.ids("ids", q.token_inputs.back());
    });
    r.boolean("normalize", q.normalize);
    r.boolean("truncate", q.truncate);
  });
}

Result<Event> decode_event(std::string_view bytes) {
  return decode<Event>(bytes, [](Reader& r, Event& e, std::optional<Error>& error) { read_event(r, e, error); });
}

Result<ModelInfo> decode_model_info(std::string_view bytes) {
  return decode<ModelInfo>(bytes, [](Reader& r, ModelInfo& m, std::optional<Error>&) { read_model_info(r, m); });
}

}  // namespace hearth::protocol
