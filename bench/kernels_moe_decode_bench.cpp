// One MoE decode step's expert matmuls at a real shape (Qwen3-30B-A3B: 8 of 128 experts, each
// gate/up 768x2048 and down 2048x768; HEARTH_BENCH_EXPERTS experts are stored, default 32, so
// the chosen ones come from memory, not the cache), two ways in the same run: one expert at a
// time (gate+up in one pass over the pool, then down: two barriers per expert, as the engine
// did) and grouped (matmul_grouped: gate+up of every chosen expert in one pass, then all downs:
// two barriers per layer). Rounds alternate which goes first so that load from other processes
// hits both alike; prints the median time per layer step of each, their ratio and weight GB/s
// against a memcpy of the same bytes measured in the same run, and writes JSON.
//
//   bench_kernels_moe_decode_bench [--threads 2] [--rounds 15] [--type Q8_0] [--json out.json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "tensor/quantize.h"

namespace {

using hearth::DType;
using hearth::kernels::GroupedMatmulJob;
using hearth::kernels::MatmulJob;
using hearth::kernels::WeightView;

constexpr int64_t kEmbd = 2048, kFf = 768;
constexpr int kUsed = 8;

struct Expert {
  std::vector<uint8_t> gate, up, down;
  WeightView g, u, d;
};

std::vector<uint8_t> quantized(DType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> row(static_cast<size_t>(cols));
  const size_t row_bytes = *hearth::dtype_row_bytes(type, static_cast<uint64_t>(cols));
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = dist(rng);
    (void)hearth::quantize_row(type, row.data(), out.data() + static_cast<size_t>(r) * row_bytes, cols);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 15;
  std::string type_name = "Q8_0", json_path = "bench_kernels_moe_decode.json";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (a == "--type") type_name = argv[i + 1];
    else if (a == "--json") json_path = argv[i + 1];
    else {
      std::fprintf(stderr, "bench_kernels_moe_decode_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  auto type = hearth::dtype_from_name(type_name);
  if (!type.has_value() || threads < 1 || rounds < 1) {
    std::fprintf(stderr, "bench_kernels_moe_decode_bench: bad --type, --threads or --rounds\n");
    return 2;
  }
  const char* env = std::getenv("HEARTH_BENCH_EXPERTS");
  const int n_stored = std::max(kUsed, env != nullptr ? std::atoi(env) : 32);
  std::mt19937 rng(1);
  std::vector<Expert> experts(static_cast<size_t>(n_stored));
  for (Expert& e : experts) {
    e.gate = quantized(*type, kFf, kEmbd, rng);
    e.up = quantized(*type, kFf, kEmbd, rng);
    e.down = quantized(*type, kEmbd, kFf, rng);
    const size_t wide = *hearth::dtype_row_bytes(*type, kEmbd), narrow = *hearth::dtype_row_bytes(*type, kFf);
    e.g = {*type, e.gate.data(), kEmbd, kFf, wide};
    e.u = {*type, e.up.data(), kEmbd, kFf, wide};
    e.d = {*type, e.down.data(), kFf, kEmbd, narrow};
  }
  const size_t step_bytes = kUsed * (experts[0].gate.size() + experts[0].up.size() + experts[0].down.size());
  hearth::ThreadPool pool(threads);
  hearth::kernels::MatmulScratch scratch;
  std::vector<float> x(kEmbd * kUsed), gate(kFf * kUsed), up(kFf * kUsed), y(kEmbd * kUsed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto& v : x) v = dist(rng);
  std::vector<uint8_t> copy_src(step_bytes, 1), copy_dst(step_bytes);

  int next = 0;  // the chosen experts move on each step, as a decode's do
  auto choose = [&](int j) -> Expert& { return experts[static_cast<size_t>((next + j * 5) % n_stored)]; };
  auto one_at_a_time = [&] {
    for (int j = 0; j < kUsed; ++j) {
      Expert& e = choose(j);
      const MatmulJob gu[] = {{&e.g, gate.data() + j * kFf}, {&e.u, up.data() + j * kFf}};
      (void)hearth::kernels::matmul_multi(gu, x.data() + j * kEmbd, 1, pool, scratch);
      (void)hearth::kernels::matmul(e.d, gate.data() + j * kFf, 1, y.data() + j * kEmbd, pool, scratch);
    }
    ++next;
  };
  std::vector<GroupedMatmulJob> jobs;
  auto grouped = [&] {
    jobs.clear();
    for (int j = 0; j < kUsed; ++j) {
      Expert& e = choose(j);
      jobs.push_back({&e.g, x.data() + j * kEmbd, 1, gate.data() + j * kFf});
      jobs.push_back({&e.u, x.data() + j * kEmbd, 1, up.data() + j * kFf});
    }
    (void)hearth::kernels::matmul_grouped(jobs, pool, scratch);
    jobs.clear();
    for (int j = 0; j < kUsed; ++j) jobs.push_back({&choose(j).d, gate.data() + j * kFf, 1, y.data() + j * kEmbd});
    (void)hearth::kernels::matmul_grouped(jobs, pool, scratch);
    ++next;
  };
  auto memcpy_step = [&] {
    std::memcpy(copy_dst.data(), copy_src.data(), step_bytes);
    copy_src[next % step_bytes] ^= 1;
    ++next;
  };
  constexpr int kSteps = 64;
  auto time_steps = [&](auto&& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < kSteps; ++s) fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kSteps;
  };
  for (int s = 0; s < 8; ++s) {  // warm-up
    one_at_a_time();
    grouped();
  }
  std::vector<double> t_one, t_grouped, t_copy, ratios;
  for (int r = 0; r < rounds; ++r) {
    double a = 0, b = 0;
    if (r % 2 == 0) {
      a = time_steps(one_at_a_time);
      b = time_steps(grouped);
    } else {
      b = time_steps(grouped);
      a = time_steps(one_at_a_time);
    }
    t_one.push_back(a);
    t_grouped.push_back(b);
    t_copy.push_back(time_steps(memcpy_step));
    ratios.push_back(a / b);
  }
  const double one = median(t_one), grp = median(t_grouped), cp = median(t_copy), ratio = median(ratios);
  const double gb = static_cast<double>(step_bytes) / 1e9;
  std::printf("MoE decode layer step, %s, %d of %d experts (%.1f MB of weights), %d threads, %d rounds:\n",
              type_name.c_str(), kUsed, n_stored, gb * 1e3, threads, rounds);
  std::printf("  one expert at a time  %8.1f us  %6.2f GB/s\n", one * 1e6, gb / one);
  std::printf("  grouped               %8.1f us  %6.2f GB/s\n", grp * 1e6, gb / grp);
  std::printf("  memcpy of the bytes   %8.1f us  %6.2f GB/s\n", cp * 1e6, gb / cp);
  std::printf("  speed-up (median of per-round ratios): %.3fx (rounds: min %.3f, max %.3f)\n", ratio,
              *std::min_element(ratios.begin(), ratios.end()), *std::max_element(ratios.begin(), ratios.end()));
  std::ofstream out(json_path);
  out << "{\"type\":\"" << type_name << "\",\"threads\":" << threads << ",\"rounds\":" << rounds
      << ",\"experts_stored\":" << n_stored << ",\"step_bytes\":" << step_bytes << ",\"one_at_a_time_us\":" << one * 1e6
      << ",\"grouped_us\":" << grp * 1e6 << ",\"memcpy_us\":" << cp * 1e6 << ",\"speedup\":" << ratio << "}\n";
  return 0;
}
