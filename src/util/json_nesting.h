// How deep a JSON text nests, read from its bytes before any parser sees it. Parsing nests
// iteratively, but copying, printing and converting a parsed value recurse once per level, so a
// body of a million brackets would overflow a thread's stack in whatever touches it next. Every
// place that parses JSON from outside the process (request bodies, model output, registries,
// the protocol) refuses deeper texts with this one check.
#pragma once

#include <string_view>

namespace hearth {

// Deeper than any real message: a chat body with tools and their schemas stays well under it.
constexpr int kMaxJsonNesting = 128;

// False when `text` opens more than `max_depth` arrays or objects inside one another (brackets
// inside strings do not count). Says nothing about whether the text is valid JSON.
bool json_nesting_within(std::string_view text, int max_depth = kMaxJsonNesting);

}  // namespace hearth
