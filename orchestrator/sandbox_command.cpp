#include "orchestrator/sandbox_command.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <CLI/CLI.hpp>

#include "orchestrator/environment.hpp"
#include "orchestrator/run_settings_files.hpp"
#include "tools/child_process.hpp"
#include "tools/sandbox.hpp"

namespace troupe {

CLI::App* add_sandbox_command(CLI::App& app, sandbox_flags& flags) {
  auto* sandbox = app.add_subcommand(
    "sandbox", "say what sandbox this machine offers (--check), or run a command in the walls "
               "a session's tools get");
  sandbox->add_flag("--check", flags.check, "say what is available; exit 1 when no sandbox is");
  sandbox->add_option("--cwd", flags.walls.cwd, "the workspace (default: the current directory)");
  add_sandbox_flags(*sandbox, flags.walls);
  sandbox->add_option("command", flags.command, "the command and its arguments, after --");
  return sandbox;
}

int run_sandbox(const sandbox_flags& flags) {
  if (flags.check) {
    for (auto& line : describe_sandbox_support(sandbox_program()))
      std::printf("%s\n", line.c_str());
    return probe_sandbox(sandbox_program()).works ? 0 : 1;
  }
  if (flags.command.empty())
    return fail("troupe sandbox: give --check, or a command to run after --");
  std::error_code ec;
  auto workspace = flags.walls.cwd.empty() ? std::filesystem::current_path(ec)
                                           : std::filesystem::absolute(flags.walls.cwd, ec);
  if (ec || !std::filesystem::is_directory(workspace, ec))
    return fail("--cwd " + flags.walls.cwd + ": no such directory");
  workspace = std::filesystem::canonical(workspace, ec);
  // Trying the walls means having some: workspace-write unless told otherwise.
  auto settings = resolve_sandbox(flags.walls, workspace, true);
  if (!settings)
    return fail(settings.error());
  sandbox_policy policy{*settings, workspace};
  // Found here, as a shell would (the sandbox sees the same files): 127 when it is not there,
  // not bwrap's own exit status.
  std::string program = flags.command.front();
  if (program.find('/') == std::string::npos)
    program = find_program(program);
  if (program.empty() || ::access(program.c_str(), F_OK) != 0) {
    std::fprintf(stderr, "troupe sandbox: %s: command not found\n",
                 flags.command.front().c_str());
    return 127;
  }
  std::vector<std::string> args = flags.command;
  int filter_fd = -1;
  if (auto wrapped = policy.wrap(program, args, workspace, filter_fd); !wrapped)
    return fail(wrapped.error());
  std::vector<const char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = spawn_child(program, argv.data(), {}, workspace, STDIN_FILENO, STDOUT_FILENO,
                       STDERR_FILENO, pid, "", filter_fd);
  if (filter_fd >= 0)
    ::close(filter_fd);
  if (rc != 0) {
    std::fprintf(stderr, "troupe sandbox: cannot start %s: %s\n", program.c_str(),
                 std::strerror(rc));
    return rc == ENOENT ? 127 : 126;
  }
  int status = 0;
  wait_child(pid, status);
  return exit_code_of(status);
}

} // namespace troupe
