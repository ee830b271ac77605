#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "support/test_support.hpp"
#include "tools/glob.hpp"
#include "tools/grep.hpp"
#include "tools/ls.hpp"
#include "tools/path_match.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

TEST_CASE("glob patterns: *, ?, **, classes and alternatives") {
  CHECK(glob_match("*.cpp", "main.cpp"));
  CHECK_FALSE(glob_match("*.cpp", "src/main.cpp")); // * stops at /
  CHECK(glob_match("src/**", "src/a/b/c.h"));
  CHECK(glob_match("**/*.cpp", "main.cpp"));
  CHECK(glob_match("**/*.cpp", "a/b/main.cpp"));
  CHECK(glob_match("a/**/z.txt", "a/z.txt"));
  CHECK(glob_match("a/**/z.txt", "a/b/c/z.txt"));
  CHECK_FALSE(glob_match("a/**/z.txt", "ab/z.txt"));
  CHECK(glob_match("file?.txt", "file1.txt"));
  CHECK_FALSE(glob_match("file?.txt", "file10.txt"));
  CHECK(glob_match("[abc].txt", "b.txt"));
  CHECK(glob_match("[!abc].txt", "d.txt"));
  CHECK(glob_match("[a-z]*.md", "readme.md"));
  CHECK(glob_match("src/*.{h,cpp}", "src/x.h"));
  CHECK(glob_match("src/*.{h,cpp}", "src/x.cpp"));
  CHECK_FALSE(glob_match("src/*.{h,cpp}", "src/x.py"));
  CHECK(glob_match("./.env", "./.env"));
  CHECK(glob_match("git *", "git status --short"));
}

TEST_CASE(".gitignore rules: names, directories, anchors, negation") {
  temp_dir dir;
  write_file(dir / ".gitignore", "# build output\nbuild/\n*.o\n/top.txt\n!keep.o\ndocs/gen\n");
  auto rules = ignore_rules::load(dir.path());
  CHECK(rules.ignored("build", true));
  CHECK_FALSE(rules.ignored("build", false)); // a file named build is not a directory
  CHECK(rules.ignored("src/x.o", false));
  CHECK_FALSE(rules.ignored("src/keep.o", false));
  CHECK(rules.ignored("top.txt", false));
  CHECK_FALSE(rules.ignored("sub/top.txt", false));
  CHECK(rules.ignored("docs/gen", true));
  CHECK(rules.ignored(".git", true));
}

TEST_CASE("glob lists matches newest first and skips ignored files") {
  temp_dir dir;
  auto ctx = context_in(dir);
  write_file(dir / ".gitignore", "out/\n");
  write_file(dir / "src/old.cpp", "");
  write_file(dir / "out/gen.cpp", "");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(dir / "src/deep/new.cpp", "");
  write_file(dir / "notes.txt", "");
  auto r = glob_tool().run({{"pattern", "*.cpp"}}, ctx);
  CHECK(r.output == "src/deep/new.cpp\nsrc/old.cpp\n");
  CHECK(glob_tool().run({{"pattern", "src/*.cpp"}}, ctx).output == "src/old.cpp\n");
  CHECK(glob_tool().run({{"pattern", "*.rs"}}, ctx).output.find("No files match") == 0);
  CHECK(glob_tool().run({{"pattern", "*"}, {"path", "nope"}}, ctx).is_error);
}

TEST_CASE("grep: content with line numbers, context, modes, filters and errors") {
  temp_dir dir;
  auto ctx = context_in(dir);
  write_file(dir / "a.cpp", "int x;\n// TODO fix\nint y;\n");
  write_file(dir / "b.py", "# todo later\nprint(1)\n");
  write_file(dir / "bin.dat", std::string{"TODO\0", 5});
  auto content = grep_tool().run({{"pattern", "TODO"}}, ctx);
  CHECK(content.output == "a.cpp:2:// TODO fix\n");
  CHECK(grep_tool().run({{"pattern", "todo"}, {"ignore_case", true}, {"output_mode", "files_with_matches"}}, ctx)
          .output == "a.cpp\nb.py\n");
  CHECK(grep_tool().run({{"pattern", "int"}, {"output_mode", "count"}}, ctx).output == "a.cpp:2\nb.py:1\n");
  CHECK(grep_tool().run({{"pattern", "TODO"}, {"context", 1}}, ctx).output ==
        "a.cpp-1-int x;\na.cpp:2:// TODO fix\na.cpp-3-int y;\n");
  CHECK(grep_tool().run({{"pattern", "int"}, {"glob", "*.py"}}, ctx).output == "b.py:2:print(1)\n");
  CHECK(grep_tool().run({{"pattern", "print"}, {"path", "b.py"}}, ctx).output == "b.py:2:print(1)\n");
  CHECK(grep_tool().run({{"pattern", "nothing here"}}, ctx).output.find("No matches") == 0);
  auto bad = grep_tool().run({{"pattern", "(unclosed"}}, ctx);
  CHECK(bad.is_error);
  CHECK(bad.output.find("invalid regular expression") != std::string::npos);
  CHECK(grep_tool().run({{"pattern", "x"}, {"output_mode", "lines"}}, ctx).is_error);
}

TEST_CASE("ls shows directories, sizes and links") {
  temp_dir dir;
  auto ctx = context_in(dir);
  write_file(dir / "f.txt", "12345");
  std::filesystem::create_directories(dir / "sub");
  std::filesystem::create_symlink("f.txt", dir / "link");
  auto r = ls_tool().run(json::object(), ctx);
  CHECK(r.output.find("3 entries\n") != std::string::npos);
  CHECK(r.output.find("f.txt\t5 bytes\n") != std::string::npos);
  CHECK(r.output.find("sub/\n") != std::string::npos);
  CHECK(r.output.find("link@ -> f.txt\n") != std::string::npos);
  CHECK(ls_tool().run({{"path", "f.txt"}}, ctx).is_error);
  CHECK(ls_tool().run({{"path", "missing"}}, ctx).is_error);
}

TEST_CASE("grep, glob and ls leave out what a read deny rule forbids, and say so") {
  temp_dir dir;
  auto ctx = context_in(dir);
  write_file(dir / "secret/key.txt", "SECRET=hunter2\n");
  write_file(dir / "open.txt", "SECRET=public\n");
  std::filesystem::create_directory_symlink(dir / "secret", dir / "door");
  std::filesystem::create_symlink(dir / "secret/key.txt", dir / "alias.txt");
  ctx.read_denied = [&](const std::filesystem::path& path) -> std::optional<std::string> {
    auto real = std::filesystem::weakly_canonical(path).string();
    if (real.find((dir / "secret/").string()) == 0 || real == (dir / "secret").string())
      return std::string{"read(secret)"};
    return std::nullopt;
  };
  const std::string note = "[skipped 2 paths that a deny rule forbids reading: read(secret)]\n";
  // The denied directory is left out whole (one path), the link to its file is another.
  CHECK(grep_tool().run({{"pattern", "SECRET"}}, ctx).output ==
        "open.txt:1:SECRET=public\n" + note);
  CHECK(glob_tool().run({{"pattern", "*.txt"}}, ctx).output == "open.txt\n" + note);
  auto listing = ls_tool().run(json::object(), ctx).output;
  CHECK(listing.find("secret/\n") == std::string::npos);
  CHECK(listing.find("alias.txt") == std::string::npos);
  CHECK(listing.find("[skipped 3 paths") != std::string::npos); // door too
  for (auto* tool : {"grep", "glob", "ls"}) {
    CAPTURE(tool);
    json input = {{"pattern", "SECRET"}, {"path", "door"}};
    auto spec = std::string{tool} == "grep" ? grep_tool()
                : std::string{tool} == "glob" ? glob_tool()
                                               : ls_tool();
    if (std::string{tool} == "ls")
      input.erase("pattern");
    auto r = spec.run(input, ctx);
    CHECK(r.is_error);
    CHECK(r.output.find("denied by the rule read(secret)") != std::string::npos);
  }
}

TEST_CASE("a cancelled scan stops and says so") {
  temp_dir dir;
  auto ctx = context_in(dir);
  write_file(dir / "a.txt", "x\n");
  auto cancelled = std::make_shared<std::atomic<bool>>(true);
  ctx.cancelled = cancelled;
  for (auto spec : {grep_tool(), glob_tool()}) {
    CAPTURE(spec.name);
    auto r = spec.run({{"pattern", spec.name == "grep" ? "x" : "*"}}, ctx);
    CHECK(r.is_error);
    CHECK(r.output == "[interrupted before the search finished]");
  }
  cancelled->store(false);
  CHECK(glob_tool().run({{"pattern", "*"}}, ctx).output == "a.txt\n");
}
