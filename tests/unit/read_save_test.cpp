#include <doctest/doctest.h>

#include <sys/stat.h>

#include "support/test_support.hpp"
#include "tools/read.hpp"
#include "tools/save.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

tool_context context_in(const temp_dir& dir) {
  tool_context ctx;
  ctx.cwd = dir.path();
  ctx.home = dir / "home";
  return ctx;
}

} // namespace

TEST_CASE("save creates parent directories and reports create vs overwrite") {
  temp_dir dir;
  auto ctx = context_in(dir);
  auto save = save_tool();
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

TEST_CASE("read caps a large file") {
  temp_dir dir;
  auto ctx = context_in(dir);
  ctx.output_cap = 1000;
  std::string big;
  for (int i = 0; i < 1000; ++i)
    big += "line " + std::to_string(i) + "\n";
  write_file(dir / "big.txt", big);
  auto r = read_tool().run({{"path", "big.txt"}}, ctx);
  CHECK(r.truncated);
  CHECK(r.output.size() < 1200);
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
  CHECK(long_line.truncated);
  CHECK(long_line.output.size() < 1200);
  write_file(dir / "no_newline.txt", "a\nb");
  CHECK(read_tool().run({{"path", "no_newline.txt"}}, ctx).output == "     1\ta\n     2\tb\n");
  CHECK(read_tool().run({{"path", "no_newline.txt"}, {"start_line", 2}}, ctx).output ==
        "     2\tb\n");
}
