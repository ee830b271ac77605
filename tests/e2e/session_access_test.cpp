// Sessions another user cannot read: `troupe ls`, `notify` and `interrupt` say "permission
// denied" with the path, never that a file is missing or the state unknown. As root the
// commands run as uid 65534 (setpriv); otherwise the files are made unreadable with chmod.

#include <doctest/doctest.h>

#include <unistd.h>

#include "support/control_peer.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// util-linux's setpriv, which runs a command under another uid; empty when absent.
std::string setpriv() {
  for (const char* path : {"/usr/bin/setpriv", "/bin/setpriv"})
    if (::access(path, X_OK) == 0)
      return path;
  return {};
}

// How the other user is played: by switching uid when we are root, else by taking our own
// permissions away.
struct other_user {
  cli_fixture& f;
  bool as_nobody = ::geteuid() == 0;
  fs::path binary;

  // Call it once the sessions exist: it opens the fixture's tree to the other user.
  explicit other_user(cli_fixture& fixture) : f(fixture) {
    if (!as_nobody)
      return;
    // A copy nobody may run, wherever the build tree is; the fixture's tree is opened to it.
    binary = f.dir / "troupe";
    fs::copy_file(TROUPE_BINARY, binary);
    fs::permissions(binary, fs::perms(0755));
    for (auto& dir : {f.dir.path(), f.dir / "home", f.dir / "home/sessions"})
      fs::permissions(dir, fs::perms(0755));
  }

  // Makes what a session holds another user's: its directory (0700, as troupe makes it) or,
  // with `files_only`, its files (0600) in an open directory.
  void close_off(const fs::path& dir, bool files_only) const {
    fs::permissions(dir, fs::perms(files_only ? 0755 : as_nobody ? 0700 : 0));
    if (files_only)
      for (auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file())
          fs::permissions(entry.path(), fs::perms(as_nobody ? 0600 : 0));
  }

  // Gives the owner its permissions back (the fixture removes the tree afterwards).
  void reopen(const fs::path& dir) const {
    fs::permissions(dir, fs::perms(0755));
    for (auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file())
        fs::permissions(entry.path(), fs::perms(0600));
  }

  process_result troupe(const std::vector<std::string>& args) const {
    auto opts = f.options();
    if (!as_nobody)
      return run_troupe(args, opts);
    opts.cwd = "/";
    opts.env["HOME"] = f.dir.path().string();
    std::vector<std::string> argv{setpriv(), "--reuid=65534", "--regid=65534",
                                  "--clear-groups", binary.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, opts);
  }
};

// The checks every unreadable session must pass: ls, ls --json, notify and interrupt.
void check_denied(const other_user& other, const std::string& id, const fs::path& dir) {
  auto table = other.troupe({"ls"});
  CHECK(table.exit_code == 0);
  auto row = std::string{};
  for (auto& line : split_lines(table.out))
    if (line.rfind(id + " ", 0) == 0)
      row = line;
  CHECK(row.find("unreadable") != std::string::npos);
  CHECK(row.find("(permission denied)") != std::string::npos);
  CHECK(row.find("unknown") == std::string::npos);

  auto listed = other.troupe({"ls", "--json"});
  CHECK(listed.exit_code == 0);
  bool found = false;
  for (auto& line : split_lines(listed.out)) {
    auto s = json::parse(line);
    if (s["id"] != id)
      continue;
    found = true;
    CHECK(s["state"] == "unreadable");
    CHECK(s["error"].get<std::string>().rfind("permission denied: " + dir.string(), 0) == 0);
  }
  CHECK(found);

  for (auto command : {std::vector<std::string>{"interrupt", id},
                       std::vector<std::string>{"notify", id, "hello"},
                       std::vector<std::string>{"show", id}}) {
    auto r = other.troupe(command);
    INFO(command[0] << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("permission denied") != std::string::npos);
    CHECK(r.err.find(dir.string()) != std::string::npos);
    CHECK(r.err.find("missing") == std::string::npos);
    CHECK(r.err.find("unknown session") == std::string::npos);
  }
}

} // namespace

TEST_CASE("another user's session is reported as permission denied, not missing or unknown") {
  cli_fixture f;
  if (::geteuid() == 0 && setpriv().empty()) {
    MESSAGE("setpriv (util-linux) is not installed: cannot run troupe as another user");
    return;
  }
  REQUIRE(f.run({"--model", f.script({text_line("done")}), "--session-id", "ended", "hi"})
            .exit_code == 0);
  auto live_dir = session_dir(f, "live");
  auto opts = f.options();
  opts.timeout = std::chrono::seconds{180}; // a hang guard: the test ends it
  auto run = start_live({"run", "--cwd", (f.dir / "work").string(), "--model",
                         f.script({text_line("ready")}), "--wait-notifications",
                         "--idle-timeout", "600", "--session-id", "live", "wait"},
                        opts, live_dir);
  other_user other{f};

  // Its directory closed (as troupe makes it), then open with its files closed.
  for (bool files_only : {false, true}) {
    INFO((files_only ? "files closed" : "directory closed"));
    other.close_off(session_dir(f, "ended"), files_only);
    other.close_off(live_dir, files_only);
    check_denied(other, "ended", session_dir(f, "ended"));
    check_denied(other, "live", live_dir);
    other.reopen(session_dir(f, "ended"));
    other.reopen(live_dir);
  }
  // Nothing reached the session meanwhile; its owner still does.
  CHECK(read_file(live_dir / "queue.jsonl").empty());
  auto r = run_troupe({"interrupt", "live"}, f.options());
  CHECK(r.exit_code == 0);
  CHECK(run.get().exit_code == 130);
}

TEST_CASE("another user's sessions folder is permission denied for ls, not an empty list") {
  cli_fixture f;
  if (::geteuid() == 0 && setpriv().empty()) {
    MESSAGE("setpriv (util-linux) is not installed: cannot run troupe as another user");
    return;
  }
  REQUIRE(f.run({"--model", f.script({text_line("done")}), "--session-id", "one", "hi"})
            .exit_code == 0);
  other_user other{f};
  auto sessions = f.dir / "home/sessions";
  auto denied = "permission denied: cannot read " + sessions.string();
  fs::permissions(sessions, fs::perms(other.as_nobody ? 0700 : 0));
  auto r = other.troupe({"ls"});
  // A session looked up by name, or the newest of a workspace, is not "unknown" either.
  std::vector<process_result> named;
  for (auto& args : std::vector<std::vector<std::string>>{
         {"show", "a name"}, {"notify", "a name", "x"}, {"rm", "a name"},
         {"interrupt", "a name"}})
    named.push_back(other.troupe(args));
  auto continued = other.troupe({"run", "--continue", "go on"});
  fs::permissions(sessions, fs::perms(0755));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(denied) != std::string::npos);
  CHECK(r.out.find("no sessions yet") == std::string::npos);
  for (auto& n : named) {
    INFO(n.err);
    CHECK(n.exit_code == 1);
    CHECK(n.err.find(denied) != std::string::npos);
  }
  INFO(continued.err);
  CHECK(continued.exit_code == 2);
  CHECK(continued.err.find("--continue: " + denied) != std::string::npos);
}
