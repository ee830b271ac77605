#include "support/fake_server.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

extern char** environ;

namespace troupe::test {

fake_server::fake_server(const std::string& replies, bool loop) {
  auto parsed = nlohmann::json::parse(replies, nullptr, false);
  REQUIRE_MESSAGE((parsed.is_array()), "a fake server script must be a JSON array: " << replies);
  write_file(dir_ / "script.json", parsed.dump());
  int in_pipe[2], out_pipe[2];
  REQUIRE(pipe2(in_pipe, O_CLOEXEC) == 0);
  REQUIRE(pipe2(out_pipe, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  std::string script = std::string{TROUPE_SOURCE_DIR} + "/tests/support/fake_model_server.py";
  std::string script_file = (dir_ / "script.json").string();
  std::string record = (dir_ / "requests.jsonl").string();
  std::vector<const char*> argv = {"python3", script.c_str(), "--script", script_file.c_str(),
                                   "--record", record.c_str()};
  if (loop)
    argv.push_back("--loop");
  argv.push_back(nullptr);
  int rc = posix_spawnp(&pid_, "python3", &actions, nullptr, const_cast<char**>(argv.data()),
                        environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  REQUIRE_MESSAGE(rc == 0, "cannot start the fake model server");
  // The server exits when this pipe closes, so a crashed test never leaves it behind.
  stdin_fd_ = in_pipe[1];
  std::string line;
  char c = 0;
  while (read(out_pipe[0], &c, 1) == 1 && c != '\n')
    line.push_back(c);
  close(out_pipe[0]);
  REQUIRE_MESSAGE(line.rfind("PORT ", 0) == 0, "fake server said: " << line);
  port_ = std::stoi(line.substr(5));
}

fake_server::~fake_server() {
  close(stdin_fd_);
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
}

std::string fake_server::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<nlohmann::json> fake_server::requests() const {
  return read_jsonl(dir_ / "requests.jsonl");
}

} // namespace troupe::test
