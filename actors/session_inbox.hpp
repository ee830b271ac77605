#pragma once
// What waits to reach a session's log: the prompt queue (prompts, slash commands, hook messages,
// and news gathered ahead of them), the news that arrived while the session was busy, and the
// record that delivers each task notification exactly once. A plain class, owned by the
// session's state; only it touches these containers.
//
// Invariants it keeps:
// - an id is taken at most once (a queue.jsonl entry read again after a resume is not);
// - every notification queued or held has its original kept until it is logged, so that what
//   the session could not deliver is written back as it came;
// - news stays ahead of the prompts in the queue;
// - past the cap an input is not queued, and the caller is told why.

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "protocol/message.hpp"
#include "protocol/notification.hpp"

namespace troupe {

class session_inbox {
public:
  /// Default cap, as in session_config::queue_cap.
  static constexpr size_t default_cap = 100;

  explicit session_inbox(size_t cap = default_cap) : cap_(cap) {}

  // The prompt queue.

  /// Queues an input at the back. Past the cap it is not queued: returns the notice saying
  /// what was dropped and why.
  std::optional<std::string> push(message input);

  /// Takes the first input; none when the queue is empty.
  std::optional<message> pop();

  /// Puts news first, ahead of everything queued (it starts the next turn).
  void push_first(message news);

  /// True when nothing is queued (news held while busy does not count).
  bool empty() const { return queue_.empty(); }

  /// Inputs queued, news included.
  size_t size() const { return queue_.size(); }

  /// True when the next input is news.
  bool news_first() const;

  /// Drops the queued inputs that are not news and returns them (each is named in a notice);
  /// notifications stay.
  std::vector<message> drop_prompts();

  // News.

  /// Takes a notification. Returns false when its id was taken before (it is not delivered
  /// twice); otherwise its original is kept until `logged`.
  bool take_notification(const task_notification& n);

  /// An id that is in the log already (a resumed transcript): never taken again.
  void mark_logged_before(const std::string& id);

  /// True when the id was taken (logged, queued or held).
  bool taken(const std::string& id) const { return taken_ids_.count(id) > 0; }

  /// True when the id was taken and its notification is not logged yet.
  bool awaiting_log(const std::string& id) const { return originals_.count(id) > 0; }

  /// The notification as it came, while it waits to be logged; null otherwise.
  const task_notification* original(const std::string& id) const;

  /// Queues news ahead of the prompts, after earlier news.
  void queue_news(std::vector<message> news);
  void queue_news(message news);

  /// Takes every notification waiting in the queue, in order; prompts stay.
  std::vector<message> take_news();

  /// Holds news that arrived while the session was busy: logged before the next model call,
  /// or the first inputs of the next turn.
  void hold(message news) { held_.push_back(std::move(news)); }

  /// Takes the news held while busy.
  std::vector<message> take_held();

  /// True when news is held.
  bool has_held() const { return !held_.empty(); }

  // queue.jsonl.

  /// The entry was read from queue.jsonl: it stays in the file until it is logged.
  void read_from_file(const std::string& id) { from_file_.insert(id); }

  /// The entry is no longer counted as waiting in queue.jsonl (it was delivered before).
  void forget_from_file(const std::string& id) { from_file_.erase(id); }

  /// Read from queue.jsonl (by this run) and not logged yet.
  bool from_file(const std::string& id) const { return from_file_.count(id) > 0; }

  /// A notification reached the log. Returns true when it came from queue.jsonl (the file may
  /// let go of it now).
  bool logged(const std::string& id);

  /// At the end: empties the queue and the held news, and returns the notifications taken but
  /// not logged that are not in queue.jsonl any more (they are written back to it, as they
  /// came). Prompts should be dropped first: they are lost here without a notice.
  std::vector<task_notification> undelivered();

private:
  size_t cap_;
  std::deque<message> queue_;
  /// News that arrived while busy.
  std::vector<message> held_;
  /// Ids of the notifications already taken (logged, queued or held).
  std::set<std::string> taken_ids_;
  /// The notifications taken but not yet logged, by id.
  std::map<std::string, task_notification> originals_;
  /// Entries read from queue.jsonl not yet logged (the disk actor keeps the offset).
  std::set<std::string> from_file_;
};

} // namespace troupe
