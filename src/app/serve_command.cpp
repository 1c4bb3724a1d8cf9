// `hearth serve -m FILE.gguf`: serves one model over HTTP with the ollama, OpenAI and Anthropic
// APIs; `hearth serve` without -m serves the model store, loading the model a request names. The address is bound first and printed ("hearth: listening on http://HOST:PORT"), so a
// caller that started it with --port 0 learns the port; /health answers 503 until the model is
// loaded, then 200. SIGINT/SIGTERM stop it cleanly.
#include <malloc.h>
#include <pthread.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>

#include "app/commands.h"
#include "app/web_ui_assets.h"
#include "app/model_info_builder.h"
#include "device/device.h"
#include "app/sampling_flags.h"
#include "app/serve_kv_budget.h"
#include "app/serve_settings.h"
#include "kv/kv_budget_directory.h"
#include "api/keep_alive.h"
#include "router/model_router.h"
#include "router/runner_client.h"
#include <map>
#include <mutex>
#include <unistd.h>
#include "cli/ollama_client.h"
#include "server/access_policy.h"
#include "engine/default_chat_template.h"
#include "engine/local_backend.h"
#include "engine/memory_estimate.h"
#include "server/http_server.h"
#include "store/model_store.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/byte_size.h"
#include "util/file_keyed_cache.h"
#include "util/system_memory.h"

namespace hearth::app {
namespace {

const char* const kUsage =
    "hearth serve [-m FILE.gguf] [options]\n"
    "  without -m: serves the model store ($HEARTH_MODELS, ~/.hearth/models; an ollama store is read too), loading the "
    "model each request names";

constexpr double kInt32Max = SettingRange::kInt32Max;

// The per-request context when neither --ctx-size nor --request-ctx says: the model's training
// context, at most this (docs/decisions.md). KV pages are committed only as tokens are written,
// so a larger default costs nothing while idle.
constexpr int32_t kDefaultRequestCtxMax = 8192;

}  // namespace

std::vector<SettingSpec> serve_settings() {
  std::vector<SettingSpec> specs = model_run_settings();
  for (auto& s : specs) {
    if (s.name == "ctx_size") {
      s.help = "KV cache tokens for all slots together, split evenly among them (0: --request-ctx x --parallel)";
    }
  }
  specs.push_back(SettingSpec{"request_ctx", 0, SettingType::kInt, "0",
                              "context tokens of each request (slot) when --ctx-size is 0 (0: the model's training context, at most " +
                                  std::to_string(kDefaultRequestCtxMax) + ")",
                              "HEARTH_REQUEST_CTX", SettingRange::between(0, kInt32Max)}
                      .with_env_fallback("OLLAMA_CONTEXT_LENGTH"));
  specs.push_back(SettingSpec{"host", 0, SettingType::kString, "127.0.0.1", "address to bind, HOST or HOST:PORT", "HEARTH_HOST"}
                      .with_env_fallback("OLLAMA_HOST"));
  specs.push_back({"port", 0, SettingType::kInt, "-1", "port to bind (0: any free port; -1: from --host, else 11434)", "HEARTH_PORT",
                   SettingRange::between(-1, 65535)});
  specs.push_back({"alias", 'a', SettingType::kString, "", "model name to answer to (default: the file name without .gguf)", "HEARTH_ALIAS"});
  specs.push_back(SettingSpec{"parallel", 0, SettingType::kInt, "4", "requests generated at once (slots)", "HEARTH_PARALLEL",
                              SettingRange::between(1, 256)}
                      .with_aliases({"-np", "--n-parallel"})
                      .with_env_fallback("OLLAMA_NUM_PARALLEL"));
  specs.push_back(SettingSpec{"batch_tokens", 0, SettingType::kInt, "512",
                              "tokens in one engine step (decode + prompt chunks); llama-server's -b and -ub both set it",
                              "HEARTH_BATCH_TOKENS", SettingRange::between(1, kInt32Max)}
                      .with_aliases({"-b", "--batch-size", "-ub", "--ubatch-size"}));
  specs.push_back(SettingSpec{"max_queue", 0, SettingType::kInt, "512", "requests waiting for a slot before new ones get 503",
                              "HEARTH_MAX_QUEUE", SettingRange::between(0, kInt32Max)}
                      .with_env_fallback("OLLAMA_MAX_QUEUE"));
  specs.push_back({"chat_template", 0, SettingType::kString, "",
                   "built-in chat template to use instead of the model's: chatml, llama3 or plain (a file path is still read "
                   "as a Jinja file)",
                   "HEARTH_CHAT_TEMPLATE"});
  specs.push_back({"chat_template_file", 0, SettingType::kString, "", "Jinja chat template file to use instead of the model's",
                   "HEARTH_CHAT_TEMPLATE_FILE"});
  specs.push_back({"jinja", 0, SettingType::kBool, "", "accepted for llama-server compatibility: Hearth always uses Jinja templates", ""});
  specs.push_back({"api_key", 0, SettingType::kString, "", "require this key (Authorization: Bearer KEY or x-api-key); /health stays open", "HEARTH_API_KEY"});
  specs.push_back({"api_key_file", 0, SettingType::kString, "", "read the key of --api-key from this file (its one non-empty line)", "HEARTH_API_KEY_FILE"});
  specs.push_back(SettingSpec{"origins", 0, SettingType::kString, "", "extra browser origins allowed by CORS, comma-separated ('*' for any)",
                              "HEARTH_ORIGINS"}
                      .with_env_fallback("OLLAMA_ORIGINS"));
  specs.push_back({"allowed_hosts", 0, SettingType::kString, "",
                   "extra Host names to answer besides loopback and --host, comma-separated ('*.example.com', '*' for any); "
                   "any host is answered when an API key is set", "HEARTH_ALLOWED_HOSTS"});
  specs.push_back({"max_body_bytes", 0, SettingType::kInt, "33554432", "largest request body accepted (413 beyond)", "HEARTH_MAX_BODY_BYTES",
                   SettingRange::at_least(1024)});
  specs.push_back({"http_threads", 0, SettingType::kInt, "64", "HTTP requests served at once (worker threads; waiting connections hold none)", "HEARTH_HTTP_THREADS",
                   SettingRange::between(4, 4096)});
  specs.push_back({"max_connections", 0, SettingType::kInt, "512",
                   "open HTTP connections in all; more are answered 503 and closed", "HEARTH_MAX_CONNECTIONS",
                   SettingRange::between(1, 65536)});
  specs.push_back({"max_connections_per_client", 0, SettingType::kInt, "128",
                   "open HTTP connections from one client address; more are answered 503 and closed",
                   "HEARTH_MAX_CONNECTIONS_PER_CLIENT", SettingRange::between(1, 65536)});
  specs.push_back({"stream_buffer_bytes", 0, SettingType::kInt, "4194304", "replay bytes kept per resumable stream (X-Conversation-Id)", "HEARTH_STREAM_BUFFER_BYTES",
                   SettingRange::at_least(1024)});
  specs.push_back({"stream_keep_seconds", 0, SettingType::kInt, "300", "how long a finished resumable stream stays replayable", "HEARTH_STREAM_KEEP_SECONDS",
                   SettingRange::at_least(0)});
  specs.push_back({"max_streams", 0, SettingType::kInt, "256", "resumable streams held at once", "HEARTH_MAX_STREAMS",
                   SettingRange::at_least(1)});
  specs.push_back({"kv_idle_cache", 0, SettingType::kString, std::to_string(engine::kDefaultIdleCacheBytes >> 20) + "MiB",
                   "cached prompt prefixes (KV) kept once the server has been idle for a second; the rest of the KV "
                   "memory goes back to the system (0: all of it)", "HEARTH_KV_IDLE_CACHE"});
  specs.push_back({"kv_busy_cache", 0, SettingType::kString, std::to_string(engine::kDefaultBusyCacheBytes >> 20) + "MiB",
                   "cached prompt prefixes (KV) of finished requests kept while others run; beyond it the oldest go "
                   "and their memory goes back to the system", "HEARTH_KV_BUSY_CACHE"});
  specs.push_back(SettingSpec{"kv_unified", 0, SettingType::kBool, "",
                              "slots share the KV cache instead of splitting it: each request may use the whole context, "
                              "more run at once, and one the cache cannot hold any more waits and is recomputed",
                              "HEARTH_KV_UNIFIED"}
                      .with_aliases({"-kvu"}));
  specs.push_back({"context_shift", 0, SettingType::kBool, "",
                   "a generation that fills its context keeps n_keep tokens (+ BOS), drops half of the rest and goes on "
                   "(llama-server's context shift) instead of stopping",
                   "HEARTH_CONTEXT_SHIFT"});
  specs.push_back({"allow_local_files", 0, SettingType::kBool, "",
                   "store mode: let /api/create name GGUF files by their path on this machine (registered in place by hard "
                   "link); off, clients upload files with POST /api/blobs",
                   "HEARTH_ALLOW_LOCAL_FILES"});
  specs.push_back({"no_memory_check", 0, SettingType::kBool, "",
                   "load even when weights + KV cache + buffers exceed the available memory", "HEARTH_NO_MEMORY_CHECK"});
  specs.push_back(SettingSpec{"max_loaded_models", 0, SettingType::kInt, "3",
                              "store mode: models loaded at once, each in its own runner process (0: no cap)",
                              "HEARTH_MAX_LOADED_MODELS", SettingRange::between(0, 1024)}
                      .with_env_fallback("OLLAMA_MAX_LOADED_MODELS"));
  specs.push_back(SettingSpec{"keep_alive", 0, SettingType::kString, "5m",
                              "store mode: how long an idle model stays loaded (a duration such as 5m or 1h, seconds, 0: unload "
                              "at once, negative: forever); a request's keep_alive overrides it",
                              "HEARTH_KEEP_ALIVE"}
                      .with_env_fallback("OLLAMA_KEEP_ALIVE"));
  specs.push_back({"max_memory", 0, SettingType::kString, "0",
                   "store mode: memory all loaded models may use together (weights + KV + buffers, e.g. 8GiB; 0: only the "
                   "machine's available memory limits it)", "HEARTH_MAX_MEMORY"});
  specs.push_back({"load_timeout", 0, SettingType::kInt, "300", "store mode: seconds a model may take to load before its runner is killed",
                   "HEARTH_LOAD_TIMEOUT", SettingRange::between(1, 86400)});
  specs.push_back({"ssl_key_file", 0, SettingType::kString, "", "serve HTTPS with this PEM private key (with --ssl-cert-file)",
                   "HEARTH_SSL_KEY_FILE"});
  specs.push_back({"ssl_cert_file", 0, SettingType::kString, "",
                   "serve HTTPS with this PEM certificate or chain (with --ssl-key-file)", "HEARTH_SSL_CERT_FILE"});
  return specs;
}

namespace {

int fail(const std::string& message, int status = 2) {
  std::fprintf(stderr, "hearth serve: %s\n", message.c_str());
  return status;
}

// The GPUs this server can use, one line each, as ollama lists them at start. The router (store
// mode) runs no kernel, so it discovers them in a child process: in-process discovery would keep
// the Vulkan loader and every driver mapped (lavapipe's libLLVM: ~50 MiB of its idle RSS). It
// forks, so it runs before any thread starts.
std::string gpu_device_lines(bool in_child) {
  const char* hearth_gpu = std::getenv("HEARTH_GPU");
  if (hearth_gpu != nullptr && device::gpu_disabled(hearth_gpu)) {
    return std::string("hearth: HEARTH_GPU=") + hearth_gpu + ": models run on the CPU\n";
  }
  auto devices = in_child ? device::list_devices_in_child() : device::list_devices();
  if (!devices.ok()) return "hearth: no GPU (" + devices.error().message + "); models run on the CPU\n";
  if (devices->empty()) return "hearth: no GPU; models run on the CPU\n";
  std::string lines;
  for (size_t i = 0; i < devices->size(); ++i) lines += "hearth: GPU " + device::describe_device(i, (*devices)[i]) + "\n";
  return lines;
}

// Sets o.n_ctx (all slots together): --ctx-size when given (llama-server's meaning, split among
// the slots), else the per-request context (--request-ctx, or the model's training context at
// most kDefaultRequestCtxMax) times the slots. Warns when a request may go beyond the training
// context. Reads only the model's header.
Status plan_context(const Settings& s, const std::string& path, int32_t n_slots, engine::ContextOptions& o,
                    int32_t& per_request_ctx) {
  HEARTH_ASSIGN(const int32_t n_train, engine::read_train_context(path));
  int64_t per_request = 0;
  if (s.get_int("ctx_size") > 0) {
    per_request = s.get_int("ctx_size") / n_slots;
    if (s.get_int("request_ctx") > 0) log_warn("--request-ctx is ignored when --ctx-size is given", {});
  } else {
    per_request = s.get_int("request_ctx") > 0 ? s.get_int("request_ctx")
                                               : std::min<int64_t>(n_train > 0 ? n_train : 4096, kDefaultRequestCtxMax);
    const int64_t total = per_request * n_slots;
    if (total > static_cast<int64_t>(SettingRange::kInt32Max)) {
      return make_error(ErrorKind::kInvalidArgument, "--request-ctx " + std::to_string(per_request) + " x --parallel " +
                                                         std::to_string(n_slots) + " is more than 2^31 tokens");
    }
    o.n_ctx = static_cast<int32_t>(total);
  }
  if (n_train > 0 && per_request > n_train) {
    log_warn("context per request is beyond the model's training context; output may degrade past it",
             {{"model", path}, {"request_ctx", static_cast<long long>(per_request)}, {"n_ctx_train", n_train}});
  }
  per_request_ctx = static_cast<int32_t>(per_request);
  return ok_status();
}

// --api-key, or the one non-empty line of --api-key-file.
Result<std::string> api_key_from(const Settings& s) {
  const std::string file = s.get_string("api_key_file");
  if (file.empty()) return s.get_string("api_key");
  if (!s.get_string("api_key").empty()) {
    return make_error(ErrorKind::kInvalidArgument, "give --api-key or --api-key-file, not both");
  }
  HEARTH_ASSIGN(std::string text, read_file(file));
  std::vector<std::string> keys;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.erase(line.begin());
    if (!line.empty()) keys.push_back(line);
    at = end + 1;
  }
  if (keys.size() != 1) {
    return make_error(ErrorKind::kInvalidArgument, "--api-key-file " + file + ": needs exactly one key (one non-empty line), found " +
                                                       std::to_string(keys.size()));
  }
  return keys[0];
}

// The template text to use instead of the model's ("" for the model's own): a built-in name
// from --chat-template, or a Jinja file from --chat-template-file (or, as before, a file path
// given to --chat-template).
}  // namespace

Result<std::string> chat_template_from(const Settings& s) {
  const std::string name = s.get_string("chat_template");
  const std::string file = s.get_string("chat_template_file");
  if (!name.empty() && !file.empty()) {
    return make_error(ErrorKind::kInvalidArgument, "give --chat-template NAME or --chat-template-file FILE, not both");
  }
  if (!file.empty()) return read_file(file);
  if (name.empty()) return std::string();
  if (auto text = engine::builtin_chat_template(name)) return *text;
  struct stat st {};
  if (::stat(name.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return read_file(name);
  std::string names;
  for (const auto& [n, text] : engine::builtin_chat_templates()) names += (names.empty() ? "" : ", ") + n;
  return make_error(ErrorKind::kInvalidArgument, "--chat-template: unknown template name '" + name + "' (built-in: " + names +
                                                     "; for a Jinja file use --chat-template-file FILE)");
}

// The context plan and, unless --no-memory-check, the memory check for one model file.
Status plan_and_check_memory(const Settings& s, const std::string& path, int32_t n_slots, engine::ContextOptions& o,
                             int32_t& per_request_ctx) {
  HEARTH_TRY(plan_context(s, path, n_slots, o, per_request_ctx));
  if (s.get_bool("no_memory_check")) return ok_status();
  auto need = engine::estimate_memory(path, o, static_cast<int32_t>(s.get_int("batch_tokens")));
  if (!need.ok()) return make_error(need.error().kind, need.error().to_string());
  HEARTH_TRY(engine::check_memory_fits(*need, o.kv_type, memory_available_bytes()));
  log_info("memory estimate", {{"model", path}, {"need", need->describe(o.kv_type)}});
  return ok_status();
}

// --kv-idle-cache and --kv-busy-cache, parsed once for serve and runner.
Status apply_kv_cache_caps(const Settings& s, engine::ServingOptions& serving) {
  const std::pair<const char*, size_t*> caps[] = {{"kv_idle_cache", &serving.idle_cache_bytes},
                                                  {"kv_busy_cache", &serving.busy_cache_bytes}};
  for (const auto& cap : caps) {
    auto bytes = parse_byte_size(s.get_string(cap.first));
    if (!bytes.ok()) {
      std::string flag = std::string("--") + cap.first;
      std::replace(flag.begin(), flag.end(), '_', '-');
      return make_error(ErrorKind::kInvalidArgument, flag + ": " + bytes.error().message);
    }
    *cap.second = static_cast<size_t>(*bytes);
  }
  return {};
}

// --kv-unified: the slots share the pool. Each request may then use the whole --ctx-size when one
// is given (llama-server's meaning), else its own context (--request-ctx or the model's).
// --context-shift: every generation shifts its context when full instead of stopping.
void apply_serving_flags(const Settings& s, int32_t per_request_ctx, engine::ServingOptions& serving) {
  serving.context_shift = s.get_bool("context_shift");
  serving.kv_unified = s.get_bool("kv_unified");
  if (serving.kv_unified) serving.n_ctx_slot = s.get_int("ctx_size") > 0 ? 0 : per_request_ctx;
}

namespace {

// The flags a runner gets from serve: its model and serving options (the environment, which
// runners inherit, carries the rest).
const char* const kRunnerForwarded[] = {"ctx_size", "threads", "kv_type", "cache_type_k", "cache_type_v", "request_ctx",
                                        "parallel", "batch_tokens", "max_queue", "kv_idle_cache", "kv_busy_cache", "chat_template",
                                        "chat_template_file", "no_memory_check", "kv_unified", "context_shift"};

// Router mode: the scheduler, and how a stored model becomes a runner and a memory figure.
Result<std::pair<std::shared_ptr<router::ModelRouter>, std::function<router::ModelLoadSpec(const store::ModelDescription&)>>>
start_model_router(const Settings& s, const engine::ContextOptions& base, const CommandArgs&) {
  router::RouterOptions ro;
  ro.max_loaded = static_cast<int32_t>(s.get_int("max_loaded_models"));
  ro.max_waiting = static_cast<int32_t>(s.get_int("max_queue"));
  const std::string keep = s.get_string("keep_alive");
  const bool numeric = !keep.empty() && keep.find_first_not_of("-+0123456789.") == std::string::npos;
  auto keep_ms = api::parse_keep_alive_ms(numeric ? api::Json(std::stod(keep)) : api::Json(keep));
  if (!keep_ms.ok()) return make_error(ErrorKind::kInvalidArgument, "--keep-alive: " + keep_ms.error().message);
  ro.default_keep_alive_ms = *keep_ms;
  auto max_memory = parse_byte_size(s.get_string("max_memory"));
  if (!max_memory.ok()) return make_error(ErrorKind::kInvalidArgument, "--max-memory: " + max_memory.error().message);
  ro.memory_limit = *max_memory;
  ro.available_memory = [] { return memory_available_bytes(); };
  // The cross-process KV budget: its machine-wide limit, and the KV committed by processes that
  // are not this router's runners (its children; their KV is in their reported memory).
  ro.kv_budget = []() -> std::optional<router::KvBudgetView> {
    const std::string dir = kv::budget_directory_path();
    auto limit = kv::read_machine_limit(dir);
    if (!limit.ok() || *limit == kv::kNoBudgetLimit) return std::nullopt;
    router::KvBudgetView view;
    view.machine_limit = std::max<uint64_t>(*limit, 1);  // a limit of 0 admits no KV at all
    const int64_t self = ::getpid();
    view.committed_by_others =
        kv::budget_committed_bytes(kv::list_budget_entries(dir), [self](int64_t pid) { return kv::process_parent_pid(pid) == self; });
    return view;
  };

  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return make_error(ErrorKind::kIo, "cannot find the hearth executable for runners: " + ec.message());
  std::vector<std::string> forwarded;
  for (const char* name : kRunnerForwarded) {
    if (!s.is_set(name)) continue;
    std::string flag = "--";
    for (const char* c = name; *c; ++c) flag += *c == '_' ? '-' : *c;
    forwarded.push_back(flag);
    const std::string flag_name = name;
    if (flag_name != "no_memory_check" && flag_name != "kv_unified" && flag_name != "context_shift") {
      forwarded.push_back(s.get_string(name));
    }
  }
  const auto load_timeout = std::chrono::seconds(s.get_int("load_timeout"));
  const auto batch = static_cast<int32_t>(s.get_int("batch_tokens"));
  // Paths by key: the starter gets only the spec.
  auto paths = std::make_shared<std::pair<std::mutex, std::map<std::string, std::string>>>();
  auto starter = [exe, forwarded, load_timeout, paths](const router::ModelLoadSpec& spec,
                                                       const router::LoadProgress& progress) -> Result<std::shared_ptr<router::ModelRunner>> {
    std::string path;
    {
      std::lock_guard lock(paths->first);
      path = paths->second[spec.key];
    }
    router::RunnerLaunch launch;
    launch.argv = {exe, "runner", "--runner-fd", "3", "--parent-pid", std::to_string(::getpid()), "-m", path, "--alias", spec.name};
    launch.argv.insert(launch.argv.end(), forwarded.begin(), forwarded.end());
    launch.model_name = spec.name;
    launch.load_timeout = load_timeout;
    launch.on_progress = progress;
    const auto t0 = std::chrono::steady_clock::now();
    HEARTH_ASSIGN(auto client, router::RunnerClient::start(launch));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("hearth: model '%s' ready in runner pid %d (loaded in %.0f ms)\n", spec.name.c_str(), static_cast<int>(client->pid()), ms);
    std::fflush(stdout);
    return std::shared_ptr<router::ModelRunner>(client);
  };
  const auto slots = static_cast<uint64_t>(std::max<int64_t>(1, s.get_int("parallel")));
  // Estimates by blob (path, size and mtime): every routed request asks for a spec, and reading a
  // large vocabulary's GGUF header each time cost ~15 ms per request with a 1B model.
  auto estimates = std::make_shared<FileKeyedCache<engine::MemoryEstimate>>(
      [base, batch](const std::string& model_path) { return engine::estimate_memory(model_path, base, batch); });
  auto make_spec = [paths, slots, estimates](const store::ModelDescription& d) {
    router::ModelLoadSpec spec;
    spec.name = d.stored.name.display();
    spec.key = d.stored.manifest_digest + " " + spec.name;
    // KV is committed as tokens arrive (elastic KV), so a model starts with weights + buffers;
    // what its KV commits later shows in the runner's reported memory.
    constexpr uint64_t kRunnerOverhead = 32u << 20;  // the runner process itself, tokenizer, a first KV chunk
    const Result<engine::MemoryEstimate> need = estimates->get(d.model_path);
    spec.need_bytes = (need.ok() ? need->weights_bytes + need->work_bytes : 0) + kRunnerOverhead;
    // Its first KV, for the machine-wide KV budget: one slot's full context.
    spec.kv_need_bytes = need.ok() ? need->kv_bytes / slots : 0;
    std::lock_guard lock(paths->first);
    paths->second[spec.key] = d.model_path;
    return spec;
  };
  auto r = std::make_shared<router::ModelRouter>(ro, starter);
  r->start_timer();
  return std::make_pair(r, std::function<router::ModelLoadSpec(const store::ModelDescription&)>(make_spec));
}

}  // namespace

int run_serve(const CommandArgs& args) {
  Settings s(serve_settings());
  if (auto st = s.parse(args); !st.ok()) return fail(st.error().message);
  if (s.help_requested()) {
    std::printf("%s", s.help_text(kUsage).c_str());
    return 0;
  }
  if (!s.positionals().empty()) return fail("unexpected argument '" + s.positionals()[0] + "'");
  auto ctx_opts = context_options_from(s);
  if (!ctx_opts.ok()) return fail(ctx_opts.error().message);
  engine::ServingOptions serving;
  if (auto st = apply_kv_cache_caps(s, serving); !st.ok()) return fail(st.error().message);
  const std::string path = s.get_string("model");
  const bool store_mode = path.empty();
  const auto n_slots = static_cast<int32_t>(s.get_int("parallel"));
  int32_t per_request_ctx = 0;
  if (!store_mode) {
    if (s.get_bool("allow_local_files")) return fail("--allow-local-files is for serving the model store (no -m)");
    if (auto st = plan_and_check_memory(s, path, n_slots, *ctx_opts, per_request_ctx); !st.ok()) return fail(st.error().message, 1);
  } else if (!s.get_string("alias").empty()) {
    return fail("--alias needs -m FILE (stored models answer to their stored names)");
  }

  server::ServerOptions o;
  auto address = cli::parse_server_address(s.get_string("host"));
  if (!address.ok()) return fail("--host: " + address.error().message);
  o.host = address->host;
  o.port = address->port;
  const int64_t port = s.get_int("port");
  if (port >= 0) o.port = static_cast<int>(port);
  auto api_key = api_key_from(s);
  if (!api_key.ok()) return fail(api_key.error().message);
  o.api_key = *api_key;
  o.origins = server::AccessPolicy::parse_origin_list(s.get_string("origins"));
  o.allowed_hosts = server::AccessPolicy::parse_origin_list(s.get_string("allowed_hosts"));
  // The table's ranges (serve_settings) already hold every number below.
  o.max_body_bytes = static_cast<size_t>(s.get_int("max_body_bytes"));
  o.http_threads = static_cast<int>(s.get_int("http_threads"));
  o.max_connections = static_cast<size_t>(s.get_int("max_connections"));
  o.max_connections_per_client = static_cast<size_t>(s.get_int("max_connections_per_client"));
  o.stream_buffer_bytes = static_cast<size_t>(s.get_int("stream_buffer_bytes"));
  o.stream_keep_seconds = s.get_int("stream_keep_seconds");
  o.max_streams = static_cast<size_t>(s.get_int("max_streams"));
  o.version = HEARTH_VERSION;
  o.web_ui = embedded_web_ui();
  if (store_mode) {
    o.store = std::make_shared<const store::ModelStore>(store::ModelStore::open_default());
    o.allow_local_files = s.get_bool("allow_local_files");
  }
  o.tls_cert_file = s.get_string("ssl_cert_file");
  o.tls_key_file = s.get_string("ssl_key_file");
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return fail("--ssl-cert-file and --ssl-key-file go together: give both to serve HTTPS, or neither");
  }

  serving.n_slots = n_slots;
  serving.step_token_budget = static_cast<int32_t>(s.get_int("batch_tokens"));
  serving.max_queue = static_cast<int32_t>(s.get_int("max_queue"));
  if (!store_mode) apply_serving_flags(s, per_request_ctx, serving);

  auto template_source = chat_template_from(s);
  if (!template_source.ok()) return fail(template_source.error().message);

  // A client that disappears must never kill the server; SIGINT/SIGTERM are taken by sigwait.
  std::signal(SIGPIPE, SIG_IGN);
  // Request bodies of megabytes (and their parsed copies) are allocated and freed per request.
  // glibc raises its mmap threshold after each such free, so later ones come from the heap and
  // their pages stay with the process (five 8 MB bodies left RSS 58 MiB higher). A fixed
  // threshold maps every block of 1 MiB or more on its own and unmaps it when freed.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const std::string gpu_lines = gpu_device_lines(store_mode);
  // Router mode's settings are checked before anything is bound.
  Result<std::pair<std::shared_ptr<router::ModelRouter>, std::function<router::ModelLoadSpec(const store::ModelDescription&)>>> routed =
      make_error(ErrorKind::kUnavailable, "no router");
  if (store_mode) {
    routed = start_model_router(s, *ctx_opts, args);
    if (!routed.ok()) return fail(routed.error().message);
  }
  server::HttpServer http(o);
  if (auto st = http.bind(); !st.ok()) return fail(st.error().message, 1);
  http.start();
  const std::string shown_host = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  std::printf("hearth: listening on %s://%s:%d\n", o.tls_cert_file.empty() ? "http" : "https", shown_host.c_str(), http.port());
  std::fputs(gpu_lines.c_str(), stdout);
  std::fflush(stdout);
  if (store_mode) {
    std::string fallbacks;
    for (const auto& r : o.store->read_only_roots()) fallbacks += (fallbacks.empty() ? "" : ", ") + r;
    const std::string read_only = fallbacks.empty() ? "" : " (read-only: " + fallbacks + ")";
    std::printf("hearth: serving the model store at %s%s\n", o.store->root().c_str(), read_only.c_str());
    std::fflush(stdout);
    http.set_model_router(routed->first, routed->second);
    // Like ollama at start-up: temporary files of interrupted writes and blobs no manifest names
    // go, once they are an hour old (younger ones may belong to a write in progress).
    if (auto gc = o.store->collect_garbage(std::chrono::hours(1)); gc.ok()) {
      if (!gc->removed_blobs.empty() || !gc->removed_temp_files.empty()) {
        log_info("store cleaned", {{"blobs", static_cast<long long>(gc->removed_blobs.size())},
                                   {"temp_files", static_cast<long long>(gc->removed_temp_files.size())},
                                   {"bytes", static_cast<long long>(gc->bytes_freed)}});
      }
    } else {
      log_warn("store not cleaned", {{"error", gc.error().to_string()}});
    }
    log_info("serving the model store", {{"store", o.store->root()}, {"port", http.port()}});
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::printf("hearth: stopping (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    std::fflush(stdout);
    routed->first->stop_all();  // running requests end with an error event; runners exit
    http.stop();
    return 0;
  }

  // Registered before loading, so `hearth kv ls` shows the process as starting meanwhile.
  std::string budget_label = s.get_string("alias");
  if (budget_label.empty()) budget_label = std::filesystem::path(path).stem().string();
  auto kv_budget = ServeKvBudget::start(budget_label);

  auto ctx = engine::InferenceContext::load(path, *ctx_opts);
  if (!ctx.ok()) {
    http.stop();
    return fail(ctx.error().to_string(), 1);
  }
  protocol::ModelInfo card = build_model_info(**ctx, path, s.get_string("alias"), *template_source);
  const double load_ms = (*ctx)->load_ms();
  auto backend = engine::LocalBackend::create(std::move(ctx).value(), serving, std::move(card));
  if (!backend.ok()) {
    http.stop();
    return fail(backend.error().to_string(), 1);
  }
  http.set_backend(*backend);
  if (kv_budget) kv_budget->attach(*backend);
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
  kv_budget.reset();  // no limit reaches the engine once it is shutting down
  (*backend)->shut_down();
  http.stop();
  return 0;
}

}  // namespace hearth::app
