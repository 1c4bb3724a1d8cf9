// Error values for Hearth: every fallible operation returns Result<T> instead of throwing
// across module boundaries or aborting on bad input. An Error carries a kind (used later to
// pick an HTTP status or exit code) and a message written for the person who must fix it.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace hearth {

enum class ErrorKind {
  kInvalidArgument,  // caller passed something unusable
  kNotFound,         // file, key, tensor or name does not exist
  kIo,               // the operating system refused a read/write/open
  kCorrupt,          // data is malformed: truncated file, bad magic, overflowing size
  kUnsupported,      // well-formed but not something Hearth handles (yet)
  kOutOfRange,       // an index, size or count beyond what is allowed
  kTypeMismatch,     // a value exists but has another type than asked
  kUnavailable,      // well-formed, but cannot be served right now (full queue, shutting down)
  kInternal,         // a bug in Hearth
};

const char* error_kind_name(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;

  // "corrupt: tensor 'x' lies outside the file" style text.
  std::string to_string() const;
  // Returns a copy whose message is "context: message".
  Error with_context(const std::string& context) const;
};

inline Error make_error(ErrorKind kind, std::string message) { return Error{kind, std::move(message)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { assert(!ok_); return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

using Status = Result<void>;
inline Status ok_status() { return Status(); }

}  // namespace hearth

// Propagate an error: HEARTH_TRY(status_expr); and HEARTH_ASSIGN(auto x, result_expr);
#define HEARTH_CONCAT_INNER(a, b) a##b
#define HEARTH_CONCAT(a, b) HEARTH_CONCAT_INNER(a, b)
#define HEARTH_TRY(expr)                                   \
  do {                                                     \
    auto&& hearth_try_r_ = (expr);                         \
    if (!hearth_try_r_.ok()) return hearth_try_r_.error(); \
  } while (0)
#define HEARTH_ASSIGN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                        \
  if (!tmp.ok()) return tmp.error();        \
  decl = std::move(tmp).value()
#define HEARTH_ASSIGN(decl, expr) HEARTH_ASSIGN_IMPL(HEARTH_CONCAT(hearth_assign_r_, __LINE__), decl, expr)
