// Status and StatusOr<T>: the error currency of reference/, validators and adapters.
//
// A Status is either OK or carries a StatusCode (the kind of failure), an optional
// contract ErrorCode from the registry (reference/errors/error_codes.h) when the
// failure is a contract violation, and a human-readable message. No exceptions
// cross the library boundary; every fallible library function returns one of these.
#ifndef KVCONFORM_REFERENCE_BASE_STATUS_H_
#define KVCONFORM_REFERENCE_BASE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "reference/errors/error_codes.h"

namespace kvc {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // caller passed something malformed (usage error)
  kParseError,          // input bytes are not what the format requires
  kIoError,             // file could not be read or written
  kOutOfRange,          // a size or index is outside its legal range (incl. overflow)
  kFailedPrecondition,  // the object is not in a state that permits the operation
  kContractViolation,   // the operation would break the serving contract; see error()
  kUnavailable,         // a peer, device or transport is absent
  kDeadlineExceeded,    // a bounded wait ran out
  kInternal,            // a bug in kvconform
  kResourceExhausted,   // a memory or address-space limit was reached (no verdict)
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message, ErrorCode error = ErrorCode::kNone)
      : code_(code), error_(error), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // The registry code when this status reports a contract violation, else kNone.
  ErrorCode error() const { return error_; }
  const std::string& message() const { return message_; }
  // "CODE_NAME: message" or "StatusKind: message"; "OK" for success.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  ErrorCode error_ = ErrorCode::kNone;
  std::string message_;
};

// Convenience constructors.
inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status ParseError(std::string m) { return {StatusCode::kParseError, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status ViolationStatus(ErrorCode e, std::string m) {
  return {StatusCode::kContractViolation, std::move(m), e};
}

// StatusOr<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status s) : v_(std::move(s)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT
  StatusOr(T value) : v_(std::move(value)) {}                                    // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<Status, T> v_;
};

#define KVC_RETURN_IF_ERROR(expr)         \
  do {                                    \
    ::kvc::Status _kvc_s = (expr);        \
    if (!_kvc_s.ok()) return _kvc_s;      \
  } while (0)

#define KVC_CONCAT_INNER(a, b) a##b
#define KVC_CONCAT(a, b) KVC_CONCAT_INNER(a, b)
#define KVC_ASSIGN_OR_RETURN(lhs, expr) \
  KVC_ASSIGN_OR_RETURN_IMPL(KVC_CONCAT(_kvc_or_, __LINE__), lhs, expr)
#define KVC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_BASE_STATUS_H_
