#include <doctest/doctest.h>

#include "actors/session.hpp"
#include "store/transcript.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using namespace troupe::test;

TEST_CASE("appended messages load back in order") {
  temp_dir dir;
  auto path = dir / "s/transcript.jsonl";
  auto writer = transcript_writer::open(path);
  REQUIRE(writer);
  auto a = make_input("first");
  auto b = make_input("second");
  REQUIRE(writer->append(a));
  REQUIRE(writer->append(b));
  auto loaded = load_transcript(path);
  REQUIRE(loaded);
  REQUIRE(loaded->messages.size() == 2);
  CHECK(loaded->messages[0] == a);
  CHECK(loaded->messages[1] == b);
  CHECK(loaded->repair_note.empty());
}

TEST_CASE("a torn last line is moved aside and the file repaired") {
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  auto good = nlohmann::json(make_input("kept")).dump();
  write_file(path, good + "\n{\"id\":\"msg_x\",\"role\":\"assis");
  auto loaded = load_transcript(path);
  REQUIRE(loaded);
  REQUIRE(loaded->messages.size() == 1);
  CHECK(loaded->messages[0].content == "kept");
  CHECK(loaded->repair_note.find("torn last line 2") != std::string::npos);
  CHECK(read_file(path) == good + "\n");
  CHECK(read_file(path.string() + ".torn") == "{\"id\":\"msg_x\",\"role\":\"assis\n");
  // Appending after the repair yields a clean file.
  auto writer = transcript_writer::open(path);
  REQUIRE(writer->append(make_input("next")));
  auto again = load_transcript(path);
  REQUIRE(again);
  CHECK(again->messages.size() == 2);
}

TEST_CASE("a complete but invalid last line is an error, not a repair") {
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  auto content = nlohmann::json(make_input("a")).dump() + "\n{\"role\": \"wizard\"}\n";
  write_file(path, content);
  auto loaded = load_transcript(path);
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().find("line 2 is not a valid message") != std::string::npos);
  CHECK(read_file(path) == content);
  CHECK_FALSE(std::filesystem::exists(path.string() + ".torn"));
}

TEST_CASE("a valid last line without its newline is kept and completed") {
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  write_file(path, nlohmann::json(make_input("a")).dump());
  auto loaded = load_transcript(path);
  REQUIRE(loaded);
  CHECK(loaded->messages.size() == 1);
  CHECK(read_file(path).back() == '\n');
}

TEST_CASE("a corrupt line before the end is an error naming the line") {
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  auto good = nlohmann::json(make_input("a")).dump();
  write_file(path, good + "\nnot json\n" + good + "\n");
  auto loaded = load_transcript(path);
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().find("line 2 is not a valid message") != std::string::npos);
  // Nothing already written is lost.
  CHECK(read_file(path) == good + "\nnot json\n" + good + "\n");
}

TEST_CASE("a torn line that cannot be saved aside stays in place, and appends after it stay readable") {
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  auto good = nlohmann::json(make_input("kept")).dump();
  auto torn = std::string{R"({"id":"msg_x","role":"assistant","content":"half)"};
  write_file(path, good + "\n" + torn);
  std::filesystem::create_directories(path.string() + ".torn"); // cannot be written: a directory
  auto loaded = load_transcript(path);
  REQUIRE(loaded);
  REQUIRE(loaded->messages.size() == 1);
  CHECK(loaded->repair_note.find("could not be saved aside") != std::string::npos);
  CHECK(loaded->repair_note.find("moved to") == std::string::npos);
  CHECK(read_file(path) == good + "\n" + torn); // nothing cut
  // The session goes on: its next line is a line of its own, and every later read skips the
  // torn one, which keeps its bytes.
  auto writer = transcript_writer::open(path);
  REQUIRE(writer);
  REQUIRE(writer->append(make_input("next")));
  auto again = load_transcript(path);
  REQUIRE(again);
  REQUIRE(again->messages.size() == 2);
  CHECK(again->messages[1].content == "next");
  CHECK(again->repair_note.find("line 2 is a torn line kept in place") != std::string::npos);
  CHECK(read_file(path).find(torn + "\n") != std::string::npos);
  auto shown = load_transcript(path, transcript_access::reader);
  REQUIRE(shown);
  CHECK(shown->messages.size() == 2);
}

TEST_CASE("a torn line saved only in part is not cut, and the part is taken back") {
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  auto good = nlohmann::json(make_input("kept")).dump();
  auto torn = "{\"id\":\"msg_x\",\"role\":\"assistant\",\"content\":\"" + std::string(3000, 'z');
  write_file(path, good + "\n" + torn);
  auto earlier = std::string(5000, 'e') + "\n"; // what an earlier repair saved
  write_file(path.string() + ".torn", earlier);
  expected<loaded_transcript> loaded = failure{"not run"};
  {
    file_size_limit full{6000}; // the torn line fits only in part
    loaded = load_transcript(path);
  }
  REQUIRE(loaded);
  CHECK(loaded->messages.size() == 1);
  CHECK(loaded->repair_note.find("could not be saved aside") != std::string::npos);
  CHECK(loaded->repair_note.find("File too large") != std::string::npos);
  CHECK(read_file(path.string() + ".torn") == earlier);
  CHECK(read_file(path) == good + "\n" + torn);
  // With no earlier file, none is left behind: an empty .torn would look like a saved line.
  std::filesystem::remove(path.string() + ".torn");
  {
    file_size_limit full{1000};
    loaded = load_transcript(path);
  }
  REQUIRE(loaded);
  CHECK(loaded->repair_note.find("could not be saved aside") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(path.string() + ".torn"));
  CHECK(read_file(path) == good + "\n" + torn);
}

TEST_CASE("a transcript append that fails part-way is taken back") {
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  auto writer = transcript_writer::open(path);
  REQUIRE(writer);
  REQUIRE(writer->append(make_input("first")));
  auto content = read_file(path);
  expected<bool> failed = true;
  {
    file_size_limit full{content.size() + 100};
    failed = writer->append(make_input(std::string(5000, 'q')));
  }
  REQUIRE(!failed);
  CHECK(failed.error().find("File too large") != std::string::npos);
  CHECK(failed.error().find("Success") == std::string::npos);
  CHECK(read_file(path) == content);
  REQUIRE(writer->append(make_input("third")));
  auto loaded = load_transcript(path);
  REQUIRE(loaded);
  REQUIRE(loaded->messages.size() == 2);
  CHECK(loaded->messages[1].content == "third");
}

TEST_CASE("a transcript line nested 100,000 deep is a bad line, not a crash") {
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  auto good = nlohmann::json(make_input("kept")).dump();
  auto deep = R"({"id": "m", "role": "assistant", "tool_calls": [{"name": "shell", "input": )" +
              std::string(100000, '[') + std::string(100000, ']') + "}]}";
  write_file(path, good + "\n" + deep + "\n");
  auto loaded = load_transcript(path, transcript_access::reader);
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().find("line 2 is not a valid message") != std::string::npos);
}

TEST_CASE("a transcript number past its field's range is a bad line (fuzz finding)") {
  // Found by fuzz/targets/transcript.cpp: 1.76464e+20 converted into an int64_t is undefined.
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  write_file(path, R"({"id":"msg_01","role":"user","content":"x","timestamp_ms":1.76464e+20})"
                   "\n");
  auto loaded = load_transcript(path, transcript_access::reader);
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().find("line 1 is not a valid message") != std::string::npos);
  write_file(path, R"({"id":"msg_01","role":"user","content":"x","timestamp_ms":1.5e3})" "\n");
  auto in_range = load_transcript(path, transcript_access::reader);
  REQUIRE(in_range);
  CHECK(in_range->messages.at(0).timestamp_ms == 1500);
}

TEST_CASE("a number past a double's range is a bad line that names itself, not an abort") {
  // 1e999 is valid JSON text that nlohmann refuses with out_of_range, not a parse_error: the
  // check for a line cut short must take it as a whole, bad line.
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  write_file(path, nlohmann::json(make_input("kept")).dump() + "\n" +
                     R"({"content":"x","id":"m3","role":"user","timestamp_ms":1e999})" "\n");
  for (auto access : {transcript_access::reader, transcript_access::owner}) {
    auto loaded = load_transcript(path, access);
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().find("line 2 is not a valid message") != std::string::npos);
  }
}

TEST_CASE("a reader never repairs nor reads a line its writer may still be writing") {
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  auto good = nlohmann::json(make_input("whole")).dump();
  auto partial = nlohmann::json(make_input("being written")).dump();
  partial.resize(partial.size() / 2);
  write_file(path, good + "\n" + partial);
  auto shown = load_transcript(path, transcript_access::reader);
  REQUIRE(shown);
  REQUIRE(shown->messages.size() == 1);
  CHECK(shown->messages[0].content == "whole");
  CHECK(shown->repair_note.empty());
  // The file is as it was: the line may be finished by the process that owns it.
  CHECK(read_file(path) == good + "\n" + partial);
  CHECK_FALSE(std::filesystem::exists(path.string() + ".torn"));
  // A whole last line without its newline is read, and not completed by a reader.
  write_file(path, good);
  auto whole = load_transcript(path, transcript_access::reader);
  REQUIRE(whole);
  CHECK(whole->messages.size() == 1);
  CHECK(read_file(path) == good);
}

TEST_CASE("the first prompt of a transcript is its first user message from a prompt") {
  temp_dir dir;
  auto path = dir / "transcript.jsonl";
  auto notice = make_input("a notification first", message_origin::task_notification);
  auto prompt = make_input(std::string(300, 'p'));
  prompt.timestamp_ms = 1234;
  write_file(path, nlohmann::json(notice).dump() + "\nnot json\n" + nlohmann::json(prompt).dump() +
                     "\n" + nlohmann::json(make_input("second prompt")).dump() + "\n");
  auto first = read_first_prompt(path);
  REQUIRE(first);
  CHECK(first->text == std::string(200, 'p'));
  CHECK(first->timestamp_ms == 1234);
  CHECK(read_first_prompt(path, 10)->text == std::string(10, 'p'));
  write_file(path, nlohmann::json(notice).dump() + "\n");
  CHECK_FALSE(read_first_prompt(path));
  CHECK_FALSE(read_first_prompt(dir / "missing.jsonl"));
}
