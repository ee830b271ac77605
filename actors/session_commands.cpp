// Slash commands: they act on the session and never reach the model.

#include "actors/session_state.hpp"

namespace troupe {

// Slash commands act on the session and never reach the model. Returns false for ordinary text.
// A command that starts a compaction leaves the session compacting; the loop resumes after it.
bool run_command(session_ptr self, const message& input) {
  const auto& text = input.content;
  if (input.role != role::user || text.size() < 2 || text[0] != '/')
    return false;
  auto name = text.substr(1, text.find_first_of(" \t\n") - 1);
  if (name.find('/') != std::string::npos)
    return false; // a path such as /usr/bin/env, not a command
  if (name == "exit" || name == "quit") {
    end_session(self, terminal_reason::completed);
  } else if (name == "compact") {
    auto space = text.find_first_of(" \t\n");
    auto instructions = space == std::string::npos ? std::string{} : text.substr(space + 1);
    instructions.erase(0, instructions.find_first_not_of(" \t\n"));
    compact(self, compaction_trigger{"manual", false, std::move(instructions)},
            [=](compaction_status status, const std::string&) {
              auto& st = self->state;
              if (st.phase == session_phase::ended)
                return;
              st.phase = session_phase::idle;
              if (status == compaction_status::interrupted) {
                if (!st.config.interactive) {
                  end_session(self, terminal_reason::interrupted);
                  return;
                }
                drop_queue(self, "interrupted");
              }
              next_turn(self);
            });
  } else if (name == "help") {
    publish_notice(
        self, "command",
        "commands: /help (this list), /compact [instructions] (summarise the conversation "
        "so far to free the context), /exit (end the session)");
  } else {
    publish_notice(self, "unknown_command",
                   "unknown command /" + name + "; /help lists the commands");
  }
  return true;
}

} // namespace troupe
