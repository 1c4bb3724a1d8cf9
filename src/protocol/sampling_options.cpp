// Names and validation of sampling options (see sampling_options.h).
#include "protocol/sampling_options.h"

#include <cmath>
#include <string>

namespace hearth::protocol {
namespace {
struct KindName {
  SamplerKind kind;
  std::string_view name;
};
constexpr KindName kKindNames[] = {
    {SamplerKind::kPenalties, "penalties"}, {SamplerKind::kDry, "dry"},         {SamplerKind::kTopNSigma, "top_n_sigma"},
    {SamplerKind::kTopK, "top_k"},          {SamplerKind::kTypicalP, "typ_p"},  {SamplerKind::kTopP, "top_p"},
    {SamplerKind::kMinP, "min_p"},          {SamplerKind::kXtc, "xtc"},         {SamplerKind::kTemperature, "temperature"},
};

Status check(bool ok, const char* message) {
  if (ok) return ok_status();
  return make_error(ErrorKind::kInvalidArgument, message);
}
}  // namespace

std::string_view sampler_kind_name(SamplerKind kind) {
  for (const auto& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

Result<SamplerKind> sampler_kind_from_name(std::string_view name) {
  std::string n(name);
  for (auto& c : n) {
    if (c == '-') c = '_';
  }
  if (n == "typical_p" || n == "typical") n = "typ_p";
  if (n == "temp") n = "temperature";
  if (n == "penalty" || n == "repeat_penalty") n = "penalties";
  for (const auto& k : kKindNames) {
    if (k.name == n) return k.kind;
  }
  return make_error(ErrorKind::kInvalidArgument, "unknown sampler '" + std::string(name) + "'");
}

Status validate_sampling_options(const SamplingOptions& p) {
  HEARTH_TRY(check(std::isfinite(p.temperature), "temperature must be a finite number"));
  HEARTH_TRY(check(p.top_p >= 0 && p.top_p <= 1, "top_p must be in [0, 1]"));
  HEARTH_TRY(check(p.min_p >= 0 && p.min_p <= 1, "min_p must be in [0, 1]"));
  HEARTH_TRY(check(p.typical_p >= 0 && p.typical_p <= 1, "typical_p must be in [0, 1]"));
  HEARTH_TRY(check(p.xtc_probability >= 0 && p.xtc_probability <= 1, "xtc_probability must be in [0, 1]"));
  HEARTH_TRY(check(p.repeat_last_n >= -1, "repeat_last_n must be -1 or more"));
  HEARTH_TRY(check(p.repeat_penalty > 0 && std::isfinite(p.repeat_penalty), "repeat_penalty must be positive"));
  HEARTH_TRY(check(std::isfinite(p.presence_penalty), "presence_penalty must be a finite number"));
  HEARTH_TRY(check(std::isfinite(p.frequency_penalty), "frequency_penalty must be a finite number"));
  HEARTH_TRY(check(p.dry_multiplier >= 0, "dry_multiplier must be 0 or more"));
  HEARTH_TRY(check(p.dry_base >= 1, "dry_base must be 1 or more"));
  HEARTH_TRY(check(p.dry_allowed_length >= 0, "dry_allowed_length must be 0 or more"));
  HEARTH_TRY(check(p.mirostat >= 0 && p.mirostat <= 2, "mirostat must be 0, 1 or 2"));
  HEARTH_TRY(check(p.mirostat_tau >= 0, "mirostat_tau must be 0 or more"));
  HEARTH_TRY(check(p.min_keep >= 1, "min_keep must be at least 1"));
  HEARTH_TRY(check(p.n_probs >= 0 && p.n_probs <= 100, "n_probs must be in [0, 100]"));
  return ok_status();
}

}  // namespace hearth::protocol
