// Sessions from the command line: troupe ls, show and rm; --resume by id or name, --continue,
// --fork; crash recovery of a run resumed without a prompt.

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "support/cli_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

std::vector<json> ls_json(cli_fixture& f) {
  auto r = run_troupe({"ls", "--json"}, f.options());
  REQUIRE(r.exit_code == 0);
  std::vector<json> out;
  for (auto& line : split_lines(r.out))
    out.push_back(json::parse(line));
  return out;
}

} // namespace

TEST_CASE("troupe ls lists sessions newest first with name, state, turns and cost") {
  cli_fixture f;
  auto empty = run_troupe({"ls"}, f.options());
  CHECK(empty.exit_code == 0);
  CHECK(empty.out.find("no sessions yet") != std::string::npos);
  REQUIRE(f.run({"--model", f.script({text_line("one")}), "--session-id", "older",
                 "Fix the flaky parser test"})
            .exit_code == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds{20});
  REQUIRE(f.run({"--model", f.script({text_line("two")}), "--session-id", "newer", "--max-steps",
                 "1", "Count the words"})
            .exit_code == 0);
  auto table = run_troupe({"ls"}, f.options());
  CHECK(table.exit_code == 0);
  auto lines = split_lines(table.out);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].find("ID") == 0);
  CHECK(lines[1].find("newer") == 0);
  CHECK(lines[1].find("count the words") != std::string::npos);
  CHECK(lines[1].find("completed") != std::string::npos);
  CHECK(lines[1].find("$0.0000") != std::string::npos);
  CHECK(lines[2].find("older") == 0);
  CHECK(lines[2].find("fix the flaky parser test") != std::string::npos);
  auto listed = ls_json(f);
  REQUIRE(listed.size() == 2);
  CHECK(listed[0]["id"] == "newer");
  CHECK(listed[0]["turns"] == 1);
  CHECK(listed[0]["state"] == "completed");
  CHECK(listed[0]["cwd"] == std::filesystem::canonical(f.dir / "work").string());
  CHECK(listed[1]["name"] == "fix the flaky parser test");
}

TEST_CASE("troupe ls sizes each column to its widest value, the name last and whole in a pipe") {
  cli_fixture f;
  auto shell = [](const std::string& command) {
    return json{{"text", "```shell\n" + command + "\n```"}};
  };
  REQUIRE(f.run({"--model", f.script({text_line("one")}), "--session-id", "done", "hi"})
            .exit_code == 0);
  REQUIRE(f.run({"--model", f.script({shell("true")}), "--session-id", "failed", "go"})
            .exit_code == 1);
  REQUIRE(f.run({"--model", f.script({shell("true"), text_line("x")}), "--max-steps", "1",
                 "--session-id", "capped", "go"})
            .exit_code == 3);
  REQUIRE(f.run_unpermitted({"--model", f.script({shell("touch x"), text_line("blocked")}),
                             "--session-id", "a-much-longer-session-id", "go"})
            .exit_code == 4);
  std::string long_name = "please look at every one of the flaky parser tests and fix them all "
                          "without touching the lexer";
  REQUIRE(f.run({"--model", f.script({text_line("unused")}), "--resume", "done",
                 "/rename " + long_name})
            .exit_code == 0);
  auto table = run_troupe({"ls"}, f.options());
  REQUIRE(table.exit_code == 0);
  auto lines = split_lines(table.out);
  REQUIRE(lines.size() == 5);
  const std::vector<std::string> headers{"ID", "LAST ACTIVITY", "STATE", "TURNS", "COST", "NAME"};
  std::vector<size_t> starts;
  for (auto& h : headers)
    starts.push_back(lines[0].find(h));
  CHECK(starts[0] == 0);
  // Every value starts under its header, after at least two spaces; no column is wider than
  // its widest value needs.
  std::map<std::string, std::string> states;
  for (size_t row = 1; row < lines.size(); ++row) {
    const auto& line = lines[row];
    CAPTURE(line);
    for (size_t c = 1; c < starts.size(); ++c) {
      REQUIRE(line.size() > starts[c]);
      CHECK(line[starts[c]] != ' ');
      CHECK(line.substr(starts[c] - 2, 2) == "  ");
    }
    auto state = line.substr(starts[2], line.find(' ', starts[2]) - starts[2]);
    states[line.substr(0, line.find(' '))] = state;
  }
  CHECK(states == std::map<std::string, std::string>{{"done", "completed"},
                                                     {"failed", "error"},
                                                     {"capped", "max_turns"},
                                                     {"a-much-longer-session-id",
                                                      "permission_blocked"}});
  CHECK(starts[1] == std::string{"a-much-longer-session-id"}.size() + 2);
  CHECK(starts[3] - starts[2] == std::string{"permission_blocked"}.size() + 2);
  CHECK(starts[4] - starts[3] == std::string{"TURNS"}.size() + 2);
  // Not a terminal: the name is whole.
  CHECK(table.out.find("  " + long_name + "\n") != std::string::npos);
}

TEST_CASE("troupe show renders a transcript, by id or by name") {
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("```shell\necho hi\n```"), text_line("done")}),
                 "--session-id", "shown", "say hi"})
            .exit_code == 0);
  for (std::string which : {"shown", "say hi"}) {
    CAPTURE(which);
    auto r = run_troupe({"show", which}, f.options());
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("● session shown (say hi)") == 0);
    CHECK(r.out.find("> say hi") != std::string::npos);
    CHECK(r.out.find("← shell (exit 0)") != std::string::npos);
    CHECK(r.out.find("done") != std::string::npos);
  }
  auto unknown = run_troupe({"show", "nosuch"}, f.options());
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("unknown session 'nosuch'") != std::string::npos);
}

TEST_CASE("troupe rm removes a session that is not running, and refuses one that is") {
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("ok")}), "--session-id", "gone", "x"})
            .exit_code == 0);
  auto removed = run_troupe({"rm", "gone"}, f.options());
  CHECK(removed.exit_code == 0);
  CHECK(removed.out == "removed session gone\n");
  CHECK(!std::filesystem::exists(session_dir(f, "gone")));
  CHECK(run_troupe({"rm", "gone"}, f.options()).exit_code == 1);

  auto live = std::async(std::launch::async, [&] {
    return f.run({"--model", f.script({text_line("slow", 20000)}), "--session-id", "live",
                  "wait"});
  });
  REQUIRE(wait_until([&] { return std::filesystem::exists(session_dir(f, "live") / "control.json"); },
                     std::chrono::seconds{10}));
  auto refused = run_troupe({"rm", "live"}, f.options());
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("is running") != std::string::npos);
  CHECK(std::filesystem::exists(session_dir(f, "live")));
  CHECK(run_troupe({"interrupt", "live"}, f.options()).exit_code == 0);
  CHECK(live.get().exit_code == 130);
}

TEST_CASE("--resume continues a session by id or name, in its own workspace and model") {
  cli_fixture f;
  auto first = f.script({text_line("first answer")});
  REQUIRE(f.run({"--model", first, "--session-id", "s1", "Plan the release"}).exit_code == 0);
  write_script(f.dir / "next.jsonl", {text_line("second answer")});
  // From another directory, with no --cwd: the session's workspace; --model names the script.
  process_options elsewhere = f.options();
  auto r = run_troupe({"run", "--resume", "plan the release", "--model",
                       "scripted:" + (f.dir / "next.jsonl").string(), "--output-format",
                       "stream-json", "go on"},
                      elsewhere);
  CHECK(r.exit_code == 0);
  auto init = json::parse(split_lines(r.out).at(0));
  CHECK(init["session_id"] == "s1");
  CHECK(init["cwd"] == std::filesystem::canonical(f.dir / "work").string());
  CHECK(init["loaded_messages"] == 2);
  auto log = read_jsonl(session_dir(f, "s1") / "transcript.jsonl");
  REQUIRE(log.size() == 4);
  CHECK(log[3]["content"] == "second answer");
  CHECK(ls_json(f)[0]["turns"] == 2);

  auto unknown = run_troupe({"run", "--resume", "nosuch", "x"}, f.options());
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("--resume: unknown session 'nosuch'") != std::string::npos);
  auto both = run_troupe({"run", "--resume", "s1", "--continue", "x"}, f.options());
  CHECK(both.exit_code == 2);
  auto lone_fork = run_troupe({"run", "--fork", "x"}, f.options());
  CHECK(lone_fork.exit_code == 2);
  CHECK(lone_fork.err.find("--fork needs --resume") != std::string::npos);
}

TEST_CASE("a resumed session finds its relative script from anywhere, a lost workspace is refused") {
  cli_fixture f;
  write_script(f.dir / "replies.jsonl", {text_line("an answer")});
  process_options in_work = f.options();
  in_work.cwd = f.dir / "work";
  auto r = run_troupe({"run", "--model", "scripted:../replies.jsonl", "--session-id", "rel", "hi"},
                      in_work);
  REQUIRE(r.exit_code == 0);
  CHECK(read_json(session_dir(f, "rel") / "session.json")["model"] ==
        "scripted:" + (f.dir / "replies.jsonl").lexically_normal().string());
  process_options elsewhere = f.options();
  elsewhere.cwd = f.dir / "home";
  auto resumed = run_troupe({"run", "--resume", "rel", "again"}, elsewhere);
  CHECK(resumed.exit_code == 0);
  CHECK(read_jsonl(session_dir(f, "rel") / "transcript.jsonl").size() == 4);

  std::filesystem::create_directories(f.dir / "gone");
  REQUIRE(run_troupe({"run", "--cwd", (f.dir / "gone").string(), "--model",
                      f.script({text_line("a")}), "--session-id", "lost", "hi"},
                     f.options())
            .exit_code == 0);
  std::filesystem::remove_all(f.dir / "gone");
  auto before = read_file(session_dir(f, "lost") / "transcript.jsonl");
  auto refused = run_troupe({"run", "--resume", "lost", "--model", f.script({text_line("b")}),
                             "where am I"},
                            f.options());
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("no longer exists; give --cwd DIR") != std::string::npos);
  CHECK(read_file(session_dir(f, "lost") / "transcript.jsonl") == before);
  auto moved = run_troupe({"run", "--resume", "lost", "--cwd", (f.dir / "work").string(),
                           "--model", f.script({text_line("b")}), "go on here"},
                          f.options());
  CHECK(moved.exit_code == 0);
}

TEST_CASE("--continue takes the newest session of the workspace, --fork copies it") {
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("a")}), "--session-id", "old", "first task"})
            .exit_code == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds{20});
  REQUIRE(f.run({"--model", f.script({text_line("b")}), "--session-id", "new", "second task"})
            .exit_code == 0);
  auto cont = f.run({"--continue", "--model", f.script({text_line("c")}), "more"});
  CHECK(cont.exit_code == 0);
  CHECK(read_jsonl(session_dir(f, "new") / "transcript.jsonl").size() == 4);
  CHECK(read_jsonl(session_dir(f, "old") / "transcript.jsonl").size() == 2);

  auto fork = f.run({"--resume", "old", "--fork", "--session-id", "copy", "--model",
                     f.script({text_line("forked answer")}), "try another way"});
  CHECK(fork.exit_code == 0);
  CHECK(read_jsonl(session_dir(f, "old") / "transcript.jsonl").size() == 2); // untouched
  auto copy = read_jsonl(session_dir(f, "copy") / "transcript.jsonl");
  REQUIRE(copy.size() == 4);
  CHECK(copy[0]["content"] == "first task");
  CHECK(copy[3]["content"] == "forked answer");
  auto info = read_json(session_dir(f, "copy") / "session.json");
  CHECK(info["forked_from"] == "old");
  CHECK(info["first_prompt"] == "first task");
}

TEST_CASE("a run resumed without a prompt answers the message its last run died on") {
  cli_fixture f;
  // A transcript whose process died after logging the user's message.
  auto dir = session_dir(f, "crashed");
  std::filesystem::create_directories(dir);
  write_file(dir / "transcript.jsonl",
             json{{"id", "msg_1"}, {"role", "user"}, {"content", "what is 6 times 7?"},
                  {"origin", "prompt"}, {"timestamp_ms", 1}}
                 .dump() +
               "\n");
  auto r = f.run({"--resume", "crashed", "--model", f.script({text_line("42")})});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("not valid JSON") == std::string::npos);
  auto log = read_jsonl(dir / "transcript.jsonl");
  REQUIRE(log.size() == 2);
  CHECK(log[1]["content"] == "42");
  // It died before its record was written: the transcript names it.
  auto info = read_json(dir / "session.json");
  CHECK(info["first_prompt"] == "what is 6 times 7?");
  CHECK(info["name"] == "what is 6 times 7");
  // Nothing left to answer: a prompt is needed now.
  auto idle = f.run({"--resume", "crashed", "--model", f.script({text_line("never")})});
  CHECK(idle.exit_code == 2);
  CHECK(idle.err.find("has nothing left to answer") != std::string::npos);
}

TEST_CASE("a run resumed without a prompt answers the calls its last run died before running") {
  cli_fixture f;
  // The process died after logging a reply with two tool calls, before either ran.
  auto dir = session_dir(f, "mid-step");
  std::filesystem::create_directories(dir);
  auto calls = json::array(
    {{{"id", "call_1"}, {"name", "shell"}, {"input", {{"command", "touch ran-1"}}}},
     {{"id", "call_2"}, {"name", "shell"}, {"input", {{"command", "touch ran-2"}}}}});
  write_file(dir / "transcript.jsonl",
             json{{"id", "msg_1"}, {"role", "user"}, {"content", "make two files"},
                  {"origin", "prompt"}, {"timestamp_ms", 1}}
                   .dump() +
               "\n" +
               json{{"id", "msg_2"}, {"role", "assistant"}, {"content", "making them"},
                    {"tool_calls", calls}, {"timestamp_ms", 2}}
                   .dump() +
               "\n");
  auto r = f.run({"--resume", "mid-step", "--model", f.script({text_line("they were lost")})});
  CHECK(r.exit_code == 0);
  auto log = read_jsonl(dir / "transcript.jsonl");
  REQUIRE(log.size() == 5);
  for (int i : {2, 3}) {
    CHECK(log[i]["role"] == "tool");
    CHECK(log[i]["is_error"] == true);
    CHECK(log[i]["content"].get<std::string>().find("[no result: the session stopped") == 0);
  }
  CHECK(log[2]["tool_call_id"] == "call_1");
  CHECK(log[3]["tool_call_id"] == "call_2");
  CHECK(log[4]["content"] == "they were lost");
  // Lost, not run again behind the user's back.
  CHECK(!std::filesystem::exists(f.dir / "work/ran-1"));
  CHECK(!std::filesystem::exists(f.dir / "work/ran-2"));
}

TEST_CASE("one process runs a session at a time: a second one is refused and changes nothing") {
  cli_fixture f;
  auto live = std::async(std::launch::async, [&] {
    return f.run({"--model", f.script({text_line("slow", 20000)}), "--session-id", "busy",
                  "first"});
  });
  REQUIRE(wait_until([&] { return std::filesystem::exists(session_dir(f, "busy") / "control.json"); },
                     std::chrono::seconds{10}));
  for (auto args : {std::vector<std::string>{"--session-id", "busy", "intruding"},
                    std::vector<std::string>{"--resume", "busy", "intruding"}}) {
    args.insert(args.begin(), {"--model", f.script({text_line("never")})});
    auto second = f.run(args);
    CHECK(second.exit_code == 2);
    CHECK(second.err.find("is running in another process") != std::string::npos);
  }
  CHECK(std::filesystem::exists(session_dir(f, "busy") / "control.json"));
  CHECK(read_jsonl(session_dir(f, "busy") / "transcript.jsonl").size() == 1);
  auto listed = run_troupe({"ls", "--json"}, f.options());
  CHECK(json::parse(split_lines(listed.out).at(0))["state"] == "running");
  CHECK(run_troupe({"interrupt", "busy"}, f.options()).exit_code == 0);
  CHECK(live.get().exit_code == 130);
  // Once it has ended the lock is free again.
  CHECK(f.run({"--resume", "busy", "--model", f.script({text_line("now")}), "again"}).exit_code ==
        0);
}

TEST_CASE("a fork that fails its checks leaves no session behind") {
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("a")}), "--session-id", "orig", "x"})
            .exit_code == 0);
  auto bad = f.run({"--resume", "orig", "--fork", "--session-id", "copy", "--model", "bogus/x",
                    "y"});
  CHECK(bad.exit_code == 2);
  CHECK(!std::filesystem::exists(session_dir(f, "copy")));
  CHECK(f.run({"--resume", "orig", "--fork", "--session-id", "copy", "--model",
               f.script({text_line("b")}), "y"})
          .exit_code == 0);
  auto empty_resume = f.run({"--resume", "", "x"});
  CHECK(empty_resume.exit_code == 2);
  CHECK(empty_resume.err.find("--resume needs a session's id or name") != std::string::npos);
}

TEST_CASE("session.json adds up the usage of every run, as it adds up the cost") {
  cli_fixture f;
  json priced = {{"text", "ok"}, {"usage", {{"input_tokens", 100}, {"output_tokens", 10}}}};
  REQUIRE(f.run({"--model", f.script({priced}), "--session-id", "u", "one"}).exit_code == 0);
  REQUIRE(f.run({"--resume", "u", "--model", f.script({priced}), "two"}).exit_code == 0);
  auto info = read_json(session_dir(f, "u") / "session.json");
  CHECK(info["usage"]["input_tokens"] == 200);
  CHECK(info["usage"]["output_tokens"] == 20);
  CHECK(info["turns"] == 2);
}

TEST_CASE("a refused run never touches the running session's transcript") {
  cli_fixture f;
  auto live = std::async(std::launch::async, [&] {
    return f.run({"--model", f.script({text_line("slow", 20000)}), "--session-id", "held",
                  "first"});
  });
  auto transcript = session_dir(f, "held") / "transcript.jsonl";
  REQUIRE(wait_until([&] { return read_jsonl(transcript).size() == 1; }, std::chrono::seconds{10}));
  // A line being written, as the live process would leave it between two writes.
  {
    std::ofstream out{transcript, std::ios::app};
    out << R"({"id":"msg_half","role":"assist)";
  }
  auto before = read_file(transcript);
  CHECK(f.run({"--resume", "held", "--model", f.script({text_line("x")}), "x"}).exit_code == 2);
  CHECK(run_troupe({"show", "held"}, f.options()).exit_code == 0);
  // The copy ends with the live session's unanswered prompt: it answers that first.
  CHECK(f.run({"--resume", "held", "--fork", "--session-id", "copy", "--model",
               f.script({text_line("recovered"), text_line("y")}), "y"})
          .exit_code == 0);
  CHECK(read_file(transcript) == before); // nothing cut, nothing moved aside
  CHECK(!std::filesystem::exists(transcript.string() + ".torn"));
  CHECK(read_jsonl(session_dir(f, "copy") / "transcript.jsonl").size() == 4); // whole lines only
  CHECK(run_troupe({"interrupt", "held"}, f.options()).exit_code == 0);
  live.get();
}

TEST_CASE("a run that fails its checks leaves no directory for the session it would have made") {
  cli_fixture f;
  auto r = f.run({"--model", "bogus/x", "--session-id", "never", "x"});
  CHECK(r.exit_code == 2);
  CHECK(!std::filesystem::exists(session_dir(f, "never")));
}

TEST_CASE("a fork takes its subagents and full tool outputs along, the original keeps its own") {
  cli_fixture f;
  write_script(f.dir / "work/child.jsonl", {text_line("first child answer")});
  write_script(f.dir / "work/child2.jsonl", {text_line("second child answer")});
  auto launch = json{{"prompt", "look"}, {"model", "scripted:child.jsonl"}};
  auto big = json{{"command", "seq 1 2000"}};
  auto first = f.script({{{"text", ""}, {"tool_calls", json::array({{{"name", "task"},
                                                                     {"input", launch}}})}},
                         {{"text", ""}, {"tool_calls", json::array({{{"name", "shell"},
                                                                     {"input", big}}})}},
                         text_line("done")});
  REQUIRE(f.run({"--model", first, "--max-tool-output", "1000", "--session-id", "orig", "go"})
            .exit_code == 0);
  auto agent = std::filesystem::directory_iterator(session_dir(f, "orig") / "agents")->path();
  auto id = agent.filename().string();
  auto child_before = read_file(agent / "transcript.jsonl");

  auto resume = json{{"prompt", "again"}, {"resume", id}, {"model", "scripted:child2.jsonl"}};
  auto second = f.script({{{"text", ""}, {"tool_calls", json::array({{{"name", "task"},
                                                                      {"input", resume}}})}},
                          text_line("forked done")});
  auto fork = f.run({"--resume", "orig", "--fork", "--session-id", "copy", "--model", second,
                     "go on"});
  CHECK(fork.exit_code == 0);
  auto log = read_jsonl(session_dir(f, "copy") / "transcript.jsonl");
  auto resumed = std::find_if(log.begin(), log.end(), [](const json& m) {
    return m["role"] == "tool" && m["content"].get<std::string>().find("second child") !=
                                    std::string::npos;
  });
  CHECK(resumed != log.end());
  CHECK(read_jsonl(session_dir(f, "copy") / "agents" / id / "transcript.jsonl").size() == 4);
  CHECK(read_file(agent / "transcript.jsonl") == child_before); // the original's child: as it was

  // The truncated output's pointer names the copy's file, which outlives the original.
  auto text = read_file(session_dir(f, "copy") / "transcript.jsonl");
  CHECK(text.find((session_dir(f, "orig") / "tool-results").string()) == std::string::npos);
  REQUIRE(text.find((session_dir(f, "copy") / "tool-results").string()) != std::string::npos);
  REQUIRE(run_troupe({"rm", "orig"}, f.options()).exit_code == 0);
  auto results = session_dir(f, "copy") / "tool-results";
  REQUIRE(std::filesystem::exists(results));
  CHECK(!std::filesystem::is_empty(results));
}

TEST_CASE("a fork copies links as links, skips pipes, and takes a home whose path is not UTF-8") {
  cli_fixture f;
  auto opts = f.options();
  auto home = f.dir / "h\xffome";
  opts.env["TROUPE_HOME"] = home.string();
  auto work = (f.dir / "work").string();
  REQUIRE(run_troupe({"run", "--cwd", work, "--model", f.script({text_line("a")}),
                      "--session-id", "src", "hi"},
                     opts)
            .exit_code == 0);
  auto src = home / "sessions/src";
  std::filesystem::create_directories(src / "tool-results");
  std::filesystem::create_symlink("/nonexistent", src / "tool-results/dangling");
  REQUIRE(::mkfifo((src / "tool-results/pipe").c_str(), 0600) == 0);
  auto fork = run_troupe({"run", "--cwd", work, "--resume", "src", "--fork", "--session-id",
                          "copy", "--model", f.script({text_line("b")}), "go on"},
                         opts);
  CHECK(fork.exit_code == 0);
  auto copy = home / "sessions/copy";
  CHECK(std::filesystem::is_symlink(copy / "tool-results/dangling"));
  CHECK(!std::filesystem::exists(copy / "tool-results/pipe"));
  CHECK(read_jsonl(copy / "transcript.jsonl").size() == 4);
}

TEST_CASE("a fork leaves the durable queue with the original: the copy gets no notification") {
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("a")}), "--session-id", "orig", "first task"})
            .exit_code == 0);
  REQUIRE(run_troupe({"notify", "orig", "the build broke"}, f.options()).exit_code == 0);
  auto queue = session_dir(f, "orig") / "queue.jsonl";
  write_file(session_dir(f, "orig") / "queue.jsonl.bad", "{\"torn\n");
  auto pending = read_file(queue);
  REQUIRE(read_jsonl(queue).size() == 1);

  auto fork = f.run({"--resume", "orig", "--fork", "--session-id", "copy", "--model",
                     f.script({text_line("forked answer")}), "try another way"});
  CHECK(fork.exit_code == 0);
  auto copy = session_dir(f, "copy");
  CHECK(!std::filesystem::exists(copy / "queue.jsonl.bad"));
  CHECK((!std::filesystem::exists(copy / "queue.jsonl") || read_file(copy / "queue.jsonl").empty()));
  std::vector<std::string> copy_origins;
  for (auto& m : read_jsonl(copy / "transcript.jsonl"))
    copy_origins.push_back(m.value("origin", ""));
  CHECK(copy_origins == std::vector<std::string>{"prompt", "", "prompt", ""});
  CHECK(read_file(queue) == pending); // byte for byte

  // The original still has it, and takes it on its next run.
  REQUIRE(f.run({"--resume", "orig", "--model", f.script({text_line("saw it"), text_line("b")}),
                 "next"})
            .exit_code == 0);
  auto log = read_jsonl(session_dir(f, "orig") / "transcript.jsonl");
  REQUIRE(log.size() == 6);
  CHECK(log[2]["origin"] == "task-notification");
  CHECK(log[2]["content"].get<std::string>().find("the build broke") != std::string::npos);
}

TEST_CASE("troupe show takes a subagent's id, and ls --all lists subagents below their parent") {
  cli_fixture f;
  write_script(f.dir / "work/child.jsonl", {text_line("the child's answer")});
  auto launch = json{{"prompt", "look around"}, {"description", "look around"},
                     {"model", "scripted:child.jsonl"}};
  REQUIRE(f.run({"--model",
                 f.script({{{"text", ""}, {"tool_calls", json::array({{{"name", "task"},
                                                                       {"input", launch}}})}},
                           text_line("parent done")}),
                 "--session-id", "parent", "go"})
            .exit_code == 0);
  auto agent = std::filesystem::directory_iterator(session_dir(f, "parent") / "agents")->path();
  auto id = agent.filename().string();
  auto shown = run_troupe({"show", id}, f.options());
  CHECK(shown.exit_code == 0);
  CHECK(shown.out.rfind("● session " + id, 0) == 0);
  CHECK(shown.out.find("a subagent of parent") != std::string::npos);
  CHECK(shown.out.find("the child's answer") != std::string::npos);

  auto table = split_lines(run_troupe({"ls", "--all"}, f.options()).out);
  REQUIRE(table.size() == 3);
  CHECK(table[1].rfind("parent ", 0) == 0);
  CHECK(table[2].rfind("└ " + id, 0) == 0);
  CHECK(table[2].find("look around") != std::string::npos);
  CHECK(split_lines(run_troupe({"ls"}, f.options()).out).size() == 2); // top level only
  auto lines = split_lines(run_troupe({"ls", "--all", "--json"}, f.options()).out);
  REQUIRE(lines.size() == 2);
  auto child = json::parse(lines[1]);
  CHECK(child["id"] == id);
  CHECK(child["parent"] == "parent");
  CHECK(child["depth"] == 1);
  CHECK(child["state"] == "completed");
  CHECK(!json::parse(lines[0]).contains("parent"));

  // A fork copies the agent with its id: show takes the newest copy and names the others.
  REQUIRE(f.run({"--resume", "parent", "--fork", "--session-id", "copy", "--model",
                 f.script({text_line("fork done")}), "again"})
            .exit_code == 0);
  auto both = run_troupe({"show", id}, f.options());
  CHECK(both.exit_code == 0);
  CHECK(both.err.find("agent " + id + " is also under session(s) parent (forks); this is the "
                      "newest copy, under copy") != std::string::npos);
  CHECK(both.out.find("a subagent of copy") != std::string::npos);
}
