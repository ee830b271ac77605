#include "orchestrator/sessions_command.hpp"

#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "context/token_budget.hpp"
#include "store/ids.hpp"
#include "store/session_catalog.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/output_format.hpp"

namespace troupe {

namespace {

std::string when(int64_t ms) {
  auto age_s = (now_ms() - ms) / 1000;
  if (age_s < 60)
    return "just now";
  if (age_s < 3600)
    return std::to_string(age_s / 60) + " min ago";
  if (age_s < 86400)
    return std::to_string(age_s / 3600) + " h ago";
  std::time_t seconds = ms / 1000;
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local);
  return text;
}

std::string cost_text(const session_info& info) {
  return format_cost(info.cost_usd, info.cost_known);
}

std::string cut(std::string text, size_t width) {
  for (auto& c : text)
    if (c == '\n' || c == '\t')
      c = ' ';
  if (text.size() <= width)
    return text;
  auto end = width - 1;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
    --end; // never split a UTF-8 character
  return text.substr(0, end) + "…";
}

} // namespace

int run_ls(bool json, bool all) {
  session_catalog catalog{troupe_home()};
  auto sessions = catalog.list();
  if (!sessions)
    return fail_at_runtime(sessions.error());
  // Each session, then (with --all) its subagents below it.
  auto each = [&](const auto& print) {
    for (auto& s : *sessions) {
      print(s, std::string{}, 0);
      if (all)
        for (auto& agent : agent_tree(s))
          print(agent.agent, agent.parent_id, agent.depth);
    }
  };
  if (json) {
    each([](const stored_session& s, const std::string& parent, int depth) {
      // Of an unreadable session nothing but its id is known: no zeros passed off as facts.
      nlohmann::json line = s.unreadable.empty() ? nlohmann::json(s.info)
                                                 : nlohmann::json{{"id", s.info.id}};
      line["state"] = s.state_text();
      line["last_activity_ms"] = s.last_activity_ms;
      line["live"] = s.live;
      if (!parent.empty()) {
        line["parent"] = parent;
        line["depth"] = depth;
      }
      if (!s.unreadable.empty())
        line["error"] = s.unreadable;
      std::printf("%s\n",
                  line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    });
    return 0;
  }
  if (sessions->empty()) {
    std::printf("no sessions yet in %s\n", catalog.root().c_str());
    return 0;
  }
  // STATE fits the longest state, permission_blocked.
  std::printf("%-24s %-32s %-17s %-18s %5s %9s\n", "ID", "NAME", "LAST ACTIVITY", "STATE",
              "TURNS", "COST");
  // printf pads by bytes: text is padded by characters so the columns stay aligned.
  auto padded = [](const std::string& text, size_t width) {
    size_t chars = 0;
    for (unsigned char c : text)
      chars += (c & 0xC0) != 0x80 ? 1 : 0;
    return text + std::string(width - std::min(chars, width), ' ');
  };
  each([&](const stored_session& s, const std::string&, int depth) {
    auto name = !s.unreadable.empty()  ? std::string{"(permission denied)"}
                : s.info.name.empty() ? "(" + cut(s.info.first_prompt, 30) + ")"
                                      : s.info.name;
    // A subagent sits below its parent: "└ " indented by its depth.
    auto id = depth == 0 ? s.info.id : std::string(2 * (depth - 1), ' ') + "└ " + s.info.id;
    bool known = s.unreadable.empty();
    std::printf("%s %s %-17s %-18s %5s %9s\n", padded(id, 24).c_str(),
                padded(cut(printable(name), 32), 32).c_str(), when(s.last_activity_ms).c_str(),
                s.state_text().c_str(), known ? std::to_string(s.info.turns).c_str() : "-",
                known ? cost_text(s.info).c_str() : "-");
  });
  return 0;
}

int run_show(const std::string& id_or_name) {
  auto found = session_catalog{troupe_home()}.find_session_or_agent(id_or_name);
  if (!found)
    return fail_at_runtime(found.error());
  const auto& session = found->session;
  std::string launched_by; // a subagent's parent
  if (const auto& agent = found->agent) {
    launched_by = session.paths.launcher()->id();
    if (!agent->also_under.empty()) {
      std::string others;
      for (auto& top : agent->also_under)
        others += (others.empty() ? "" : ", ") + top;
      std::fprintf(stderr,
                   "troupe: agent %s is also under session(s) %s (forks); this is the %s copy, "
                   "under %s\n",
                   id_or_name.c_str(), others.c_str(), session.live ? "running" : "newest",
                   agent->top.id().c_str());
    }
  }
  if (!session.unreadable.empty())
    return fail_at_runtime("cannot show session " + session.info.id + ": " + session.unreadable);
  auto loaded = load_transcript(session.paths.transcript(), transcript_access::reader);
  if (!loaded)
    return fail_at_runtime(loaded.error());
  const auto& info = session.info;
  std::printf("● session %s%s · %s · %s · %s · %lld turn(s) · %s\n", info.id.c_str(),
              info.name.empty() ? "" : printable(" (" + info.name + ")").c_str(),
              printable(info.model).c_str(), printable(info.cwd).c_str(),
              session.state_text().c_str(), static_cast<long long>(info.turns),
              cost_text(info).c_str());
  if (!info.forked_from.empty())
    std::printf("  forked from %s\n", info.forked_from.c_str());
  if (!launched_by.empty())
    std::printf("  a subagent of %s\n", launched_by.c_str());
  for (auto& m : loaded->messages) {
    auto text = to_text(message_event{info.id, m}, false);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}

int run_rm(const std::string& id_or_name) {
  auto found = session_catalog{troupe_home()}.find(id_or_name);
  if (!found)
    return fail_at_runtime(found.error());
  if (auto removed = remove_session(*found); !removed)
    return fail_at_runtime(removed.error());
  std::printf("removed session %s\n", found->info.id.c_str());
  return 0;
}

} // namespace troupe
