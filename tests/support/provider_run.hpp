#pragma once
// `troupe run` against the fake model server: a workspace, a TROUPE_HOME and the environment
// that points a provider at the server, plus readers for the stream-json output.

#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "support/fake_server.hpp"
#include "support/test_support.hpp"

namespace troupe::test {

struct provider_run {
  temp_dir dir;
  std::string provider;

  explicit provider_run(std::string which = "openai") : provider(std::move(which)) {
    std::filesystem::create_directories(dir / "work");
  }

  process_result run(const fake_server& server, std::vector<std::string> args,
                     process_options opts = {}) {
    opts.env["TROUPE_HOME"] = (dir / "home").string();
    opts.env["XDG_CONFIG_HOME"] = (dir / "config").string(); // no user settings file
    opts.env["TROUPE_MODEL"] = "";
    opts.env["TROUPE_MAX_STEPS"] = "";
    if (provider == "openai") {
      opts.env["OPENAI_API_KEY"] = "test-key";
      opts.env["OPENAI_BASE_URL"] = server.url() + "/v1";
      opts.env["ANTHROPIC_API_KEY"] = "";
    } else {
      opts.env["ANTHROPIC_API_KEY"] = "test-key";
      opts.env["ANTHROPIC_BASE_URL"] = server.url();
      opts.env["OPENAI_API_KEY"] = "";
    }
    std::vector<std::string> argv{"run", "--cwd", (dir / "work").string(), "--model",
                                  provider + "/test-model", "--output-format", "stream-json",
                                  "--permission-mode", "accept-edits", "--allow", "shell"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_troupe(argv, opts);
  }

  /// The transcript of the first (usually only) session under this run's TROUPE_HOME.
  std::vector<nlohmann::json> transcript() {
    for (auto& entry : std::filesystem::directory_iterator(dir / "home/sessions"))
      return read_jsonl(entry.path() / "transcript.jsonl");
    return {};
  }
};

inline std::vector<nlohmann::json> lines_of(const std::string& out) {
  std::vector<nlohmann::json> lines;
  for (auto& line : split_lines(out))
    lines.push_back(nlohmann::json::parse(line));
  return lines;
}

/// The last stream-json line: the result.
inline nlohmann::json result_of(const process_result& r) {
  auto lines = lines_of(r.out);
  REQUIRE(!lines.empty());
  return lines.back();
}

/// The stream-json lines of a type (and subtype, when given).
inline std::vector<nlohmann::json> of_type(const process_result& r, const std::string& type,
                                           const std::string& subtype = "") {
  std::vector<nlohmann::json> out;
  for (auto& l : lines_of(r.out))
    if (l["type"] == type && (subtype.empty() || l.value("subtype", "") == subtype))
      out.push_back(l);
  return out;
}

} // namespace troupe::test
