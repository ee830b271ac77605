#include "orchestrator/permission_prompt.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "orchestrator/output_format.hpp"

namespace troupe {

namespace {

void write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0)
      return;
    done += static_cast<size_t>(n);
  }
}

// Reads one line, byte by byte: the terminal is line-buffered and nothing else reads it.
bool read_line(int fd, std::string& line) {
  line.clear();
  char c;
  for (;;) {
    auto n = ::read(fd, &c, 1);
    if (n <= 0)
      return !line.empty();
    if (c == '\n')
      return true;
    line += c;
  }
}

} // namespace

std::string describe_call(const tool_call& call) {
  // Shown on the terminal: whatever the model put in the call, in printable form.
  if (auto command = call.input.find("command"); command != call.input.end() && command->is_string())
    return printable(call.name + ": " + command->get<std::string>());
  if (auto path = call.input.find("path"); path != call.input.end() && path->is_string())
    return printable(call.name + " " + path->get<std::string>());
  return printable(call.name + " " + call.input.dump());
}

std::string permission_question(const tool_call& call, const std::string& reason) {
  return printable(reason) + "\n  " + describe_call(call);
}

std::optional<permission_answer> parse_permission_answer(const std::string& line) {
  std::string answer;
  for (char c : line)
    if (std::isspace(static_cast<unsigned char>(c)) == 0)
      answer += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (answer == "y" || answer == "yes")
    return permission_answer::yes;
  if (answer == "n" || answer == "no")
    return permission_answer::no;
  if (answer == "a" || answer == "always")
    return permission_answer::always;
  return std::nullopt;
}

permission_answer ask_permission(int in_fd, int out_fd, const tool_call& call,
                                 const std::string& reason) {
  write_all(out_fd, "\n[troupe] " + permission_question(call, reason) + "\n");
  for (;;) {
    write_all(out_fd, "Allow? [y]es / [n]o / [a]lways for this session: ");
    std::string line;
    if (!read_line(in_fd, line))
      return permission_answer::no;
    if (auto answer = parse_permission_answer(line))
      return *answer;
  }
}

permission_asker_actor spawn_terminal_asker(caf::actor_system& sys) {
  return sys.spawn<caf::detached>([](permission_asker_actor::pointer) -> permission_asker_actor::behavior_type {
    return {
      [](ask_atom, const tool_call& call, const std::string& reason) {
        int tty = ::open("/dev/tty", O_RDWR | O_CLOEXEC);
        if (tty < 0)
          return permission_verdict{};
        permission_verdict verdict;
        verdict.answer = ask_permission(tty, tty, call, reason);
        ::close(tty);
        return verdict;
      },
    };
  });
}

} // namespace troupe
