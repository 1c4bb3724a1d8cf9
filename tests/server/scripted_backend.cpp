// The scripted test engine (see scripted_backend.h).
#include "scripted_backend.h"

#include <algorithm>
#include <cmath>

#include "gguf/gguf_file.h"
#include "sampler/grammar/compiled_grammar.h"
#include "engine/default_chat_template.h"
#include "engine/request_admission.h"

namespace hearth::test {

// The generation service side: forwards to the backend's scripted engine functions.
class ScriptedEngine final : public engine::GenerationService {
 public:
  explicit ScriptedEngine(ScriptedBackend* owner) : owner_(owner) {}
  std::shared_ptr<engine::ResultStream> submit(engine::GenerationRequest request) override {
    return owner_->submit_generation(std::move(request));
  }
  std::shared_ptr<engine::ResultStream> submit(engine::EmbeddingInput request) override {
    return owner_->submit_embedding(std::move(request));
  }
  protocol::EngineMetrics metrics() const override { return owner_->engine_metrics(); }
  std::vector<protocol::SlotInfo> slots() const override { return owner_->engine_slots(); }
  int32_t n_ctx_slot() const override { return owner_->n_ctx_slot_.load(); }

 private:
  ScriptedBackend* owner_;
};

namespace {

std::shared_ptr<engine::ResultStream> rejected(int64_t id, Error error) {
  auto stream = std::make_shared<engine::ResultStream>(id);
  stream->refuse(std::move(error));
  return stream;
}

}  // namespace

std::shared_ptr<ScriptedBackend> ScriptedBackend::create(const std::string& gguf_path, std::string reply,
                                                         std::chrono::milliseconds tick) {
  auto file = gguf::File::open(gguf_path);
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) return nullptr;
  std::shared_ptr<ScriptedBackend> b(new ScriptedBackend());
  b->tokenizer_ = std::move(tok).value();
  b->reply_ = std::move(reply);
  b->reply_tokens_ = b->tokenizer_.encode(b->reply_, false, false);
  b->tick_ = tick;
  protocol::ModelInfo c;
  c.name = "scripted";
  c.aliases = {"stories260k-llama-f32"};
  c.path = gguf_path;
  c.architecture = "llama";
  c.parameter_size = "292.80K";
  c.parameter_count = 292800;
  c.quantization = "F32";
  c.size_bytes = file->file_size();
  c.digest = std::string(64, 'a');
  c.modified_unix = 1700000000;
  c.chat_template = engine::kChatMlTemplate;
  c.chat_template_builtin = true;
  c.context_length = 2048;
  c.n_slots = 2;
  c.bos_token = "<s>";
  c.eos_token = "</s>";
  c.model_info = {{"general.architecture", "llama"}};
  auto local = engine::LocalBackend::create(b->tokenizer_, std::make_shared<ScriptedEngine>(b.get()), std::move(c));
  if (!local.ok()) return nullptr;
  b->local_ = std::move(local).value();
  return b;
}

void ScriptedBackend::set_overloaded(bool v) { overloaded_ = v; }
void ScriptedBackend::set_n_ctx_slot(int32_t n) { n_ctx_slot_ = n; }
void ScriptedBackend::set_failure_marker(std::string marker) { failure_marker_ = std::move(marker); }

ScriptedBackend::~ScriptedBackend() {
  stopping_ = true;
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

// Refuses what the serving engine refuses at submission, with the engine's own checks and
// texts (queue full, prompt fitting, grammar compilation); everything else runs on a thread.
std::shared_ptr<engine::ResultStream> ScriptedBackend::submit_generation(engine::GenerationRequest request) {
  const int64_t id = next_id_++;
  if (overloaded_) {
    return rejected(id, make_error(ErrorKind::kUnavailable, "the queue is full (1 requests waiting); try again later"));
  }
  auto admitted = engine::admit_generation(
      request, engine::AdmissionLimits{tokenizer_.n_vocab(), n_ctx_slot_.load(), 2});
  if (!admitted.ok()) return rejected(id, admitted.error());
  if (!request.grammar.empty()) {
    auto grammar = sampler::compile_gbnf(request.grammar);
    if (!grammar.ok()) return rejected(id, engine::grammar_error(request, grammar.error()));
  }
  auto stream = std::make_shared<engine::ResultStream>(id);
  auto record = std::make_shared<Record>();
  record->request = std::move(request);
  std::lock_guard lock(mu_);
  records_.push_back(record);
  threads_.emplace_back([this, stream, record] { run_completion(stream, record); });
  return stream;
}

void ScriptedBackend::run_completion(std::shared_ptr<engine::ResultStream> stream, std::shared_ptr<Record> record) {
  const engine::GenerationRequest& req = record->request;
  auto fail = [&](ErrorKind kind, const std::string& message) {
    engine::EngineEvent e;
    e.kind = engine::EngineEvent::Kind::kError;
    e.error = make_error(kind, message);
    stream->push(std::move(e));
    record->finished = true;
  };
  if (!failure_marker_.empty() && tokenizer_.decode(req.prompt, true).find(failure_marker_) != std::string::npos) {
    return fail(ErrorKind::kInternal, "scripted engine failure");
  }
  prompt_total_ += req.prompt.size();
  const int32_t limit = req.n_predict < 0 ? static_cast<int32_t>(reply_tokens_.size()) : req.n_predict;
  size_t hold = 0;
  for (const auto& s : req.stop) hold = std::max(hold, s.size() - 1);
  std::string text;     // everything generated
  size_t emitted = 0;   // bytes of `text` already sent
  engine::EngineEvent done;
  done.kind = engine::EngineEvent::Kind::kDone;
  done.stop_reason = req.n_predict < 0 ? engine::StopReason::kEog : engine::StopReason::kLength;
  int32_t i = 0;
  for (; i < limit; ++i) {
    if (stream->cancelled() || stopping_) {
      done.stop_reason = engine::StopReason::kCancelled;
      record->cancelled = true;
      break;
    }
    std::this_thread::sleep_for(tick_);
    engine::TokenOutput t;
    t.token = reply_tokens_[static_cast<size_t>(i) % reply_tokens_.size()];
    t.piece = tokenizer_.token_to_piece(t.token, false);
    t.logprob = -0.125f * static_cast<float>(i % 4 + 1);
    for (int32_t k = 0; k < req.top_logprobs; ++k) {
      t.top.push_back({t.token + k, tokenizer_.token_to_piece(t.token + k, false), t.logprob - static_cast<float>(k)});
    }
    text += t.piece;
    ++record->generated;
    ++generated_total_;
    engine::EngineEvent e;
    e.kind = engine::EngineEvent::Kind::kText;
    e.tokens.push_back(std::move(t));  // the engine always reports sampled tokens
    size_t stop_at = std::string::npos;
    for (const auto& s : req.stop) {
      size_t p = text.find(s, emitted > hold ? emitted - hold : 0);
      if (p != std::string::npos && p < stop_at) {
        stop_at = p;
        done.stop_word = s;
      }
    }
    if (stop_at != std::string::npos) {
      if (stop_at > emitted) e.text = text.substr(emitted, stop_at - emitted);
      emitted = stop_at;
      stream->push(std::move(e));
      done.stop_reason = engine::StopReason::kStopString;
      ++i;
      break;
    }
    size_t safe = text.size() > hold ? text.size() - hold : 0;
    if (safe > emitted) {
      e.text = text.substr(emitted, safe - emitted);
      emitted = safe;
    }
    stream->push(std::move(e));
  }
  if (done.stop_reason != engine::StopReason::kStopString && done.stop_reason != engine::StopReason::kCancelled) {
    done.text = text.substr(emitted);  // released hold-back
  }
  done.timings.prompt_n = static_cast<int32_t>(req.prompt.size());
  done.timings.prompt_ms = 1.0;
  done.timings.predicted_n = record->generated;
  done.timings.predicted_ms = static_cast<double>(record->generated * tick_.count());
  record->finished = true;
  stream->push(std::move(done));
}

std::shared_ptr<engine::ResultStream> ScriptedBackend::submit_embedding(engine::EmbeddingInput request) {
  auto stream = std::make_shared<engine::ResultStream>(next_id_++);
  if (auto st = engine::check_token_ids(request.tokens, tokenizer_.n_vocab()); !st.ok()) {
    return rejected(next_id_++, st.error());
  }
  engine::EngineEvent e;
  if (request.tokens.empty()) {
    e.kind = engine::EngineEvent::Kind::kError;
    e.error = make_error(ErrorKind::kInvalidArgument, "empty input");
  } else {
    e.kind = engine::EngineEvent::Kind::kEmbedding;
    e.embedding.assign(8, 0.0f);
    for (size_t k = 0; k < 8; ++k) {
      for (int32_t id : request.tokens) e.embedding[k] += static_cast<float>((id * static_cast<int32_t>(k + 1)) % 97) / 97.0f + 0.01f;
    }
    if (request.normalize) {
      double norm = 0;
      for (float x : e.embedding) norm += x * x;
      for (float& x : e.embedding) x = static_cast<float>(x / std::sqrt(norm));
    }
    e.n_tokens = static_cast<int32_t>(request.tokens.size());
  }
  stream->push(std::move(e));
  return stream;
}

protocol::EngineMetrics ScriptedBackend::engine_metrics() const {
  protocol::EngineMetrics m;
  m.prompt_tokens_total = prompt_total_;
  m.generated_tokens_total = generated_total_;
  m.kv_blocks_total = 64;
  m.ttft.bounds = {0.001, 0.01, 0.1, 1.0};
  m.inter_token.bounds = {0.001, 0.01, 0.1};
  std::lock_guard lock(mu_);
  for (const auto& r : records_) {
    if (r->finished) {
      ++m.requests_total;
      m.ttft.observe(0.002);
    } else {
      ++m.requests_processing;
    }
    if (r->cancelled) ++m.requests_cancelled_total;
  }
  return m;
}

std::vector<protocol::SlotInfo> ScriptedBackend::engine_slots() const {
  std::vector<protocol::SlotInfo> out(2);
  for (int32_t i = 0; i < 2; ++i) {
    out[static_cast<size_t>(i)].id = i;
    out[static_cast<size_t>(i)].n_ctx = n_ctx_slot_;
  }
  return out;
}

std::vector<std::shared_ptr<ScriptedBackend::Record>> ScriptedBackend::records() const {
  std::lock_guard lock(mu_);
  return records_;
}

bool ScriptedBackend::wait_for_records(size_t n, std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(mu_);
      if (records_.size() >= n) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

}  // namespace hearth::test
