// Constrained decoding against free decoding on one model, in the same run: decode tokens/s of
// one stream with no grammar, under a JSON-schema grammar (every token masked), under a lazy
// tool-call grammar (tool_choice "auto": free text, each token checked for the call opener)
// and under a forced tool call (tool_choice "required": the call's grammar from the first
// token). The four run interleaved, round after round, so machine load hits them alike; the
// figure is the median tokens/s of each and its ratio to the free run. The issue's target:
// constrained decoding costs at most 10% of free decoding.
// Prints the figures, writes JSON (--json) and its section of docs/performance.md (--write-doc).
//
//   bench_constrained_decoding_bench [MODEL.gguf] [--rounds N] [--tokens N] [--json out.json]
//                                    [--write-doc docs/performance.md]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "doc_sections.h"
#include "engine/inference_context.h"
#include "engine/serving_engine.h"
#include "engine/tool_call_grammar.h"
#include "sampler/grammar/json_schema_grammar.h"
#include "util/log.h"

namespace hearth::bench {
namespace {

using Json = nlohmann::ordered_json;

// Strings in an array with no bound: the model can go on for any number of tokens.
const char* kSchema = R"({"type":"object","properties":{"notes":{"type":"array","items":{"type":"string"}}},
  "required":["notes"],"additionalProperties":false})";

// One weather tool, as a chat body offers it (parallel calls: the grammar may go on).
Json tool_chat(bool forced) {
  Json chat = Json::parse(R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{
    "name":"note","parameters":{"type":"object","properties":{"text":{"type":"string"},"lines":{"type":"array",
    "items":{"type":"string"}}},"required":["text","lines"],"additionalProperties":false}}}]})");
  if (forced) chat["tool_choice"] = "required";
  return chat;
}

struct Mode {
  std::string name;
  std::string gbnf;
  std::vector<sampler::GrammarTrigger> triggers;
  std::vector<double> tps;  // per round
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "bench_constrained_decoding_bench: %s\n", message.c_str());
  std::exit(1);
}

double load_average() {
  std::ifstream f("/proc/loadavg");
  double one = 0.0;
  f >> one;
  return one;
}

}  // namespace

int run(int argc, char** argv) {
  std::string model = "/work/models/llama-1b-q4_0.gguf", json_out, doc;
  int rounds = 3, n_tokens = 48;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--rounds") rounds = std::max(1, std::atoi(value().c_str()));
    else if (a == "--tokens") n_tokens = std::max(8, std::atoi(value().c_str()));
    else if (a == "--json") json_out = value();
    else if (a == "--write-doc") doc = value();
    else if (!a.empty() && a[0] != '-') model = a;
    else die("unknown option " + a + " (see the comment at the top of bench/constrained_decoding_bench.cpp)");
  }
  set_log_level(LogLevel::kWarn);
  engine::ContextOptions co;
  co.n_threads = 2;
  co.n_ctx = 1024;
  auto ctx = engine::InferenceContext::load(model, co);
  if (!ctx.ok()) die(ctx.error().to_string());
  engine::ServingOptions so;
  so.n_slots = 1;
  auto eng = engine::ServingEngine::create(**ctx, so);
  if (!eng.ok()) die(eng.error().to_string());

  std::vector<Mode> modes;
  modes.push_back({"free", "", {}, {}});
  auto schema = sampler::json_schema_to_gbnf(Json::parse(kSchema));
  if (!schema.ok()) die(schema.error().message);
  modes.push_back({"JSON schema", *schema, {}, {}});
  auto lazy = engine::tool_call_grammar(ChatOutputFamily::kHermes, tool_chat(false));
  auto forced = engine::tool_call_grammar(ChatOutputFamily::kHermes, tool_chat(true));
  if (!lazy.ok() || !forced.ok()) die("tool grammar: " + (lazy.ok() ? forced.error() : lazy.error()).message);
  modes.push_back({"tool_choice auto (lazy, not triggered)", lazy->gbnf, lazy->triggers, {}});
  modes.push_back({"tool_choice required", forced->gbnf, {}, {}});

  const auto prompt = (*ctx)->tokenizer().encode("Write a list of short notes about the sea.", true, false);
  for (int r = 0; r < rounds; ++r) {
    for (auto& m : modes) {
      engine::GenerationRequest req;
      req.prompt = prompt;
      req.sampling.temperature = 0.8f;
      req.sampling.seed = 7 + static_cast<uint64_t>(r);
      req.n_predict = n_tokens;
      req.ignore_eos = m.gbnf.empty();
      req.cache_prompt = false;
      req.grammar = m.gbnf;
      req.grammar_triggers = m.triggers;
      auto stream = (*eng)->submit(req);
      engine::EngineEvent ev;
      while (stream->next(ev, std::chrono::seconds(600)) && ev.kind == engine::EngineEvent::Kind::kText) {}
      if (ev.kind != engine::EngineEvent::Kind::kDone) die(m.name + ": " + ev.error.message);
      // The first token's time is the prompt's; decode speed is over the tokens after it.
      if (ev.timings.predicted_n > 1 && ev.timings.predicted_ms > 0) {
        m.tps.push_back((ev.timings.predicted_n - 1) * 1000.0 / ev.timings.predicted_ms);
      }
      std::fprintf(stderr, "round %d %-40s %d tokens %.2f tok/s\n", r + 1, m.name.c_str(), ev.timings.predicted_n,
                   m.tps.empty() ? 0.0 : m.tps.back());
    }
  }
  const double load = load_average();
  const double base = median(modes[0].tps);
  std::ostringstream table;
  table << "| Decoding | tokens/s (median) | vs free |\n|---|---:|---:|\n";
  Json out = {{"model", model}, {"rounds", rounds}, {"tokens", n_tokens}, {"load_average_1m", load}, {"modes", Json::array()}};
  for (const auto& m : modes) {
    const double tps = median(m.tps);
    char line[200];
    std::snprintf(line, sizeof line, "| %s | %.2f | %.2fx |\n", m.name.c_str(), tps, base > 0 ? tps / base : 0.0);
    table << line;
    out["modes"].push_back(Json{{"name", m.name}, {"tokens_per_s", m.tps}, {"median", tps}, {"ratio", base > 0 ? tps / base : 0.0}});
  }
  std::printf("%s", table.str().c_str());
  std::printf("load average (1 min) at the end: %.1f\n", load);
  if (!json_out.empty()) std::ofstream(json_out) << out.dump(2) << "\n";
  if (!doc.empty()) {
    std::ifstream in(doc);
    std::stringstream old;
    old << in.rdbuf();
    const std::string name = model.substr(model.find_last_of('/') + 1);
    std::ostringstream body;
    body << "## Constrained decoding\n\n"
         << "`bench_constrained_decoding_bench` on " << name << ", " << utc_date() << ": one stream, 2 threads, "
         << rounds << " interleaved rounds of " << n_tokens << " tokens each (decode tokens/s after the first token, "
         << "median). Load average at the end: " << load << " (a shared machine: read the ratios, not the speeds).\n\n"
         << table.str() << "\n";
    const std::string tmp = doc + ".tmp";
    std::ofstream(tmp) << replace_doc_section(old.str(), "constrained-decoding", body.str());
    if (std::rename(tmp.c_str(), doc.c_str()) != 0) die("cannot write " + doc);
  }
  return 0;
}

}  // namespace hearth::bench

int main(int argc, char** argv) { return hearth::bench::run(argc, argv); }
