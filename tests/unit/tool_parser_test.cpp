#include <doctest/doctest.h>

#include "tools/tool_parser.hpp"

using namespace troupe;
using nlohmann::json;

namespace {

const tool_registry& registry() {
  static const tool_registry r = make_builtin_registry();
  return r;
}

std::vector<std::string> names(const std::vector<tool_call>& calls) {
  std::vector<std::string> out;
  for (auto& c : calls)
    out.push_back(c.name);
  return out;
}

} // namespace

TEST_CASE("shell, bash and sh blocks are runnable shell calls") {
  auto calls = parse_markdown_calls("a\n```shell\nls\n```\nb\n```bash\npwd\n```\n```sh\nid\n```\n",
                                    registry());
  REQUIRE(calls.size() == 3);
  CHECK(names(calls) == std::vector<std::string>{"shell", "shell", "shell"});
  CHECK(calls[0].input == json{{"command", "ls\n"}});
  CHECK(calls[1].input == json{{"command", "pwd\n"}});
  CHECK(calls[0].format == call_format::markdown);
}

TEST_CASE("other languages and plain fences are not runnable") {
  CHECK(parse_markdown_calls("```python\nprint(1)\n```\n```\nplain\n```\n```json\n{}\n```",
                             registry())
          .empty());
  CHECK(parse_markdown_calls("no code at all", registry()).empty());
  CHECK(parse_markdown_calls("inline ```shell ls``` is prose", registry()).empty());
}

TEST_CASE("save PATH takes the path from the fence and the body as content") {
  auto calls = parse_markdown_calls("```save src/a.txt\nline 1\nline 2\n```", registry());
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].name == "write");
  CHECK(calls[0].input == json{{"path", "src/a.txt"}, {"content", "line 1\nline 2\n"}});
}

TEST_CASE("a nested fence stays inside its parent block") {
  std::string text = "```save README.md\n# Title\n```bash\nmake test\n```\nmore\n```\nafter\n";
  auto blocks = find_code_blocks(text);
  REQUIRE(blocks.size() == 1);
  CHECK(blocks[0].body == "# Title\n```bash\nmake test\n```\nmore\n");
  auto calls = parse_markdown_calls(text, registry());
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].name == "write");
  CHECK(calls[0].input["content"] == "# Title\n```bash\nmake test\n```\nmore\n");
}

TEST_CASE("a longer fence is closed only by a fence at least as long") {
  std::string text = "````save a.md\n```\nnot the end\n````\n";
  auto blocks = find_code_blocks(text);
  REQUIRE(blocks.size() == 1);
  CHECK(blocks[0].body == "```\nnot the end\n");
  CHECK(blocks[0].terminated);
}

TEST_CASE("an unterminated fence is not runnable") {
  auto blocks = find_code_blocks("text\n```shell\nrm -rf build\n");
  REQUIRE(blocks.size() == 1);
  CHECK_FALSE(blocks[0].terminated);
  CHECK(parse_markdown_calls("text\n```shell\nrm -rf build\n", registry()).empty());
  // An unterminated nested block keeps its parent open too.
  CHECK(parse_markdown_calls("```save a\n```bash\nx\n", registry()).empty());
}

TEST_CASE("calls come back in the order they were written") {
  auto calls =
    parse_markdown_calls("```read a.txt\n```\n```shell\necho\n```\n```save b\nx\n```", registry());
  CHECK(names(calls) == std::vector<std::string>{"read", "shell", "write"});
  CHECK(calls[0].input == json{{"path", "a.txt"}});
}

TEST_CASE("rendered calls parse back to the same call") {
  for (std::string body : {"ls -la\n", "echo one\n```\nnested\n```\n", "no newline"}) {
    auto text = render_markdown_call("save", "out.md", body);
    auto calls = parse_markdown_calls(text, registry());
    REQUIRE(calls.size() == 1);
    auto expected = body.back() == '\n' ? body : body + "\n";
    CHECK(calls[0].input == json{{"path", "out.md"}, {"content", expected}});
  }
}

TEST_CASE("xml tool-use elements are runnable calls in order") {
  auto calls = parse_xml_calls("First:\n<tool-use>\n<shell>\nls -la\n</shell>\n</tool-use>\n"
                               "then <tool-use><save args=\"a &amp; b.txt\">x\n</save></tool-use>"
                               " and <tool-use><read path='r.txt'></read></tool-use>",
                               registry());
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].name == "shell");
  CHECK(calls[0].input == json{{"command", "ls -la\n"}});
  CHECK(calls[0].format == call_format::xml);
  CHECK(calls[1].input == json{{"path", "a & b.txt"}, {"content", "x\n"}});
  CHECK(calls[2].input == json{{"path", "r.txt"}});
}

TEST_CASE("unterminated or unknown xml elements are not runnable") {
  CHECK(parse_xml_calls("<tool-use><shell>rm -rf x</shell>", registry()).empty());
  CHECK(parse_xml_calls("<tool-use><shell>rm -rf x</tool-use>", registry()).empty());
  CHECK(parse_xml_calls("<tool-use><python>print(1)</python></tool-use>", registry()).empty());
  CHECK(parse_xml_calls("no tools <here>", registry()).empty());
}

TEST_CASE("rendered xml calls parse back, each format parses only its own syntax") {
  auto text = render_xml_call("save", "dir/\"q\".txt", "line\n<b>bold</b>\n");
  auto calls = parse_xml_calls(text, registry());
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].input == json{{"path", "dir/\"q\".txt"}, {"content", "line\n<b>bold</b>\n"}});
  std::string both = "```shell\necho md\n```\n<tool-use><shell>echo xml</shell></tool-use>";
  CHECK(parse_text_calls(both, tool_format::markdown, registry()).size() == 1);
  CHECK(parse_text_calls(both, tool_format::xml, registry())[0].input["command"] == "echo xml");
  CHECK(parse_text_calls(both, tool_format::tool, registry()).empty());
}

TEST_CASE("an xml body may hold an example of a tool-use element") {
  std::string text = "<tool-use><save args=\"doc.md\">Use <tool-use><shell>ls</shell></tool-use>"
                     " to list.\n</save>\n</tool-use>";
  auto calls = parse_xml_calls(text, registry());
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].name == "write");
  CHECK(calls[0].input["content"] == "Use <tool-use><shell>ls</shell></tool-use> to list.\n");
}

TEST_CASE("a registry describes its tools once, and every request shares the description") {
  auto registry = make_builtin_registry();
  const auto& described = registry.descriptors().get();
  REQUIRE(described.size() == registry.tools().size());
  for (size_t i = 0; i < described.size(); ++i)
    CHECK(described[i].name == registry.tools()[i].name);
  auto copy = registry.descriptors();
  CHECK(&copy.get() == &described);
}
