// The place every serving process's KV budget segment lives, and what anyone can do with the
// set: list the segments with their owners' liveness, remove those of dead owners (gc), read
// and write the machine-wide limit, set one process's requested limit, and split the
// machine-wide limit fairly. Used by the owner side (kv_budget_owner.h) and by `hearth kv`.
//
// Layout: a directory, by default /dev/shm/hearth-kv-<uid> (tmpfs: memory, never disk, gone at
// reboot like the processes it describes; HEARTH_KV_DIR overrides it), mode 0700 and owned by
// the user, holding one `<pid>-<start ticks>.seg` file (0600) per serving process, the
// machine-wide limit in `machine-limit` (text, replaced atomically) and `machine-limit.lock`
// (flock'ed while the limit is changed).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/kv_budget_segment.h"
#include "util/result.h"

namespace hearth::kv {

// A heartbeat older than this marks a live owner as stalled (stopped or hung) in listings.
inline constexpr double kBudgetStallSeconds = 10.0;

// The directory: HEARTH_KV_DIR when set, else /dev/shm/hearth-kv-<uid>.
std::string budget_directory_path();
// Creates the directory (0700) if missing, then checks that it is a real directory (not a
// link), owned by this user, and not open to group or others; an error says what to fix.
Status ensure_budget_directory(const std::string& dir);

// Start time (clock ticks since boot, field 22) from the text of /proc/<pid>/stat.
std::optional<uint64_t> parse_proc_stat_start_ticks(std::string_view stat_text);
std::optional<uint64_t> process_start_ticks(int64_t pid);
// The parent of `pid` (field 4 of /proc/<pid>/stat); nullopt when it cannot be read.
std::optional<int64_t> process_parent_pid(int64_t pid);
// True when `pid` exists and, where /proc can tell, started at `start_ticks` (not a reused pid).
bool budget_owner_alive(int64_t pid, uint64_t start_ticks);

std::string budget_segment_file_name(int64_t pid, uint64_t start_ticks);

// One segment file as a reader sees it.
struct BudgetEntry {
  std::string path;
  int64_t pid = 0;              // from the file name
  uint64_t start_ticks = 0;
  bool owner_alive = false;
  std::optional<BudgetSnapshot> snapshot;  // when the segment is readable
  std::string problem;          // why it is not (garbage, another version), for messages
  double heartbeat_age_s = 0;   // when readable
  // "dead", "stalled", "unreadable" or the segment's own state name.
  std::string state_name() const;
};

// Every segment file in `dir`, sorted by pid; files whose names are not segment names are not
// looked at. A missing directory is an empty list.
std::vector<BudgetEntry> list_budget_entries(const std::string& dir);
// Reads one segment file.
BudgetEntry read_budget_entry(const std::string& path, int64_t pid, uint64_t start_ticks);

// Removes the segments (and unfinished temporaries) of owners that are gone, whatever their
// contents; a live owner's segment stays even when unreadable. Returns what was removed.
std::vector<BudgetEntry> collect_budget_garbage(const std::string& dir);

// The machine-wide limit in bytes, kNoBudgetLimit when none is set. A file that does not
// parse is kCorrupt (the message says how to rewrite it).
Result<uint64_t> read_machine_limit(const std::string& dir);
// Sets (kNoBudgetLimit: removes) the machine-wide limit, under the lock, atomically.
Status write_machine_limit(const std::string& dir, uint64_t limit_bytes);
// The KV committed by every live owner with a readable segment, leaving out those `skip`
// names (a router leaves out its own runners: their KV is already in its accounting).
uint64_t budget_committed_bytes(const std::vector<BudgetEntry>& entries, const std::function<bool(int64_t pid)>& skip = {});
// Sets one process's requested limit in its segment (kNoBudgetLimit: none).
Status write_requested_limit(const BudgetEntry& entry, uint64_t limit_bytes);

// Max-min fair split of `machine_limit` among processes that can each use at most caps[i]
// bytes (their reserved size, or less when they have a lower limit of their own): a process
// needing less than an equal share gets what it needs, and what it leaves is split evenly
// among the rest. The shares never add up to more than the limit.
std::vector<uint64_t> split_machine_limit(uint64_t machine_limit, std::span<const uint64_t> caps);

// The limit process (pid, start_ticks) must apply, given every entry in the directory (its
// own included) and the machine-wide limit: its own requested limit, lowered to its fair share
// of the machine-wide limit among live, readable entries.
uint64_t effective_budget_limit(int64_t pid, uint64_t start_ticks, const std::vector<BudgetEntry>& entries,
                                uint64_t machine_limit);

}  // namespace hearth::kv
