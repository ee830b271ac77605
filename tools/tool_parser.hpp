#pragma once
// Finds tool calls written as markdown fenced blocks. This one parser decides what is runnable:
// the prompt's examples are rendered for it and the step loop stops by it.

#include <string>
#include <string_view>
#include <vector>

#include "protocol/message.hpp"
#include "tools/registry.hpp"

namespace troupe {

/// How tools are offered to the model and read back from its replies.
enum class tool_format : uint8_t {
  tool,     ///< the provider's native function calling
  markdown, ///< fenced blocks (```shell …) described in the system prompt
  xml,      ///< <tool-use><shell>…</shell></tool-use> elements described in the system prompt
};

/// A top-level fenced block: ```language args \n body ```.
struct code_block {
  std::string language;
  std::string args;
  std::string body;
  /// False when the text ended before the closing fence.
  bool terminated = false;

  friend bool operator==(const code_block& a, const code_block& b) {
    return a.language == b.language && a.args == b.args && a.body == b.body &&
           a.terminated == b.terminated;
  }
};

/// Returns the top-level fenced blocks of text in order. A fence line with an info string
/// inside a block opens a nested block, which stays part of its parent's body; a bare fence
/// at least as long as the innermost open one closes it.
std::vector<code_block> find_code_blocks(std::string_view text);

/// Returns the runnable tool calls in text, in order, with empty ids. A block is runnable when
/// it is terminated and its language names a tool in the registry.
std::vector<tool_call> parse_markdown_calls(std::string_view text, const tool_registry& registry);

/// Returns the runnable tool calls written as <tool-use><NAME args="…">body</NAME></tool-use>
/// in text, in order, with empty ids. NAME is a block name (shell, save, read …); `args` (or
/// `path`) plays the part of the fence arguments. An element without its closing tags is not
/// runnable.
std::vector<tool_call> parse_xml_calls(std::string_view text, const tool_registry& registry);

/// Returns the calls of text in the given format (markdown or xml; none for native tools).
std::vector<tool_call> parse_text_calls(std::string_view text, tool_format format,
                                        const tool_registry& registry);

/// Renders a call as the XML element parse_xml_calls reads back.
std::string render_xml_call(const std::string& name, const std::string& args,
                            const std::string& body);

/// Renders a call as the markdown block the parser reads back (for prompts and examples).
std::string render_markdown_call(const std::string& language, const std::string& args,
                                 const std::string& body);

} // namespace troupe
