#pragma once
// An immutable value many actors hold at once by pointer: a system prompt, the tools on offer.

#include <memory>
#include <utility>

#include <caf/meta/type_name.hpp>

namespace troupe {

/// One immutable T, shared: copying a shared_value copies a pointer, never the T. A thousand
/// agents with the same system prompt hold one string. Serialised by value, so a remote node
/// gets its own copy.
template <class T>
class shared_value {
public:
  shared_value() = default;
  shared_value(T value) : ptr_(std::make_shared<const T>(std::move(value))) {}

  /// Returns the value (a default T when none was given).
  const T& get() const { return ptr_ ? *ptr_ : empty(); }
  operator const T&() const { return get(); }
  const T& operator*() const { return get(); }
  const T* operator->() const { return &get(); }

  friend bool operator==(const shared_value& a, const shared_value& b) {
    return a.ptr_ == b.ptr_ || a.get() == b.get();
  }
  friend bool operator!=(const shared_value& a, const shared_value& b) { return !(a == b); }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, shared_value& x) {
    if constexpr (Inspector::reads_state) {
      T copy = x.get();
      return f(caf::meta::type_name("shared_value"), copy);
    } else {
      T value;
      auto result = f(caf::meta::type_name("shared_value"), value);
      x = shared_value{std::move(value)};
      return result;
    }
  }

private:
  static const T& empty() {
    static const T none{};
    return none;
  }

  std::shared_ptr<const T> ptr_;
};

} // namespace troupe
