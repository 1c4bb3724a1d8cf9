// Loading and running a model without HTTP (see inference_context.h).
#include "engine/inference_context.h"
#include "util/log.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include "kernels/cpu_features.h"
#include "engine/tool_call_grammar.h"
#include "util/settings.h"

namespace hearth::engine {
namespace {

// HEARTH_WEIGHT_LAYOUT=gguf keeps every matrix in the file mapping (processes that load the
// same model then share its pages in the page cache); interleaved (or unset) leaves the choice
// to the caller's options.
Result<bool> interleave_from_environment(bool requested) {
  const std::optional<std::string> env = env_setting("HEARTH_WEIGHT_LAYOUT");
  if (!env || env->empty()) return requested;
  const std::string& v = *env;
  if (v == "gguf") return false;
  if (v == "interleaved") return requested;
  return make_error(ErrorKind::kInvalidArgument,
                    "HEARTH_WEIGHT_LAYOUT must be 'interleaved' or 'gguf', not '" + v + "'");
}

// Whether offload_to_gpu will find a GPU to take layers: the checks it starts with.
bool gpu_chosen() {
  const char* env = std::getenv("HEARTH_GPU");
  if (env != nullptr && device::gpu_disabled(env)) return false;
  auto devices = device::list_devices();
  if (!devices.ok()) return false;
  auto pick = device::choose_device(*devices, env != nullptr ? env : "");
  return pick.ok() && pick->has_value();
}
}  // namespace

Result<std::unique_ptr<InferenceContext>> InferenceContext::load(const std::string& path, const ContextOptions& o) {
  auto start = std::chrono::steady_clock::now();
  HEARTH_TRY(kernels::init_cpu_variant());
  std::unique_ptr<InferenceContext> c(new InferenceContext());
  c->pool_ = std::make_unique<ThreadPool>(o.n_threads);
  HEARTH_ASSIGN(const bool interleave, interleave_from_environment(o.interleave_weights));
  model::LoadOptions lo;
  lo.interleave = false;
  HEARTH_ASSIGN(c->model_, model::Model::load(path, lo));
  // The tokenizer (tens of ms for a 128K vocabulary) is built on a thread of its own while the
  // pool interleaves the matrices: it reads only the file's metadata.
  Result<Tokenizer> tok = make_error(ErrorKind::kInternal, "tokenizer not built");
  std::thread tokenizer_thread([&] { tok = Tokenizer::from_gguf(c->model_->file()); });
  // The weights' pass is all but the last step of the load (KV and buffers are reserved, not
  // touched): it fills the progress up to 0.99, and a ready context reports 1.
  if (o.on_progress) o.on_progress(0.0);
  auto on_bytes = [&o](size_t done, size_t total) {
    if (o.on_progress && total > 0) o.on_progress(0.99 * static_cast<double>(done) / static_cast<double>(total));
  };
  const Status interleaved = interleave ? c->model_->interleave_matrices(*c->pool_, on_bytes) : ok_status();
  tokenizer_thread.join();
  if (!interleaved.ok()) return interleaved.error().with_context(path);
  if (!tok.ok()) return tok.error().with_context(path);
  c->tokenizer_ = std::move(tok).value();
  if (c->tokenizer_.n_vocab() > c->model_->hparams().n_vocab) {
    return make_error(ErrorKind::kCorrupt, path + ": the vocabulary has more tokens than the embedding matrix has rows");
  }
  const auto& h = c->model_->hparams();
  c->n_ctx_ = o.n_ctx > 0 ? o.n_ctx : std::min(h.n_ctx_train, 4096);
  if (o.block_tokens <= 0) return make_error(ErrorKind::kInvalidArgument, "block_tokens must be positive");
  const int32_t n_blocks = (c->n_ctx_ + o.block_tokens - 1) / o.block_tokens;
  kv::KvCacheOptions kv_options;
  kv_options.pool = o.kv_pool;
  kv_options.prefix_sharing = o.prefix_sharing;
  // Sliding-window layers release what falls out of their window; the device copy of the cache
  // mirrors one table per sequence, so with layers offloaded every layer keeps every block.
  // (gpu_layers -1, the default, offloads only when a GPU is there to take them.)
  if (o.gpu_layers == 0 || c->model_->is_encoder() || !gpu_chosen()) kv_options.sliding = c->model_->kv_sliding();
  // Block names are seeded with the model's identity (its file and shape): one cache never
  // serves K/V computed by another model.
  const std::string identity = path + "|" + h.arch_name + "|" + std::to_string(h.n_layer) + "|" +
                               std::to_string(h.n_embd) + "|" + std::to_string(h.n_vocab);
  std::vector<int32_t> identity_codes(identity.begin(), identity.end());
  kv_options.model_seed = kv::chain_hash(0, identity_codes);
  // Q8_0 and Q4_0 rows are 32-element blocks, and each head must start and end on a block.
  if ((o.kv_type == DType::kQ8_0 || o.kv_type == DType::kQ4_0) && (h.head_dim_k % 32 != 0 || h.head_dim_v % 32 != 0)) {
    return make_error(ErrorKind::kInvalidArgument,
                      path + ": a " + std::string(dtype_name(o.kv_type)) + " KV cache needs head sizes that are multiples of 32 (this model's are " +
                          std::to_string(h.head_dim_k) + " and " + std::to_string(h.head_dim_v) + "); use --kv-type f16");
  }
  // A BF16 cache stores K by element pair and V by token pair.
  if (o.kv_type == DType::kBF16 && (h.head_dim_k % 2 != 0 || h.head_dim_v % 2 != 0 || o.block_tokens % 2 != 0)) {
    return make_error(ErrorKind::kInvalidArgument, path + ": a bf16 KV cache needs even head sizes (this model's are " +
                                                       std::to_string(h.head_dim_k) + " and " +
                                                       std::to_string(h.head_dim_v) + "); use --kv-type f16");
  }
  // The offload is decided before the cache is made, so the one cache leaves the offloaded
  // layers' rows out of its CPU blocks (they live on the device).
  kv::KvLayout layout = c->model_->kv_layout(o.kv_type, o.block_tokens);
  if (o.gpu_layers != 0 && !c->model_->is_encoder()) {
    HEARTH_TRY(c->offload_to_gpu(o.gpu_layers, layout, n_blocks));
  }
  if (c->offload_) layout.offloaded_layers = c->offload_->n_layers();
  HEARTH_ASSIGN(kv::KvCache kv, kv::KvCache::create(layout, n_blocks, kv_options));
  c->kv_ = std::make_unique<kv::KvCache>(std::move(kv));
  if (c->offload_) {
    if (Status attached = c->offload_->attach_kv(c->kv_->pool()); !attached.ok()) {
      log_warn("offloading failed: every layer runs on the CPU", {{"reason", attached.error().message}});
      c->offload_.reset();
      c->device_.reset();
      // The cache again with every layer's rows, now that the CPU runs them all.
      layout.offloaded_layers = 0;
      c->kv_.reset();
      HEARTH_ASSIGN(kv::KvCache full, kv::KvCache::create(layout, n_blocks, kv_options));
      c->kv_ = std::make_unique<kv::KvCache>(std::move(full));
    }
  }
  c->forward_ = std::make_unique<model::ForwardPass>(*c->model_, *c->pool_, c->n_ctx_);
  if (c->offload_) {
    c->forward_->set_offload(c->offload_.get());
    // The offloaded layers run on the device from now on: their host copies go back.
    const size_t released = c->model_->release_layer_matrices(c->offload_->n_layers());
    if (released > 0) {
      log_info("host copies of offloaded layers released", {{"bytes", std::to_string(released)}});
    }
  }
  c->load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (o.on_progress) o.on_progress(1.0);
  return c;
}

Status InferenceContext::decode(std::span<const model::BatchToken> batch, std::vector<float>& logits) {
  if (model_->is_encoder()) {
    return make_error(ErrorKind::kUnsupported, "this is an embedding model (" + model_->hparams().arch_name +
                                                   "); it cannot generate text");
  }
  return forward_->run(batch, *kv_, &logits);
}

Result<sampler::GrammarConstraint> InferenceContext::grammar_constraint(std::string_view gbnf) const {
  if (gbnf.empty()) return sampler::GrammarConstraint{};
  std::shared_ptr<const sampler::CompiledGrammar> grammar;
  {
    std::lock_guard lock(grammar_cache_mu_);
    for (const auto& [text, compiled] : grammar_cache_) {
      if (text == gbnf) grammar = compiled;
    }
  }
  if (!grammar) {
    HEARTH_ASSIGN(grammar, sampler::compile_gbnf(gbnf));
    std::lock_guard lock(grammar_cache_mu_);
    if (grammar_cache_.size() >= kGrammarCacheEntries) grammar_cache_.pop_front();
    grammar_cache_.emplace_back(std::string(gbnf), grammar);
  }
  std::call_once(grammar_vocab_once_, [this] {
    // Rows of the output matrix beyond the tokenizer's tokens get no bytes: never allowed.
    const auto n = static_cast<size_t>(n_vocab());
    std::vector<std::string> pieces(n);
    std::vector<uint8_t> eog(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const auto id = static_cast<int32_t>(i);
      pieces[i] = tokenizer_.token_to_piece(id, /*special=*/is_printed_marker(tokenizer_, id));
      eog[i] = id < tokenizer_.n_vocab() && tokenizer_.is_eog(id) ? 1 : 0;
    }
    grammar_vocab_ = sampler::TokenTrie::build(pieces, eog);
  });
  return sampler::GrammarConstraint{std::move(grammar), grammar_vocab_, {}};
}

Result<std::vector<float>> InferenceContext::embed(const std::vector<int32_t>& tokens, bool normalize) {
  if (tokens.empty()) return make_error(ErrorKind::kInvalidArgument, "cannot embed an empty input");
  const auto& h = model_->hparams();
  int32_t seq = kv_->seq_create();
  std::vector<model::BatchToken> batch;
  for (size_t i = 0; i < tokens.size(); ++i) batch.push_back({tokens[i], seq, static_cast<int32_t>(i), false});
  std::vector<float> hidden;
  Status st = forward_->run(batch, *kv_, nullptr, &hidden);
  kv_->seq_free(seq);
  HEARTH_TRY(st);
  const size_t d = static_cast<size_t>(h.n_embd);
  const size_t n = tokens.size();
  if (!model_->is_encoder()) {
    for (size_t t = 0; t < n; ++t) {
      kernels::rms_norm(hidden.data() + t * d, model_->weights().output_norm, hidden.data() + t * d,
                        static_cast<int64_t>(d), h.norm_eps);
    }
  }
  std::vector<double> acc(d, 0.0);
  switch (model_->is_encoder() ? h.pooling : model::PoolingType::kMean) {
    case model::PoolingType::kCls:
      for (size_t i = 0; i < d; ++i) acc[i] = hidden[i];
      break;
    case model::PoolingType::kLast:
      for (size_t i = 0; i < d; ++i) acc[i] = hidden[(n - 1) * d + i];
      break;
    default:
      for (size_t t = 0; t < n; ++t) {
        for (size_t i = 0; i < d; ++i) acc[i] += hidden[t * d + i];
      }
      for (double& x : acc) x /= static_cast<double>(n);
  }
  double norm = 0.0;
  for (double x : acc) norm += x * x;
  const double inv = (normalize && norm > 0) ? 1.0 / std::sqrt(norm) : 1.0;
  std::vector<float> out(d);
  for (size_t i = 0; i < d; ++i) out[i] = static_cast<float>(acc[i] * inv);
  return out;
}

Status InferenceContext::offload_to_gpu(int32_t gpu_layers, const kv::KvLayout& layout, int32_t n_blocks) {
  const char* env = std::getenv("HEARTH_GPU");
  if (env != nullptr && device::gpu_disabled(env)) {
    log_info("HEARTH_GPU asks for the CPU: every layer runs on the CPU", {{"HEARTH_GPU", env}});
    return ok_status();
  }
  auto devices = device::list_devices();
  if (!devices.ok()) {
    log_warn("no GPU: every layer runs on the CPU", {{"reason", devices.error().message}});
    return ok_status();
  }
  auto pick = device::choose_device(*devices, env != nullptr ? env : "");
  if (!pick.ok()) return pick.error();
  if (!pick->has_value()) {
    // Said at info level only when asked for (HEARTH_GPU=none); a machine whose only Vulkan
    // device is a CPU driver is the usual CPU case.
    log_event(env != nullptr && *env != '\0' ? LogLevel::kInfo : LogLevel::kDebug,
              "no GPU chosen: every layer runs on the CPU",
              {{"devices", static_cast<unsigned long>(devices->size())}, {"HEARTH_GPU", env != nullptr ? env : ""}});
    return ok_status();
  }
  auto ctx = device::Context::open(**pick);
  if (!ctx.ok()) {
    log_warn("the GPU could not be opened: every layer runs on the CPU",
             {{"device", (*devices)[**pick].name}, {"reason", ctx.error().message}});
    return ok_status();
  }
  log_info("GPU chosen", {{"device", device::describe_device(**pick, (*ctx)->info())}});
  device_ = std::move(*ctx);
  auto off = model::DeviceOffload::create_unattached(*model_, *device_, gpu_layers, layout, n_blocks,
                                                   model_->rope_params(n_ctx_));
  if (!off.ok()) {
    log_warn("offloading failed: every layer runs on the CPU", {{"reason", off.error().message}});
    device_.reset();
    return ok_status();
  }
  offload_ = std::move(*off);
  return ok_status();
}

}  // namespace hearth::engine
