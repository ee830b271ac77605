// The durable queue's line reader (store/notification_queue): reading, then dropping what was
// read and delivered.

#include <set>
#include <string>

#include "store/notification_queue.hpp"
#include "fuzz/targets.hpp"
#include "protocol/private_files.hpp"

namespace troupe::fuzz {

int queue(const uint8_t* data, size_t size) {
  const char* path = scratch_file("queue.jsonl");
  write_scratch(path, data, size);
  size_t offset = 0;
  size_t bad = 0;
  auto read = read_notifications(path, offset, &bad);
  fuzz_check(static_cast<bool>(read), "an existing queue reads");
  fuzz_check(offset <= size, "the offset stays inside the file");
  for (auto& n : *read)
    notification_text(n);
  std::string unread{reinterpret_cast<const char*>(data) + offset, size - offset};
  // Every read entry delivered: what stays is exactly what was not read yet.
  release_notifications(path, offset, {});
  std::string left;
  read_whole_file(path, left);
  fuzz_check(left == unread, "releasing read entries keeps the unread bytes");
  return 0;
}

} // namespace troupe::fuzz
