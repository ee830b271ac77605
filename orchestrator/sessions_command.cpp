#include "orchestrator/sessions_command.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <optional>
#include <vector>

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

std::string one_line(std::string text) {
  for (auto& c : text)
    if (c == '\n' || c == '\t')
      c = ' ';
  return text;
}

// Columns a text takes on a terminal: one per UTF-8 character (the names shown are words).
size_t columns(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text)
    n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

// The text in at most `width` columns, "…" marking a cut.
std::string cut(const std::string& text, size_t width) {
  if (columns(text) <= width || width == 0)
    return text;
  size_t end = 0;
  for (size_t kept = 0; end < text.size(); ++end)
    if ((static_cast<unsigned char>(text[end]) & 0xC0) != 0x80 && ++kept == width)
      break; // `end` starts the last character that fits: "…" takes its place
  return text.substr(0, end) + "…";
}

// The width of the terminal `fd` is, or nothing when it is none.
std::optional<size_t> terminal_width(int fd) {
  winsize size{};
  if (::isatty(fd) == 0 || ::ioctl(fd, TIOCGWINSZ, &size) != 0 || size.ws_col == 0)
    return std::nullopt;
  return size.ws_col;
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
  // One row of text per line; each column is as wide as its widest value, header included.
  std::vector<std::array<std::string, 6>> rows{
    {"ID", "LAST ACTIVITY", "STATE", "TURNS", "COST", "NAME"}};
  each([&](const stored_session& s, const std::string&, int depth) {
    auto name = !s.unreadable.empty()  ? std::string{"(permission denied)"}
                : s.info.name.empty() ? "(" + s.info.first_prompt + ")"
                                      : s.info.name;
    // A subagent sits below its parent: "└ " indented by its depth.
    auto id = depth == 0 ? s.info.id : std::string(2 * (depth - 1), ' ') + "└ " + s.info.id;
    bool known = s.unreadable.empty();
    rows.push_back({id, when(s.last_activity_ms), s.state_text(),
                    known ? std::to_string(s.info.turns) : "-", known ? cost_text(s.info) : "-",
                    one_line(printable(name))});
  });
  std::array<size_t, 6> widths{};
  for (auto& row : rows)
    for (size_t i = 0; i + 1 < row.size(); ++i)
      widths[i] = std::max(widths[i], columns(row[i]));
  // On a terminal the name, the free text, is cut to what is left of its width.
  std::optional<size_t> name_width;
  if (auto width = terminal_width(STDOUT_FILENO)) {
    size_t before = 0;
    for (size_t i = 0; i + 1 < widths.size(); ++i)
      before += widths[i] + 2;
    name_width = *width > before + 8 ? *width - before : 8;
  }
  for (auto& row : rows) {
    std::string line;
    for (size_t i = 0; i + 1 < row.size(); ++i)
      line += row[i] + std::string(widths[i] - columns(row[i]) + 2, ' ');
    line += name_width ? cut(row.back(), *name_width) : row.back();
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    std::printf("%s\n", line.c_str());
  }
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
