// The shell parser: the grammar pieces it understands, and "unknown" for everything else.

#include <doctest/doctest.h>

#include <algorithm>

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
  CHECK(commands("r\\m\tf\vg") == strings{"rm|f\vg"}); // only spaces and tabs separate words
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

TEST_CASE("a comment starts only where bash starts a word") {
  CHECK(commands("cat <(echo)#; rm f") == strings{"echo", "cat|<(echo)#", "rm|f"});
  CHECK(commands("true\v#; rm f") == strings{"true\v#", "rm|f"});
  CHECK(commands("true\f#; rm f") == strings{"true\f#", "rm|f"});
  CHECK(commands("true\r#; rm f") == strings{"true\r#", "rm|f"});
  CHECK(commands("echo a#b; rm f") == strings{"echo|a#b", "rm|f"});
  CHECK(commands("echo $(echo)#x; rm f") == strings{"echo", "echo|$(echo)#x", "rm|f"});
  CHECK(commands("echo a #c; rm f\nls;#x\n(pwd)#y") == strings{"echo|a", "ls", "pwd"});
}

TEST_CASE("a double-bracket test parses its substitutions, process substitutions included") {
  CHECK(commands("[[ -e <(rm victim) ]]") == strings{"rm|victim"});
  CHECK(commands("[[ -e >(rm v)x && $(id) == `pwd` ]]") == strings{"rm|v", "id", "pwd"});
  CHECK(commands("[[ 3 -gt -1 && -v name ]]").empty());
}

TEST_CASE("a lone open bracket is the test command, not a glob") {
  auto syntax = parse_shell("[ -f x ] && [[ -d y ]]");
  REQUIRE(syntax.unknown.empty());
  REQUIRE(syntax.commands.size() == 1);
  CHECK_FALSE(syntax.commands[0].words[0].globs);
  CHECK(parse_shell("ls a[bc]").commands[0].words[1].globs);
  CHECK_FALSE(parse_shell("echo a[b").commands[0].words[1].globs);
}

TEST_CASE("here-document bodies: continuations joined, arithmetic and subscripts refused") {
  for (auto line : {"cat <<EOF\n$\\\n(touch P)\nEOF", "cat <<EOF\n`\\\ntouch P`\nEOF",
                    "cat <<EOF\n$((X))\nEOF", "cat <<EOF\n${a[X]}\nEOF", "cat <<EOF\n$[X]\nEOF",
                    "cat <<EOF\n${!X}\nEOF"}) {
    CAPTURE(line);
    CHECK_FALSE(parse_shell(line).unknown.empty());
  }
  // bash joins `EO\` and `F` into the delimiter: the lines after it run.
  CHECK(commands("cat <<EOF\nEO\\\nF\nrm f") == strings{"cat", "rm|f"});
  CHECK(commands("cat <<EOF\na \\\\\n${a[1]} $x\nEOF\nls") == strings{"cat", "ls"});
  CHECK(commands("cat <<'EOF'\n$\\\n(x)\nEOF\nls") == strings{"cat", "ls"});
}

TEST_CASE("what the parser does not fully understand is unknown") {
  for (auto line : {"case x in x) rm f;; esac", "f() { rm f; }", "function f { rm f; }",
                    "((x++))", "echo $((a[$(rm f)]))", "echo 'unclosed", "echo \"unclosed",
                    "echo $(ls", "echo `ls", "cat <<EOF\n$(rm f)\nEOF", "cat <<EOF\nno end",
                    "a=(1 2)", "select x in a; do b; done", "coproc rm f", "echo ${x:-$(rm f)}",
                    "for ((i=0;;)); do b; done", "| ls", "if a; then b", "{ a; ", "ls )",
                    "echo $'\\u0041'", "[[ a ; ]]", "echo $((X))", "echo $(( x + 1 ))",
                    "echo ${a[X]}", "echo ${a[$i]}", "echo $[1]", "echo ${!ref}", "echo ${x:n}",
                    "[[ $n -gt 3 ]]", "[[ n -eq 1 ]]", "[[ -v a[X] ]]", "[[ -v $x ]]"}) {
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

TEST_CASE("understood forms of arithmetic and ${…}") {
  CHECK(commands("echo $((1 + 2 * (3 - 0x1f))) ${a[0]} ${a[@]} ${#a[*]} ${!a[@]} ${!pre*} ${x:-d} ${x: -1:2}") ==
        strings{"echo|$((1 + 2 * (3 - 0x1f)))|${a[0]}|${a[@]}|${#a[*]}|${!a[@]}|${!pre*}|${x:-d}|${x: -1:2}"});
}

TEST_CASE("builtins that evaluate strings, set subscripts or change what runs are opaque") {
  for (auto line :
       {"declare BASH_CMDS[ls]=/bin/rm", "printf -v 'BASH_CMDS[cat]' /bin/rm",
        "printf -vBASH_CMDS[cat] /bin/rm", "read 'BASH_CMDS[ls]'", "read -a 'x[1]'",
        "mapfile -C 'rm f; :' -c 1 a", "readarray -tC f a", "complete -C 'rm f' x",
        "compgen -C 'rm f' x", "printf -v 'a[$X]' x", "declare 'x[$(id)]'=1", "local -i x=y",
        "export 'a[1]=2'", "readonly 'a[1]'", "test -v 'a[$(rm f)]'", "[ -v 'a[x]' ]",
        "let x=1", "unset 'a[$(rm f)]'", "BASH_ALIASES=x", "declare BASH_CMDS=x",
        "printf -v BASH_ALIASES x", "getopts ab 'a[x]'", "wait -p 'a[x]' 1"}) {
    CAPTURE(line);
    auto all = runs(line);
    CHECK(std::any_of(all.begin(), all.end(),
                      [](const std::string& r) { return r.rfind("OPAQUE", 0) == 0; }));
  }
  for (auto line : {"declare -a x", "read -r -p '[y/n] ' answer", "printf '[%s]' x",
                    "printf -v out '%s' x", "test -f x", "[ -v name ]", "mapfile -t lines",
                    "unset x"}) {
    CAPTURE(line);
    auto all = runs(line);
    CHECK(std::none_of(all.begin(), all.end(),
                       [](const std::string& r) { return r.rfind("OPAQUE", 0) == 0; }));
  }
}

TEST_CASE("commands that run other commands through their options are opaque") {
  for (auto line :
       {"git -c alias.x='!rm victim' x", "git -c core.hooksPath=h commit", "git --config-env=a=B log",
        "git --exec-path=/tmp status", "git -C d -c a=b status", "git ls-remote --upload-pack='rm v' .",
        "git fetch -u 'rm v' .", "git rebase -x 'rm v' main", "git grep -Orm x", "git clone -c a=b u",
        "git submodule foreach rm v", "git bisect run rm v", "git filter-branch x",
        "sed '1e rm victim' f", "sed -n 's/x/rm v/e' f", "sed 's/x/y/w out' f", "sed 'w out' f",
        "sed -e p -e '1W out' f", "sed --expression='e rm v' f", "sed -f s.sed f", "sed \"$S\" f",
        "sed '/x/I{e rm v\n}' f", "sed -ne '$e rm v' f",
        "tar --to-command='rm v' -xf a.tar", "tar -I 'rm v' -xf a.tar", "tar -xIf x a",
        "tar xIf x a", "tar --use-compress=x -xf a", "tar --checkpoint-action=exec=x -cf a d",
        "sort --compress-program=sh f", "sort --compress=sh f", "rg --pre rm x", "rg --pre=rm x",
        "less f", "more f", "vim -c '!rm v' f", "ed f", "dc -e '!rm v'",
        "ex -sc '!rm v' -c q"}) {
    CAPTURE(line);
    auto all = runs(line);
    REQUIRE(all.size() == 1);
    CHECK(all[0].rfind("OPAQUE", 0) == 0);
  }
  for (auto line : {"git -C d status", "git log -c", "git commit -c HEAD", "sed 's/hello/world/g' f",
                    "sed -n '/re/p; 3q' f", "sed -i.bak -E 's/a|b/c/2' f", "sed '1i text; e x' f",
                    "sed 'y/abc/xyz/' f", "sed --sandbox 'e x' f", "sed -ne 's/x/y/p' f",
                    "tar -xf a.tar", "tar czf a.tgz d", "tar --checkpoint=10 -cf a d",
                    "sort -k2 -t, f", "rg --pre-glob '*.gz' x"}) {
    CAPTURE(line);
    auto all = runs(line);
    REQUIRE(all.size() == 1);
    CHECK(all[0].rfind("OPAQUE", 0) != 0);
  }
}
