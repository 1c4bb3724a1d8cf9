// Helpers for comparing Hearth's forward pass with llama.cpp's goldens in shared/reference:
// loading goldens and tolerances, running a prompt through a fresh KV cache, and reading the
// tolerance class of a model from its file name.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"

namespace hearth::test {

nlohmann::json load_json(const std::string& path);

struct Tolerance {
  double max_abs_over_sigma;
  double rms_over_sigma;
  double top1_gate_over_sigma;
};

// "llama-Q4_K_M" -> the quantized class; "llama-F16" -> F16; stories260K-llama-f32 -> F32.
Tolerance logit_tolerance(const nlohmann::json& tolerances, const std::string& stem);

// Path of the model file behind a golden stem (random/ or the top level of models/).
std::string model_path_for_stem(const std::string& stem);

// Every golden stem listed in summary.json.
std::vector<std::string> golden_stems();

// A model with a KV cache sized for `n_ctx` tokens and one sequence.
struct GoldenRunner {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<kv::KvCache> kv;
  std::unique_ptr<model::ForwardPass> forward;
  int32_t seq = 0;

  static std::unique_ptr<GoldenRunner> open(const std::string& path, int32_t n_ctx);
  void reset();
  // Runs tokens as one batch continuing the sequence; logits for every token when all_outputs,
  // else for the last only.
  std::vector<float> run(const std::vector<int32_t>& tokens, bool all_outputs);
};

int32_t argmax(const float* x, int32_t n);

// The golden g's logits at every prompt position and along its greedy continuation
// (teacher-forced), within tol (sigma: the model's logit std); prints the errors.
void check_logits_golden(GoldenRunner& r, const nlohmann::json& g, double sigma, const Tolerance& tol,
                         const std::string& label);

}  // namespace hearth::test
