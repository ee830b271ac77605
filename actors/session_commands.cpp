// Slash commands: they act on the session and never reach the model. Each answers with a
// notice ("command" for what was asked, another kind for a refusal) or, when it changes the
// conversation (/undo, /clear, /model), with the system message the transcript keeps.

#include <algorithm>

#include <caf/actor_system.hpp>

#include "store/ids.hpp"
#include "actors/session_state.hpp"
#include "actors/step.hpp"
#include "actors/mcp_server.hpp"

namespace troupe {

namespace {

const char* help_text =
  "commands:\n"
  "  /help                  this list\n"
  "  /exit                  end the session (also /quit, Ctrl+D)\n"
  "  /undo                  take the last turn out of the context (the transcript keeps it)\n"
  "  /clear                 start the conversation afresh (the transcript keeps it)\n"
  "  /compact [instructions] summarise the conversation so far to free the context\n"
  "  /model [NAME]          show the model, or switch to openai/…, anthropic/…, ollama/…, "
  "scripted:PATH\n"
  "  /tokens                context size, usage and cost so far\n"
  "  /agents                the subagents of this session and their states\n"
  "  /mcp                   the MCP servers, their states and tools\n"
  "  /rename NAME           name the session (troupe ls, --resume NAME)";

void answer(session_ptr self, std::string text) {
  publish_notice(self, "command", std::move(text));
}

std::string cost_text(const session_info& info) {
  auto cost = format_cost(info.cost_usd, info.cost_known);
  return info.cost_known ? cost : cost + " (a model's price is not in troupe's table)";
}

void undo(session_ptr self) {
  auto& st = self->state;
  auto from = st.window.last_turn_start();
  if (from.empty()) {
    publish_notice(self, "undo", "nothing to undo since the start or the last /clear or compaction");
    return;
  }
  auto removed = st.window.count_from(from);
  message marker;
  marker.role = role::system;
  marker.origin = message_origin::undo;
  marker.content = "Undid the last turn: " + std::to_string(removed) +
                   " message(s) left the context (the transcript keeps them).";
  marker.meta = {{"from", from}, {"removed", removed}};
  if (!append_message(self, marker))
    return;
  st.last_assistant_text.clear();
  auto view = st.window.snapshot();
  for (auto it = view.messages.rbegin(); it != view.messages.rend(); ++it)
    if ((*it)->role == role::assistant) {
      st.last_assistant_text = (*it)->content;
      break;
    }
  save_state(self);
}

void clear(session_ptr self) {
  message marker;
  marker.role = role::system;
  marker.origin = message_origin::clear;
  marker.content = "Cleared the conversation: the model starts afresh (the transcript keeps "
                   "everything before).";
  if (!append_message(self, marker))
    return;
  self->state.last_assistant_text.clear();
  save_state(self);
}

void show_tokens(session_ptr self) {
  auto& st = self->state;
  const auto& budget = st.window.budget();
  auto n = [](auto value) { return std::to_string(value); };
  auto text = "context: ~" + n(st.window.projected_tokens()) + " tokens of a " +
              n(budget.limits.context_window) + "-token window (compaction at " +
              n(budget.compact_threshold()) + "); " + n(st.window.size()) +
              " message(s) in view, " + n(st.window.elided_count()) +
              " old tool result(s) elided\nthis run: " + n(st.usage.input_tokens) + " input, " +
              n(st.usage.output_tokens) + " output, " + n(st.usage.cache_read_tokens) +
              " cache read, " + n(st.usage.cache_write_tokens) +
              " cache write tokens\nsession: " + n(static_cast<int64_t>(st.state.turn_count)) +
              " turn(s), cost " + cost_text(st.info);
  answer(self, text);
}

void list_agents(session_ptr self) {
  auto& st = self->state;
  if (!st.agents) {
    answer(self, "no subagents in this session");
    return;
  }
  self->request(st.agents, std::chrono::seconds{5}, list_atom::value)
    .then(
      [=](const agent_list& list) {
        if (list.agents.empty()) {
          answer(self, "no subagents in this session");
          return;
        }
        std::string text = "subagents:";
        for (auto& a : list.agents) {
          auto state = a.state != "running" ? a.state
                       : a.foreground       ? std::string{"running (foreground)"}
                                            : std::string{"running (background)"};
          text += "\n  " + a.id + "  " + state + "  " + a.description;
        }
        answer(self, text);
      },
      [=](caf::error& err) {
        answer(self, "cannot list the subagents: " + self->system().render(err));
      });
}

void list_mcp_servers(session_ptr self) {
  auto& st = self->state;
  const auto& servers = st.config().mcp_servers;
  if (servers.empty()) {
    answer(self, "no MCP servers in this session (--mcp-config, .mcp.json, \"mcpServers\" in "
                 "settings)");
    return;
  }
  // Every server asked at once; the answer, in their order, once the last has spoken.
  struct gathering {
    std::map<std::string, std::string> lines;
    size_t left = 0;
  };
  auto gathered = std::make_shared<gathering>();
  gathered->left = servers.size();
  for (auto& [name, server] : servers) {
    auto take = [=, name = name](std::string line) {
      gathered->lines[name] = std::move(line);
      if (--gathered->left > 0)
        return;
      std::string text = "MCP servers:";
      for (auto& [each, described] : gathered->lines)
        text += "\n" + each + described;
      while (!text.empty() && text.back() == '\n')
        text.pop_back();
      answer(self, text);
    };
    // Once its start-up is over, which its own timer bounds.
    self->request(server, caf::infinite, list_atom::value, int64_t{-1})
      .then([=](const mcp_server_report& report) { take(describe_mcp_report(report, true)); },
            [=](caf::error& err) { take(" - not answering: " + self->system().render(err)); });
  }
}

void rename(session_ptr self, const std::string& name) {
  auto& st = self->state;
  if (name.empty()) {
    publish_notice(self, "usage", "/rename NAME: give the session a name");
    return;
  }
  auto end = std::min<size_t>(name.size(), 100);
  while (end < name.size() && (static_cast<unsigned char>(name[end]) & 0xC0) == 0x80)
    --end; // never half a UTF-8 character
  st.info.name = name.substr(0, end);
  st.info.name_source = "user";
  save_info(self); // the next status the session publishes carries the name
  answer(self, "the session is now named \"" + st.info.name + "\"");
}

void switch_model(session_ptr self, const std::string& spec) {
  auto& st = self->state;
  if (spec.empty()) {
    answer(self, "model: " + st.current_model.name);
    return;
  }
  if (!st.config().switch_model) {
    publish_notice(self, "model", "this session cannot switch models");
    return;
  }
  // The system note is the answer; the next status has the model.
  if (auto problem = change_model(self, spec, {}); !problem.empty())
    publish_notice(self, "model", "cannot switch to " + spec + ": " + problem);
}

} // namespace

std::string change_model(session_ptr self, const std::string& spec, const std::string& note_text) {
  auto& st = self->state;
  if (!st.config().switch_model)
    return "this session cannot switch models";
  auto next = st.config().switch_model(self->system(), spec);
  if (!next)
    return next.error();
  // At a turn boundary the step is idle: a new step takes the new model, the old pair goes.
  for (auto old : {caf::actor_cast<caf::actor>(st.step), caf::actor_cast<caf::actor>(st.model)}) {
    self->unlink_from(old);
    self->send_exit(old, caf::exit_reason::user_shutdown);
  }
  st.model = next->client;
  st.current_model = {next->model_name, next->format, next->system_prompt, next->budget};
  st.window.set_budget(next->budget);
  auto fixed = estimate_tokens(*st.current_model.system_prompt);
  if (st.current_model.format == tool_format::tool)
    fixed += estimate_tokens(st.config().registry->descriptors());
  st.window.set_fixed_tokens(fixed);
  st.step = spawn_step(self->system(), make_step_config(st), session_actor{self}, st.model,
                       st.executor);
  self->link_to(st.step);
  self->link_to(st.model);
  message note;
  note.role = role::system;
  note.origin = message_origin::model;
  note.content = note_text.empty() ? "The model is now " + st.current_model.name + "." : note_text;
  append_message(self, note);
  save_info(self);
  return {};
}

bool run_command(session_ptr self, const message& input) {
  const auto& text = input.content;
  if (input.role != role::user || text.size() < 2 || text[0] != '/')
    return false;
  // "\r" too: input piped from a file with CRLF line ends.
  const char* blanks = " \t\r\n";
  auto name = text.substr(1, text.find_first_of(blanks) - 1);
  if (name.find('/') != std::string::npos)
    return false; // a path such as /usr/bin/env, not a command
  auto space = text.find_first_of(blanks);
  auto argument = space == std::string::npos ? std::string{} : text.substr(space + 1);
  argument.erase(0, argument.find_first_not_of(blanks));
  argument.erase(argument.find_last_not_of(blanks) + 1);
  if (name == "exit" || name == "quit") {
    end_session(self, terminal_reason::completed);
  } else if (name == "compact") {
    compact(self, compaction_trigger{"manual", false, argument},
            compaction_next{compaction_next::kind::command, {}});
  } else if (name == "help") {
    answer(self, help_text);
  } else if (name == "undo") {
    undo(self);
  } else if (name == "clear") {
    clear(self);
  } else if (name == "model") {
    switch_model(self, argument);
  } else if (name == "tokens") {
    show_tokens(self);
  } else if (name == "agents") {
    list_agents(self);
  } else if (name == "mcp") {
    list_mcp_servers(self);
  } else if (name == "rename") {
    rename(self, argument);
  } else {
    publish_notice(self, "unknown_command",
                   "unknown command /" + name + "; /help lists the commands");
  }
  return true;
}

} // namespace troupe
