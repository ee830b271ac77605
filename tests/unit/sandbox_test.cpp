#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/test_support.hpp"
#include "tools/sandbox.hpp"

using namespace troupe;
using troupe::test::temp_dir;
namespace fs = std::filesystem;

namespace {

const std::string bwrap = "/usr/bin/bwrap";

sandbox_settings walls(sandbox_mode mode, std::vector<fs::path> add_dirs = {}) {
  sandbox_settings settings;
  settings.mode = mode;
  settings.bwrap = bwrap;
  settings.add_dirs = std::move(add_dirs);
  return settings;
}

// The pairs `flag SOURCE DEST` of a wrapped command line, in order.
std::vector<std::string> binds(const std::vector<std::string>& argv) {
  std::vector<std::string> found;
  for (size_t i = 0; i + 2 < argv.size() && argv[i] != "--"; ++i)
    if (argv[i] == "--bind" || argv[i] == "--ro-bind")
      found.push_back(argv[i] + " " + argv[i + 1]);
  return found;
}

} // namespace

TEST_CASE("sandbox modes parse and print one spelling each") {
  for (auto mode : {sandbox_mode::off, sandbox_mode::read_only, sandbox_mode::workspace_write})
    CHECK(parse_sandbox_mode(to_string(mode)) == mode);
  CHECK_FALSE(parse_sandbox_mode("workspace_write"));
  CHECK_FALSE(parse_sandbox_mode(""));
}

TEST_CASE("workspace-write allows writes under the roots and /tmp, and keeps the protected "
          "files read-only") {
  temp_dir dir;
  auto ws = fs::canonical(dir.path());
  fs::create_directories(ws / "w/.git/hooks");
  fs::create_directories(ws / "extra");
  fs::create_directories(ws / "home");
  auto settings = walls(sandbox_mode::workspace_write, {ws / "extra"});
  settings.keep_read_only = {ws / "w/home-inside", ws / "home"};
  sandbox_policy policy{settings, ws / "w"};
  CHECK(policy.write_refusal(ws / "w/src/a.c").empty());
  CHECK(policy.write_refusal(ws / "extra/b").empty());
  CHECK(policy.write_refusal(ws / "w").empty());
  auto outside = policy.write_refusal(ws / "elsewhere");
  CHECK(outside.find("Permission denied (EACCES): the sandbox (workspace-write) refuses writes to " +
                     (ws / "elsewhere").string()) == 0);
  CHECK(outside.find((ws / "w").string()) != std::string::npos);
  CHECK(policy.write_refusal(ws / "w/.git/hooks/pre-commit").find("repository's hooks") !=
        std::string::npos);
  CHECK(policy.write_refusal(ws / "w/.git/config").find("repository's config") !=
        std::string::npos);
  CHECK(policy.write_refusal(ws / "w/.git/objects/x").empty()); // git still works
  CHECK(policy.write_refusal(ws / "w/.troupe/settings.json").find("project's troupe settings") !=
        std::string::npos);
  // Claude Code's project settings are read as the project's too: as safe from the model.
  CHECK(policy.write_refusal(ws / "w/.claude/settings.local.json")
          .find("project's Claude Code settings") != std::string::npos);
  CHECK(policy.write_refusal(ws / "w/home-inside/sessions/x").find("troupe's own files") !=
        std::string::npos);
  // A sibling whose name only starts like a root is not under it.
  CHECK_FALSE(policy.write_refusal(ws / "w2/x").empty());
  // The private /tmp: where /tmp/… leads, and writable.
  auto mapped = policy.host_path("/tmp/notes/a.txt");
  auto temp = policy.temp_dir();
  REQUIRE(temp);
  CHECK(mapped == *temp / "notes/a.txt");
  CHECK(policy.host_path(mapped) == mapped); // never mapped twice
  CHECK(policy.host_path("/tmpfoo/x") == "/tmpfoo/x");
  CHECK(policy.host_path(ws / "w/a") == ws / "w/a");
  CHECK(policy.write_refusal(mapped).empty());
  CHECK(policy.inside_view("Created " + mapped.string() + " (3 bytes)") ==
        "Created /tmp/notes/a.txt (3 bytes)");
  CHECK(policy.inside_view(temp->string() + "x/y") == temp->string() + "x/y");
}

TEST_CASE("read-only allows only the private /tmp") {
  temp_dir dir;
  auto ws = fs::canonical(dir.path());
  sandbox_policy policy{walls(sandbox_mode::read_only), ws};
  CHECK(policy.write_refusal(ws / "a").find("refuses writes") != std::string::npos);
  CHECK(policy.write_refusal(ws / "a").find("only a private /tmp") != std::string::npos);
  CHECK(policy.write_refusal(policy.host_path("/tmp/a")).empty());
}

TEST_CASE("the private /tmp goes with the last holder of the policy") {
  fs::path made;
  {
    temp_dir dir;
    sandbox_policy policy{walls(sandbox_mode::workspace_write), dir.path()};
    auto temp = policy.temp_dir();
    REQUIRE(temp);
    made = *temp;
    std::ofstream{made / "left"} << "x";
    CHECK(fs::is_directory(made));
    CHECK((fs::status(made).permissions() & fs::perms::others_all) == fs::perms::none);
  }
  CHECK_FALSE(fs::exists(made));
}

TEST_CASE("a wrapped command binds /tmp first, the roots over it, and the protected paths last") {
  // `make deps` installs bubblewrap: a machine where it cannot work fails here, loudly.
  REQUIRE(probe_sandbox(bwrap).works);
  temp_dir dir;
  auto ws = fs::canonical(dir.path());
  fs::create_directories(ws / ".git");
  sandbox_policy policy{walls(sandbox_mode::workspace_write), ws};
  std::string program = "/bin/bash";
  std::vector<std::string> argv = {"bash", "--norc"};
  int fd = -1;
  REQUIRE(policy.wrap(program, argv, ws, fd));
  CHECK(program == bwrap);
  CHECK(fd > 3); // the seccomp program: no network
  ::close(fd);
  auto order = binds(argv);
  auto temp = policy.temp_dir();
  REQUIRE(temp);
  std::vector<std::string> expected = {"--ro-bind /", "--bind " + temp->string(),
                                       "--bind " + ws.string(), "--bind " + (ws / ".git").string(),
                                       "--ro-bind " + (ws / ".git/hooks").string(),
                                       "--ro-bind " + (ws / ".troupe").string(),
                                       "--ro-bind " + (ws / ".claude").string()};
  CHECK(order == expected);
  CHECK(fs::is_directory(ws / ".troupe")); // made so that it can be kept read-only
  CHECK(fs::is_directory(ws / ".claude"));
  CHECK(std::find(argv.begin(), argv.end(), "--unshare-net") != argv.end());
  // Root keeps no capability to remount what is bound read-only.
  CHECK(std::find(argv.begin(), argv.end(), "--unshare-user") != argv.end());
  auto drop = std::find(argv.begin(), argv.end(), "--cap-drop");
  REQUIRE(drop != argv.end());
  CHECK(*(drop + 1) == "ALL");
  auto tail = std::find(argv.begin(), argv.end(), "--");
  REQUIRE(tail != argv.end());
  CHECK(std::vector<std::string>(tail + 1, argv.end()) ==
        std::vector<std::string>{"/bin/bash", "--norc"});

  sandbox_settings open = walls(sandbox_mode::workspace_write);
  open.network = true;
  sandbox_policy networked{open, ws};
  argv = {"bash"};
  program = "/bin/bash";
  REQUIRE(networked.wrap(program, argv, ws, fd));
  CHECK(fd > 3); // host Unix sockets stay out of reach with the network too
  ::close(fd);
  CHECK(std::find(argv.begin(), argv.end(), "--unshare-net") == argv.end());
}

TEST_CASE("the note names the sandbox only for what it refused") {
  temp_dir dir;
  sandbox_policy policy{walls(sandbox_mode::workspace_write), dir.path()};
  CHECK(policy.note_for("all good\n").empty());
  CHECK(policy.note_for("bash: /etc/x: Read-only file system").find("the write was refused") !=
        std::string::npos);
  CHECK(policy.note_for("curl: (6) Could not resolve host: example").find("no network") !=
        std::string::npos);
  sandbox_settings open = walls(sandbox_mode::workspace_write);
  open.network = true;
  sandbox_policy networked{open, dir.path()};
  CHECK(networked.note_for("Connection refused").empty());
}
