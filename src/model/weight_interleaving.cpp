// Load-time interleaving of matrices (see weight_interleaving.h).
#include "model/weight_interleaving.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kernels/interleaved_layout.h"

namespace hearth::model {
namespace {

std::vector<kernels::WeightView*> all_matrices(ModelWeights& w) {
  std::vector<kernels::WeightView*> out;
  for (auto& L : w.layers) {
    for (auto* v : {&L.wq, &L.wk, &L.wv, &L.wqkv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down}) out.push_back(v);
    // Each expert's slice of a 3-D expert tensor is a matrix like the others.
    for (auto* experts : {&L.moe.gate, &L.moe.up, &L.moe.down}) {
      for (auto& v : *experts) out.push_back(&v);
    }
    for (auto* v : {&L.moe.gate_shexp, &L.moe.up_shexp, &L.moe.down_shexp}) out.push_back(v);
  }
  // The token embedding is only read a row at a time unless the output shares it.
  out.push_back(&w.output);
  out.push_back(&w.token_embd);
  return out;
}

size_t matrix_bytes(const kernels::WeightView& v) { return static_cast<size_t>(v.rows) * v.row_bytes; }

constexpr size_t kAlign = 64;
// Bytes of the file one thread reads at a time: about a quarter of an L2 cache.
constexpr size_t kReadBytes = 256 * 1024;

}  // namespace

Result<AnonymousMemory> interleave_matrices(ModelWeights& w, const gguf::File& file, ThreadPool& pool,
                                            const InterleaveProgress& on_bytes) {
  // Distinct matrices to interleave, by their data in the file.
  // (An MoE model has thousands of expert matrices, so lookups by data go through a hash map.)
  std::vector<kernels::WeightView*> todo;
  std::unordered_set<const uint8_t*> seen;
  for (kernels::WeightView* v : all_matrices(w)) {
    if (v->data == nullptr || !kernels::wants_interleaved(*v)) continue;
    if (v == &w.token_embd && w.token_embd.data != w.output.data) continue;
    if (!seen.insert(v->data).second) continue;
    todo.push_back(v);
  }
  size_t total = 0;
  for (const auto* v : todo) total += (matrix_bytes(*v) + kAlign - 1) / kAlign * kAlign;
  HEARTH_ASSIGN(AnonymousMemory memory, AnonymousMemory::allocate(total));
  // Each thread reads a run of panels from the file into a buffer that stays in its L2 and
  // interleaves them from there into place.
  std::vector<std::vector<uint8_t>> buffers(static_cast<size_t>(pool.size()));
  std::vector<Status> failures(static_cast<size_t>(pool.size()), ok_status());
  std::unordered_multimap<const uint8_t*, kernels::WeightView> moved;  // old data -> interleaved view
  size_t at = 0;
  for (kernels::WeightView* v : todo) {
    uint8_t* dst = memory.data() + at;
    at += (matrix_bytes(*v) + kAlign - 1) / kAlign * kAlign;
    const size_t panel_bytes = static_cast<size_t>(kernels::kInterleavedPanelRows) * v->row_bytes;
    const size_t panels = static_cast<size_t>(v->rows / kernels::kInterleavedPanelRows);
    const size_t grain = std::clamp<size_t>(kReadBytes / panel_bytes, 1, std::max<size_t>(1, panels / 2));
    pool.parallel_for_dynamic(panels, grain, [&](size_t first, size_t last, int thread) {
      // A one-thread pool hands over the whole matrix in one call: it is still read in runs of
      // `grain` panels, or the buffer would become a second copy of the largest matrix (the
      // output: 141 MiB for a 1B Llama, over the load's memory budget).
      auto& buf = buffers[static_cast<size_t>(thread)];
      for (size_t begin = first; begin < last; begin += grain) {
        const size_t end = std::min(last, begin + grain);
        const size_t bytes = (end - begin) * panel_bytes;
        if (buf.size() < bytes) buf.resize(bytes);
        Status st = file.read_bytes(v->data + begin * panel_bytes, bytes, buf.data());
        if (!st.ok()) {
          failures[static_cast<size_t>(thread)] = std::move(st);
          return;
        }
        kernels::WeightView run = *v;
        run.data = buf.data();
        run.rows = static_cast<int64_t>(end - begin) * kernels::kInterleavedPanelRows;
        kernels::interleave_weight(run, 0, static_cast<int64_t>(end - begin), dst + begin * panel_bytes);
      }
    });
    for (auto& f : failures) HEARTH_TRY(f);
    file.release_bytes(v->data, matrix_bytes(*v));
    kernels::WeightView iv = *v;
    iv.data = dst;
    iv.interleaved = true;
    moved.emplace(v->data, iv);
    if (on_bytes) on_bytes(at, total);
  }
  // Point every view (also the second of a tied pair) at its interleaved copy.
  for (kernels::WeightView* v : all_matrices(w)) {
    auto [first, last] = moved.equal_range(v->data);
    for (auto it = first; it != last; ++it) {
      const kernels::WeightView& iv = it->second;
      if (v->type == iv.type && v->rows == iv.rows && v->cols == iv.cols) {
        *v = iv;
        break;
      }
    }
  }
  return memory;
}

}  // namespace hearth::model
