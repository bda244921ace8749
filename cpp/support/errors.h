// Errors: user errors (bad input, mapped to Python exceptions) versus internal checks.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace jf {

enum class ErrorKind {
  kInvalidArgument,
  kType,
  kUnimplemented,
  kRuntime,
  kInternal,
  kResourceExhausted,
  kUnknown,           // TF's UnknownError (a Python exception in a py_function without a closer code)
  kOutOfRange,        // TF's OutOfRangeError (StopIteration in a py_function)
  kUnavailable,       // TF's UnavailableError (a collective's peer failed)
  kDeadlineExceeded,  // TF's DeadlineExceededError (a collective waited past its timeout)
};

// Every error a user can trigger is an Error; the bindings map its kind to a Python
// exception class and append the user's source line.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& msg) : std::runtime_error(msg), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
inline void cat(std::ostringstream&) {}
template <class T, class... R>
void cat(std::ostringstream& os, const T& t, const R&... r) {
  os << t;
  cat(os, r...);
}
}  // namespace detail

template <class... A>
std::string str_cat(const A&... a) {
  std::ostringstream os;
  detail::cat(os, a...);
  return os.str();
}

template <class... A>
[[noreturn]] void throw_invalid(const A&... a) {
  throw Error(ErrorKind::kInvalidArgument, str_cat(a...));
}
template <class... A>
[[noreturn]] void throw_type(const A&... a) {
  throw Error(ErrorKind::kType, str_cat(a...));
}
template <class... A>
[[noreturn]] void throw_unimplemented(const A&... a) {
  throw Error(ErrorKind::kUnimplemented, str_cat(a...));
}
template <class... A>
[[noreturn]] void throw_runtime(const A&... a) {
  throw Error(ErrorKind::kRuntime, str_cat(a...));
}
// An allocation that cannot be made (jf.errors.ResourceExhaustedError, also a MemoryError),
// raised before it is tried.
template <class... A>
[[noreturn]] void throw_resource_exhausted(const A&... a) {
  throw Error(ErrorKind::kResourceExhausted, str_cat(a...));
}

}  // namespace jf

// Internal invariant: a failure is a jitflow bug, reported as an exception, never a crash.
#define JF_CHECK(cond, ...)                                                                                 \
  do {                                                                                                      \
    if (!(cond))                                                                                            \
      throw ::jf::Error(::jf::ErrorKind::kInternal,                                                         \
                        ::jf::str_cat("internal check failed: " #cond " at ", __FILE__, ":", __LINE__, " ", \
                                      ##__VA_ARGS__));                                                      \
  } while (0)
