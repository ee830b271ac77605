#include <doctest/doctest.h>

#include <sys/stat.h>

#include <map>

#include "orchestrator/mcp_config.hpp"
#include "orchestrator/run_flags.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using json = nlohmann::json;
using strings = std::vector<std::string>;
using troupe::test::temp_dir;
using troupe::test::write_file;

namespace {

variable_lookup variables(std::map<std::string, std::string> set = {}) {
  return [set = std::move(set)](const std::string& name) -> std::optional<std::string> {
    auto found = set.find(name);
    if (found == set.end())
      return std::nullopt;
    return found->second;
  };
}

settings_source settings_file(const std::string& path, const std::string& text) {
  return {path, json::parse(text), false};
}

// The servers' names and where each came from.
std::map<std::string, std::string> sources_of(const mcp_configuration& config) {
  std::map<std::string, std::string> sources;
  for (auto& server : config.servers)
    sources[server.name] = server.source;
  return sources;
}

strings names_of(const mcp_configuration& config) {
  strings names;
  for (auto& server : config.servers)
    names.push_back(server.name);
  return names;
}

struct project {
  temp_dir dir;
  std::string mcp_json() const { return (dir.path() / ".mcp.json").string(); }
  void write_mcp_json(const std::string& text) const { write_file(dir.path() / ".mcp.json", text); }

  expected<mcp_configuration> gather(const std::vector<settings_source>& settings,
                                     const json& given = nullptr, bool strict = false,
                                     const variable_lookup& lookup = variables()) const {
    return gather_mcp_servers(settings, dir.path(), given, strict, lookup);
  }
  mcp_configuration gathered(const std::vector<settings_source>& settings,
                             const json& given = nullptr, bool strict = false,
                             const variable_lookup& lookup = variables()) const {
    auto result = gather(settings, given, strict, lookup);
    REQUIRE_MESSAGE(result, result.error());
    return *result;
  }
  std::string error(const std::vector<settings_source>& settings, const json& given = nullptr,
                    bool strict = false, const variable_lookup& lookup = variables()) const {
    auto result = gather(settings, given, strict, lookup);
    REQUIRE_FALSE(result);
    return result.error();
  }
};

const json three_project_servers = json::parse(R"js({"mcpServers": {
  "alpha": {"command": "a"}, "beta": {"command": "b"}, "gamma": {"command": "g"}}})js");

} // namespace

TEST_CASE("nothing configured is no servers and nothing to say") {
  project p;
  auto none = p.gathered({});
  CHECK(none.servers.empty());
  CHECK(none.notices.empty());
  // A .mcp.json without mcpServers is no servers either.
  p.write_mcp_json("{}");
  CHECK(p.gathered({}).servers.empty());
}

TEST_CASE("a later source's server replaces an earlier one of the same name") {
  project p;
  auto user = settings_file("/u/settings.json", R"js({"mcpServers": {
    "shared": {"command": "from-user"}, "user-only": {"command": "u"}}})js");
  auto own = settings_file("/p/.troupe/settings.json", R"js({"mcpServers": {
    "shared": {"command": "from-project-settings"}, "settings-only": {"command": "s"}},
    "enableAllProjectMcpServers": true})js");
  auto settings = p.gathered({user, own});
  CHECK(sources_of(settings) == std::map<std::string, std::string>{
                                  {"settings-only", "settings file /p/.troupe/settings.json"},
                                  {"shared", "settings file /p/.troupe/settings.json"},
                                  {"user-only", "settings file /u/settings.json"}});
  CHECK(settings.servers[1].command == "from-project-settings");

  p.write_mcp_json(R"js({"mcpServers": {"shared": {"command": "from-mcp-json"},
    "mcp-json-only": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}})js");
  auto with_project = p.gathered({user, own});
  CHECK(names_of(with_project) ==
        strings{"mcp-json-only", "settings-only", "shared", "user-only"});
  CHECK(sources_of(with_project)["shared"] == p.mcp_json());
  CHECK(with_project.servers[2].command == "from-mcp-json");

  auto given = json::parse(R"js({"mcpServers": {"shared": {"command": "from-flag"}}})js");
  auto with_flag = p.gathered({user, own}, given);
  CHECK(sources_of(with_flag)["shared"] == "--mcp-config");
  CHECK(with_flag.servers[2].command == "from-flag");
  CHECK(with_flag.servers.size() == 4);
}

TEST_CASE(".mcp.json's servers start only when the settings approve them") {
  project p;
  p.write_mcp_json(three_project_servers.dump());

  auto unapproved = p.gathered({});
  CHECK(unapproved.servers.empty());
  REQUIRE(unapproved.notices.size() == 3);
  CHECK(unapproved.notices[0] ==
        "MCP server \"alpha\" of " + p.mcp_json() +
          " is not started: it is not approved. To start it, add \"enabledMcpjsonServers\": "
          "[\"alpha\"] (or \"enableAllProjectMcpServers\": true) to .claude/settings.local.json "
          "or .troupe/settings.local.json");

  auto all = p.gathered({settings_file("/l", R"js({"enableAllProjectMcpServers": true})js")});
  CHECK(names_of(all) == strings{"alpha", "beta", "gamma"});
  CHECK(all.notices.empty());

  // The lists add up across files; a later file's "enableAllProjectMcpServers" wins.
  auto some = p.gathered({settings_file("/a", R"js({"enableAllProjectMcpServers": true,
                                                    "enabledMcpjsonServers": ["alpha"]})js"),
                          settings_file("/b", R"js({"enableAllProjectMcpServers": false,
                                               "enabledMcpjsonServers": ["gamma", "nope"]})js")});
  CHECK(names_of(some) == strings{"alpha", "gamma"});
  REQUIRE(some.notices.size() == 1);
  CHECK(some.notices[0].find("\"beta\"") != std::string::npos);

  // Disabled wins over any approval, and is left out without a word.
  auto disabled = p.gathered({settings_file("/a", R"js({"enableAllProjectMcpServers": true,
                                                        "enabledMcpjsonServers": ["beta"]})js"),
                              settings_file("/b", R"js({"disabledMcpjsonServers": ["beta"]})js")});
  CHECK(names_of(disabled) == strings{"alpha", "gamma"});
  CHECK(disabled.notices.empty());
}

TEST_CASE("a server left out is neither checked nor in the way") {
  project p;
  // Unapproved: its unset variable and its bad entry do not stop the run.
  p.write_mcp_json(R"js({"mcpServers": {"api": {"type": "http", "url": "${API_URL}"},
    "odd": {"type": "sse"}, "shared": {"command": "repo"}}})js");
  auto settings = settings_file("/u", R"js({"mcpServers": {"shared": {"command": "mine"}},
                                           "disabledMcpjsonServers": ["odd"]})js");
  auto gathered = p.gathered({settings});
  REQUIRE(gathered.servers.size() == 1);
  // An unapproved server does not replace the settings' one of the same name.
  CHECK(gathered.servers[0].command == "mine");
  CHECK(gathered.notices.size() == 2);
  // A server replaced by a later source is not checked either.
  auto given = json::parse(R"js({"mcpServers": {"shared": {"command": "flag"}}})js");
  auto bad_settings = settings_file("/u", R"js({"mcpServers": {"shared": {"command": 7}}})js");
  CHECK(p.gathered({bad_settings}, given).servers[0].command == "flag");
}

TEST_CASE("--strict-mcp-config keeps only --mcp-config's servers") {
  project p;
  p.write_mcp_json("not even JSON");
  auto settings = settings_file("/u", R"js({"mcpServers": {"s": {"command": "s"}},
                                           "enableAllProjectMcpServers": "bad"})js");
  auto given = json::parse(R"js({"mcpServers": {"f": {"command": "f"}}})js");
  auto strict = p.gathered({settings}, given, true);
  CHECK(names_of(strict) == strings{"f"});
  CHECK(strict.notices.empty());
  CHECK(p.gathered({settings}, nullptr, true).servers.empty());
  // Without it, the same inputs are errors.
  CHECK_FALSE(p.gather({settings}, given));
}

TEST_CASE("${VAR} is expanded in every source's command, args, env, url and headers") {
  project p;
  auto lookup = variables({{"BIN", "/opt/bin"}, {"TOKEN", "s3cret"}, {"PORT", "8080"},
                           {"EMPTY", ""}});
  auto settings = settings_file("/u", R"js({"mcpServers": {"local": {
    "command": "${BIN}/server", "args": ["--port", "${PORT}", "${MISSING:-fallback}", "$HOME"],
    "env": {"API_TOKEN": "${TOKEN}", "BLANK": "${EMPTY}"}, "cwd": "${BIN}"}},
    "enabledMcpjsonServers": ["remote"]})js");
  p.write_mcp_json(R"js({"mcpServers": {"remote": {"type": "http",
    "url": "http://127.0.0.1:${PORT}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}})js");
  auto given = json::parse(R"js({"mcpServers": {"flagged": {"command": "${BIN}/other"}}})js");
  auto gathered = p.gathered({settings}, given, false, lookup);
  REQUIRE(gathered.servers.size() == 3);
  auto& flagged = gathered.servers[0];
  auto& local = gathered.servers[1];
  auto& remote = gathered.servers[2];
  CHECK(flagged.command == "/opt/bin/other");
  CHECK(local.command == "/opt/bin/server");
  CHECK(local.args == strings{"--port", "8080", "fallback", "$HOME"});
  CHECK(local.env == std::map<std::string, std::string>{{"API_TOKEN", "s3cret"}, {"BLANK", ""}});
  CHECK(local.cwd == "${BIN}"); // Claude Code leaves cwd as written
  CHECK(remote.url == "http://127.0.0.1:8080/mcp");
  CHECK(remote.headers ==
        std::vector<std::pair<std::string, std::string>>{{"Authorization", "Bearer s3cret"}});
}

TEST_CASE("a variable that is unset, or a ${ left open, is an error naming the field") {
  project p;
  auto lookup = variables({{"TOKEN", "t"}});
  auto given = [](const std::string& entry) {
    return json{{"mcpServers", {{"api", json::parse(entry)}}}};
  };
  CHECK(p.error({}, given(R"js({"command": "x", "env": {"KEY": "${API_KEY}"}})js"), false,
                lookup) == "--mcp-config: mcpServers.api.env.KEY: the variable API_KEY is not set "
                           "(${API_KEY:-DEFAULT} gives a default)");
  CHECK(p.error({}, given(R"js({"type": "http", "url": "https://x",
                                "headers": {"Authorization": "Bearer ${TOKEN"}})js"),
                false, lookup) ==
        "--mcp-config: mcpServers.api.headers.Authorization: a ${ without its closing }");
  CHECK(p.error({}, given(R"js({"command": "${CMD}"})js"), false, lookup).find(
          "mcpServers.api.command: the variable CMD") != std::string::npos);
  CHECK(p.error({}, given(R"js({"command": "x", "args": ["${A}"]})js"), false, lookup).find(
          "mcpServers.api.args: the variable A") != std::string::npos);
  CHECK(p.error({}, given(R"js({"type": "http", "url": "${BASE}/mcp"})js"), false, lookup)
          .find("mcpServers.api.url: the variable BASE") != std::string::npos);
  // An expanded value is checked as any other: a header value may not break its line.
  auto crlf = variables({{"TOKEN", "t\r\nX-Evil: 1"}});
  CHECK(p.error({}, given(R"js({"type": "http", "url": "https://x",
                                "headers": {"Authorization": "${TOKEN}"}})js"), false, crlf) ==
        "--mcp-config: mcpServers.api.headers.Authorization: not a header's name, or a value "
        "with a line break");
  auto scheme = variables({{"BASE", "file:///etc"}});
  CHECK(p.error({}, given(R"js({"type": "http", "url": "${BASE}"})js"), false, scheme) ==
        "--mcp-config: mcpServers.api.url must be an http:// or https:// address");
}

TEST_CASE("a broken .mcp.json is left out with a notice: the repository's file stops no run") {
  project p;
  auto approve = settings_file("/l", R"js({"enableAllProjectMcpServers": true,
                                           "mcpServers": {"mine": {"command": "m"}}})js");
  auto notice_for = [&](const std::string& text) {
    p.write_mcp_json(text);
    auto gathered = p.gathered({approve});
    CHECK(names_of(gathered) == strings{"mine"}); // the user's own servers still start
    REQUIRE(gathered.notices.size() == 1);
    return gathered.notices[0];
  };
  auto left_out = "; its MCP servers are left out";
  CHECK(notice_for("{") == p.mcp_json() + " is not a JSON object" + left_out);
  CHECK(notice_for("[]") == p.mcp_json() + " is not a JSON object" + left_out);
  CHECK(notice_for(std::string(1000, '[') + std::string(1000, ']')) ==
        p.mcp_json() + " is not a JSON object (JSON nested deeper than 512 levels)" + left_out);
  CHECK(notice_for(R"js({"mcpServers": []})js") ==
        p.mcp_json() + ": \"mcpServers\" must be an object of servers" + left_out);
}

TEST_CASE("a malformed source or entry is an error, not a silent skip") {
  project p;
  auto approve = settings_file("/l", R"js({"enableAllProjectMcpServers": true})js");
  auto mcp_json_error = [&](const std::string& text) {
    p.write_mcp_json(text);
    return p.error({approve});
  };
  CHECK(mcp_json_error(R"js({"mcpServers": {"fs": "npx fs"}})js") ==
        p.mcp_json() + ": mcpServers.fs must be an object");
  CHECK(mcp_json_error(R"js({"mcpServers": {"a__b": {"command": "x"}}})js") ==
        p.mcp_json() + ": the MCP server name \"a__b\" must be letters, digits, '_' and '-', "
                       "without \"__\" (it becomes part of mcp__<server>__<tool>)");
  CHECK(mcp_json_error(R"js({"mcpServers": {"w": {"type": "sse", "url": "https://x"}}})js")
          .find("deprecated HTTP+SSE") != std::string::npos);

  std::filesystem::remove(p.dir.path() / ".mcp.json");
  CHECK(p.error({settings_file("/u", R"js({"mcpServers": ["x"]})js")}) ==
        "settings file /u: \"mcpServers\" must be an object of servers");
  CHECK(p.error({settings_file("/u", R"js({"mcpServers": {"x": {"args": []}}})js")}) ==
        "settings file /u: mcpServers.x needs \"command\" (a program to start) or \"type\": "
        "\"http\" and \"url\"");
  CHECK(p.error({settings_source{{}, json::parse(R"js({"mcpServers": {"x": 1}})js"), false}}) ==
        "--settings JSON: mcpServers.x must be an object");
  CHECK(p.error({settings_file("/u", R"js({"enableAllProjectMcpServers": "yes"})js")}) ==
        "settings file /u: \"enableAllProjectMcpServers\" must be true or false");
  CHECK(p.error({settings_file("/u", R"js({"enabledMcpjsonServers": "fs"})js")}) ==
        "settings file /u: \"enabledMcpjsonServers\" must be an array of server names");
  CHECK(p.error({settings_file("/u", R"js({"disabledMcpjsonServers": [1]})js")}) ==
        "settings file /u: \"disabledMcpjsonServers\" must be an array of server names");
  CHECK(p.error({}, json::parse(R"js({"mcpServers": {"f": {"command": "x", "args": "-y"}}})js")) ==
        "--mcp-config: mcpServers.f.args must be an array of strings");
}

TEST_CASE("an odd .mcp.json: a link is followed, a directory or a pipe is refused") {
  project p;
  auto approve = settings_file("/l", R"js({"enableAllProjectMcpServers": true})js");
  write_file(p.dir.path() / "elsewhere.json",
             R"js({"mcpServers": {"linked": {"command": "x"}}})js");
  std::filesystem::create_symlink(p.dir.path() / "elsewhere.json", p.dir.path() / ".mcp.json");
  CHECK(names_of(p.gathered({approve})) == strings{"linked"});

  // A link to nothing is no file, as a missing settings file is.
  std::filesystem::remove(p.dir.path() / ".mcp.json");
  std::filesystem::create_symlink(p.dir.path() / "nowhere.json", p.dir.path() / ".mcp.json");
  CHECK(p.gathered({approve}).servers.empty());

  // Each left out with a notice: the repository's file stops no run.
  auto notice = [&] {
    auto gathered = p.gathered({approve});
    CHECK(gathered.servers.empty());
    REQUIRE(gathered.notices.size() == 1);
    return gathered.notices[0];
  };
  auto left_out = "; its MCP servers are left out";
  std::filesystem::remove(p.dir.path() / ".mcp.json");
  std::filesystem::create_directory(p.dir.path() / ".mcp.json");
  CHECK(notice() == p.mcp_json() + " is not a regular file" + left_out);

  // A pipe would block the read for ever.
  std::filesystem::remove(p.dir.path() / ".mcp.json");
  REQUIRE(::mkfifo(p.mcp_json().c_str(), 0600) == 0);
  CHECK(notice() == p.mcp_json() + " is not a regular file" + left_out);

  // A huge one is refused before it is read.
  std::filesystem::remove(p.dir.path() / ".mcp.json");
  write_file(p.dir.path() / ".mcp.json", "{}");
  std::filesystem::resize_file(p.dir.path() / ".mcp.json", 1ULL << 32);
  CHECK(notice() == p.mcp_json() + " is larger than 16 MiB" + left_out);
  // Strict mode does not look at it at all.
  CHECK(p.gathered({approve}, nullptr, true).servers.empty());
}

TEST_CASE("a run's servers: its settings files, Claude Code's approvals, the flags") {
  project p;
  p.write_mcp_json(three_project_servers.dump());
  // Claude Code keeps its approvals in .claude/settings*.json: troupe reads them there.
  write_file(p.dir.path() / ".claude/settings.json",
             R"js({"enabledMcpjsonServers": ["beta"], "model": "ignored",
                   "mcpServers": {"claude": {"command": "c"}}})js");
  write_file(p.dir.path() / ".claude/settings.local.json",
             R"js({"enableAllProjectMcpServers": true, "disabledMcpjsonServers": ["alpha"]})js");
  write_file(p.dir.path() / ".troupe/settings.json",
             R"js({"mcpServers": {"own": {"command": "${OWN_BIN:-own-server}"}}})js");
  run_flags flags;
  flags.setting_sources = "project,local"; // not this machine's user settings
  flags.setting_sources_given = true;
  flags.mcp_configs = {R"js({"mcpServers": {"flag": {"command": "f"}}})js"};
  auto run = resolve_mcp_servers(flags, p.dir.path(), variables());
  REQUIRE_MESSAGE(run, run.error());
  REQUIRE(names_of(*run) == strings{"beta", "claude", "flag", "gamma", "own"});
  CHECK(run->servers[4].command == "own-server");
  CHECK(run->notices.empty());

  write_file(p.dir.path() / ".claude/settings.local.json", "{}");
  auto listed = resolve_mcp_servers(flags, p.dir.path(), variables());
  REQUIRE(listed);
  CHECK(names_of(*listed) == strings{"beta", "claude", "flag", "own"});
  CHECK(listed->notices.size() == 2);

  flags.strict_mcp_config = true;
  auto strict = resolve_mcp_servers(flags, p.dir.path(), variables());
  REQUIRE(strict);
  CHECK(names_of(*strict) == strings{"flag"});

  flags.mcp_configs = {R"js({"mcpServers": []})js"};
  auto bad = resolve_mcp_servers(flags, p.dir.path(), variables());
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == "--mcp-config JSON: expected {\"mcpServers\": {NAME: {…}, …}}");
}

TEST_CASE("the process environment is looked up as it is") {
  CHECK(process_variable("PATH").has_value());
  CHECK_FALSE(process_variable("TROUPE_TEST_SURELY_UNSET_VARIABLE").has_value());
}
