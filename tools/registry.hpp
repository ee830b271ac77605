#pragma once
// The set of tools one session offers. The built-in list is explicit: no self-registration.

#include <string_view>
#include <vector>

#include "tools/tool_spec.hpp"

namespace troupe {

/// The tools of one session, in the order the model is told about them.
class tool_registry {
public:
  tool_registry() = default;
  explicit tool_registry(std::vector<tool_spec> tools);

  /// Returns the tool with this name, or null.
  const tool_spec* find(std::string_view name) const;

  /// Returns the tool a markdown fence language invokes, or null (the block is not runnable).
  const tool_spec* find_block(std::string_view language) const;

  /// Returns the tools as the model sees them: made once, shared by every request.
  const shared_value<std::vector<tool_descriptor>>& descriptors() const { return descriptors_; }

  /// Returns the tool names in order.
  std::vector<std::string> names() const;

  const std::vector<tool_spec>& tools() const { return tools_; }

private:
  std::vector<tool_spec> tools_;
  shared_value<std::vector<tool_descriptor>> descriptors_;
};

/// Returns the built-in tools: shell, read, write, edit, patch, glob, grep, ls, todo, complete.
tool_registry make_builtin_registry();

} // namespace troupe
