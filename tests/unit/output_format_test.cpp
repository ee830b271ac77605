#include <doctest/doctest.h>

#include "orchestrator/output_format.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("stream-json lines follow Claude Code's shapes") {
  auto init = to_stream_json(
    session_started_event{"s", "/w", "scripted:x", {"shell"}, "/t", 0, {"/w/CLAUDE.md"}});
  CHECK(init["type"] == "system");
  CHECK(init["subtype"] == "init");
  CHECK(init["session_id"] == "s");
  CHECK(init["memory_files"] == json::array({"/w/CLAUDE.md"}));

  message reply;
  reply.id = "m1";
  reply.role = role::assistant;
  reply.content = "running";
  reply.tool_calls = {{"c1", "shell", {{"command", "ls"}}, call_format::native}};
  auto assistant = to_stream_json(message_event{"s", reply});
  CHECK(assistant["type"] == "assistant");
  CHECK(assistant["message"]["content"] ==
        json::array({{{"type", "text"}, {"text", "running"}},
                     {{"type", "tool_use"}, {"id", "c1"}, {"name", "shell"},
                      {"input", {{"command", "ls"}}}}}));

  auto tool = make_tool_message(reply.tool_calls[0], tool_result{"files", false, 0, false});
  auto user = to_stream_json(message_event{"s", tool});
  CHECK(user["type"] == "user");
  CHECK(user["message"]["content"][0] ==
        json{{"type", "tool_result"}, {"tool_use_id", "c1"}, {"content", "files"},
             {"is_error", false}});
}

TEST_CASE("the result line names subtype, terminal reason and turns") {
  session_ended_event ended;
  ended.session_id = "s";
  ended.reason = terminal_reason::max_turns;
  ended.state.turn_count = 1;
  ended.result_text = "partial";
  auto line = to_stream_json(ended);
  CHECK(line["type"] == "result");
  CHECK(line["subtype"] == "error_max_turns");
  CHECK(line["terminal_reason"] == "max_turns");
  CHECK(line["num_turns"] == 1);
  CHECK(line["is_error"] == true);
  CHECK(line["result"] == "partial");
  CHECK(std::string{result_subtype(terminal_reason::completed)} == "success");
  CHECK(std::string{result_subtype(terminal_reason::error)} == "error_during_execution");
  CHECK(std::string{result_subtype(terminal_reason::interrupted)} == "error_during_execution");
}

TEST_CASE("text shown on a terminal carries no escape sequence of a model's or a tool's") {
  CHECK(printable("plain text\n\tindented, ünïcode ✓") == "plain text\n\tindented, ünïcode ✓");
  CHECK(printable("A\033]0;HACKED\007B") == "A^[]0;HACKED^GB");
  CHECK(printable("\033[31mRED\033[0m") == "^[[31mRED^[[0m");
  CHECK(printable("line\r\nnext\rover") == "line\nnext\nover");
  CHECK(printable("back\bspace\x7f") == "back^Hspace^?");
  CHECK(printable("c1 \xc2\x9b" "2J") == "c1 ^[[2J"); // U+009B, CSI
  CHECK(printable("raw\x9b" "31mC1") == "raw^[[31mC1"); // a lone 8-bit CSI
  CHECK(printable("euro \xe2\x82\xac, \xc3\xa9") == "euro \xe2\x82\xac, \xc3\xa9");
  CHECK(printable(std::string{"nul\0byte", 8}) == "nul^@byte");
  // Bytes that are no UTF-8 show as U+FFFD, one per broken sequence (as in the JSON outputs),
  // never raw.
  CHECK(printable("bin \xff\xfe end") == "bin \xef\xbf\xbd\xef\xbf\xbd end");
  CHECK(printable("latin1 caf\xe9!") == "latin1 caf\xef\xbf\xbd!");
  CHECK(printable("cut \xe2\x82") == "cut \xef\xbf\xbd");
  CHECK(printable("overlong \xc0\xaf") == "overlong \xef\xbf\xbd\xef\xbf\xbd");
  CHECK(printable("A\xe2\x82" "B\xf0\x9f\x98" "C\xff") ==
        "A\xef\xbf\xbd" "B\xef\xbf\xbd" "C\xef\xbf\xbd");
  // What reorders text unseen is shown by name: overrides, embeddings, isolates, separators.
  CHECK(printable("rm -rf ~ #\u202egnp.exe") == "rm -rf ~ #<U+202E>gnp.exe");
  CHECK(printable("a\u2066b\u2069c\u202ad\u202ce") == "a<U+2066>b<U+2069>c<U+202A>d<U+202C>e");
  CHECK(printable("line\u2028sep\u2029") == "line<U+2028>sep<U+2029>");
  // Their neighbours stay: dashes, quotes, the ellipsis, marks, word joiner.
  CHECK(printable("\u2014 \u201c\u201d \u2026 \u2027 \u202f \u200f \u2060 \u2065 \u206a") ==
        "\u2014 \u201c\u201d \u2026 \u2027 \u202f \u200f \u2060 \u2065 \u206a");

  // Every text a session shows goes through it; colours of troupe's own remain.
  message tool = make_tool_message({"c1", "shell", {{"command", "x"}}, call_format::native},
                                   tool_result{"A\033]0;HACKED\007B\033[2J", false, 0, false});
  auto shown = to_text(message_event{"s", tool}, false, text_style::make(true));
  CHECK(shown.find("\033]") == std::string::npos);
  CHECK(shown.find("\033[2J") == std::string::npos);
  CHECK(shown.find("^[]0;HACKED^GB^[[2J") != std::string::npos);
  CHECK(shown.find("\033[36m") != std::string::npos);
  message reply;
  reply.role = role::assistant;
  reply.content = "model says \033[2Jcleared";
  CHECK(to_text(message_event{"s", reply}).find("model says ^[[2Jcleared") != std::string::npos);
  generation_progress delta;
  delta.kind = progress_kind::text_delta;
  delta.text = "\033[1A";
  CHECK(to_text(delta) == "^[[1A");
}

TEST_CASE("a refused call is shown as refused, not as a command that ran and failed") {
  tool_call call{"c1", "shell", {{"command", "rm -rf build"}}, call_format::native};
  struct row {
    refusal by;
    std::string text;
    std::string head;
  };
  for (auto& r : std::vector<row>{
         {refusal::permission, "Permission denied: rm needs approval.", "← shell refused\n"},
         {refusal::plan_mode, "Permission denied: plan mode.", "← shell refused (plan mode)\n"},
         {refusal::user, "The user declined to run this call.", "← shell declined\n"},
         {refusal::hook, "Blocked by a PreToolUse hook: no rm", "← shell blocked by a hook\n"},
         {refusal::other, "Not today.", "← shell not run\n"}}) {
    CAPTURE(r.head);
    auto m = make_tool_message(call, tool_result{r.text, true, -1, false, r.by});
    auto shown = to_text(message_event{"s", m});
    CHECK(shown == r.head + "  │ " + r.text + "\n");
    CHECK(to_stream_json(message_event{"s", m})["refused"] == to_string(r.by));
    // Only a field is added to the stream-json line; the rest keeps its shape.
    CHECK(to_stream_json(message_event{"s", m})["exit_code"] == -1);
  }
  // A command that ran and failed keeps its exit code, and says nothing of refusals.
  auto failed = make_tool_message(call, tool_result{"boom", true, 2, false});
  CHECK(to_text(message_event{"s", failed}) == "← shell (exit 2) [error]\n  │ boom\n");
  CHECK(!to_stream_json(message_event{"s", failed}).contains("refused"));
  // Coloured as a warning, not as an error.
  auto refused = make_tool_message(call, tool_result{"x", true, -1, false, refusal::permission});
  CHECK(to_text(message_event{"s", refused}, false, text_style::make(true))
          .rfind("\033[33m← shell refused\033[0m", 0) == 0);
}

TEST_CASE("an MCP tool's progress reads as news about the call, not as a warning") {
  auto plain = text_style::make(false);
  CHECK(to_text(notice_event{"s", "mcp_progress", "mcp__ev__slow 2/4: halfway"}, plain) ==
        "  … mcp__ev__slow 2/4: halfway\n");
  CHECK(to_text(notice_event{"s", "warning", "careful"}, plain) == "! warning: careful\n");
  CHECK(to_stream_json(notice_event{"s", "mcp_progress", "mcp__ev__slow 2/4"}) ==
        nlohmann::json{{"type", "system"}, {"subtype", "mcp_progress"},
                       {"message", "mcp__ev__slow 2/4"}, {"session_id", "s"}});
}
