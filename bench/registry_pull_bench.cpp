// Pull throughput from a loopback docker-registry: Hearth's RegistryClient (ranged parts in
// parallel, sha256 verified, fsync + rename) against the `curl` command fetching the same blob
// URL in the same run (one stream, no verification, no fsync), and Hearth with one part as
// the like-for-like case. The registry serves the blob from the page cache after the first
// round, so this measures the client side; both write to files in the same folder. Rounds
// alternate which client goes first; medians are reported. Writes JSON (--json) and can update
// its section of docs/performance.md (--write-doc). Target: Hearth >= 0.8x curl.
//
//   bench_registry_pull_bench --size-mib 512 --rounds 3 --write-doc docs/performance.md
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/docker_registry.h"
#include "doc_sections.h"
#include "registry/registry_client.h"
#include "util/settings.h"
#include "util/sha256.h"

extern char** environ;

namespace hearth::bench {
namespace {

using registry::RegistryClient;
using registry::RegistryClientOptions;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Writes `bytes` random bytes to `path` and returns their digest.
std::string write_random_blob(const std::string& path, uint64_t bytes) {
  std::ofstream out(path, std::ios::binary);
  Sha256 hasher;
  std::mt19937_64 rng(42);
  std::vector<uint64_t> chunk(1 << 17);  // 1 MiB
  for (uint64_t written = 0; written < bytes;) {
    for (auto& w : chunk) w = rng();
    size_t n = static_cast<size_t>(std::min<uint64_t>(bytes - written, chunk.size() * 8));
    out.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(n));
    hasher.update(chunk.data(), n);
    written += n;
  }
  return "sha256:" + hasher.finish_hex();
}

// Runs curl on the blob URL into `dest`; returns its exit status.
int run_curl(const std::string& url, const std::string& dest) {
  std::vector<std::string> args = {"curl", "-sS", "--fail", "-o", dest, url};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawnp(&pid, "curl", nullptr, nullptr, argv.data(), environ) != 0) return 127;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

struct Variant {
  std::string name;
  std::string note;
  std::vector<double> seconds;
  std::vector<double> cpu_seconds;  // user + system CPU of the client (curl: the child process)
};

// User + system CPU seconds of this process (children: of its waited-for children).
double cpu_seconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace
}  // namespace hearth::bench

int main(int argc, char** argv) {
  using namespace hearth;
  using namespace hearth::bench;
  Settings s({
      {"size_mib", 0, SettingType::kInt, "512", "size of the random blob pulled", "", SettingRange::between(1, 65536)},
      {"rounds", 'r', SettingType::kInt, "3", "rounds (medians are reported)", "", SettingRange::between(1, 100)},
      {"json", 0, SettingType::kString, "bench_registry_pull.json", "write results as JSON here", ""},
      {"write_doc", 0, SettingType::kString, "", "update the registry section of this Markdown file (docs/performance.md)", ""},
      {"note", 0, SettingType::kString, "", "a remark about this run for the doc (e.g. other load on the machine)", ""},
  });
  std::vector<std::string> args(argv + 1, argv + argc);
  if (auto st = s.parse(args); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.error().message.c_str());
    return 2;
  }
  if (s.help_requested()) {
    std::printf("%s", s.help_text("bench_registry_pull_bench [options]").c_str());
    return 0;
  }
  const uint64_t size = static_cast<uint64_t>(s.get_int("size_mib")) << 20;
  const int rounds = static_cast<int>(s.get_int("rounds"));
  std::string command;
  for (int i = 0; i < argc; ++i) {  // the command as run, without the --note text (shown apart)
    std::string a = argv[i];
    if (a == "--note") {
      ++i;
      continue;
    }
    if (!a.starts_with("--note=")) command += (i ? " " : "") + a;
  }

  std::string error;
  auto reg = test::DockerRegistry::start(&error);
  if (!reg) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const std::string work = reg->storage_dir() + "/../bench";
  std::filesystem::create_directories(work + "/src");
  std::filesystem::create_directories(work + "/out");

  // The model to pull: a config blob and the large random layer.
  const std::string big_digest_path = work + "/src/big";
  std::string big = write_random_blob(big_digest_path, size);
  const std::string config = R"({"model_format":"gguf","model_family":"bench"})";
  const std::string config_digest = "sha256:" + sha256_hex(config);
  std::ofstream(work + "/src/config") << config;
  nlohmann::ordered_json manifest = {
      {"schemaVersion", 2},
      {"mediaType", registry::kManifestMediaType},
      {"config", {{"mediaType", "application/vnd.docker.container.image.v1+json"}, {"digest", config_digest}, {"size", config.size()}}},
      {"layers", {{{"mediaType", "application/vnd.ollama.image.model"}, {"digest", big}, {"size", size}}}}};
  RegistryClientOptions options;
  options.endpoint = *registry::parse_registry_endpoint(reg->address(), true);
  options.upload_chunk_bytes = 64ull << 20;
  RegistryClient client(options);
  registry::PushRequest push;
  push.repository = "bench/model";
  push.reference = "latest";
  push.manifest_bytes = manifest.dump();
  push.blob_path = [&](const std::string& d) { return d == big ? big_digest_path : work + "/src/config"; };
  auto t_push = std::chrono::steady_clock::now();
  auto pushed = client.push(push);
  double push_s = seconds_since(t_push);
  if (!pushed.ok()) {
    std::fprintf(stderr, "push failed: %s\n", pushed.error().to_string().c_str());
    return 1;
  }
  std::filesystem::remove(big_digest_path);  // keep one copy on disk (the registry's)

  const std::string blob_url = reg->url() + "/v2/bench/model/blobs/" + big;
  std::vector<Variant> variants = {
      {"curl", "curl -o FILE, one stream, no verification", {}, {}},
      {"hearth", "RegistryClient::pull, default options (16 MiB ranged parts, 4 at a time; sha256; fsync + rename)", {}, {}},
      {"hearth_1part", "RegistryClient::pull in one request (one stream, as curl)", {}, {}},
  };
  auto run_variant = [&](size_t v) -> bool {
    const std::string dest = work + "/out/blob";
    std::filesystem::remove(dest);
    const int who = variants[v].name == "curl" ? RUSAGE_CHILDREN : RUSAGE_SELF;
    const double cpu_start = cpu_seconds(who);
    auto start = std::chrono::steady_clock::now();
    if (variants[v].name == "curl") {
      int rc = run_curl(blob_url, dest);
      if (rc != 0) {
        std::fprintf(stderr, "curl exited with %d\n", rc);
        return false;
      }
    } else {
      RegistryClientOptions o = options;
      if (variants[v].name == "hearth_1part") o.download.parallel_threshold = UINT64_MAX;
      RegistryClient c(o);
      registry::PullRequest pull;
      pull.repository = "bench/model";
      pull.reference = "latest";
      pull.has_blob = [&](const std::string& d) { return d != big; };
      pull.blob_path = [&](const std::string&) { return dest; };
      auto pulled = c.pull(pull);
      if (!pulled.ok()) {
        std::fprintf(stderr, "pull failed: %s\n", pulled.error().to_string().c_str());
        return false;
      }
    }
    variants[v].seconds.push_back(seconds_since(start));
    variants[v].cpu_seconds.push_back(cpu_seconds(who) - cpu_start);
    if (std::filesystem::file_size(dest) != size) {
      std::fprintf(stderr, "%s stored %ju bytes, expected %ju\n", variants[v].name.c_str(),
                   static_cast<uintmax_t>(std::filesystem::file_size(dest)), static_cast<uintmax_t>(size));
      return false;
    }
    return true;
  };
  // Warm the registry's page cache once (not timed), then alternate the order by round.
  if (run_curl(blob_url, work + "/out/warm") != 0) return 1;
  std::filesystem::remove(work + "/out/warm");
  for (int r = 0; r < rounds; ++r) {
    std::vector<size_t> order = {0, 1, 2};
    if (r % 2 == 1) std::reverse(order.begin(), order.end());
    for (size_t v : order) {
      if (!run_variant(v)) return 1;
    }
  }

  const double mib = static_cast<double>(size) / (1 << 20);
  const double curl_rate = mib / median(variants[0].seconds);
  nlohmann::ordered_json j;
  const std::string date = utc_date();
  j["command"] = command;
  j["date"] = date;
  j["blob_bytes"] = size;
  j["rounds"] = rounds;
  j["push_seconds"] = push_s;
  std::printf("pull of a %.0f MiB blob from docker-registry on loopback, median of %d rounds\n", mib, rounds);
  std::printf("  %-14s %9s %10s %8s %8s\n", "client", "seconds", "MiB/s", "vs curl", "CPU s");
  std::string table =
      "| client | what it does | seconds | MiB/s | vs curl | client CPU s |\n|---|---|---:|---:|---:|---:|\n";
  for (const auto& v : variants) {
    double sec = median(v.seconds);
    double rate = mib / sec;
    double cpu = median(v.cpu_seconds);
    std::printf("  %-14s %9.3f %10.1f %7.2fx %8.2f\n", v.name.c_str(), sec, rate, rate / curl_rate, cpu);
    j["variants"][v.name] = {{"seconds", v.seconds}, {"median_seconds", sec}, {"mib_per_s", rate},
                             {"ratio_to_curl", rate / curl_rate}, {"cpu_seconds", v.cpu_seconds}};
    char row[320];
    std::snprintf(row, sizeof row, "| %s | %s | %.3f | %.1f | %.2fx | %.2f |\n", v.name.c_str(), v.note.c_str(), sec,
                  rate, rate / curl_rate, cpu);
    table += row;
  }
  std::printf("  push (chunked upload, 64 MiB PATCHes): %.1f MiB/s\n", mib / push_s);
  if (const std::string path = s.get_string("json"); !path.empty()) std::ofstream(path) << j.dump(2) << "\n";
  if (const std::string doc = s.get_string("write_doc"); !doc.empty()) {
    const double ratio = j["variants"]["hearth"]["ratio_to_curl"].get<double>();
    char push_line[128];
    std::snprintf(push_line, sizeof push_line, "%.1f MiB/s", mib / push_s);
    std::string body =
        "## Registry pull\n\n"
        "Generated by `bench/registry_pull_bench.cpp`; regenerate with `build/release/bench/bench_registry_pull_bench "
        "--write-doc docs/performance.md`.\n\n"
        "This run: `" + command + "` on " + date + ". A " + std::to_string(static_cast<int>(mib)) +
        " MiB random blob pulled from Debian's docker-registry on loopback, median of " + std::to_string(rounds) +
        " rounds (the order of the clients alternating by round). curl does less work: no sha256, no fsync.\n" +
        (s.get_string("note").empty() ? "" : "\nNote: " + s.get_string("note") + "\n") + "\n" + table +
        "\n- Hearth/curl: " + std::to_string(ratio).substr(0, 4) + "x (target >= 0.8x). Push of the same model: " +
        push_line + ".\n";
    std::ifstream in(doc);
    std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(doc) << replace_doc_section(old, "registry_pull_bench", body);
  }
  return 0;
}
