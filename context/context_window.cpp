#include "context/context_window.hpp"

#include <algorithm>
#include <cmath>

#include "protocol/hook_event.hpp"

namespace troupe {

namespace {

// Results smaller than this are cheap to keep; eliding them would save little and lose detail.
constexpr int64_t smallest_elided_result = 250;

message elided(const message& result) {
  message m = result;
  m.content = "[Old tool result elided to save context: " + std::to_string(result.content.size()) +
              " bytes of " + result.tool_name +
              " output. The full output is in the transcript; run the tool again if you need "
              "it.]";
  m.truncated = true;
  return m;
}

} // namespace

bool is_compact_boundary(const message& m) {
  return m.role == role::system && m.origin == message_origin::compact_boundary;
}

bool is_view_marker(const message& m) {
  return m.role == role::system && (m.origin == message_origin::undo || m.origin == message_origin::clear);
}

bool is_bookkeeping(const message& m) {
  if (is_compact_boundary(m) || is_view_marker(m))
    return true;
  return m.role == role::user && m.origin == message_origin::hook && m.meta.is_object() &&
         m.meta.value("hook_event", std::string{}) == to_string(hook_event::session_start);
}

bool awaits_answer(const message& m) {
  return m.role == role::user || m.role == role::tool ||
         (m.role == role::assistant && !m.tool_calls.empty());
}

bool starts_turn(const message& m) {
  if (m.role != role::user)
    return false;
  if (m.meta.is_object() && m.meta.contains("turn_start"))
    return m.meta.value("turn_start", false);
  return m.origin == message_origin::prompt || m.origin == message_origin::parent;
}

message summary_message(const message& boundary) {
  message m;
  m.id = boundary.id + "-summary";
  m.role = role::user;
  m.origin = message_origin::compact_summary;
  m.timestamp_ms = boundary.timestamp_ms;
  m.content = "This session continues an earlier conversation that was compacted to save "
              "context. Summary of the earlier part:\n\n" +
              boundary.content;
  return m;
}

context_window::context_window(context_budget budget) : budget_(budget) {}

void context_window::push(entry e) {
  message_tokens_ += e.tokens;
  if (e.shown->role == role::tool && !e.elided)
    tool_tokens_ += e.tokens;
  if (e.elided)
    ++elided_;
  if (e.shown->role == role::assistant)
    last_assistant_ = entries_.size();
  entries_.push_back(std::move(e));
}

void context_window::keep_first(size_t n) {
  std::vector<entry> kept(std::make_move_iterator(entries_.begin()),
                          std::make_move_iterator(entries_.begin() + static_cast<long>(n)));
  entries_.clear();
  message_tokens_ = tool_tokens_ = 0;
  elided_ = last_assistant_ = 0;
  elide_cursor_ = std::min(elide_cursor_, n);
  for (auto& e : kept)
    push(std::move(e));
}

std::string context_window::last_turn_start() const {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (is_compact_boundary(*it->original))
      return {}; // what came before is in the summary
    if (starts_turn(*it->shown))
      return it->original->id;
  }
  return {};
}

size_t context_window::count_from(const std::string& id) const {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const entry& e) { return e.original->id == id; });
  return static_cast<size_t>(entries_.end() - it);
}

void context_window::append(const message_ptr& m) {
  if (is_view_marker(*m)) {
    if (m->origin == message_origin::clear) {
      keep_first(0);
      return;
    }
    auto from = m->meta.is_object() ? m->meta.value("from", std::string{}) : std::string{};
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const entry& e) { return e.original->id == from; });
    keep_first(static_cast<size_t>(it - entries_.begin()));
    return;
  }
  if (!is_compact_boundary(*m)) {
    push({m, m, estimate_tokens(*m), false});
    elide_old_results();
    return;
  }
  // The summary first, then the preserved messages, which sit just before the boundary.
  std::vector<entry> kept;
  auto summary = std::make_shared<const message>(summary_message(*m));
  kept.push_back({m, summary, estimate_tokens(*summary), false});
  auto from = m->meta.is_object() ? m->meta.value("preserved_from", std::string{}) : std::string{};
  if (!from.empty()) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const entry& e) { return e.original->id == from; });
    for (; it != entries_.end(); ++it)
      kept.push_back(std::move(*it));
  }
  entries_.clear();
  message_tokens_ = tool_tokens_ = 0;
  elided_ = elide_cursor_ = last_assistant_ = 0;
  for (auto& e : kept)
    push(std::move(e));
  elide_old_results();
}

// Walks forward over results older than the current step, eliding large ones while the results
// in view exceed their budget. The cursor never moves back: each result is looked at once.
void context_window::elide_old_results() {
  auto budget = budget_.tool_result_budget();
  while (tool_tokens_ > budget && elide_cursor_ < last_assistant_) {
    auto& e = entries_[elide_cursor_++];
    if (e.shown->role != role::tool || e.elided || e.tokens < smallest_elided_result)
      continue;
    auto note = std::make_shared<const message>(elided(*e.shown));
    auto tokens = estimate_tokens(*note);
    message_tokens_ += tokens - e.tokens;
    tool_tokens_ -= e.tokens;
    e.shown = std::move(note);
    e.tokens = tokens;
    e.elided = true;
    ++elided_;
  }
}

context_snapshot context_window::snapshot() const {
  context_snapshot view;
  view.messages.reserve(entries_.size());
  for (const auto& e : entries_)
    view.messages.push_back(e.shown);
  return view;
}

int64_t context_window::project(int64_t raw) const {
  return static_cast<int64_t>(std::ceil(static_cast<double>(raw) * calibration_));
}

int64_t context_window::estimated_after(const message& boundary,
                                        const compaction_plan& plan) const {
  return fixed_tokens_ + estimate_tokens(summary_message(boundary)) + plan.preserved_tokens;
}

void context_window::calibrate(int64_t estimated, int64_t reported) {
  if (estimated <= 0 || reported <= 0)
    return;
  auto ratio = static_cast<double>(reported) / static_cast<double>(estimated);
  if (ratio < 0.25 || ratio > 4.0)
    return;
  calibration_ = ratio;
}

compaction_plan context_window::plan_compaction() const {
  compaction_plan plan;
  size_t first = !entries_.empty() && is_compact_boundary(*entries_.front().original) ? 1 : 0;
  size_t n = entries_.size();
  if (n <= first)
    return plan; // nothing since the last compaction
  size_t split = n;
  int64_t suffix = 0;
  for (size_t i = n; i-- > first;) {
    suffix += entries_[i].tokens;
    if (suffix > budget_.preserve_budget())
      break;
    if (entries_[i].shown->role == role::user || entries_[i].shown->role == role::assistant)
      split = i;
  }
  if (split <= first)
    split = n; // all of it would be kept: summarise all of it instead
  for (size_t i = 0; i < split; ++i)
    plan.to_summarize.push_back(entries_[i].original);
  if (split < n)
    plan.preserved_from = entries_[split].original->id;
  for (size_t i = split; i < n; ++i)
    plan.preserved_tokens += entries_[i].tokens;
  return plan;
}

} // namespace troupe
