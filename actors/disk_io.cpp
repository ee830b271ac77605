#include "actors/disk_io.hpp"

#include <unistd.h>

#include <map>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/notification_queue.hpp"

namespace troupe {

namespace {

/// How far one queue has been read, and the entries read from it not yet delivered.
struct queue_progress {
  size_t offset = 0;
  std::set<std::string> undelivered;
};

struct disk_io_state {
  std::map<std::string, queue_progress> queues;
  /// Flushes go to a thread of their own: a burst of them (a hundred subagents ending at once)
  /// must not hold up the queue reads that deliver notifications.
  caf::actor syncer;
};

disk_io_actor::behavior_type disk_io(disk_io_actor::stateful_pointer<disk_io_state> self) {
  self->state.syncer = self->system().spawn<caf::detached>([]() -> caf::behavior {
    return {[](sync_atom, int32_t fd) {
      ::fsync(fd);
      ::close(fd);
    }};
  });
  self->link_to(self->state.syncer);
  return {
    [=](read_atom, const std::string& path, bool from_start) {
      auto& progress = self->state.queues[path];
      if (from_start)
        progress = queue_progress{};
      queue_read result;
      size_t bad = 0;
      auto read = read_notifications(path, progress.offset, &bad);
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
      release_notifications(path, progress.offset, progress.undelivered);
    },
    [=](append_atom, const std::string& path, const task_notification& n) {
      if (auto saved = append_notification(path, n, SIZE_MAX); !saved)
        spdlog::error("a notification for {} is lost: {}", path, saved.error());
    },
    [=](sync_atom, int32_t fd) { caf::anon_send(self->state.syncer, sync_atom::value, fd); },
  };
}

} // namespace

disk_io_actor spawn_disk_io(caf::actor_system& sys) {
  return sys.spawn<caf::detached>(disk_io);
}

} // namespace troupe
