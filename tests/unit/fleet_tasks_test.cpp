#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "store/fleet_tasks.hpp"
#include "store/session_paths.hpp"

using namespace troupe;

TEST_CASE("a JSONL tasks file: every field read, a bad line named by its number, the rest kept") {
  std::string text =
    R"J({"id":"a","prompt":"fix it","model":"openai/gpt-4.1","cwd":"sub","max_steps":3,)J"
    R"J("system":"be brief","allow":["shell(git *)","write"],"metadata":{"k":[1,2]}})J"
    "\n\n"
    R"({"id":7,"prompt":"seven"})"
    "\n"
    R"({"id":"c","prompt":"x","modle":"typo"})"
    "\n"
    "not json\n"
    R"({"prompt":"no id"})"
    "\n"
    R"({"id":"f","prompt":"  "})"
    "\r\n"
    R"({"id":"g","prompt":"p","max_steps":0})"
    "\n";
  auto parsed = parse_fleet_tasks(text, fleet_tasks_format::jsonl);
  REQUIRE(parsed);
  REQUIRE(parsed->tasks.size() == 2);
  auto& a = parsed->tasks[0];
  CHECK(a.id == "a");
  CHECK(a.prompt == "fix it");
  CHECK(a.model == "openai/gpt-4.1");
  CHECK(a.cwd == "sub");
  CHECK(a.max_steps == 3);
  CHECK(a.system == "be brief");
  CHECK(a.allow == std::vector<std::string>{"shell(git *)", "write"});
  CHECK(nlohmann::json::parse(a.metadata) == nlohmann::json{{"k", {1, 2}}});
  CHECK(a.line == 1);
  CHECK(parsed->tasks[1].id == "7"); // an integer id is its digits
  CHECK(parsed->tasks[1].line == 3);
  REQUIRE(parsed->errors.size() == 5);
  CHECK(parsed->errors[0].line == 4);
  CHECK(parsed->errors[0].id == "c");
  CHECK(parsed->errors[0].message.find("unknown field \"modle\"") == 0);
  CHECK(parsed->errors[1].line == 5);
  CHECK(parsed->errors[1].message == "not valid JSON");
  CHECK(parsed->errors[2].message == "no \"id\"");
  CHECK(parsed->errors[2].id == "line-6"); // named by its line, as its result is
  CHECK(parsed->errors[3].id == "f");
  CHECK(parsed->errors[3].message == "\"prompt\" is missing or empty");
  CHECK(parsed->errors[4].message.find("\"max_steps\" must be an integer") == 0);
  // The task round-trips through the fleet's own copy.
  auto again = parse_fleet_tasks(fleet_task_line(a), fleet_tasks_format::jsonl);
  REQUIRE(again);
  REQUIRE(again->tasks.size() == 1);
  CHECK(again->tasks[0].allow == a.allow);
  CHECK(again->tasks[0].metadata == a.metadata);
}

TEST_CASE("duplicate task ids refuse the whole file, whichever lines they are on") {
  auto twice = parse_fleet_tasks("{\"id\":\"a\",\"prompt\":\"x\"}\n{\"id\":\"b\",\"prompt\":\"y\"}\n"
                                 "{\"id\":\"a\",\"prompt\":\"z\"}\n",
                                 fleet_tasks_format::jsonl);
  REQUIRE_FALSE(twice);
  CHECK(twice.error() == "duplicate task id \"a\" on lines 1 and 3: every task needs an id of "
                         "its own");
  // A bad line's id counts too: it gets a result line under that id.
  auto bad_twice = parse_fleet_tasks("{\"id\":\"a\",\"prompt\":\"\"}\n{\"id\":\"a\",\"prompt\":\"y\"}\n",
                                     fleet_tasks_format::jsonl);
  REQUIRE_FALSE(bad_twice);
  CHECK_FALSE(parse_fleet_tasks("\n  \n", fleet_tasks_format::jsonl));
  // A task may not take the name a bad line's result has.
  auto named_like_a_line = parse_fleet_tasks("not json\n{\"id\":\"line-1\",\"prompt\":\"y\"}\n",
                                             fleet_tasks_format::jsonl);
  REQUIRE_FALSE(named_like_a_line);
  CHECK(named_like_a_line.error().find("duplicate task id \"line-1\"") == 0);
}

TEST_CASE("CSV with a header: quoting, line breaks in a field, allow rules, metadata") {
  std::string text = "id,prompt,allow,team,max_steps\r\n"
                     "t1,\"say \"\"hi\"\", then, stop\",shell(ls *); write,red,2\r\n"
                     "t2,\"two\nlines\",,blue,\n"
                     "t3,short\n"
                     "t4,p,,x,many\n"
                     "t5,\"unclosed\n";
  auto parsed = parse_fleet_tasks(text, fleet_tasks_format::csv);
  REQUIRE(parsed);
  REQUIRE(parsed->tasks.size() == 2);
  CHECK(parsed->tasks[0].prompt == "say \"hi\", then, stop");
  CHECK(parsed->tasks[0].allow == std::vector<std::string>{"shell(ls *)", "write"});
  CHECK(parsed->tasks[0].max_steps == 2);
  CHECK(nlohmann::json::parse(parsed->tasks[0].metadata) == nlohmann::json{{"team", "red"}});
  CHECK(parsed->tasks[1].prompt == "two\nlines");
  CHECK(parsed->tasks[1].line == 3);
  REQUIRE(parsed->errors.size() == 3);
  CHECK(parsed->errors[0].line == 5); // the row after a two-line field keeps its real line
  CHECK(parsed->errors[0].id == "t3");
  CHECK(parsed->errors[0].message == "has 2 fields; the header has 5");
  CHECK(parsed->errors[1].message.find("\"max_steps\"") == 0);
  CHECK(parsed->errors[2].message.find("not closed") != std::string::npos);

  // Excel's CSV UTF-8 starts with a byte-order mark.
  auto marked = parse_fleet_tasks("\xEF\xBB\xBFid,prompt\n1,x\n", fleet_tasks_format::csv);
  REQUIRE(marked);
  CHECK(marked->tasks.size() == 1);

  auto headless = parse_fleet_tasks("a,b\n1,2\n", fleet_tasks_format::csv);
  REQUIRE_FALSE(headless);
  CHECK(headless.error().find("has no \"id\" column") != std::string::npos);
}

TEST_CASE("the format is told by the file's name, else by its first character") {
  CHECK(guess_fleet_tasks_format("t.CSV", "{") == fleet_tasks_format::csv);
  CHECK(guess_fleet_tasks_format("t.jsonl", "id,prompt") == fleet_tasks_format::jsonl);
  CHECK(guess_fleet_tasks_format("-", "  \n{\"id\":1}") == fleet_tasks_format::jsonl);
  CHECK(guess_fleet_tasks_format("-", "id,prompt\n") == fleet_tasks_format::csv);
}

TEST_CASE("a task's session id: the fleet's id and the task's, hashed when it cannot name a directory") {
  CHECK(task_session_id("f1", "task-7.b_c") == "f1-task-7.b_c");
  auto odd = task_session_id("f1", "../../etc");
  CHECK(odd.rfind("f1-______etc-", 0) == 0);
  CHECK(odd.find('/') == std::string::npos);
  CHECK(odd == task_session_id("f1", "../../etc")); // stable
  CHECK(task_session_id("f1", "a/b") != task_session_id("f1", "a?b"));
  CHECK(task_session_id("f1", "..") != "f1-..");
  CHECK(task_session_id("f1", std::string(300, 'x')).size() < 80);
  // Always a session id troupe show can take: at most 128 characters.
  auto long_fleet = std::string(64, 'f');
  CHECK(task_session_id(long_fleet, std::string(100, 'y')).size() <= 128);
  CHECK(task_session_id(long_fleet, std::string(100, 'y')) !=
        task_session_id(long_fleet, std::string(99, 'y')));
  // Two ids that would share a directory are refused like duplicates.
  auto same = parse_fleet_tasks("{\"id\":\"ok\",\"prompt\":\"x\"}\n", fleet_tasks_format::jsonl);
  CHECK(same);
}
