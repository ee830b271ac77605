#include "orchestrator/demo_command.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>

#include "store/ids.hpp"
#include "store/session_paths.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/run_command.hpp"
#include "orchestrator/model_flags.hpp"
#include "orchestrator/run_flags.hpp"
#include "orchestrator/signals.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

std::string_view embedded_team_script();
std::string_view embedded_writer_script();
std::string_view embedded_surveyor_script();
std::string_view embedded_scripter_script();

namespace {

// The demo's temporary directory: removed once, by whichever comes first — the demo's end (a
// failed set-up and an interrupted run included) or an exit forced while a tool still runs —
// unless it is to be kept.
class demo_directory {
public:
  demo_directory(std::filesystem::path root, bool keep)
    : removal_(std::make_shared<removal>(std::move(root), keep)) {}
  demo_directory(const demo_directory&) = delete;
  demo_directory& operator=(const demo_directory&) = delete;
  ~demo_directory() { remover()(); }

  const std::filesystem::path& root() const { return removal_->root; }

  /// Removes the directory (once; nothing when it is kept), from any thread.
  std::function<void()> remover() const {
    return [r = removal_] {
      if (!r->keep)
        std::call_once(r->once, [&] {
          std::error_code ec;
          std::filesystem::remove_all(r->root, ec);
        });
    };
  }

private:
  struct removal {
    removal(std::filesystem::path r, bool k) : root(std::move(r)), keep(k) {}
    std::filesystem::path root;
    bool keep;
    std::once_flag once;
  };
  std::shared_ptr<removal> removal_;
};

// A fresh directory under $TMPDIR (else /tmp), or why there is none.
expected<std::filesystem::path> make_temporary_directory() {
  std::error_code ec;
  auto base = std::filesystem::temp_directory_path(ec);
  if (ec)
    base = "/tmp";
  auto pattern = (base / "troupe-demo-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    return failure{"cannot create a temporary directory for the demo in " + base.string() + ": " +
                   std::strerror(errno)};
  return std::filesystem::path{pattern};
}

} // namespace

int run_demo(const std::string& format, bool keep) {
  // Ctrl+C from here on is the run's to handle (it interrupts the run, and the directory goes
  // at the end); unblocked, one between making the directory and the run would leave it.
  block_termination_signals();
  auto made = make_temporary_directory();
  if (!made)
    return fail(made.error());
  demo_directory directory{*made, keep};
  // The session's files live beside the workspace, so the agent starts in an empty directory.
  const auto& root = directory.root();
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
  bool text = settings.render.format == output_format::text;
  int code = execute_run(std::move(settings), stdout, directory.remover());
  // stream-json keeps stdout to its JSON lines: the note goes to stderr there.
  auto* note = text ? stdout : stderr;
  if (keep)
    std::fprintf(note, "troupe demo: kept %s (transcript: %s)\n", root.c_str(),
                 transcript.c_str());
  else if (text)
    std::printf("troupe demo: removed %s (troupe demo --keep keeps it)\n", root.c_str());
  return code;
}

} // namespace troupe
