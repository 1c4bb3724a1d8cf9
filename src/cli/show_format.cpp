// Tables and summaries for show, list and ps (see show_format.h).
#include "cli/show_format.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "cli/human_format.h"
#include "cli/word_wrap.h"

namespace hearth::cli {
namespace {

using Json = nlohmann::json;
using Rows = std::vector<std::vector<std::string>>;

std::string str(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// Columns padded to the widest cell plus `gap` spaces (the last column unpadded).
std::string table(const Rows& rows, const std::string& indent, size_t gap) {
  std::vector<int> widths;
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], display_width(r[c]));
    }
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line = indent;
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(static_cast<size_t>(widths[c] - display_width(r[c])) + gap, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string short_digest(const std::string& digest) {
  std::string d = digest;
  if (d.rfind("sha256:", 0) == 0) d = d.substr(7);
  return d.substr(0, 12);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string parameter_count_text(const Json& count) {
  if (!count.is_number()) return "";
  const double n = count.get<double>();
  char buf[32];
  if (n >= 1e9) std::snprintf(buf, sizeof buf, "%.1fB", n / 1e9);
  else if (n >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
  else if (n >= 1e3) std::snprintf(buf, sizeof buf, "%.1fK", n / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

}  // namespace

std::string format_parameter_lines(const std::string& parameters, const std::string& indent) {
  Rows rows;
  for (const auto& l : lines_of(parameters)) {
    size_t sp = l.find_first_of(" \t");
    if (l.empty()) continue;
    std::string value = sp == std::string::npos ? "" : l.substr(l.find_first_not_of(" \t", sp));
    rows.push_back({l.substr(0, sp), value});
  }
  return table(rows, indent, 4);
}

std::string format_show_summary(const Json& show) {
  const Json details = show.value("details", Json::object());
  const Json info = show.value("model_info", Json::object());
  std::string arch = str(info, "general.architecture");
  if (arch.empty()) arch = str(details, "family");
  std::string params = str(details, "parameter_size");
  if (params.empty() && info.contains("general.parameter_count")) params = parameter_count_text(info["general.parameter_count"]);
  Rows model;
  if (!arch.empty()) model.push_back({"architecture", arch});
  if (!params.empty()) model.push_back({"parameters", params});
  for (const char* field : {"context_length", "embedding_length"}) {
    const std::string v = str(info, (arch + "." + field).c_str());
    std::string label = field;
    std::replace(label.begin(), label.end(), '_', ' ');
    if (!v.empty()) model.push_back({label, v});
  }
  if (!str(details, "quantization_level").empty()) model.push_back({"quantization", str(details, "quantization_level")});
  std::string out;
  if (!model.empty()) out += "  Model\n" + table(model, "    ", 4) + "\n";
  if (show.contains("capabilities") && show["capabilities"].is_array() && !show["capabilities"].empty()) {
    out += "  Capabilities\n";
    for (const auto& c : show["capabilities"]) out += "    " + (c.is_string() ? c.get<std::string>() : c.dump()) + "\n";
    out += "\n";
  }
  if (!str(show, "parameters").empty()) out += "  Parameters\n" + format_parameter_lines(str(show, "parameters"), "    ") + "\n";
  if (!str(show, "system").empty()) {
    out += "  System\n";
    auto lines = lines_of(str(show, "system"));
    for (size_t i = 0; i < lines.size() && i < 2; ++i) out += "    " + lines[i] + "\n";
    if (lines.size() > 2) out += "    ...\n";
    out += "\n";
  }
  if (!str(show, "license").empty()) {
    out += "  License\n";
    auto lines = lines_of(str(show, "license"));
    for (size_t i = 0; i < lines.size() && i < 2; ++i) out += "    " + lines[i] + "\n";
    if (lines.size() > 2) out += "    ...\n";
    out += "\n";
  }
  return out;
}

std::string format_model_list(const Json& tags, double now) {
  Rows rows = {{"NAME", "ID", "SIZE", "MODIFIED"}};
  for (const auto& m : tags.value("models", Json::array())) {
    const double modified = parse_rfc3339(str(m, "modified_at"));
    rows.push_back({str(m, "name"), short_digest(str(m, "digest")),
                    m.contains("size") && m["size"].is_number() ? format_bytes(m["size"].get<uint64_t>()) : "",
                    modified < 0 ? "" : format_time_ago(now - modified)});
  }
  return table(rows, "", 4);
}

std::string format_running_list(const Json& ps, double now) {
  Rows rows = {{"NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL"}};
  for (const auto& m : ps.value("models", Json::array())) {
    const uint64_t size = m.contains("size") && m["size"].is_number() ? m["size"].get<uint64_t>() : 0;
    const uint64_t vram = m.contains("size_vram") && m["size_vram"].is_number() ? m["size_vram"].get<uint64_t>() : 0;
    std::string processor = "100% CPU";
    if (size > 0 && vram >= size) {
      processor = "100% GPU";
    } else if (vram > 0 && size > 0) {
      const int gpu = static_cast<int>(vram * 100 / size);
      processor = std::to_string(100 - gpu) + "%/" + std::to_string(gpu) + "% CPU/GPU";
    }
    const double until = parse_rfc3339(str(m, "expires_at"));
    rows.push_back({str(m, "name"), short_digest(str(m, "digest")), format_bytes(size), processor, str(m, "context_length"),
                    until < 0 ? "" : format_time_from_now(until - now)});
  }
  return table(rows, "", 4);
}

}  // namespace hearth::cli
