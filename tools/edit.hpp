#pragma once

#include <string>

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `edit` tool: replace an exact string in a file.
tool_spec edit_tool();

/// Replaces `old_text` with `new_text` in `content`: exactly once unless `replace_all`.
/// Returns how many were replaced, or an error message for the model (no match, showing the
/// nearest lines; several matches, showing where). Shared by edit and patch.
struct replacement {
  size_t count = 0;
  std::string error;
};
replacement replace_exact(std::string& content, const std::string& old_text,
                          const std::string& new_text, bool replace_all);

} // namespace troupe
