#include <doctest/doctest.h>

#include <sys/stat.h>

#include "support/test_support.hpp"
#include "tools/read.hpp"
#include "tools/complete.hpp"
#include "tools/edit.hpp"
#include "tools/patch.hpp"
#include "tools/todo.hpp"
#include "tools/write.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

TEST_CASE("write creates parent directories and reports create vs overwrite") {
  temp_dir dir;
  auto ctx = context_in(dir);
  auto save = write_tool();
  auto first = save.run({{"path", "a/b/c.txt"}, {"content", "one"}}, ctx);
  CHECK_FALSE(first.is_error);
  CHECK(first.output.rfind("Created ", 0) == 0);
  CHECK(read_file(dir / "a/b/c.txt") == "one");
  auto second = save.run({{"path", "a/b/c.txt"}, {"content", "two"}}, ctx);
  CHECK(second.output.rfind("Overwrote ", 0) == 0);
  CHECK(read_file(dir / "a/b/c.txt") == "two");
  CHECK(save.run({{"path", ""}, {"content", "x"}}, ctx).is_error);
  save.run({{"path", "~/h.txt"}, {"content", "home"}}, ctx);
  CHECK(read_file(dir / "home/h.txt") == "home");
}

TEST_CASE("read numbers lines and honours a line range") {
  temp_dir dir;
  auto ctx = context_in(dir);
  write_file(dir / "f.txt", "one\ntwo\nthree\nfour\n");
  auto read = read_tool();
  CHECK(read.run({{"path", "f.txt"}}, ctx).output ==
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n");
  CHECK(read.run({{"path", "f.txt"}, {"start_line", 2}, {"end_line", 3}}, ctx).output ==
        "     2\ttwo\n     3\tthree\n");
  CHECK(read.run({{"path", "f.txt"}, {"start_line", 3}, {"end_line", 1}}, ctx).is_error);
  auto missing = read.run({{"path", "nope.txt"}}, ctx);
  CHECK(missing.is_error);
  CHECK(missing.output.find("cannot read") != std::string::npos);
  CHECK(read.run({{"path", "."}}, ctx).output.find("is a directory") != std::string::npos);
}

TEST_CASE("read stops at four times the output budget and says how to read on") {
  temp_dir dir;
  auto ctx = context_in(dir);
  ctx.output_cap = 1000;
  std::string big;
  for (int i = 0; i < 1000; ++i)
    big += "line " + std::to_string(i) + "\n";
  write_file(dir / "big.txt", big);
  auto r = read_tool().run({{"path", "big.txt"}}, ctx);
  CHECK(r.output.size() < 4200);
  CHECK(r.output.find("use start_line/end_line to read further") != std::string::npos);
}

TEST_CASE("read refuses what is not a regular file and bounds endless lines") {
  temp_dir dir;
  auto ctx = context_in(dir);
  ctx.output_cap = 1000;
  REQUIRE(::mkfifo((dir / "pipe").c_str(), 0600) == 0);
  auto fifo = read_tool().run({{"path", "pipe"}}, ctx);
  CHECK(fifo.is_error);
  CHECK(fifo.output.find("not a regular file") != std::string::npos);
  write_file(dir / "one_line.txt", std::string(5000000, 'x'));
  auto long_line = read_tool().run({{"path", "one_line.txt"}}, ctx);
  CHECK(long_line.output.size() < 4200);
  write_file(dir / "no_newline.txt", "a\nb");
  CHECK(read_tool().run({{"path", "no_newline.txt"}}, ctx).output == "     1\ta\n     2\tb\n");
  CHECK(read_tool().run({{"path", "no_newline.txt"}, {"start_line", 2}}, ctx).output ==
        "     2\tb\n");
}

TEST_CASE("read refuses a binary file") {
  temp_dir dir;
  auto ctx = context_in(dir);
  write_file(dir / "blob.bin", std::string{"ELF\0\1\2", 6});
  auto r = read_tool().run({{"path", "blob.bin"}}, ctx);
  CHECK(r.is_error);
  CHECK(r.output.find("binary file (6 bytes)") != std::string::npos);
}

TEST_CASE("edit replaces exactly one match, or every match with replace_all") {
  temp_dir dir;
  auto ctx = context_in(dir);
  auto edit = edit_tool();
  write_file(dir / "a.py", "x = 1\ny = 2\nx = 1\n");
  auto twice = edit.run({{"path", "a.py"}, {"old_string", "x = 1"}, {"new_string", "x = 3"}}, ctx);
  CHECK(twice.is_error);
  CHECK(twice.output.find("matches 2 places (lines 1, 3)") != std::string::npos);
  CHECK(read_file(dir / "a.py") == "x = 1\ny = 2\nx = 1\n"); // nothing written

  auto once = edit.run({{"path", "a.py"}, {"old_string", "y = 2"}, {"new_string", "y = 5"}}, ctx);
  CHECK_FALSE(once.is_error);
  CHECK(once.output.find("1 replacement") != std::string::npos);
  CHECK(read_file(dir / "a.py") == "x = 1\ny = 5\nx = 1\n");

  auto all = edit.run({{"path", "a.py"}, {"old_string", "x = 1"}, {"new_string", "x = 0"},
                       {"replace_all", true}},
                      ctx);
  CHECK(all.output.find("2 replacements") != std::string::npos);
  CHECK(read_file(dir / "a.py") == "x = 0\ny = 5\nx = 0\n");
}

TEST_CASE("edit without a match shows the nearest lines and changes nothing") {
  temp_dir dir;
  auto ctx = context_in(dir);
  write_file(dir / "m.cpp", "int main() {\n  return compute(1, 2);\n}\n");
  auto r = edit_tool().run({{"path", "m.cpp"},
                            {"old_string", "return compute(1,2);"},
                            {"new_string", "return 0;"}},
                           ctx);
  CHECK(r.is_error);
  CHECK(r.output.find("not found") != std::string::npos);
  CHECK(r.output.find("2\t  return compute(1, 2);") != std::string::npos);
  CHECK(read_file(dir / "m.cpp") == "int main() {\n  return compute(1, 2);\n}\n");
  auto same = edit_tool().run({{"path", "m.cpp"}, {"old_string", "main"}, {"new_string", "main"}}, ctx);
  CHECK(same.output.find("the same") != std::string::npos);
  auto missing = edit_tool().run({{"path", "no.cpp"}, {"old_string", "a"}, {"new_string", "b"}}, ctx);
  CHECK(missing.output.find("to create a file, use write") != std::string::npos);
}

TEST_CASE("patch applies every ORIGINAL/UPDATED hunk, or none") {
  temp_dir dir;
  auto ctx = context_in(dir);
  auto patch = patch_tool();
  write_file(dir / "h.py", "def hello():\n    print(\"hi\")\n\nhello()\n");
  auto two = "<<<<<<< ORIGINAL\n    print(\"hi\")\n=======\n    print(\"hello\")\n>>>>>>> UPDATED\n"
             "<<<<<<< ORIGINAL\nhello()\n=======\nif __name__ == \"__main__\":\n    hello()\n"
             ">>>>>>> UPDATED\n";
  auto ok = patch.run({{"path", "h.py"}, {"patch", two}}, ctx);
  CHECK_FALSE(ok.is_error);
  CHECK(ok.output.find("2 hunks") != std::string::npos);
  CHECK(read_file(dir / "h.py") ==
        "def hello():\n    print(\"hello\")\n\nif __name__ == \"__main__\":\n    hello()\n");

  auto half = "<<<<<<< ORIGINAL\ndef hello():\n=======\ndef greet():\n>>>>>>> UPDATED\n"
              "<<<<<<< ORIGINAL\nnot in the file\n=======\nx\n>>>>>>> UPDATED\n";
  auto failed = patch.run({{"path", "h.py"}, {"patch", half}}, ctx);
  CHECK(failed.is_error);
  CHECK(failed.output.find("hunk 2 of 2") != std::string::npos);
  CHECK(failed.output.find("no hunk was applied") != std::string::npos);
  CHECK(read_file(dir / "h.py").find("def hello()") != std::string::npos);

  CHECK(patch.run({{"path", "h.py"}, {"patch", "just text"}}, ctx).output.find("outside any hunk") !=
        std::string::npos);
  CHECK(patch.run({{"path", "h.py"}, {"patch", "<<<<<<< ORIGINAL\na\n=======\nb\n"}}, ctx)
          .output.find("not closed") != std::string::npos);
}

TEST_CASE("todo checks its list and renders it") {
  auto todo = todo_tool();
  tool_context ctx;
  auto ok = todo.run({{"todos", json::array({{{"content", "parse"}, {"status", "completed"}},
                                             {{"content", "test"}, {"status", "in_progress"}},
                                             {{"content", "ship"}, {"status", "pending"}}})}},
                     ctx);
  CHECK(ok.output == "Task list (1/3 done):\n[x] parse\n[>] test\n[ ] ship\n");
  CHECK(todo.run({{"todos", json::array({{{"content", "a"}, {"status", "in_progress"}},
                                         {{"content", "b"}, {"status", "in_progress"}}})}},
                 ctx)
          .output.find("only one task") != std::string::npos);
  CHECK(todo.run({{"todos", json::array({{{"content", "a"}, {"status", "done"}}})}}, ctx).is_error);
  CHECK(todo.run({{"todos", "[not json"}}, ctx).is_error);
  CHECK(complete_tool().run({{"summary", "  \n"}}, ctx).is_error);
  CHECK(complete_tool().run({{"summary", "All done."}}, ctx).output == "All done.");
}
