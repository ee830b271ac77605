#include "actors/session_inbox.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

namespace troupe {

namespace {

bool is_news(const message& m) {
  return m.origin == message_origin::task_notification;
}

} // namespace

std::optional<std::string> session_inbox::push(message input) {
  if (queue_.size() >= cap_)
    return "prompt queue is full (" + std::to_string(cap_) + " inputs); dropped a message from " +
           (input.origin == message_origin::none ? "?" : to_string(input.origin)) + ": " + input.content.substr(0, 80);
  queue_.push_back(std::move(input));
  return std::nullopt;
}

std::optional<message> session_inbox::pop() {
  if (queue_.empty())
    return std::nullopt;
  auto input = std::move(queue_.front());
  queue_.pop_front();
  return input;
}

void session_inbox::push_first(message news) {
  queue_.push_front(std::move(news));
}

bool session_inbox::news_first() const {
  return !queue_.empty() && is_news(queue_.front());
}

std::vector<message> session_inbox::drop_prompts() {
  std::deque<message> kept;
  std::vector<message> dropped;
  for (auto& input : queue_)
    (is_news(input) ? kept.emplace_back(std::move(input)) : dropped.emplace_back(std::move(input)));
  queue_ = std::move(kept);
  return dropped;
}

bool session_inbox::take_notification(const task_notification& n) {
  if (!taken_ids_.insert(n.id).second)
    return false;
  originals_[n.id] = n;
  return true;
}

void session_inbox::mark_logged_before(const std::string& id) {
  taken_ids_.insert(id);
}

const task_notification* session_inbox::original(const std::string& id) const {
  auto it = originals_.find(id);
  return it == originals_.end() ? nullptr : &it->second;
}

void session_inbox::queue_news(std::vector<message> news) {
  auto first_prompt =
      std::find_if(queue_.begin(), queue_.end(), [](const message& m) { return !is_news(m); });
  queue_.insert(first_prompt, std::make_move_iterator(news.begin()),
                std::make_move_iterator(news.end()));
}

void session_inbox::queue_news(message news) {
  std::vector<message> one;
  one.push_back(std::move(news));
  queue_news(std::move(one));
}

std::vector<message> session_inbox::take_news() {
  std::deque<message> rest;
  std::vector<message> news;
  for (auto& input : queue_)
    (is_news(input) ? news.emplace_back(std::move(input)) : rest.emplace_back(std::move(input)));
  queue_ = std::move(rest);
  return news;
}

std::vector<message> session_inbox::take_held() {
  return std::exchange(held_, {});
}

bool session_inbox::logged(const std::string& id) {
  originals_.erase(id);
  return from_file_.erase(id) > 0;
}

std::vector<task_notification> session_inbox::undelivered() {
  std::vector<message> waiting = std::exchange(held_, {});
  for (auto& input : queue_)
    if (is_news(input))
      waiting.push_back(std::move(input));
  queue_.clear();
  std::vector<task_notification> back;
  for (auto& m : waiting) {
    if (from_file_.count(m.id))
      continue; // still in queue.jsonl: it is read again on resume
    auto original = originals_.find(m.id);
    if (original == originals_.end())
      continue; // every notification taken is kept there until it is logged
    back.push_back(original->second);
  }
  return back;
}

} // namespace troupe
