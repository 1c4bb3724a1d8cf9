// ollama's keep_alive: how long the model stays loaded after a request. ollama reads it as a Go
// duration string ("5m", "1h30m", "300ms", "-1s") or a JSON number of seconds; a negative value
// keeps the model loaded forever and 0 unloads it at once. It is parsed fully here, once, into
// protocol::CompletionRequest::keep_alive_ms, so "bogus" is a 400 instead of a silent default.
#pragma once

#include <cstdint>
#include <string_view>

#include "api/json_fields.h"

namespace hearth::api {

// Go's time.ParseDuration: "0", or [-+]? then one or more <decimal><unit>, units ns, us (µs,
// μs), ms, s, m, h ("1h30m", "1.5h", ".5s"). Nanoseconds; beyond int64 (about 292 years) is an
// error. Errors are kInvalidArgument and say what is wrong ("unknown unit "x" in ...").
Result<int64_t> parse_go_duration_ns(std::string_view text);

// A keep_alive value → milliseconds: a duration string, a JSON number of seconds, or a string
// holding a plain number of seconds (as OLLAMA_KEEP_ALIVE is read). Any negative gives -1
// (forever); 0 means unload now; a positive duration under 1 ms rounds up to 1 ms so that it
// does not read as "unload". Errors name the field ('keep_alive').
Result<int64_t> parse_keep_alive_ms(const Json& value);

}  // namespace hearth::api
