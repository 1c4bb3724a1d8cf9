// The manifest half of ModelStore (see model_store.h): resolving names across the primary and
// fallback roots, atomic manifest writes, listing, copy, remove, garbage collection and the
// consistency check the tests use.
#include "store/model_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "util/file_io.h"
#include "util/log.h"
#include "util/settings.h"
#include "util/sha256.h"

namespace hearth::store {
namespace {

namespace fs = std::filesystem;

std::string home_dir() { return home_directory(); }

int64_t newest_time(const struct stat& st) { return std::max<int64_t>(st.st_mtime, st.st_ctime); }

// The four path parts below manifests/ as a name, or nullopt for anything else.
std::optional<ModelName> name_from_manifest_path(const fs::path& rel) {
  std::vector<std::string> parts;
  for (const auto& p : rel) parts.push_back(p.string());
  if (parts.size() != 4) return std::nullopt;
  auto n = parse_model_name(parts[0] + "/" + parts[1] + "/" + parts[2] + ":" + parts[3]);
  if (!n.ok()) return std::nullopt;
  return *n;
}

Result<StoredModel> load_manifest(const std::string& root, const ModelName& name, bool read_only) {
  const std::string path = root + "/" + name.manifest_relpath();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error(ErrorKind::kNotFound, "model '" + name.display() + "' not found");
  }
  HEARTH_ASSIGN(const std::string text, read_file(path));
  auto m = Manifest::parse(text);
  if (!m.ok()) return m.error().with_context(path);
  StoredModel out;
  out.name = name;
  out.name.digest.clear();
  out.manifest = std::move(m).value();
  out.manifest_digest = "sha256:" + sha256_hex(text);
  out.modified_unix = st.st_mtime;
  out.root = root;
  out.read_only = read_only;
  return out;
}

// Every manifest under one root.
std::vector<ModelName> manifest_names(const std::string& root) {
  std::vector<ModelName> out;
  const fs::path base = fs::path(root) / "manifests";
  std::error_code ec;
  if (!fs::is_directory(base, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(base, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || is_temp_file_name(it->path().filename().string())) continue;
    if (auto n = name_from_manifest_path(fs::relative(it->path(), base, ec))) out.push_back(*n);
  }
  return out;
}

}  // namespace

ModelStore::ModelStore(std::string root, std::vector<std::string> read_only_roots)
    : root_(std::move(root)), read_only_roots_(std::move(read_only_roots)), mu_(std::make_shared<std::mutex>()),
      changes_(std::make_shared<std::atomic<uint64_t>>(0)) {}

ModelStore ModelStore::open_default() {
  std::string root = env_setting("HEARTH_MODELS").value_or("");
  if (root.empty()) root = home_dir() + "/.hearth/models";
  std::vector<std::string> fallbacks;
  const std::optional<std::string> ollama = env_setting("HEARTH_OLLAMA_MODELS");  // or OLLAMA_MODELS
  std::string dir = ollama && !ollama->empty() ? *ollama : home_dir() + "/.ollama/models";
  std::error_code ec;
  if (dir != "off" && fs::is_directory(dir, ec) && fs::path(dir) != fs::path(root)) fallbacks.push_back(dir);
  return ModelStore(root, fallbacks);
}

Result<StoredModel> ModelStore::resolve(const ModelName& name) const {
  std::vector<std::pair<std::string, bool>> roots{{root_, false}};
  for (const auto& r : read_only_roots_) roots.emplace_back(r, true);
  for (const auto& [root, read_only] : roots) {
    auto m = load_manifest(root, name, read_only);
    if (!m.ok() && m.error().kind == ErrorKind::kNotFound) {
      // ollama's names are case-insensitive: look for the same name spelled otherwise.
      for (const auto& other : manifest_names(root)) {
        if (other.same_as(name)) {
          m = load_manifest(root, other, read_only);
          break;
        }
      }
    }
    if (!m.ok()) {
      if (m.error().kind == ErrorKind::kNotFound) continue;
      return m.error();
    }
    if (!name.digest.empty() && m->manifest_digest != name.digest) {
      return make_error(ErrorKind::kNotFound, "model '" + name.display() + "' is stored with manifest " + m->manifest_digest +
                                                  ", not " + name.digest);
    }
    return m;
  }
  return make_error(ErrorKind::kNotFound, "model '" + name.display() + "' not found");
}

Status ModelStore::write_manifest(const ModelName& name, const Manifest& manifest) const {
  for (const auto& d : manifest.blob_digests()) {
    HEARTH_ASSIGN(const std::string p, blob_path(d));
    if (::access(p.c_str(), F_OK) != 0) {
      return make_error(ErrorKind::kNotFound, "cannot write the manifest of '" + name.display() + "': blob " + d + " is missing");
    }
  }
  std::lock_guard lock(*mu_);
  const fs::path path = fs::path(root_) / name.manifest_relpath();
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return make_error(ErrorKind::kIo, "cannot create directory '" + path.parent_path().string() + "': " + ec.message());
  HEARTH_TRY(write_file_atomic(path.string(), manifest.to_json()));
  changes_->fetch_add(1, std::memory_order_acq_rel);
  return ok_status();
}

std::vector<StoredModel> ModelStore::list() const {
  std::vector<StoredModel> out;
  std::vector<std::pair<std::string, bool>> roots{{root_, false}};
  for (const auto& r : read_only_roots_) roots.emplace_back(r, true);
  for (const auto& [root, read_only] : roots) {
    for (const auto& name : manifest_names(root)) {
      const bool hidden = std::any_of(out.begin(), out.end(), [&](const StoredModel& m) { return m.name.same_as(name); });
      if (hidden) continue;
      auto m = load_manifest(root, name, read_only);
      if (!m.ok()) {
        log_warn("skipping an unreadable manifest", {{"model", name.full()}, {"error", m.error().to_string()}});
        continue;
      }
      out.push_back(std::move(m).value());
    }
  }
  std::sort(out.begin(), out.end(), [](const StoredModel& a, const StoredModel& b) { return a.name.full() < b.name.full(); });
  return out;
}

Status ModelStore::copy(const ModelName& from, const ModelName& to) const {
  HEARTH_ASSIGN(StoredModel src, resolve(from));
  for (const auto& d : src.manifest.blob_digests()) HEARTH_TRY(adopt_blob(d));
  return write_manifest(to, src.manifest);
}

Status ModelStore::remove(const ModelName& name) const {
  HEARTH_ASSIGN(StoredModel m, resolve(name));
  if (m.read_only) {
    return make_error(ErrorKind::kInvalidArgument, "model '" + name.display() + "' is in the read-only ollama store at " + m.root +
                                                       "; remove it with ollama");
  }
  std::lock_guard lock(*mu_);
  const fs::path path = fs::path(root_) / m.name.manifest_relpath();
  if (::unlink(path.c_str()) != 0) return make_error(ErrorKind::kIo, "cannot remove '" + path.string() + "'");
  changes_->fetch_add(1, std::memory_order_acq_rel);
  HEARTH_TRY(fsync_directory(path.parent_path().string()));
  // Empty model/namespace/host directories go too (never manifests/ itself).
  std::error_code ec;
  for (fs::path dir = path.parent_path(); dir != fs::path(root_) / "manifests" && fs::is_empty(dir, ec); dir = dir.parent_path()) {
    fs::remove(dir, ec);
  }
  std::set<std::string> still_used;
  for (const auto& other : manifest_names(root_)) {
    auto o = load_manifest(root_, other, false);
    if (!o.ok()) {
      // An unreadable manifest might need any blob: keep them all.
      return ok_status();
    }
    for (const auto& d : o->manifest.blob_digests()) still_used.insert(d);
  }
  for (const auto& d : m.manifest.blob_digests()) {
    if (still_used.count(d) != 0) continue;
    const std::string p = root_ + "/blobs/" + blob_file_name(d);
    ::unlink(p.c_str());
  }
  // The manifest is gone (and flushed); a blob left by a failed unlink is garbage for gc.
  (void)fsync_directory(root_ + "/blobs");
  return ok_status();
}

Result<GcReport> ModelStore::collect_garbage(std::chrono::seconds min_age) const {
  std::lock_guard lock(*mu_);
  GcReport report;
  std::set<std::string> used;
  for (const auto& name : manifest_names(root_)) {
    auto m = load_manifest(root_, name, false);
    if (!m.ok()) {
      return make_error(ErrorKind::kCorrupt, "garbage collection stopped: manifest of '" + name.display() +
                                                 "' is unreadable (" + m.error().message + "); fix or remove it first");
    }
    for (const auto& d : m->manifest.blob_digests()) used.insert(blob_file_name(d));
  }
  const int64_t cutoff = static_cast<int64_t>(::time(nullptr)) - min_age.count();
  auto old_enough = [&](const fs::path& p, struct stat& st) {
    return ::lstat(p.c_str(), &st) == 0 && newest_time(st) <= cutoff;
  };
  std::error_code ec;
  const fs::path blobs = fs::path(root_) / "blobs";
  if (fs::is_directory(blobs, ec)) {
    for (const auto& e : fs::directory_iterator(blobs, ec)) {
      const std::string file = e.path().filename().string();
      struct stat st {};
      const bool temp = is_temp_file_name(file);
      const bool blob = !temp && file.rfind("sha256-", 0) == 0 && file.size() == 71;
      if ((!temp && !blob) || used.count(file) != 0 || !old_enough(e.path(), st)) continue;
      if (::unlink(e.path().c_str()) != 0) continue;
      report.bytes_freed += static_cast<uint64_t>(st.st_size);
      if (temp) report.removed_temp_files.push_back(e.path().string());
      else report.removed_blobs.push_back("sha256:" + file.substr(7));
    }
  }
  const fs::path manifests = fs::path(root_) / "manifests";
  if (fs::is_directory(manifests, ec)) {
    for (auto it = fs::recursive_directory_iterator(manifests, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      struct stat st {};
      if (it->is_regular_file(ec) && is_temp_file_name(it->path().filename().string()) && old_enough(it->path(), st) &&
          ::unlink(it->path().c_str()) == 0) {
        report.removed_temp_files.push_back(it->path().string());
      }
    }
  }
  return report;
}

ConsistencyReport ModelStore::check_consistency() const {
  ConsistencyReport r;
  for (const auto& name : manifest_names(root_)) {
    auto m = load_manifest(root_, name, false);
    if (!m.ok()) {
      r.problems.push_back("manifest " + name.full() + ": " + m.error().message);
      continue;
    }
    std::vector<Layer> all{m->manifest.config};
    all.insert(all.end(), m->manifest.layers.begin(), m->manifest.layers.end());
    for (const auto& l : all) {
      const std::string p = root_ + "/blobs/" + blob_file_name(l.digest);
      struct stat st {};
      if (::stat(p.c_str(), &st) != 0) r.problems.push_back("manifest " + name.full() + ": blob " + l.digest + " is missing");
      else if (static_cast<uint64_t>(st.st_size) != l.size) {
        r.problems.push_back("manifest " + name.full() + ": blob " + l.digest + " has " + std::to_string(st.st_size) +
                             " bytes, the manifest says " + std::to_string(l.size));
      }
    }
  }
  std::error_code ec;
  for (const char* sub : {"blobs", "manifests"}) {
    const fs::path dir = fs::path(root_) / sub;
    if (!fs::is_directory(dir, ec)) continue;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (is_temp_file_name(it->path().filename().string())) r.problems.push_back("temporary file left: " + it->path().string());
    }
  }
  return r;
}

}  // namespace hearth::store
