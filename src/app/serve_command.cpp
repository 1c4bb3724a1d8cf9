// `hearth serve -m FILE.gguf`: serves one model over HTTP with the ollama, OpenAI and Anthropic
// APIs. The address is bound first and printed ("hearth: listening on http://HOST:PORT"), so a
// caller that started it with --port 0 learns the port; /health answers 503 until the model is
// loaded, then 200. SIGINT/SIGTERM stop it cleanly.
#include <csignal>
#include <cstdio>
#include <pthread.h>

#include "app/commands.h"
#include "app/model_info_builder.h"
#include "app/sampling_flags.h"
#include "cli/ollama_client.h"
#include "server/access_policy.h"
#include "engine/local_backend.h"
#include "server/http_server.h"
#include "util/file_io.h"
#include "util/log.h"

namespace hearth::app {
namespace {

const char* const kUsage = "hearth serve -m FILE.gguf [options]";

constexpr double kInt32Max = SettingRange::kInt32Max;

std::vector<SettingSpec> serve_settings() {
  std::vector<SettingSpec> specs = model_run_settings();
  for (auto& s : specs) {
    if (s.name == "ctx_size") s.help = "KV cache tokens for all slots together (0: the model's context, at most 4096)";
  }
  specs.push_back({"host", 0, SettingType::kString, "127.0.0.1", "address to bind, HOST or HOST:PORT", "HEARTH_HOST"});
  specs.push_back({"port", 0, SettingType::kInt, "-1", "port to bind (0: any free port; -1: from --host, else 11434)", "HEARTH_PORT",
                   SettingRange::between(-1, 65535)});
  specs.push_back({"alias", 'a', SettingType::kString, "", "model name to answer to (default: the file name without .gguf)", "HEARTH_ALIAS"});
  specs.push_back({"parallel", 0, SettingType::kInt, "4", "requests generated at once (slots)", "HEARTH_PARALLEL",
                   SettingRange::between(1, 256)});
  specs.push_back({"batch_tokens", 0, SettingType::kInt, "512", "tokens in one engine step (decode + prompt chunks)", "HEARTH_BATCH_TOKENS",
                   SettingRange::between(1, kInt32Max)});
  specs.push_back({"max_queue", 0, SettingType::kInt, "512", "requests waiting for a slot before new ones get 503", "HEARTH_MAX_QUEUE",
                   SettingRange::between(0, kInt32Max)});
  specs.push_back({"chat_template", 0, SettingType::kString, "", "Jinja chat template file to use instead of the model's", "HEARTH_CHAT_TEMPLATE"});
  specs.push_back({"api_key", 0, SettingType::kString, "", "require this key (Authorization: Bearer KEY or x-api-key); /health stays open", "HEARTH_API_KEY"});
  specs.push_back({"origins", 0, SettingType::kString, "", "extra browser origins allowed by CORS, comma-separated ('*' for any)", "HEARTH_ORIGINS"});
  specs.push_back({"max_body_bytes", 0, SettingType::kInt, "33554432", "largest request body accepted (413 beyond)", "HEARTH_MAX_BODY_BYTES",
                   SettingRange::at_least(1024)});
  specs.push_back({"http_threads", 0, SettingType::kInt, "64", "HTTP connections served at once", "HEARTH_HTTP_THREADS",
                   SettingRange::between(4, 4096)});
  specs.push_back({"stream_buffer_bytes", 0, SettingType::kInt, "4194304", "replay bytes kept per resumable stream (X-Conversation-Id)", "HEARTH_STREAM_BUFFER_BYTES",
                   SettingRange::at_least(1024)});
  specs.push_back({"stream_keep_seconds", 0, SettingType::kInt, "300", "how long a finished resumable stream stays replayable", "HEARTH_STREAM_KEEP_SECONDS",
                   SettingRange::at_least(0)});
  specs.push_back({"max_streams", 0, SettingType::kInt, "256", "resumable streams held at once", "HEARTH_MAX_STREAMS",
                   SettingRange::at_least(1)});
  return specs;
}

int fail(const std::string& message, int status = 2) {
  std::fprintf(stderr, "hearth serve: %s\n", message.c_str());
  return status;
}

}  // namespace

int run_serve(const CommandArgs& args) {
  Settings s(serve_settings());
  if (auto st = s.parse(args); !st.ok()) return fail(st.error().message);
  if (s.help_requested()) {
    std::printf("%s", s.help_text(kUsage).c_str());
    return 0;
  }
  if (s.get_string("model").empty()) return fail("no model given; use -m FILE.gguf");
  if (!s.positionals().empty()) return fail("unexpected argument '" + s.positionals()[0] + "'");
  auto ctx_opts = context_options_from(s);
  if (!ctx_opts.ok()) return fail(ctx_opts.error().message);

  server::ServerOptions o;
  auto address = cli::parse_server_address(s.get_string("host"));
  if (!address.ok()) return fail("--host: " + address.error().message);
  o.host = address->host;
  o.port = address->port;
  const int64_t port = s.get_int("port");
  if (port >= 0) o.port = static_cast<int>(port);
  o.api_key = s.get_string("api_key");
  o.origins = server::AccessPolicy::parse_origin_list(s.get_string("origins"));
  // The table's ranges (serve_settings) already hold every number below.
  o.max_body_bytes = static_cast<size_t>(s.get_int("max_body_bytes"));
  o.http_threads = static_cast<int>(s.get_int("http_threads"));
  o.stream_buffer_bytes = static_cast<size_t>(s.get_int("stream_buffer_bytes"));
  o.stream_keep_seconds = s.get_int("stream_keep_seconds");
  o.max_streams = static_cast<size_t>(s.get_int("max_streams"));
  o.version = HEARTH_VERSION;

  engine::ServingOptions serving;
  serving.n_slots = static_cast<int32_t>(s.get_int("parallel"));
  serving.step_token_budget = static_cast<int32_t>(s.get_int("batch_tokens"));
  serving.max_queue = static_cast<int32_t>(s.get_int("max_queue"));

  std::string template_source;
  if (!s.get_string("chat_template").empty()) {
    auto text = read_file(s.get_string("chat_template"));
    if (!text.ok()) return fail(text.error().message);
    template_source = *text;
  }

  // A client that disappears must never kill the server; SIGINT/SIGTERM are taken by sigwait.
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  server::HttpServer http(o);
  if (auto st = http.bind(); !st.ok()) return fail(st.error().message, 1);
  http.start();
  const std::string shown_host = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  std::printf("hearth: listening on http://%s:%d\n", shown_host.c_str(), http.port());
  std::fflush(stdout);

  const std::string path = s.get_string("model");
  auto ctx = engine::InferenceContext::load(path, *ctx_opts);
  if (!ctx.ok()) {
    http.stop();
    return fail(ctx.error().to_string(), 1);
  }
  protocol::ModelInfo card = build_model_info(**ctx, path, s.get_string("alias"), template_source);
  const double load_ms = (*ctx)->load_ms();
  auto backend = engine::LocalBackend::create(std::move(ctx).value(), serving, std::move(card));
  if (!backend.ok()) {
    http.stop();
    return fail(backend.error().to_string(), 1);
  }
  http.set_backend(*backend);
  std::printf("hearth: model '%s' ready (%s, %d slots of %d tokens, loaded in %.0f ms)\n", (*backend)->model_info().name.c_str(),
              (*backend)->model_info().quantization.c_str(), serving.n_slots, (*backend)->model_info().n_ctx_slot, load_ms);
  std::fflush(stdout);
  log_info("serving", {{"model", (*backend)->model_info().name}, {"port", http.port()}});

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::printf("hearth: stopping (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  // End every running request with an error event (its client sees why it ended; new ones get
  // 503) and wait for the HTTP threads to take those events, then stop accepting and join.
  // Closing the listener first would make cpp-httplib drop running streams mid-response.
  (*backend)->shut_down();
  http.stop();
  return 0;
}

}  // namespace hearth::app
