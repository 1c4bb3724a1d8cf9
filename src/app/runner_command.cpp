// `hearth runner`: the child process of router mode. The router (`hearth serve` without -m)
// starts it with one end of a socket as --runner-fd and serve's model options; it loads the
// model, reports loading/ready/failed and its memory, and serves requests over the socket
// (runner/runner_service.h) until the router says stop or dies. It exits when its parent does
// (parent-death signal, armed before exec and checked again here), so it never outlives it.
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "app/commands.h"
#include "app/model_info_builder.h"
#include "app/sampling_flags.h"
#include "app/serve_kv_budget.h"
#include "app/serve_settings.h"
#include "engine/local_backend.h"
#include "protocol/runner_wire.h"
#include "runner/runner_service.h"
#include "util/byte_size.h"
#include "util/log.h"

namespace hearth::app {
namespace {

const char* const kUsage =
    "hearth runner --runner-fd FD --parent-pid PID -m FILE.gguf [serve's model options]\n"
    "  started by `hearth serve` (router mode) for each loaded model; not meant to be run by hand";

std::vector<SettingSpec> runner_settings() {
  std::vector<SettingSpec> specs = serve_settings();
  specs.push_back({"runner_fd", 0, SettingType::kInt, "-1", "the socket to the router", "", SettingRange::between(-1, 1 << 20)});
  specs.push_back({"parent_pid", 0, SettingType::kInt, "0", "the router's pid (the runner exits when it is gone)", "",
                   SettingRange::between(0, 1 << 30)});
  return specs;
}

uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

void send_failed(protocol::RunnerChannel& ch, const Error& e) {
  protocol::RunnerState st;
  st.phase = protocol::RunnerState::Phase::kFailed;
  st.error = e;
  (void)ch.send({protocol::RunnerMessage::kState, 0, 0, protocol::encode_runner_state(st)});
}

}  // namespace

int run_runner(const CommandArgs& args) {
  Settings s(runner_settings());
  if (auto st = s.parse(args); !st.ok()) {
    std::fprintf(stderr, "hearth runner: %s\n", st.error().message.c_str());
    return 2;
  }
  if (s.help_requested()) {
    std::printf("%s", s.help_text(kUsage).c_str());
    return 0;
  }
  const int fd = static_cast<int>(s.get_int("runner_fd"));
  const auto parent = static_cast<pid_t>(s.get_int("parent_pid"));
  if (fd < 0 || parent <= 0 || s.get_string("model").empty()) {
    std::fprintf(stderr, "hearth runner: needs --runner-fd, --parent-pid and -m (it is started by `hearth serve`)\n");
    return 2;
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    std::fprintf(stderr, "hearth runner: the router (pid %d) is gone; exiting\n", static_cast<int>(parent));
    return 1;
  }
  std::signal(SIGPIPE, SIG_IGN);
  protocol::RunnerChannel channel(fd);
  (void)channel.send({protocol::RunnerMessage::kState, 0, 0, protocol::encode_runner_state({})});

  const std::string path = s.get_string("model");
  const std::string alias = s.get_string("alias");
  const auto n_slots = static_cast<int32_t>(s.get_int("parallel"));
  auto ctx_opts = context_options_from(s);
  if (!ctx_opts.ok()) return send_failed(channel, ctx_opts.error()), 1;
  engine::ServingOptions serving;
  if (auto st = apply_kv_cache_caps(s, serving); !st.ok()) return send_failed(channel, st.error()), 1;
  auto template_source = chat_template_from(s);
  if (!template_source.ok()) return send_failed(channel, template_source.error()), 1;
  int32_t per_request_ctx = 0;
  if (auto st = plan_and_check_memory(s, path, n_slots, *ctx_opts, per_request_ctx); !st.ok()) {
    return send_failed(channel, st.error()), 1;
  }

  auto kv_budget = ServeKvBudget::start(alias.empty() ? std::filesystem::path(path).stem().string() : alias);
  auto ctx = engine::InferenceContext::load(path, *ctx_opts);
  if (!ctx.ok()) return send_failed(channel, ctx.error()), 1;
  protocol::ModelInfo card = build_model_info(**ctx, path, alias, *template_source);
  card.aliases.clear();  // a stored model answers to its stored name only
  serving.n_slots = n_slots;
  serving.step_token_budget = static_cast<int32_t>(s.get_int("batch_tokens"));
  serving.max_queue = static_cast<int32_t>(s.get_int("max_queue"));
  apply_kv_unified(s, per_request_ctx, serving);
  const double load_ms = (*ctx)->load_ms();
  auto backend = engine::LocalBackend::create(std::move(ctx).value(), serving, std::move(card));
  if (!backend.ok()) return send_failed(channel, backend.error()), 1;
  if (kv_budget) kv_budget->attach(*backend);
  log_info("runner ready", {{"model", (*backend)->model_info().name}, {"load_ms", load_ms}, {"pid", static_cast<int>(::getpid())}});

  std::error_code ec;
  const uint64_t weights = std::filesystem::file_size(path, ec);
  std::shared_ptr<engine::LocalBackend> local = *backend;
  runner::RunnerHooks hooks;
  hooks.sample_state = [local, weights] {
    protocol::RunnerState st;
    st.resident_bytes = resident_bytes();
    st.weights_bytes = weights;
    const kv::KvPoolStats kv = local->kv_pool_stats();
    st.kv_committed_bytes = kv.committed_bytes;
    st.kv_limit_bytes = kv.limit_bytes;
    const protocol::EngineMetrics m = local->metrics();
    st.busy_slots = m.requests_processing;
    st.waiting = m.requests_waiting;
    return st;
  };
  hooks.set_kv_limit = [local](uint64_t bytes) { local->set_kv_limit(static_cast<size_t>(bytes)); };
  hooks.shrink_kv = [local] {
    // A limit of one byte makes the engine evict every cached prefix and release empty chunks;
    // the limit is lifted again once they are gone (or after half a second).
    local->set_kv_limit(1);
    for (int i = 0; i < 50 && local->kv_pool_stats().committed_bytes > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    local->set_kv_limit(0);
  };
  const int rc = runner::serve_runner(channel, local, hooks);
  kv_budget.reset();
  return rc;
}

}  // namespace hearth::app
