#include "orchestrator/demo_command.hpp"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string_view>

#include "store/ids.hpp"
#include "store/session_paths.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/run_command.hpp"
#include "orchestrator/model_flags.hpp"
#include "orchestrator/run_flags.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

std::string_view embedded_team_script();
std::string_view embedded_writer_script();
std::string_view embedded_surveyor_script();
std::string_view embedded_scripter_script();

int run_demo(const std::string& format) {
  char workspace_template[] = "/tmp/troupe-demo-XXXXXX";
  if (mkdtemp(workspace_template) == nullptr)
    return fail("cannot create a temporary directory for the demo");
  // The session's files live beside the workspace, so the agent starts in an empty directory.
  std::filesystem::path root{workspace_template};
  auto workspace = root / "workspace";
  std::error_code ec;
  if (!std::filesystem::create_directory(workspace, ec))
    return fail("cannot create " + workspace.string() + ": " + ec.message());
  auto lines = parse_script(embedded_team_script(), "the bundled demo script");
  if (!lines)
    return fail(lines.error());
  // The subagents' scripts go beside the workspace; the parent names them in its task calls.
  auto agents = root / "agents";
  std::filesystem::create_directory(agents, ec);
  for (auto [name, text] : {std::pair{"writer.jsonl", embedded_writer_script()},
                            std::pair{"surveyor.jsonl", embedded_surveyor_script()},
                            std::pair{"scripter.jsonl", embedded_scripter_script()}})
    if (!write_whole_file(agents / name, std::string{text}).empty())
      return fail("cannot write " + (agents / name).string());

  run_settings settings;
  settings.prompt = "Write a word-count script, try it on two sample files and tell me which "
                    "file has more words. Use helpers for the parts that can run at once.";
  settings.model_name = "scripted:demo";
  settings.resolve_model = [](const std::string& spec) {
    return resolve_model_spec(spec, run_flags{});
  };
  settings.model_script = std::move(*lines);
  settings.cwd = workspace;
  settings.home = home_dir();
  settings.shell_program = find_bash();
  settings.troupe_home = root / "home";
  settings.session_id = new_session_id();
  // The demo's workspace is a fresh temporary directory: its edits and commands may run.
  settings.permissions.mode = permission_mode::accept_edits;
  settings.permissions.rules.allow.push_back(*parse_permission_rule("shell"));
  settings.permissions.context.cwd = workspace;
  settings.permissions.context.home = settings.home;
  settings.render.format =
    format == "stream-json" ? output_format::stream_json : output_format::text;
  if (settings.render.format == output_format::text)
    std::printf("troupe demo: an offline agent team (scripted models, real shells, three "
                "subagents, a notification from another process) in %s\n",
                workspace.c_str());
  auto transcript =
    session_paths::top_level(settings.troupe_home, settings.session_id).transcript();
  int code = execute_run(std::move(settings), stdout);
  if (format != "stream-json")
    std::printf("transcript: %s\n", transcript.c_str());
  return code;
}

} // namespace troupe
