// Runs llama.cpp's llama-bench (from the build named by HEARTH_LLAMA_CPP_BIN, never part of
// this project) on a model file and reads its JSON output, so that a Hearth benchmark can
// compare both engines on the same file in the same run. Also reports the child's peak RSS.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

extern char** environ;

namespace hearth::bench {

struct LlamaBenchResult {
  double pp_tps = 0;  // prompt processing tokens/s (0 when not run)
  double tg_tps = 0;  // generation tokens/s
  uint64_t peak_rss_bytes = 0;
  std::string build_commit;
  std::string gpu_info;  // the devices llama.cpp saw ("NVIDIA H200"; empty for a CPU build)
  std::string backends;  // its compute backends ("CPU", "Vulkan")
  std::string error;     // non-empty when the run failed (with the end of its standard error)
};

// The llama-bench executable under $HEARTH_LLAMA_CPP_BIN, or nullopt when the variable is unset.
inline std::optional<std::string> llama_bench_path() {
  const char* bin = std::getenv("HEARTH_LLAMA_CPP_BIN");
  if (bin == nullptr || *bin == '\0') return std::nullopt;
  return std::string(bin) + "/llama-bench";
}

// Runs argv (argv[0] is the program path), returns its standard output; peak RSS of the child
// in *peak_rss. Standard error goes to /dev/null, or with stderr_tail to a temporary file whose
// last 600 bytes end up there (what a failed run said). exit_code < 0: it could not be started.
inline std::string run_capture(const std::vector<std::string>& argv, int& exit_code, uint64_t* peak_rss,
                               std::string* stderr_tail = nullptr) {
  int fds[2];
  exit_code = -1;
  if (::pipe(fds) != 0) return "";
  int err_fd = -1;
  if (stderr_tail != nullptr) {
    char err_path[] = "/tmp/hearth-bench-stderr-XXXXXX";
    err_fd = ::mkstemp(err_path);
    if (err_fd >= 0) ::unlink(err_path);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  if (err_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
    posix_spawn_file_actions_addclose(&actions, err_fd);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  std::string out;
  if (rc == 0) {
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (rc == 0) {
    int status = 0;
    struct rusage ru {};
    if (::wait4(pid, &status, 0, &ru) == pid) {
      exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
      if (peak_rss != nullptr) *peak_rss = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
    }
  }
  if (err_fd >= 0) {
    const off_t size = std::max<off_t>(0, ::lseek(err_fd, 0, SEEK_END));
    const off_t from = size > 600 ? size - 600 : 0;
    std::string tail(static_cast<size_t>(size - from), '\0');
    const ssize_t got = size > from ? ::pread(err_fd, tail.data(), tail.size(), from) : 0;
    tail.resize(got > 0 ? static_cast<size_t>(got) : 0);
    *stderr_tail = std::move(tail);
    ::close(err_fd);
  }
  return out;
}

// llama-bench's -ngl for Hearth's gpu_layers (0 none, N, or more than any model has: every
// layer and the output layer, which both engines count as one more layer).
inline std::string llama_ngl(int32_t gpu_layers) { return std::to_string(std::min<int64_t>(gpu_layers, 999)); }

// The last line of a program's standard error that says something (for an error message).
inline std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

// One llama-bench process: pp (prompt tokens in one batch) and tg (generated tokens), one
// repetition each, `threads` threads, `gpu_layers` layers on its GPU (-ngl; llama-bench's own
// default is 99, all), defaults otherwise (mmap on, F16 KV cache, no flash attention), the
// same settings as Hearth's side of the benchmark.
// depth > 0: the runs start after that many context tokens (-d); flash_attn: -fa 1.
inline LlamaBenchResult run_llama_bench(const std::string& exe, const std::string& model, int threads, int pp, int tg,
                                        int depth = 0, bool flash_attn = false, int32_t gpu_layers = 0,
                                        const std::string& kv_type = "f16") {
  LlamaBenchResult r;
  int code = 0;
  std::vector<std::string> argv = {exe, "-m", model, "-t", std::to_string(threads), "-p", std::to_string(pp), "-n",
                                   std::to_string(tg), "-r", "1", "-ngl", llama_ngl(gpu_layers), "-o", "json"};
  if (depth > 0) argv.insert(argv.end(), {"-d", std::to_string(depth)});
  if (flash_attn) argv.insert(argv.end(), {"-fa", "1"});
  if (kv_type != "f16") argv.insert(argv.end(), {"-ctk", kv_type, "-ctv", kv_type});
  std::string err;
  const std::string out = run_capture(argv, code, &r.peak_rss_bytes, &err);
  if (code != 0) {
    r.error = code < 0 ? "could not start " + exe : "llama-bench exited with status " + std::to_string(code);
    if (const std::string said = last_line(err); !said.empty()) r.error += ": " + said;
    return r;
  }
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (!j.is_array()) {
    r.error = "llama-bench printed no JSON array";
    return r;
  }
  for (const auto& t : j) {
    const int n_prompt = t.value("n_prompt", 0);
    const int n_gen = t.value("n_gen", 0);
    const double tps = t.value("avg_ts", 0.0);
    if (n_prompt > 0 && n_gen == 0) r.pp_tps = tps;
    if (n_gen > 0 && n_prompt == 0) r.tg_tps = tps;
    r.build_commit = t.value("build_commit", "");
    r.gpu_info = t.value("gpu_info", "");
    r.backends = t.value("backends", "");
  }
  if ((pp > 0 && r.pp_tps <= 0) || (tg > 0 && r.tg_tps <= 0)) r.error = "llama-bench reported no rate";
  return r;
}

}  // namespace hearth::bench
