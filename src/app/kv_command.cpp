// `hearth kv ls|top|limit|gc`: looks at and steers the KV memory of every Hearth serving
// process of this user on this machine, through the budget directory each one publishes its
// segment in (kv/kv_budget_directory.h). `ls` is a table (or JSON), `top` the same table live,
// `limit` sets one process's limit or the machine-wide one that all of them share, and `gc`
// removes what processes killed without an orderly exit left behind.
#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/commands.h"
#include "kv/kv_budget_directory.h"
#include "util/byte_size.h"
#include "util/settings.h"
#include "util/system_memory.h"

namespace hearth::app {
namespace {

using kv::BudgetEntry;
using kv::kNoBudgetLimit;

const char* const kUsage =
    "hearth kv ls [--json]                list serving processes and their KV memory\n"
    "       hearth kv top [--once]               the same table, refreshed every second (q or Ctrl-C ends)\n"
    "       hearth kv limit PID|LABEL|all SIZE   set a process's KV limit, or the machine-wide one\n"
    "                                            (SIZE: 512MiB, 2G, 0, or none to remove it)\n"
    "       hearth kv gc                         remove entries of processes that are gone\n\n"
    "Processes publish their segments in $HEARTH_KV_DIR, by default /dev/shm/hearth-kv-<uid>.";

std::vector<SettingSpec> kv_settings() {
  return {
      {"json", 0, SettingType::kBool, "false", "ls: print one JSON object instead of a table", ""},
      {"once", 0, SettingType::kBool, "false", "top: print one table and exit", ""},
  };
}

std::string limit_text(uint64_t bytes) { return bytes == kNoBudgetLimit ? "none" : format_bytes(bytes); }

int fail(const std::string& message, int status = 1) {
  std::fprintf(stderr, "hearth kv: %s\n", message.c_str());
  return status;
}

// The budget directory, checked; an unsafe one is an error rather than something to read.
Result<std::string> checked_directory() {
  const std::string dir = kv::budget_directory_path();
  HEARTH_TRY(kv::ensure_budget_directory(dir));
  return dir;
}

std::string heartbeat_text(const BudgetEntry& e) {
  if (!e.owner_alive || !e.snapshot) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs ago", e.heartbeat_age_s);
  return buf;
}

// The table `ls` and `top` print, with a summary line and notes on unreadable entries.
std::string render_table(const std::string& dir, const std::vector<BudgetEntry>& entries,
                         const Result<uint64_t>& machine_limit) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %-24s %-11s %10s %10s %10s %10s %12s\n", "PID", "LABEL", "STATE", "RESERVED",
                "COMMITTED", "USED", "LIMIT", "HEARTBEAT");
  out += line;
  uint64_t committed = 0, used = 0;
  int live = 0, dead = 0;
  std::string notes;
  for (const BudgetEntry& e : entries) {
    const auto* s = e.snapshot ? &*e.snapshot : nullptr;
    const std::string label = s ? s->label.substr(0, 24) : "?";
    std::snprintf(line, sizeof line, "%-8lld %-24s %-11s %10s %10s %10s %10s %12s\n", static_cast<long long>(e.pid),
                  label.c_str(), e.state_name().c_str(), s ? format_bytes(s->reserved_bytes).c_str() : "-",
                  s ? format_bytes(s->committed_bytes).c_str() : "-", s ? format_bytes(s->used_bytes).c_str() : "-",
                  s ? limit_text(s->limit_bytes).c_str() : "-", heartbeat_text(e).c_str());
    out += line;
    if (!e.owner_alive) {
      ++dead;
    } else {
      ++live;
      if (s) committed += s->committed_bytes, used += s->used_bytes;
    }
    if (!e.problem.empty()) notes += "note: pid " + std::to_string(e.pid) + ": " + e.problem + "\n";
  }
  if (entries.empty()) out += "(no Hearth serving processes registered in " + dir + ")\n";
  out += "\n" + std::to_string(live) + " live process" + (live == 1 ? "" : "es") + ": committed " +
         format_bytes(committed) + ", used " + format_bytes(used) + "; machine-wide limit " +
         (machine_limit.ok() ? limit_text(*machine_limit) : "unreadable") + "\n";
  if (!machine_limit.ok()) notes += "note: " + machine_limit.error().message + "\n";
  if (dead > 0) notes += "note: " + std::to_string(dead) + " entr" + (dead == 1 ? "y belongs" : "ies belong") +
                         " to processes that are gone; `hearth kv gc` removes them\n";
  return out + notes;
}

nlohmann::json limit_json(uint64_t bytes) { return bytes == kNoBudgetLimit ? nlohmann::json(nullptr) : nlohmann::json(bytes); }

int run_ls(bool json) {
  auto dir = checked_directory();
  if (!dir.ok()) return fail(dir.error().message);
  const auto entries = kv::list_budget_entries(*dir);
  const auto machine_limit = kv::read_machine_limit(*dir);
  if (!json) {
    std::printf("%s", render_table(*dir, entries, machine_limit).c_str());
    return 0;
  }
  nlohmann::json out = {{"directory", *dir}, {"processes", nlohmann::json::array()}};
  out["machine_limit_bytes"] = machine_limit.ok() ? limit_json(*machine_limit) : nlohmann::json(nullptr);
  if (!machine_limit.ok()) out["machine_limit_problem"] = machine_limit.error().message;
  for (const BudgetEntry& e : entries) {
    nlohmann::json p = {{"pid", e.pid}, {"state", e.state_name()}, {"alive", e.owner_alive}};
    if (e.snapshot) {
      const auto& s = *e.snapshot;
      p["label"] = s.label;
      p["reserved_bytes"] = s.reserved_bytes;
      p["committed_bytes"] = s.committed_bytes;
      p["used_bytes"] = s.used_bytes;
      p["limit_bytes"] = limit_json(s.limit_bytes);
      p["requested_limit_bytes"] = limit_json(s.requested_limit_bytes);
      p["heartbeat_age_s"] = e.heartbeat_age_s;
    }
    if (!e.problem.empty()) p["problem"] = e.problem;
    out["processes"].push_back(std::move(p));
  }
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

volatile sig_atomic_t g_top_interrupted = 0;
void on_top_signal(int) { g_top_interrupted = 1; }

int run_top(bool once) {
  auto dir = checked_directory();
  if (!dir.ok()) return fail(dir.error().message);
  const auto frame = [&] {
    return render_table(*dir, kv::list_budget_entries(*dir), kv::read_machine_limit(*dir));
  };
  if (once) {
    std::printf("%s", frame().c_str());
    return 0;
  }
  // Raw keys from a terminal so `q` ends it without Enter; Ctrl-C ends it too, and the
  // terminal's settings come back either way.
  struct sigaction sa {};
  sa.sa_handler = on_top_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  termios saved{};
  const bool tty_in = ::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &saved) == 0;
  if (tty_in) {
    termios raw = saved;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  }
  const bool tty_out = ::isatty(STDOUT_FILENO);
  bool read_keys = true;
  while (!g_top_interrupted) {
    std::printf("%s%s(q or Ctrl-C quits)\n", tty_out ? "\x1b[H\x1b[2J" : "", frame().c_str());
    std::fflush(stdout);
    pollfd p{STDIN_FILENO, POLLIN, 0};
    const int ready = ::poll(&p, read_keys ? 1 : 0, 1000);
    if (ready == 1) {
      char c = 0;
      const ssize_t n = ::read(STDIN_FILENO, &c, 1);
      if (n == 1 && (c == 'q' || c == 'Q')) break;
      if (n == 0) read_keys = false;  // stdin at end of file: only Ctrl-C ends it now
    }
  }
  if (tty_in) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  return 0;
}

int run_limit(const std::vector<std::string>& words) {
  if (words.size() != 2) return fail(std::string("limit takes a target and a size\n\nUsage: ") + kUsage, 2);
  const std::string& target = words[0];
  uint64_t bytes = kNoBudgetLimit;
  if (words[1] != "none") {
    auto parsed = parse_byte_size(words[1]);
    if (!parsed.ok()) return fail(parsed.error().message + " (or none to remove the limit)", 2);
    bytes = *parsed;
  }
  auto dir = checked_directory();
  if (!dir.ok()) return fail(dir.error().message);
  const auto entries = kv::list_budget_entries(*dir);
  if (target == "all") {
    if (Status s = kv::write_machine_limit(*dir, bytes); !s.ok()) return fail(s.error().message);
    int live = 0;
    uint64_t committed = 0;
    for (const auto& e : entries) {
      if (e.owner_alive && e.snapshot) ++live, committed += e.snapshot->committed_bytes;
    }
    std::printf("machine-wide KV limit: %s, shared fairly by %d live process%s (applied at their next heartbeat, "
                "within about a second)\n",
                limit_text(bytes).c_str(), live, live == 1 ? "" : "es");
    if (bytes != kNoBudgetLimit && committed > bytes) {
      std::printf("they hold %s now: each one over its share stops admitting new requests, evicts cached blocks and "
                  "lets running sequences finish\n",
                  format_bytes(committed).c_str());
    }
    return 0;
  }
  const bool numeric = !target.empty() && target.find_first_not_of("0123456789") == std::string::npos;
  std::vector<const BudgetEntry*> targets;
  for (const auto& e : entries) {
    if (!e.owner_alive || !e.snapshot) continue;
    if (numeric ? std::to_string(e.pid) == target : e.snapshot->label == target) targets.push_back(&e);
  }
  if (targets.empty()) {
    return fail("no live Hearth serving process " + std::string(numeric ? "with pid " : "labelled ") + target +
                " (`hearth kv ls` lists them; `all` sets the machine-wide limit)");
  }
  for (const BudgetEntry* e : targets) {
    if (Status s = kv::write_requested_limit(*e, bytes); !s.ok()) return fail(s.error().message);
    std::printf("pid %lld (%s): KV limit %s (applied at its next heartbeat, within about a second)\n",
                static_cast<long long>(e->pid), e->snapshot->label.c_str(), limit_text(bytes).c_str());
    if (bytes != kNoBudgetLimit && e->snapshot->committed_bytes > bytes) {
      std::printf("it holds %s now: it stops admitting new requests, evicts cached blocks and lets running "
                  "sequences finish\n",
                  format_bytes(e->snapshot->committed_bytes).c_str());
    }
  }
  return 0;
}

int run_gc() {
  auto dir = checked_directory();
  if (!dir.ok()) return fail(dir.error().message);
  const auto removed = kv::collect_budget_garbage(*dir);
  for (const auto& e : removed) {
    std::printf("removed pid %lld (%s)\n", static_cast<long long>(e.pid),
                e.snapshot ? e.snapshot->label.c_str() : e.problem.empty() ? "unfinished" : "unreadable");
  }
  std::printf("%zu stale entr%s removed\n", removed.size(), removed.size() == 1 ? "y" : "ies");
  return 0;
}

}  // namespace

int run_kv(const CommandArgs& args) {
  Settings settings(kv_settings());
  if (Status parsed = settings.parse(args); !parsed.ok()) {
    std::fprintf(stderr, "hearth kv: %s\n\n%s", parsed.error().message.c_str(), settings.help_text(kUsage).c_str());
    return 2;
  }
  const auto& words = settings.positionals();
  if (settings.help_requested()) {
    std::printf("%s", settings.help_text(kUsage).c_str());
    return 0;
  }
  if (words.empty()) {
    std::fprintf(stderr, "hearth kv: which kv command?\n\n%s", settings.help_text(kUsage).c_str());
    return 2;
  }
  const std::string& verb = words[0];
  const std::vector<std::string> rest(words.begin() + 1, words.end());
  if (verb == "ls" && rest.empty()) return run_ls(settings.get_bool("json"));
  if (verb == "top" && rest.empty()) return run_top(settings.get_bool("once"));
  if (verb == "limit") return run_limit(rest);
  if (verb == "gc" && rest.empty()) return run_gc();
  return fail("unknown kv command '" + verb + (rest.empty() ? "" : " ...") + "'\n\nUsage: " + kUsage, 2);
}

}  // namespace hearth::app
