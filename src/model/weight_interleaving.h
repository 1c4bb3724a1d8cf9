// Moves a model's matrices into the interleaved layout of the active kernels at load time
// (kernels/interleaved_layout.h): the kernels that read it decode without transposing 16 rows
// per block and stream each thread's share of a matrix as one sequential read. The interleaved
// copies live in one anonymous region (huge pages where the system grants them); as each matrix
// is copied, its pages of the file mapping are dropped, so resident memory stays about the size
// of the file, and a copy costs one pass over the weights at load (read from the page cache
// with read calls, which on the machines measured was several times faster than faulting the
// pages into the mapping: 534 MB in about 65 ms instead of 200 ms with 2 threads).
#pragma once

#include <cstddef>
#include <functional>

#include "gguf/gguf_file.h"
#include "model/weights.h"
#include "util/anonymous_memory.h"
#include "util/result.h"
#include "util/thread_pool.h"

namespace hearth::model {

// Interleaves every matrix of w (each distinct one once: a tied output and token embedding share
// theirs) for which kernels::wants_interleaved holds, pointing the views at the returned memory.
// Matrices the active kernels do not want interleaved keep their GGUF rows.
// The file's bytes are read with read calls (gguf::File::read_bytes), not through the mapping.
// `on_bytes(done, total)`, if set, is called on the calling thread after each matrix (a load's
// progress: bytes interleaved of all to interleave; `done` only grows and ends at `total`).
using InterleaveProgress = std::function<void(size_t done, size_t total)>;
Result<AnonymousMemory> interleave_matrices(ModelWeights& w, const gguf::File& file, ThreadPool& pool,
                                            const InterleaveProgress& on_bytes = {});

}  // namespace hearth::model
