#pragma once
// A session's durable queue of task notifications: queue.jsonl in its directory, one JSON
// object per line. Writers (`troupe notify`, a subagent whose parent has ended) append under an
// exclusive lock with one write and an fsync; the session reads what is new from its offset and
// empties the file once everything read is in its transcript. A line that is not a notification
// (torn by a crash, or longer than the reader takes) is set aside in queue.jsonl.bad, never
// dropped silently; memory stays bounded by the longest line a reader takes.

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "protocol/expected.hpp"
#include "protocol/notification.hpp"
#include "store/session_paths.hpp"

namespace troupe {

/// Most entries a queue holds; a notify past it fails rather than drop anything.
inline constexpr size_t notification_queue_cap = 100;

/// Default largest notification text in bytes (troupe notify --max-bytes,
/// TROUPE_MAX_NOTIFICATION_BYTES).
inline constexpr size_t notification_size_cap = size_t{1} << 20;

/// Largest notification text that can be configured.
inline constexpr size_t notification_size_ceiling = size_t{64} << 20;

/// Longest queue line a reader takes in for texts of up to `text_cap` bytes: every byte of the
/// text escaped (\u00XX), plus room for the other fields.
constexpr size_t queue_line_limit(size_t text_cap) { return text_cap * 6 + 65536; }

/// Appends one notification. Fails when the queue already holds `cap` entries or the file
/// cannot be written; the error says which. A failed write leaves the file as it was; an
/// unterminated last line (a writer that died mid-write) is ended first, so it cannot swallow
/// this entry.
expected<bool> append_notification(const std::filesystem::path& queue,
                                   const task_notification& notification,
                                   size_t cap = notification_queue_cap);

/// Reads the whole lines after `offset` and moves `offset` past them. A missing file is empty.
/// Lines that are not notifications, or longer than `max_line` (streamed past, never loaded
/// whole), are set aside (see set_aside_path) and counted in `bad_lines`. When one cannot be set
/// aside, `offset` stops before it (it stays in the queue, and what follows waits) and `problem`
/// says why; the entries before it are returned.
expected<std::vector<task_notification>>
read_notifications(const std::filesystem::path& queue, size_t& offset, size_t* bad_lines = nullptr,
                   size_t max_line = queue_line_limit(notification_size_cap),
                   std::string* problem = nullptr);

/// Drops the delivered entries: of the lines before `offset` (already read) only those whose
/// id is in `undelivered` stay; the lines after it (not read yet) all stay. `offset` moves to
/// the end of the kept read lines. Keeps the cap about undelivered entries under steady load.
void release_notifications(const std::filesystem::path& queue, size_t& offset,
                           const std::set<std::string>& undelivered,
                           size_t max_line = queue_line_limit(notification_size_cap));

} // namespace troupe
