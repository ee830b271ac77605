// The tool-call parsers: fenced blocks and <tool-use> elements in a reply's text
// (tools/tool_parser), and native tool-call arguments as the providers keep them.

#include "fuzz/targets.hpp"
#include "protocol/bounded_json.hpp"
#include "providers/formats.hpp"
#include "tools/registry.hpp"
#include "tools/tool_parser.hpp"

namespace troupe::fuzz {

namespace {

// What the step and the log do with a call: check it, copy it, write it and read it back.
void use(const tool_spec& spec, const tool_call& call) {
  validate_input(spec, call.input);
  auto copy = call;
  nlohmann::json logged = copy;
  auto text = logged.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  fuzz_check(static_cast<bool>(parse_json_bounded(text, max_record_depth)),
             "a call's JSON reads back within the record depth");
}

} // namespace

int tool_calls(const uint8_t* data, size_t size) {
  static const auto registry = make_builtin_registry();
  std::string_view text{reinterpret_cast<const char*>(data), size};
  for (auto format : {tool_format::markdown, tool_format::xml})
    for (auto& call : parse_text_calls(text, format, registry)) {
      const auto* spec = registry.find(call.name);
      fuzz_check(spec != nullptr, "a parsed call names a registered tool");
      use(*spec, call);
    }
  for (auto& block : find_code_blocks(text))
    fuzz_check(text.find(block.language) != std::string_view::npos, "a block's language is text");
  tool_call native{"call_1", "shell", detail::parse_arguments(std::string{text}),
                   call_format::native};
  fuzz_check(native.input.is_object() || native.input.is_string(),
             "arguments are an object or kept as their text");
  for (auto& spec : registry.tools())
    use(spec, native);
  return 0;
}

} // namespace troupe::fuzz
