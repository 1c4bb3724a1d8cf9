// Names and formatting for error values (see result.h).
#include "util/result.h"

namespace hearth {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid argument";
    case ErrorKind::kNotFound: return "not found";
    case ErrorKind::kIo: return "i/o error";
    case ErrorKind::kCorrupt: return "corrupt";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kOutOfRange: return "out of range";
    case ErrorKind::kTypeMismatch: return "type mismatch";
    case ErrorKind::kUnavailable: return "unavailable";
    case ErrorKind::kInternal: return "internal error";
  }
  return "error";
}

std::string Error::to_string() const { return std::string(error_kind_name(kind)) + ": " + message; }

Error Error::with_context(const std::string& context) const { return Error{kind, context + ": " + message}; }

}  // namespace hearth
