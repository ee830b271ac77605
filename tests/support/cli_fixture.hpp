#pragma once
// A temporary TROUPE_HOME and workspace for running the troupe binary as a user would.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace troupe::test {

/// A temporary TROUPE_HOME and workspace, with helpers to run troupe in them.
struct cli_fixture {
  temp_dir dir;

  cli_fixture() { std::filesystem::create_directories(dir / "work"); }

  process_options options(process_options opts = {}) {
    opts.env["TROUPE_HOME"] = (dir / "home").string();
    opts.env["XDG_CONFIG_HOME"] = (dir / "config").string();
    opts.env["TROUPE_MODEL"] = "";
    opts.env["OPENAI_API_KEY"] = "";
    opts.env["ANTHROPIC_API_KEY"] = "";
    opts.env["TROUPE_MAX_STEPS"] = opts.env.count("TROUPE_MAX_STEPS")
                                     ? opts.env["TROUPE_MAX_STEPS"]
                                     : "";
    return opts;
  }

  std::string script(const std::vector<nlohmann::json>& lines) {
    auto path = dir / ("script" + std::to_string(counter_++) + ".jsonl");
    write_script(path, lines);
    return "scripted:" + path.string();
  }

  process_result run(std::vector<std::string> args, process_options opts = {}) {
    // Headless runs ask for nothing: shell and edits are allowed up front, as a CI job would.
    std::vector<std::string> argv{"run", "--cwd", (dir / "work").string(),
                                  "--permission-mode", "accept-edits", "--allow", "shell"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_troupe(argv, options(std::move(opts)));
  }

  /// A run with only the permissions the arguments and settings files give.
  process_result run_unpermitted(std::vector<std::string> args, process_options opts = {}) {
    std::vector<std::string> argv{"run", "--cwd", (dir / "work").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_troupe(argv, options(std::move(opts)));
  }

  std::vector<std::filesystem::path> transcripts() {
    std::vector<std::filesystem::path> out;
    if (std::filesystem::exists(dir / "home/sessions"))
      for (auto& entry : std::filesystem::directory_iterator(dir / "home/sessions"))
        out.push_back(entry.path() / "transcript.jsonl");
    return out;
  }

private:
  int counter_ = 0;
};

/// A scripted reply of text, after `delay_ms`.
inline nlohmann::json text_line(const std::string& text, int delay_ms = 0) {
  nlohmann::json line = {{"text", text}};
  if (delay_ms > 0)
    line["delay_ms"] = delay_ms;
  return line;
}

/// Puts a `bash` first on the PATH of `opts` that adds a line (the time, in nanoseconds) to
/// `started` each time a session's shell starts (bash --noprofile …), then runs /bin/bash.
inline void note_shell_starts(cli_fixture& f, const std::filesystem::path& started,
                              process_options& opts) {
  auto bin = f.dir / "bin";
  std::filesystem::create_directories(bin);
  {
    std::ofstream wrapper{bin / "bash"};
    wrapper << "#!/bin/sh\n[ \"$1\" = --noprofile ] && date +%s%N >> '" << started.string()
            << "'\nexec /bin/bash \"$@\"\n";
  }
  std::filesystem::permissions(bin / "bash", std::filesystem::perms::owner_all);
  const char* path = std::getenv("PATH");
  opts.env["PATH"] = bin.string() + ":" + (path ? path : "/usr/bin:/bin");
}

/// The directory of session `id` under the fixture's TROUPE_HOME.
inline std::filesystem::path session_dir(cli_fixture& f, const std::string& id) {
  return f.dir / "home/sessions" / id;
}

} // namespace troupe::test
