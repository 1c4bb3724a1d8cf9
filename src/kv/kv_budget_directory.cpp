// The KV budget directory: listing, liveness, gc, the machine-wide limit and its fair split;
// see kv_budget_directory.h.
#include "kv/kv_budget_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/file_io.h"

namespace hearth::kv {
namespace {

constexpr const char* kSegmentSuffix = ".seg";
constexpr const char* kTempPrefix = ".";
constexpr const char* kTempSuffix = ".seg.tmp";
constexpr const char* kMachineLimitFile = "machine-limit";
constexpr const char* kMachineLimitHeader = "hearth-kv-machine-limit 1";
// Newer layouts may grow; this much is mapped at most.
constexpr size_t kMaxSegmentMap = 4096;

Error errno_error(const std::string& what, const std::string& path) {
  const int err = errno;
  return make_error(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo, what + " '" + path + "': " + std::strerror(err));
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

// "<pid>-<ticks>" (the name without prefix and suffix) into its two numbers.
bool parse_owner_name(std::string_view stem, int64_t* pid, uint64_t* ticks) {
  const size_t dash = stem.find('-');
  if (dash == std::string_view::npos) return false;
  const auto p = parse_u64(stem.substr(0, dash));
  const auto t = parse_u64(stem.substr(dash + 1));
  if (!p || !t || *p == 0 || *p > INT32_MAX) return false;
  *pid = static_cast<int64_t>(*p);
  *ticks = *t;
  return true;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Segment files (and, with `temporaries`, unfinished ones) in `dir` with the owner their name gives.
struct NamedFile {
  std::string path;
  int64_t pid;
  uint64_t ticks;
  bool temporary;
};
std::vector<NamedFile> named_files(const std::string& dir) {
  std::vector<NamedFile> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    std::string_view stem;
    bool temporary = false;
    if (ends_with(name, kTempSuffix) && name.substr(0, 1) == kTempPrefix) {
      stem = name.substr(1, name.size() - 1 - std::strlen(kTempSuffix));
      temporary = true;
    } else if (ends_with(name, kSegmentSuffix) && name.substr(0, 1) != kTempPrefix) {
      stem = name.substr(0, name.size() - std::strlen(kSegmentSuffix));
    } else {
      continue;
    }
    int64_t pid = 0;
    uint64_t ticks = 0;
    if (!parse_owner_name(stem, &pid, &ticks)) continue;
    out.push_back({dir + "/" + std::string(name), pid, ticks, temporary});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const NamedFile& a, const NamedFile& b) { return a.pid < b.pid; });
  return out;
}

// Maps a segment file (read-only, or read-write for a controller) after checking what it is.
struct SegmentMapping {
  void* memory = nullptr;
  size_t size = 0;
  ~SegmentMapping() {
    if (memory != nullptr) ::munmap(memory, size);
  }
};
Status map_segment(const std::string& path, bool writable, SegmentMapping* out) {
  const int fd = ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno_error("cannot open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorKind::kCorrupt, "'" + path + "' is not a regular file");
  }
  const size_t size = std::min(static_cast<size_t>(st.st_size), kMaxSegmentMap);
  if (size < sizeof(BudgetSegmentLayout)) {
    // Too short to be a segment of any version, and mapping it would fault past its end.
    ::close(fd);
    return make_error(ErrorKind::kCorrupt, "segment is " + std::to_string(st.st_size) + " bytes (truncated; a segment is " +
                                               std::to_string(sizeof(BudgetSegmentLayout)) + ")");
  }
  void* mem = ::mmap(nullptr, size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mem == MAP_FAILED) return errno_error("cannot map", path);
  out->memory = mem;
  out->size = size;
  return ok_status();
}

}  // namespace

std::string budget_directory_path() {
  if (const char* dir = std::getenv("HEARTH_KV_DIR"); dir != nullptr && dir[0] != '\0') return dir;
  return "/dev/shm/hearth-kv-" + std::to_string(::getuid());
}

Status ensure_budget_directory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return errno_error("cannot create the KV budget directory", dir);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return errno_error("cannot inspect the KV budget directory", dir);
  if (!S_ISDIR(st.st_mode)) {
    return make_error(ErrorKind::kInvalidArgument, "KV budget directory '" + dir +
                                                       "' is not a directory (a link or a file): remove it or set "
                                                       "HEARTH_KV_DIR to another place");
  }
  if (st.st_uid != ::getuid()) {
    return make_error(ErrorKind::kInvalidArgument, "KV budget directory '" + dir + "' belongs to uid " +
                                                       std::to_string(st.st_uid) +
                                                       ", not to you: remove it or set HEARTH_KV_DIR to another place");
  }
  if ((st.st_mode & 077) != 0) {
    return make_error(ErrorKind::kInvalidArgument, "KV budget directory '" + dir +
                                                       "' is open to other users: chmod 700 it");
  }
  return ok_status();
}

// Field `wanted` (3 or more) of /proc/<pid>/stat's text as a number.
static std::optional<uint64_t> proc_stat_field(std::string_view stat_text, int wanted) {
  // "pid (comm) state ppid ..." where comm may hold spaces and parentheses: fields count from
  // the last ')'.
  const size_t close = stat_text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat_text.substr(close + 1);
  for (int field = 3; field <= wanted; ++field) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const size_t end = std::min(rest.find(' '), rest.size());
    std::string_view word = rest.substr(0, end);
    if (!word.empty() && word.back() == '\n') word.remove_suffix(1);
    if (field == wanted) return parse_u64(word);
    if (word.empty()) return std::nullopt;
    rest.remove_prefix(end);
  }
  return std::nullopt;
}

std::optional<uint64_t> parse_proc_stat_start_ticks(std::string_view stat_text) {
  return proc_stat_field(stat_text, 22);  // starttime
}

std::optional<int64_t> process_parent_pid(int64_t pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!text.ok()) return std::nullopt;
  auto ppid = proc_stat_field(*text, 4);
  if (!ppid) return std::nullopt;
  return static_cast<int64_t>(*ppid);
}

uint64_t budget_committed_bytes(const std::vector<BudgetEntry>& entries, const std::function<bool(int64_t pid)>& skip) {
  uint64_t sum = 0;
  for (const BudgetEntry& e : entries) {
    if (!e.owner_alive || !e.snapshot) continue;
    if (skip && skip(e.snapshot->pid)) continue;
    sum += e.snapshot->committed_bytes;
  }
  return sum;
}

std::optional<uint64_t> process_start_ticks(int64_t pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!text.ok()) return std::nullopt;
  return parse_proc_stat_start_ticks(*text);
}

bool budget_owner_alive(int64_t pid, uint64_t start_ticks) {
  if (pid <= 0 || pid > INT32_MAX) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  // A zombie still has a pid but holds no memory.
  auto text = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!text.ok()) return ::access("/proc/self/stat", R_OK) != 0;  // no /proc: trust kill()
  const size_t close = text->rfind(')');
  if (close != std::string::npos && close + 2 < text->size() && (*text)[close + 2] == 'Z') return false;
  const auto ticks = parse_proc_stat_start_ticks(*text);
  return ticks.has_value() && *ticks == start_ticks;
}

std::string budget_segment_file_name(int64_t pid, uint64_t start_ticks) {
  return std::to_string(pid) + "-" + std::to_string(start_ticks) + kSegmentSuffix;
}

std::string BudgetEntry::state_name() const {
  if (!owner_alive) return "dead";
  if (!snapshot) return "unreadable";
  if (heartbeat_age_s > kBudgetStallSeconds) return "stalled";
  return budget_state_name(snapshot->state);
}

BudgetEntry read_budget_entry(const std::string& path, int64_t pid, uint64_t start_ticks) {
  BudgetEntry e;
  e.path = path;
  e.pid = pid;
  e.start_ticks = start_ticks;
  e.owner_alive = budget_owner_alive(pid, start_ticks);
  SegmentMapping map;
  if (Status s = map_segment(path, false, &map); !s.ok()) {
    e.problem = s.error().message;
    return e;
  }
  auto snap = read_budget_segment(map.memory, map.size);
  if (!snap.ok()) {
    e.problem = snap.error().message;
    return e;
  }
  if (snap->pid != pid || snap->start_ticks != start_ticks) {
    e.problem = "segment names pid " + std::to_string(snap->pid) + " but its file name names pid " + std::to_string(pid);
    return e;
  }
  const uint64_t now = budget_clock_ns();
  e.heartbeat_age_s = now > snap->heartbeat_ns ? static_cast<double>(now - snap->heartbeat_ns) / 1e9 : 0.0;
  e.snapshot = std::move(*snap);
  return e;
}

std::vector<BudgetEntry> list_budget_entries(const std::string& dir) {
  std::vector<BudgetEntry> out;
  for (const NamedFile& f : named_files(dir)) {
    if (!f.temporary) out.push_back(read_budget_entry(f.path, f.pid, f.ticks));
  }
  return out;
}

std::vector<BudgetEntry> collect_budget_garbage(const std::string& dir) {
  std::vector<BudgetEntry> removed;
  for (const NamedFile& f : named_files(dir)) {
    if (budget_owner_alive(f.pid, f.ticks)) continue;
    BudgetEntry e = f.temporary ? BudgetEntry{} : read_budget_entry(f.path, f.pid, f.ticks);
    e.path = f.path;
    e.pid = f.pid;
    e.start_ticks = f.ticks;
    e.owner_alive = false;
    // Another gc may have removed it first; either way it is gone.
    if (::unlink(f.path.c_str()) == 0 || errno == ENOENT) removed.push_back(std::move(e));
  }
  return removed;
}

Result<uint64_t> read_machine_limit(const std::string& dir) {
  const std::string path = dir + "/" + kMachineLimitFile;
  auto text = read_file(path);
  if (!text.ok()) {
    if (text.error().kind == ErrorKind::kNotFound) return kNoBudgetLimit;
    return text.error();
  }
  const Error garbage = make_error(ErrorKind::kCorrupt, "'" + path +
                                                            "' is not a machine-wide KV limit file; "
                                                            "`hearth kv limit all SIZE|none` rewrites it");
  const std::string& t = *text;
  const std::string header = std::string(kMachineLimitHeader) + "\n";
  if (t.compare(0, header.size(), header) != 0) return garbage;
  std::string_view rest = std::string_view(t).substr(header.size());
  constexpr std::string_view kKey = "limit_bytes ";
  if (rest.substr(0, kKey.size()) != kKey || rest.empty() || rest.back() != '\n') return garbage;
  rest = rest.substr(kKey.size(), rest.size() - kKey.size() - 1);
  if (rest == "none") return kNoBudgetLimit;
  const auto v = parse_u64(rest);
  if (!v || *v > kBudgetAbsurdBytes) return garbage;
  return *v;
}

Status write_machine_limit(const std::string& dir, uint64_t limit_bytes) {
  HEARTH_TRY(ensure_budget_directory(dir));
  const std::string lock_path = dir + "/" + kMachineLimitFile + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock < 0) return errno_error("cannot open", lock_path);
  // flock is released when the process dies, so a killed writer never leaves it held.
  while (::flock(lock, LOCK_EX) != 0) {
    if (errno != EINTR) {
      Error e = errno_error("cannot lock", lock_path);
      ::close(lock);
      return e;
    }
  }
  const std::string value = limit_bytes == kNoBudgetLimit ? "none" : std::to_string(limit_bytes);
  Status s = write_file_atomic(dir + "/" + kMachineLimitFile,
                               std::string(kMachineLimitHeader) + "\nlimit_bytes " + value + "\n");
  ::close(lock);
  return s;
}

Status write_requested_limit(const BudgetEntry& entry, uint64_t limit_bytes) {
  SegmentMapping map;
  HEARTH_TRY(map_segment(entry.path, true, &map));
  auto snap = read_budget_segment(map.memory, map.size);
  if (!snap.ok()) return snap.error().with_context("'" + entry.path + "'");
  write_budget_requested_limit(*static_cast<BudgetSegmentLayout*>(map.memory), limit_bytes);
  return ok_status();
}

std::vector<uint64_t> split_machine_limit(uint64_t machine_limit, std::span<const uint64_t> caps) {
  std::vector<uint64_t> shares(caps.size(), 0);
  std::vector<size_t> order(caps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return caps[a] != caps[b] ? caps[a] < caps[b] : a < b; });
  uint64_t left = machine_limit;
  for (size_t k = 0; k < order.size(); ++k) {
    const uint64_t equal = left / (order.size() - k);
    const uint64_t share = std::min(caps[order[k]], equal);
    shares[order[k]] = share;
    left -= share;
  }
  return shares;
}

uint64_t effective_budget_limit(int64_t pid, uint64_t start_ticks, const std::vector<BudgetEntry>& entries,
                                uint64_t machine_limit) {
  uint64_t own_request = kNoBudgetLimit;
  std::vector<uint64_t> caps;
  std::optional<size_t> self;
  for (const BudgetEntry& e : entries) {
    if (!e.owner_alive || !e.snapshot) continue;
    const BudgetSnapshot& s = *e.snapshot;
    if (s.pid == pid && s.start_ticks == start_ticks) {
      self = caps.size();
      own_request = s.requested_limit_bytes;
    }
    caps.push_back(std::min(s.reserved_bytes, s.requested_limit_bytes));
  }
  if (machine_limit == kNoBudgetLimit || !self) return own_request;
  const auto shares = split_machine_limit(machine_limit, caps);
  return std::min(own_request, shares[*self]);
}

}  // namespace hearth::kv
