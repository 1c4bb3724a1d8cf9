// Several benchmarks write docs/performance.md: engine_bench regenerates the whole page, the
// others own one section each, fenced by <!-- NAME:begin --> and <!-- NAME:end -->. A
// benchmark replaces only its own section; engine_bench keeps the others when it rewrites.
#pragma once

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

namespace hearth::bench {

// The date (and, with another format, time) of a run, in UTC, as the pages print it.
inline std::string utc_date(const char* format = "%Y-%m-%d") {
  char buf[40];
  const std::time_t now = std::time(nullptr);
  std::strftime(buf, sizeof buf, format, std::gmtime(&now));
  return buf;
}

inline std::string doc_section_begin(std::string_view name) { return "<!-- " + std::string(name) + ":begin -->"; }
inline std::string doc_section_end(std::string_view name) { return "<!-- " + std::string(name) + ":end -->"; }

// `doc` with section `name` set to `body` (appended at the end when the doc has none).
inline std::string replace_doc_section(const std::string& doc, std::string_view name, const std::string& body) {
  const std::string begin = doc_section_begin(name), end = doc_section_end(name);
  const std::string fenced = begin + "\n" + body + end + "\n";
  size_t b = doc.find(begin);
  size_t e = b == std::string::npos ? std::string::npos : doc.find(end, b);
  if (b == std::string::npos || e == std::string::npos) {
    return doc + (doc.empty() || doc.ends_with("\n\n") ? "" : doc.ends_with("\n") ? "\n" : "\n\n") + fenced;
  }
  size_t after = e + end.size();
  if (after < doc.size() && doc[after] == '\n') ++after;
  return doc.substr(0, b) + fenced + doc.substr(after);
}

// `text` into `path` through a temporary file and a rename (a crash leaves the old file).
// False when it cannot be written.
inline bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Section `name` of the file at `path` set to `body`, written atomically. False when it cannot
// be written.
inline bool update_doc_section_file(const std::string& path, std::string_view name, const std::string& body) {
  std::string old_doc;
  {
    std::ifstream in(path);
    old_doc.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return write_file_atomically(path, replace_doc_section(old_doc, name, body));
}

// Every fenced section of `old_doc`, in order, appended to `fresh` (a regenerated page).
inline std::string keep_doc_sections(const std::string& old_doc, std::string fresh) {
  size_t pos = 0;
  while ((pos = old_doc.find("<!-- ", pos)) != std::string::npos) {
    size_t close = old_doc.find(":begin -->", pos);
    if (close == std::string::npos) break;
    std::string name = old_doc.substr(pos + 5, close - pos - 5);
    size_t e = old_doc.find(doc_section_end(name), close);
    if (name.find(' ') != std::string::npos || e == std::string::npos) {
      pos = close;
      continue;
    }
    size_t end = e + doc_section_end(name).size();
    std::string body = old_doc.substr(close + 10 + 1, e - close - 10 - 1);  // between the fences
    fresh = replace_doc_section(fresh, name, body);
    pos = end;
  }
  return fresh;
}

}  // namespace hearth::bench
