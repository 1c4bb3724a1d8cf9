// Public entry point of the Jinja interpreter: parse a chat template once, render it many times
// with a JSON context. Every syntax or runtime problem comes back as an Error whose message is
// "<name>:<line>: <what went wrong>"; nothing throws out of this interface, and limits on steps,
// recursion and output size keep hostile templates from hanging or exhausting memory.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace hearth::jinja {

struct Stmt;

struct RenderOptions {
  // Date/time seen by strftime_now(); the current local time when unset (tests inject one).
  std::optional<std::tm> now;
  size_t max_output_bytes = 16u << 20;  // rendered text limit
  int64_t max_steps = 5'000'000;        // statements + loop iterations + calls
  int max_call_depth = 64;              // macro recursion limit
};

class Template {
 public:
  // Parses `source`; `name` is used in error messages (usually the file name).
  static Result<Template> parse(std::string_view source, std::string name = "template");

  // Renders with `context` (a JSON object whose keys become template variables).
  Result<std::string> render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

}  // namespace hearth::jinja
