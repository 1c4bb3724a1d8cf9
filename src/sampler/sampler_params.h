// The sampler chain's knobs are protocol data (protocol/sampling_options.h): they cross from
// the HTTP side to the engine unchanged. These names keep the sampler's own spelling.
#pragma once

#include "protocol/sampling_options.h"

namespace hearth::sampler {

using SamplerParams = protocol::SamplingOptions;
using SamplerKind = protocol::SamplerKind;
using protocol::sampler_kind_from_name;
using protocol::sampler_kind_name;
inline Status validate_sampler_params(const SamplerParams& p) { return protocol::validate_sampling_options(p); }

}  // namespace hearth::sampler
