#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "orchestrator/project_files.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

struct tree {
  temp_dir dir;
  std::filesystem::path home = dir / "home";
  std::filesystem::path user = dir / "home/.config/troupe";
  std::filesystem::path repo = dir / "home/repo";
  std::filesystem::path work = dir / "home/repo/pkg/lib";

  tree() {
    std::filesystem::create_directories(work);
    std::filesystem::create_directories(repo / ".git");
    std::filesystem::create_directories(user);
  }

  project_instructions read(instruction_limits limits = {}) const {
    return read_project_instructions(work, user, home, limits);
  }
};

} // namespace

TEST_CASE("instruction files: the user's first, then the repository's root down to the workspace") {
  tree t;
  write_file(t.user / "CLAUDE.md", "user rule");
  write_file(t.home / "CLAUDE.md", "above the repository: never read");
  write_file(t.repo / "CLAUDE.md", "root rule");
  write_file(t.repo / "pkg/AGENTS.md", "pkg rule");
  write_file(t.work / "CLAUDE.md", "lib rule");
  write_file(t.work / ".claude/CLAUDE.md", "lib dot-claude rule");
  write_file(t.work / "CLAUDE.local.md", "my own lib rule");
  auto read = t.read();
  CHECK(read.warnings.empty());
  CHECK(read.files == std::vector<std::string>{
                        (t.user / "CLAUDE.md").string(), (t.repo / "CLAUDE.md").string(),
                        (t.repo / "pkg/AGENTS.md").string(), (t.work / "CLAUDE.md").string(),
                        (t.work / ".claude/CLAUDE.md").string(),
                        (t.work / "CLAUDE.local.md").string()});
  CHECK(read.text.rfind("# Project instructions\n\n", 0) == 0);
  auto at = [&](const std::string& what) { return read.text.find(what); };
  CHECK(at("## " + (t.user / "CLAUDE.md").string() + "\n\nuser rule") != std::string::npos);
  CHECK(at("user rule") < at("root rule"));
  CHECK(at("root rule") < at("pkg rule"));
  CHECK(at("pkg rule") < at("lib rule"));
  CHECK(at("lib dot-claude rule") < at("my own lib rule"));
  CHECK(at("never read") == std::string::npos);
}

TEST_CASE("without a repository the walk stops at the home directory") {
  temp_dir dir;
  auto home = dir / "home";
  auto work = dir / "home/a/b";
  std::filesystem::create_directories(work);
  write_file(dir / "CLAUDE.md", "above home");
  write_file(home / "CLAUDE.md", "home");
  write_file(dir / "home/a/CLAUDE.md", "a");
  auto read = read_project_instructions(work, dir / "nouser", home);
  CHECK(read.files == std::vector<std::string>{(home / "CLAUDE.md").string(),
                                               (dir / "home/a/CLAUDE.md").string()});
  CHECK(project_root(work, home) == std::filesystem::canonical(home));
}

TEST_CASE("no files: no section, nothing to warn about") {
  tree t;
  auto read = t.read();
  CHECK(read.text.empty());
  CHECK(read.files.empty());
  CHECK(read.warnings.empty());
}

TEST_CASE("a file linked twice is read once, and a link out of the project is not read") {
  tree t;
  write_file(t.work / "CLAUDE.md", "the rules");
  std::filesystem::create_symlink("CLAUDE.md", t.work / "AGENTS.md");
  write_file(t.dir / "secret", "the key");
  std::filesystem::create_symlink(t.dir / "secret", t.repo / "CLAUDE.md");
  std::filesystem::create_symlink(t.dir / "nowhere", t.repo / "CLAUDE.local.md");
  auto read = t.read();
  CHECK(read.files == std::vector<std::string>{(t.work / "CLAUDE.md").string()});
  CHECK(read.text.find("the key") == std::string::npos);
  REQUIRE(read.warnings.size() == 2);
  CHECK(read.warnings[0].find("outside the project") != std::string::npos);
  CHECK(read.warnings[1].find("a link to nothing") != std::string::npos);
}

TEST_CASE("an unreadable file, a FIFO and a directory are warnings, never a hang or a failure") {
  tree t;
  write_file(t.repo / "CLAUDE.md", "locked");
  ::chmod((t.repo / "CLAUDE.md").c_str(), 0);
  REQUIRE(::mkfifo((t.work / "CLAUDE.md").c_str(), 0600) == 0);
  std::filesystem::create_directories(t.work / "AGENTS.md");
  write_file(t.work / "CLAUDE.local.md", "still read");
  auto read = t.read();
  bool root = ::geteuid() == 0; // root reads a file of mode 0
  auto expected = root ? std::vector<std::string>{(t.repo / "CLAUDE.md").string(),
                                                  (t.work / "CLAUDE.local.md").string()}
                       : std::vector<std::string>{(t.work / "CLAUDE.local.md").string()};
  CHECK(read.files == expected);
  CHECK(read.text.find("still read") != std::string::npos);
  REQUIRE(read.warnings.size() == (root ? 2u : 3u));
  if (!root)
    CHECK(read.warnings.front().find("Permission denied") != std::string::npos);
  CHECK(read.warnings.back().find("not a regular file") != std::string::npos);
  ::chmod((t.repo / "CLAUDE.md").c_str(), 0600);
}

TEST_CASE("a huge file is cut at the per-file cap, and all of them at the total, with a note") {
  tree t;
  write_file(t.repo / "CLAUDE.md", std::string(50 << 20, 'x'));
  write_file(t.repo / "AGENTS.md", std::string(100, 'y'));
  write_file(t.work / "CLAUDE.md", "after the cut");
  auto read = t.read({1000, 1050});
  CHECK(read.text.find(std::string(1000, 'x')) != std::string::npos);
  CHECK(read.text.find(std::string(1001, 'x')) == std::string::npos);
  CHECK(read.text.find("is 52428800 bytes; only its first 1000 are read") != std::string::npos);
  CHECK(read.text.find(std::string(50, 'y')) != std::string::npos);
  CHECK(read.text.find(std::string(51, 'y')) == std::string::npos);
  CHECK(read.text.find("passed 1050 bytes in all") != std::string::npos);
  CHECK(read.text.find("after the cut") == std::string::npos);
  CHECK(read.files.size() == 2);
  CHECK(read.warnings.size() == 3);
}

TEST_CASE("a cut never splits a character") {
  temp_dir dir;
  write_file(dir / "f", "aé"); // 'é' is two bytes
  auto read = read_capped_file(dir / "f", 2);
  REQUIRE(read);
  CHECK(read->cut);
  CHECK(read->text == "a");
  CHECK(read->size == 3);
}

TEST_CASE("@relative lines import a file once, one level deep, never from outside the project") {
  tree t;
  write_file(t.repo / "docs/style.md", "use tabs\n@more.md");
  write_file(t.repo / "docs/more.md", "second level");
  write_file(t.dir / "outside.md", "outside");
  std::filesystem::create_symlink(t.dir / "outside.md", t.repo / "out.md");
  write_file(t.repo / "CLAUDE.md", "before\n@docs/style.md\n  @out.md\n@~/.ssh/id_rsa\nmail @someone\n"
                                   "@someone\n```\n@docs/style.md\n```\nafter");
  auto read = t.read();
  CHECK(read.files == std::vector<std::string>{(t.repo / "CLAUDE.md").string(),
                                               (t.repo / "docs/style.md").string()});
  auto expected = "## " + (t.repo / "CLAUDE.md").string() +
                  "\n\nbefore\nuse tabs\n@more.md\n  @out.md\n@~/.ssh/id_rsa\nmail @someone\n"
                  "@someone\n```\n@docs/style.md\n```\nafter";
  CHECK(read.text.find(expected) != std::string::npos);
  CHECK(read.text.find("outside\n") == std::string::npos);
  REQUIRE(read.warnings.size() == 2);
  CHECK(read.warnings[0].find("outside the project") != std::string::npos);
  CHECK(read.warnings[1].find("only paths relative to the file") != std::string::npos);
}
