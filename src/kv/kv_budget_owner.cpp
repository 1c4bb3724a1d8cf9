// The owner side of the cross-process KV budget; see kv_budget_owner.h.
#include "kv/kv_budget_owner.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kv/kv_budget_directory.h"
#include "util/log.h"
#include "util/system_memory.h"

namespace hearth::kv {
namespace {

Error errno_error(const std::string& what, const std::string& path) {
  return make_error(ErrorKind::kIo, what + " '" + path + "': " + std::strerror(errno));
}

std::string limit_text(uint64_t bytes) { return bytes == kNoBudgetLimit ? "none" : format_bytes(bytes); }

}  // namespace

Result<std::unique_ptr<KvBudgetRegistration>> KvBudgetRegistration::create(const KvBudgetOptions& options) {
  std::unique_ptr<KvBudgetRegistration> r(new KvBudgetRegistration());
  r->options_ = options;
  r->directory_ = options.directory.empty() ? budget_directory_path() : options.directory;
  HEARTH_TRY(ensure_budget_directory(r->directory_));
  r->pid_ = ::getpid();
  r->start_ticks_ = process_start_ticks(r->pid_).value_or(0);
  r->reserved_ = options.reserved_bytes;

  const auto removed = collect_budget_garbage(r->directory_);
  if (!removed.empty()) log_info("kv budget: removed segments of dead processes", {{"count", removed.size()}});

  const std::string name = budget_segment_file_name(r->pid_, r->start_ticks_);
  const std::string tmp = r->directory_ + "/." + name + ".tmp";
  r->path_ = r->directory_ + "/" + name;
  ::unlink(tmp.c_str());  // a leftover of this very process's failed attempt
  const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return errno_error("cannot create the KV budget segment", tmp);
  void* mem = MAP_FAILED;
  if (::ftruncate(fd, sizeof(BudgetSegmentLayout)) == 0) {
    mem = ::mmap(nullptr, sizeof(BudgetSegmentLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (mem == MAP_FAILED) {
    Error e = errno_error("cannot size or map the KV budget segment", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  }
  ::close(fd);
  r->segment_ = static_cast<BudgetSegmentLayout*>(mem);
  init_budget_segment(*r->segment_, r->pid_, r->start_ticks_, options.label, options.reserved_bytes, budget_clock_ns());
  // link() fails rather than replace: one segment per process.
  const bool linked = ::link(tmp.c_str(), r->path_.c_str()) == 0;
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (!linked) {
    ::munmap(r->segment_, sizeof(BudgetSegmentLayout));
    r->segment_ = nullptr;
    errno = link_errno;
    if (link_errno == EEXIST) {
      return make_error(ErrorKind::kUnavailable, "this process already has a KV budget segment ('" + r->path_ + "')");
    }
    return errno_error("cannot publish the KV budget segment", r->path_);
  }
  r->heartbeat();
  log_info("kv budget registered", {{"segment", r->path_}, {"label", options.label},
                                    {"reserved", format_bytes(options.reserved_bytes)}, {"limit", limit_text(r->limit())}});
  return r;
}

KvBudgetRegistration::~KvBudgetRegistration() {
  stop_heartbeat();
  if (segment_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    write_budget_usage(*segment_, reserved_, committed_, used_, BudgetState::kExiting);
  }
  ::unlink(path_.c_str());
  ::munmap(segment_, sizeof(BudgetSegmentLayout));
}

BudgetState KvBudgetRegistration::state_locked() const {
  if (!ready_) return BudgetState::kStarting;
  return committed_ > limit_ || used_ > limit_ ? BudgetState::kOverLimit : BudgetState::kServing;
}

void KvBudgetRegistration::publish_locked() { write_budget_usage(*segment_, reserved_, committed_, used_, state_locked()); }

void KvBudgetRegistration::update(uint64_t committed_bytes, uint64_t used_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  committed_ = committed_bytes;
  used_ = used_bytes;
  publish_locked();
}

void KvBudgetRegistration::set_reserved(uint64_t reserved_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ = reserved_bytes;
  publish_locked();
}

void KvBudgetRegistration::set_usage_source(std::function<KvBudgetUsage()> source) {
  std::lock_guard<std::mutex> lock(mu_);
  usage_source_ = std::move(source);
}

void KvBudgetRegistration::mark_ready() {
  std::lock_guard<std::mutex> lock(mu_);
  ready_ = true;
  publish_locked();
}

uint64_t KvBudgetRegistration::limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_;
}

bool KvBudgetRegistration::over_limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_locked() == BudgetState::kOverLimit;
}

void KvBudgetRegistration::heartbeat() {
  std::function<KvBudgetUsage()> source;
  {
    std::lock_guard<std::mutex> lock(mu_);
    source = usage_source_;
  }
  if (source) {
    const KvBudgetUsage usage = source();
    update(usage.committed_bytes, usage.used_bytes);
  }
  write_budget_heartbeat(*segment_, budget_clock_ns());
  auto machine = read_machine_limit(directory_);
  uint64_t machine_limit = kNoBudgetLimit;
  if (machine.ok()) {
    machine_limit = *machine;
    warned_machine_limit_ = false;
  } else if (!warned_machine_limit_) {
    log_warn("kv budget: ignoring the machine-wide limit", {{"error", machine.error().message}});
    warned_machine_limit_ = true;
  }
  const uint64_t limit = effective_budget_limit(pid_, start_ticks_, list_budget_entries(directory_), machine_limit);
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (limit != limit_) {
      limit_ = limit;
      write_budget_limit(*segment_, limit);
      publish_locked();
    }
    changed = limit != reported_limit_;
    reported_limit_ = limit;
  }
  if (!changed) return;
  log_info("kv budget limit changed", {{"limit", limit_text(limit)}, {"over_limit", over_limit()}});
  if (options_.client != nullptr) options_.client->on_limit_changed(limit);
}

void KvBudgetRegistration::start_heartbeat() {
  std::lock_guard<std::mutex> lock(beat_mu_);
  if (beat_thread_.joinable()) return;
  stopping_ = false;
  beat_thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(beat_mu_);
    while (!beat_cv_.wait_for(lock, options_.heartbeat_period, [this] { return stopping_; })) {
      lock.unlock();
      heartbeat();
      lock.lock();
    }
  });
}

void KvBudgetRegistration::stop_heartbeat() {
  {
    std::lock_guard<std::mutex> lock(beat_mu_);
    stopping_ = true;
  }
  beat_cv_.notify_all();
  if (beat_thread_.joinable()) beat_thread_.join();
}

}  // namespace hearth::kv
