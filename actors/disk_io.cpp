#include "actors/disk_io.hpp"

#include <unistd.h>

#include <cstddef>
#include <map>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "store/notification_queue.hpp"

namespace troupe {

namespace {

/// How far one queue has been read, and the entries read from it not yet delivered.
struct queue_progress {
  size_t offset = 0;
  std::set<std::string> undelivered;
};

struct disk_io_state {
  size_t notification_cap = notification_size_cap;
  std::map<std::string, queue_progress> queues;
  /// Flushes go to a thread of their own: a burst of them (a hundred subagents ending at once)
  /// must not hold up the queue reads that deliver notifications.
  caf::actor syncer;
};

disk_io_actor::behavior_type disk_io(disk_io_actor::stateful_pointer<disk_io_state> self,
                                     size_t notification_cap) {
  self->state.notification_cap = notification_cap;
  auto max_line = queue_line_limit(notification_cap);
  return {
    [=](read_atom, const std::string& path, bool from_start) {
      auto& progress = self->state.queues[path];
      if (from_start)
        progress = queue_progress{};
      queue_read result;
      size_t bad = 0;
      auto read = read_notifications(path, progress.offset, &bad, max_line, &result.error);
      result.bad_lines = static_cast<int32_t>(bad);
      if (!read) {
        result.error = read.error();
        return result;
      }
      for (auto& n : *read)
        if (!n.id.empty())
          progress.undelivered.insert(n.id);
      result.entries = std::move(*read);
      return result;
    },
    [=](release_atom, const std::string& path, const std::vector<std::string>& ids) {
      auto& progress = self->state.queues[path];
      for (auto& id : ids)
        progress.undelivered.erase(id);
      release_notifications(path, progress.offset, progress.undelivered, max_line);
    },
    [=](append_atom, const std::string& path, const task_notification& original) {
      auto n = original;
      // A subagent's answer longer than its parent's readers take is cut (its own transcript
      // has it whole), never set aside unseen.
      auto cap = self->state.notification_cap;
      if (n.text.size() > cap) {
        auto note = "\n[... cut: the answer has " + std::to_string(n.text.size()) +
                    " bytes, a notification at most " + std::to_string(cap) + " ...]";
        auto keep = cap > note.size() ? cap - note.size() : 0;
        while (keep > 0 && (static_cast<unsigned char>(n.text[keep]) & 0xC0) == 0x80)
          --keep; // never split a UTF-8 character
        n.text = n.text.substr(0, keep) + note;
      }
      if (auto saved = append_notification(path, n, SIZE_MAX); !saved)
        spdlog::error("a notification for {} is lost: {}", path, saved.error());
    },
    [=](sync_atom, int32_t fd) {
      // Started with the first flush, not with the run: a thread less before the first model
      // request, and none at all in a run that never flushes.
      if (!self->state.syncer) {
        self->state.syncer = self->system().spawn<caf::detached>([]() -> caf::behavior {
          return {[](sync_atom, int32_t descriptor) {
            ::fsync(descriptor);
            ::close(descriptor);
          }};
        });
        self->link_to(self->state.syncer);
      }
      caf::anon_send(self->state.syncer, sync_atom::value, fd);
    },
  };
}

} // namespace

disk_io_actor spawn_disk_io(caf::actor_system& sys, size_t notification_cap) {
  return sys.spawn<caf::detached>(disk_io, notification_cap);
}

} // namespace troupe
