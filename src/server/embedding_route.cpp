// Embedding requests on the engine (see embedding_route.h).
#include "server/embedding_route.h"

#include <chrono>
#include <cmath>

#include "server/prompt_builder.h"

namespace hearth::server {

Result<EmbeddingResult> run_embeddings(ModelBackend& model, const api::EmbeddingJob& job,
                                       const std::function<bool()>& keep_going) {
  const auto start = std::chrono::steady_clock::now();
  HEARTH_ASSIGN(auto inputs, prepare_embedding_inputs(model, job));
  EmbeddingResult result;
  std::vector<std::shared_ptr<engine::ResultStream>> streams;
  for (auto& ids : inputs) {
    result.n_tokens += static_cast<int32_t>(ids.size());
    engine::EmbeddingRequest r;
    r.tokens = std::move(ids);
    r.normalize = job.normalize;
    r.truncate = job.truncate;
    streams.push_back(model.submit(std::move(r)));
  }
  auto cancel_all = [&] {
    for (auto& s : streams) s->cancel();
  };
  for (auto& stream : streams) {
    engine::EngineEvent event;
    while (!stream->next(event, std::chrono::milliseconds(50))) {
      if (!keep_going()) {
        cancel_all();
        return make_error(ErrorKind::kIo, "the client went away");
      }
    }
    if (event.kind == engine::EngineEvent::Kind::kError) {
      cancel_all();
      return event.error;
    }
    if (event.kind != engine::EngineEvent::Kind::kEmbedding) {
      cancel_all();
      return make_error(ErrorKind::kInternal, "the engine answered an embedding request without an embedding");
    }
    std::vector<float> v = std::move(event.embedding);
    if (job.dimensions > 0 && static_cast<size_t>(job.dimensions) < v.size()) {
      v.resize(static_cast<size_t>(job.dimensions));
      if (job.normalize) {
        double norm = 0.0;
        for (float x : v) norm += static_cast<double>(x) * x;
        norm = std::sqrt(norm);
        if (norm > 0.0) {
          for (float& x : v) x = static_cast<float>(x / norm);
        }
      }
    }
    result.vectors.push_back(std::move(v));
  }
  result.total_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace hearth::server
