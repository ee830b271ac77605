// The shell parser: the grammar pieces it understands, and "unknown" for everything else.

#include <doctest/doctest.h>

#include "tools/shell_commands.hpp"
#include "tools/shell_syntax.hpp"

using namespace troupe;

namespace {

using strings = std::vector<std::string>;

// Each simple command as its words joined by `|`, so word boundaries show.
strings commands(const std::string& line) {
  auto syntax = parse_shell(line);
  REQUIRE_MESSAGE(syntax.unknown.empty(), syntax.unknown);
  strings out;
  for (auto& command : syntax.commands) {
    std::string text;
    for (auto& word : command.words)
      text += (text.empty() ? "" : "|") + word.text;
    out.push_back(text);
  }
  return out;
}

strings runs(const std::string& line) {
  strings out;
  for (auto& run : analyse_command_line(line).commands)
    out.push_back(run.opaque.empty() ? run.text : "OPAQUE " + run.text);
  return out;
}

} // namespace

TEST_CASE("quoting: single, double, $'…', backslashes, and any white space between words") {
  CHECK(commands("echo 'a b' \"c d\" e\\ f") == strings{"echo|a b|c d|e f"});
  CHECK(commands("echo $'a\\tb\\x41\\101' \"x\\\"y\\$z\"") == strings{"echo|a\tbAA|x\"y$z"});
  CHECK(commands("r\\m\tf\vg") == strings{"rm|f|g"});
  CHECK(commands("echo a\\\nb") == strings{"echo|ab"});
  CHECK(commands("echo a # a comment; rm f") == strings{"echo|a"});
}

TEST_CASE("substitutions are parsed, in double quotes and backticks too, and kept as written") {
  CHECK(commands("echo \"$(ls -l)\" `pwd` $X ${Y}") == strings{"ls|-l", "pwd", "echo|$(ls -l)|`pwd`|$X|${Y}"});
  CHECK(commands("cat <(sort a) >(wc)") == strings{"sort|a", "wc", "cat|<(sort a)|>(wc)"});
  CHECK(commands("echo $(echo $(id))") == strings{"id", "echo|$(id)", "echo|$(echo $(id))"});
  auto syntax = parse_shell("echo $X");
  REQUIRE(syntax.commands.size() == 1);
  CHECK(syntax.commands[0].words[1].expands);
}

TEST_CASE("lists, pipelines and compound commands") {
  CHECK(commands("a && b || c; d & e\nf | g |& h") ==
        strings{"a", "b", "c", "d", "e", "f", "g", "h"});
  CHECK(commands("(a; b) && { c; }") == strings{"a", "b", "c"});
  CHECK(commands("if a; then b; elif c; then d; else e; fi") == strings{"a", "b", "c", "d", "e"});
  CHECK(commands("for x in 1 $(seq 3); do b $x; done") == strings{"seq|3", "b|$x"});
  CHECK(commands("while a; do b; done; until c\ndo d\ndone") == strings{"a", "b", "c", "d"});
  CHECK(commands("! a | b") == strings{"a", "b"});
  CHECK(commands("[[ $(id) < 3 && ( -f x || y > z ) ]] && b") == strings{"id", "b"});
}

TEST_CASE("redirections, assignments and here-documents") {
  auto syntax = parse_shell("X=1 Y=$(id) cmd 2>&1 >out >>app &>all >|clob <in <>rw 3>&- <<<str");
  REQUIRE(syntax.unknown.empty());
  REQUIRE(syntax.commands.size() == 2);
  const auto& cmd = syntax.commands[1];
  CHECK(cmd.assignments.size() == 2);
  CHECK(cmd.words.size() == 1);
  strings writes;
  for (auto& r : cmd.redirects)
    if (r.writes_file())
      writes.push_back(r.op + r.target.text);
  CHECK(writes == strings{">out", ">>app", "&>all", ">|clob", "<>rw"});
  CHECK(commands("cat <<EOF | wc\n$HOME\nEOF\nls") == strings{"cat", "wc", "ls"});
  CHECK(commands("cat <<-'EOF'\n\t$(rm f)\n\tEOF\nls") == strings{"cat", "ls"});
  CHECK(commands("X=1") == strings{""});
}

TEST_CASE("what the parser does not fully understand is unknown") {
  for (auto line : {"case x in x) rm f;; esac", "f() { rm f; }", "function f { rm f; }",
                    "((x++))", "echo $((a[$(rm f)]))", "echo 'unclosed", "echo \"unclosed",
                    "echo $(ls", "echo `ls", "cat <<EOF\n$(rm f)\nEOF", "cat <<EOF\nno end",
                    "a=(1 2)", "select x in a; do b; done", "coproc rm f", "echo ${x:-$(rm f)}",
                    "for ((i=0;;)); do b; done", "| ls", "if a; then b", "{ a; ", "ls )",
                    "echo $'\\u0041'", "[[ a ; ]]"}) {
    CAPTURE(line);
    CHECK_FALSE(parse_shell(line).unknown.empty());
  }
}

TEST_CASE("normalised commands: base names, wrappers taken off, opaque ones marked") {
  CHECK(runs("/usr/bin/env -i -- A=1 nice -n 5 timeout -s KILL 5 sudo -u x git status") ==
        strings{"git status"});
  CHECK(runs("xargs -0 -n1") == strings{"echo"});
  CHECK(runs("command -v ls") == strings{"command -v ls"});
  CHECK(runs("bash -c 'ls | wc'") == strings{"ls", "wc", "bash -c ls | wc"});
  CHECK(runs("$X f") == strings{"OPAQUE $X f"});
  CHECK(runs("env --frobnicate rm f") == strings{"OPAQUE env --frobnicate rm f"});
  CHECK(runs("python3 -m pytest") == strings{"python3 -m pytest"});
  CHECK(runs("python3 -c 'print(1)'") == strings{"OPAQUE python3 -c print(1)"});
  CHECK(runs("echo x | xargs sh -c 'echo $0'") == strings{"echo x", "OPAQUE xargs sh -c echo $0"});
}
