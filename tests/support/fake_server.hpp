#pragma once
// Runs tests/support/fake_model_server.py on 127.0.0.1 for one test: a scripted reply per
// request, in OpenAI's and Anthropic's real wire formats, every request recorded.

#include <sys/types.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace troupe::test {

class fake_server {
public:
  /// Starts the server with a JSON array of reply entries (see the script's docstring),
  /// written as JSON text so no brace-initialiser can silently change its shape.
  explicit fake_server(const std::string& replies, bool loop = false);
  ~fake_server();
  fake_server(const fake_server&) = delete;
  fake_server& operator=(const fake_server&) = delete;

  int port() const { return port_; }
  /// http://127.0.0.1:PORT
  std::string url() const;
  /// The requests received so far, as recorded.
  std::vector<nlohmann::json> requests() const;

private:
  temp_dir dir_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int port_ = 0;
};

} // namespace troupe::test
