// The session's inbox: the prompt queue and its cap, news ahead of prompts, and each
// notification taken once, kept as it came until it is logged.

#include <doctest/doctest.h>

#include "actors/session_inbox.hpp"

using namespace troupe;

namespace {

message prompt(const std::string& text) {
  message m;
  m.id = "p_" + text;
  m.role = role::user;
  m.origin = message_origin::prompt;
  m.content = text;
  return m;
}

task_notification notification(const std::string& id) {
  task_notification n;
  n.id = id;
  n.source = "external";
  n.text = "text of " + id;
  return n;
}

message news(const std::string& id) {
  message m;
  m.id = id;
  m.role = role::user;
  m.origin = message_origin::task_notification;
  m.content = "text of " + id;
  return m;
}

std::vector<std::string> ids(const std::vector<message>& messages) {
  std::vector<std::string> out;
  for (auto& m : messages)
    out.push_back(m.id);
  return out;
}

std::vector<std::string> ids(const std::vector<task_notification>& notifications) {
  std::vector<std::string> out;
  for (auto& n : notifications)
    out.push_back(n.id);
  return out;
}

std::vector<std::string> drain(session_inbox& inbox) {
  std::vector<std::string> out;
  while (auto m = inbox.pop())
    out.push_back(m->id);
  return out;
}

} // namespace

TEST_CASE("inbox: inputs come out in the order they were queued") {
  session_inbox inbox;
  CHECK(inbox.empty());
  CHECK(!inbox.pop());
  CHECK(!inbox.push(prompt("a")));
  CHECK(!inbox.push(prompt("b")));
  CHECK(inbox.size() == 2);
  CHECK(drain(inbox) == std::vector<std::string>{"p_a", "p_b"});
  CHECK(inbox.empty());
}

TEST_CASE("inbox: past the cap an input is dropped, with the reason") {
  session_inbox inbox{2};
  CHECK(!inbox.push(prompt("a")));
  CHECK(!inbox.push(prompt("b")));
  auto dropped = inbox.push(prompt("c"));
  REQUIRE(dropped);
  CHECK(*dropped == "prompt queue is full (2 inputs); dropped a message from prompt: c");
  CHECK(drain(inbox) == std::vector<std::string>{"p_a", "p_b"});
}

TEST_CASE("inbox: news goes ahead of the prompts, after earlier news") {
  session_inbox inbox;
  REQUIRE(!inbox.push(prompt("a")));
  CHECK(!inbox.news_first());
  inbox.queue_news(news("n1"));
  CHECK(inbox.news_first());
  inbox.queue_news(std::vector<message>{news("n2"), news("n3")});
  REQUIRE(!inbox.push(prompt("b")));
  CHECK(drain(inbox) == std::vector<std::string>{"n1", "n2", "n3", "p_a", "p_b"});
}

TEST_CASE("inbox: news is taken as a whole, prompts stay in order") {
  session_inbox inbox;
  REQUIRE(!inbox.push(prompt("a")));
  inbox.queue_news(news("n1"));
  REQUIRE(!inbox.push(prompt("b")));
  inbox.push_first(news("n0"));
  CHECK(ids(inbox.take_news()) == std::vector<std::string>{"n0", "n1"});
  CHECK(drain(inbox) == std::vector<std::string>{"p_a", "p_b"});
}

TEST_CASE("inbox: dropping the prompts keeps the news") {
  session_inbox inbox;
  REQUIRE(!inbox.push(prompt("a")));
  inbox.queue_news(news("n1"));
  REQUIRE(!inbox.push(prompt("b")));
  CHECK(ids(inbox.drop_prompts()) == std::vector<std::string>{"p_a", "p_b"});
  CHECK(drain(inbox) == std::vector<std::string>{"n1"});
}

TEST_CASE("inbox: a notification id is taken at most once, logged or not") {
  session_inbox inbox;
  CHECK(inbox.take_notification(notification("n1")));
  CHECK(!inbox.take_notification(notification("n1")));
  CHECK(inbox.taken("n1"));
  CHECK(!inbox.logged("n1")); // not from queue.jsonl
  CHECK(!inbox.take_notification(notification("n1")));
  inbox.mark_logged_before("n2"); // in a resumed transcript
  CHECK(!inbox.take_notification(notification("n2")));
  CHECK(!inbox.awaiting_log("n2"));
}

TEST_CASE("inbox: a notification taken keeps its original until it is logged") {
  session_inbox inbox;
  REQUIRE(inbox.take_notification(notification("n1")));
  CHECK(inbox.awaiting_log("n1"));
  REQUIRE(inbox.original("n1") != nullptr);
  CHECK(inbox.original("n1")->text == "text of n1");
  inbox.logged("n1");
  CHECK(!inbox.awaiting_log("n1"));
  CHECK(inbox.original("n1") == nullptr);
  CHECK(inbox.taken("n1"));
}

TEST_CASE("inbox: news held while busy is taken once, in order") {
  session_inbox inbox;
  CHECK(!inbox.has_held());
  inbox.hold(news("n1"));
  inbox.hold(news("n2"));
  CHECK(inbox.has_held());
  CHECK(inbox.empty()); // held news is not in the queue
  CHECK(ids(inbox.take_held()) == std::vector<std::string>{"n1", "n2"});
  CHECK(!inbox.has_held());
  CHECK(inbox.take_held().empty());
}

TEST_CASE("inbox: an entry of queue.jsonl says so when it is logged") {
  session_inbox inbox;
  inbox.read_from_file("n1");
  REQUIRE(inbox.take_notification(notification("n1")));
  CHECK(inbox.logged("n1"));
  CHECK(!inbox.logged("n1")); // once
  inbox.read_from_file("n2");
  inbox.forget_from_file("n2");
  CHECK(!inbox.logged("n2"));
}

TEST_CASE("inbox: at the end, what was taken and not logged is written back, file entries aside") {
  session_inbox inbox;
  for (auto id : {"held", "queued", "from_file", "logged"})
    REQUIRE(inbox.take_notification(notification(id)));
  inbox.read_from_file("from_file");
  inbox.hold(news("held"));
  inbox.queue_news(news("queued"));
  inbox.queue_news(news("from_file"));
  inbox.queue_news(news("logged"));
  inbox.logged("logged"); // logged while still queued: it is not written back
  REQUIRE(!inbox.push(prompt("a")));
  auto back = inbox.undelivered();
  CHECK(ids(back) == std::vector<std::string>{"held", "queued"});
  CHECK(back[0].text == "text of held"); // as it came
  CHECK(inbox.empty());
  CHECK(!inbox.has_held());
}
