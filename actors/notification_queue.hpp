#pragma once
// A session's durable queue of task notifications: queue.jsonl in its directory, one JSON
// object per line. Writers (`troupe notify`, a subagent whose parent has ended) append under an
// exclusive lock with one write and an fsync; the session reads what is new from its offset and
// empties the file once everything read is in its transcript.

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "protocol/expected.hpp"
#include "protocol/notification.hpp"

namespace troupe {

/// Most entries a queue holds; a notify past it fails rather than drop anything.
inline constexpr size_t notification_queue_cap = 100;

/// Appends one notification. Fails when the queue already holds `cap` entries or the file
/// cannot be written; the error says which.
expected<bool> append_notification(const std::filesystem::path& queue,
                                   const task_notification& notification,
                                   size_t cap = notification_queue_cap);

/// Reads the whole lines after `offset` and moves `offset` past them. A missing file is empty.
/// Lines that are not notifications are skipped (and reported in `bad_lines`).
expected<std::vector<task_notification>> read_notifications(const std::filesystem::path& queue,
                                                           size_t& offset, size_t* bad_lines =
                                                                             nullptr);

/// Drops the delivered entries: of the lines before `offset` (already read) only those whose
/// id is in `undelivered` stay; the lines after it (not read yet) all stay. `offset` moves to
/// the end of the kept read lines. Keeps the cap about undelivered entries under steady load.
void release_notifications(const std::filesystem::path& queue, size_t& offset,
                           const std::set<std::string>& undelivered);

} // namespace troupe
