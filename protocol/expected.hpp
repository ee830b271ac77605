#pragma once
// A value or a one-line error message: what fallible functions return.

#include <string>
#include <utility>
#include <variant>

namespace troupe {

/// An error message that says what went wrong and, where it can, what to do.
struct failure {
  std::string message;
};

/// Holds either a T or a failure.
template <class T>
class expected {
public:
  expected(T value) : data_(std::move(value)) {}
  expected(failure f) : data_(std::move(f)) {}

  explicit operator bool() const { return data_.index() == 0; }
  T& operator*() { return std::get<0>(data_); }
  const T& operator*() const { return std::get<0>(data_); }
  T* operator->() { return &std::get<0>(data_); }
  const T* operator->() const { return &std::get<0>(data_); }
  const std::string& error() const { return std::get<1>(data_).message; }

private:
  std::variant<T, failure> data_;
};

} // namespace troupe
