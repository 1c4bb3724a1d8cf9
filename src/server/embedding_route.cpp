// Embedding requests on the engine (see embedding_route.h).
#include "server/embedding_route.h"

#include <chrono>
#include <cmath>


namespace hearth::server {

Result<EmbeddingResult> run_embeddings(protocol::InferenceBackend& model, const api::EmbeddingJob& job,
                                       const std::function<bool()>& keep_going) {
  const auto start = std::chrono::steady_clock::now();
  HEARTH_ASSIGN(protocol::EmbeddingSubmission submission, model.submit(job.request));
  EmbeddingResult result;
  std::vector<std::shared_ptr<protocol::EventStream>>& streams = submission.streams;
  auto cancel_all = [&] {
    for (auto& s : streams) s->cancel();
  };
  for (auto& stream : streams) {
    protocol::Event event;
    while (!stream->next(event, std::chrono::milliseconds(50))) {
      if (!keep_going()) {
        cancel_all();
        return make_error(ErrorKind::kIo, "the client went away");
      }
    }
    if (event.kind == protocol::Event::Kind::kError) {
      cancel_all();
      return event.error;
    }
    if (event.kind != protocol::Event::Kind::kEmbedding) {
      cancel_all();
      return make_error(ErrorKind::kInternal, "the engine answered an embedding request without an embedding");
    }
    result.n_tokens += event.n_tokens;
    std::vector<float> v = std::move(event.embedding);
    if (job.dimensions > 0 && static_cast<size_t>(job.dimensions) < v.size()) {
      v.resize(static_cast<size_t>(job.dimensions));
      if (job.request.normalize) {
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
