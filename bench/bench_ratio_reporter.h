// A Google Benchmark reporter shared by Hearth's benchmarks: console output as usual, then a
// closing table of each benchmark's rate relative to the memcpy baseline measured in the same
// run (style rule: every benchmark prints ratios against a same-run baseline).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hearth::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // counter: the user counter holding each benchmark's rate ("GB/s", "MB/s", ...);
  // title: printf format with one %.2f for the baseline's rate.
  RatioReporter(std::string counter, std::string title)
      : counter_(std::move(counter)), title_(std::move(title)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      auto it = r.counters.find(counter_);
      if (it == r.counters.end() || r.error_occurred) continue;
      std::string name = r.benchmark_name();
      for (const char* suffix : {"/real_time", "/min_time", "/iterations:"}) {
        if (auto pos = name.find(suffix); pos != std::string::npos) name.erase(pos);
      }
      rates_[name] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    auto base = rates_.find("MemcpyBaseline");
    if (base == rates_.end() || base->second <= 0) return;
    std::printf("\n");
    std::printf(title_.c_str(), base->second);
    std::printf("\n");
    for (const auto& [name, rate] : rates_) {
      if (name == base->first) continue;
      std::printf("  %-36s %9.2f %s  %8.4fx memcpy%s\n", name.c_str(), rate, counter_.c_str(), rate / base->second,
                  extra_column(name, rate).c_str());
    }
  }

 protected:
  // Text appended to a benchmark's row (e.g. a ratio to another variant); empty by default.
  virtual std::string extra_column(const std::string& name, double rate) const { return ""; }
  const std::map<std::string, double>& rates() const { return rates_; }

 private:
  std::string counter_;
  std::string title_;
  std::map<std::string, double> rates_;
};

// For benchmarks named "<case>/<cpu variant>": each row also shows its rate relative to the
// same case's scalar variant.
class VariantRatioReporter : public RatioReporter {
 public:
  using RatioReporter::RatioReporter;

 protected:
  std::string extra_column(const std::string& name, double rate) const override {
    auto sc = rates().find(name.substr(0, name.rfind('/')) + "/scalar");
    if (sc == rates().end() || sc->second <= 0) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "  %7.2fx scalar", rate / sc->second);
    return buf;
  }
};

// Runs the registered benchmarks with `reporter`, writing JSON to default_json unless the
// command line names its own --benchmark_out. Returns the process exit status.
inline int run_benchmarks(int argc, char** argv, const std::string& default_json, RatioReporter& reporter) {
  std::vector<char*> args(argv, argv + argc);
  bool has_out = false;
  for (int i = 1; i < argc; ++i) has_out |= std::strncmp(argv[i], "--benchmark_out=", 16) == 0;
  std::string out_flag = "--benchmark_out=" + default_json;
  std::string format_flag = "--benchmark_out_format=json";
  if (!has_out) {
    args.push_back(out_flag.data());
    args.push_back(format_flag.data());
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

}  // namespace hearth::bench
