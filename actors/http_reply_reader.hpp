#pragma once
// An HTTP/1.x reply read from a byte stream, for the engine's own client (actors/plain_http):
// its head (1xx heads skipped, names lowercased), then its body by Content-Length, chunks or
// the connection's close, with limits on a line and on the head, and what is wrong with a
// reply that is not well formed.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/http.hpp"

namespace troupe {

namespace http_text {

/// `text` with ASCII letters lowercased (header names, codings).
inline std::string lowercase(std::string_view text) {
  std::string out{text};
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// `text` without the spaces and tabs HTTP allows around a header's value.
inline std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

} // namespace http_text

/// Reads one response: its head, then its body by Content-Length, chunks or the close.
class http_reply_reader {
public:
  static constexpr size_t max_head_bytes = 256 * 1024;
  static constexpr size_t max_line_bytes = 64 * 1024;

  int status = 0;
  http_headers headers;

  /// Consumes `in`. `on_head` runs once the final head is read, `on_body` for each run of
  /// body bytes (stopping when it returns false). Returns what is wrong with the reply, or "".
  template <class OnHead, class OnBody>
  std::string feed(std::string_view in, OnHead&& on_head, OnBody&& on_body) {
    while (!in.empty() && at_ != phase::complete) {
      switch (at_) {
        case phase::length:
        case phase::chunk_data: {
          auto take = static_cast<size_t>(std::min<int64_t>(left_, static_cast<int64_t>(in.size())));
          if (!on_body(in.substr(0, take)))
            return {};
          left_ -= static_cast<int64_t>(take);
          in.remove_prefix(take);
          if (left_ == 0)
            at_ = at_ == phase::length ? phase::complete : phase::chunk_end;
          break;
        }
        case phase::until_close:
          if (!on_body(in))
            return {};
          in = {};
          break;
        default: {
          auto newline = in.find('\n');
          line_.append(in.substr(0, newline));
          if (newline == std::string_view::npos) {
            in = {};
            if (line_.size() > max_line_bytes)
              return "a line of the reply is longer than " + std::to_string(max_line_bytes) + " bytes";
            break;
          }
          in.remove_prefix(newline + 1);
          std::string line = std::move(line_);
          line_.clear();
          if (!line.empty() && line.back() == '\r')
            line.pop_back();
          if (auto wrong = on_line(line, on_head); !wrong.empty())
            return wrong;
        }
      }
    }
    if (!in.empty())
      reusable_ = false; // bytes past the end of the reply: the connection is out of step
    return {};
  }

  bool complete() const { return at_ == phase::complete; }
  bool in_head() const { return at_ == phase::head; }
  bool reads_until_close() const { return at_ == phase::until_close; }
  /// The connection may carry the next request.
  bool reusable() const { return at_ == phase::complete && reusable_; }

private:
  enum class phase { head, length, chunk_size, chunk_data, chunk_end, trailers, until_close, complete };

  template <class OnHead>
  std::string on_line(const std::string& line, OnHead& on_head) {
    switch (at_) {
      case phase::head:
        return head_line(line, on_head);
      case phase::chunk_size: {
        auto size_text = http_text::trimmed(std::string_view{line}.substr(0, line.find(';')));
        if (size_text.empty() || size_text.size() > 15 ||
            !std::all_of(size_text.begin(), size_text.end(),
                         [](unsigned char c) { return std::isxdigit(c); }))
          return "a malformed chunk size in the reply: '" + line.substr(0, 40) + "'";
        left_ = std::stoll(std::string{size_text}, nullptr, 16);
        at_ = left_ == 0 ? phase::trailers : phase::chunk_data;
        return {};
      }
      case phase::chunk_end:
        if (!line.empty())
          return "a chunk of the reply runs past its size";
        at_ = phase::chunk_size;
        return {};
      case phase::trailers:
        if (line.empty())
          at_ = phase::complete;
        return {};
      default:
        return {};
    }
  }

  template <class OnHead>
  std::string head_line(const std::string& line, OnHead& on_head) {
    head_bytes_ += line.size() + 2;
    if (head_bytes_ > max_head_bytes)
      return "the reply's head is longer than " + std::to_string(max_head_bytes) + " bytes";
    if (status == 0) {
      // "HTTP/1.1 200 OK": the version (any case; "HTTP/2" from a confused server too, as
      // libcurl takes it), a space, three digits. Only HTTP/1.1 keeps the connection.
      auto space = line.find(' ');
      auto version = http_text::lowercase(line.substr(0, space));
      bool known = version == "http/1.1" || version == "http/1.0" || version == "http/2" ||
                   version == "http/2.0";
      if (!known || space == std::string::npos || line.size() < space + 4 ||
          !std::isdigit(static_cast<unsigned char>(line[space + 1])) ||
          !std::isdigit(static_cast<unsigned char>(line[space + 2])) ||
          !std::isdigit(static_cast<unsigned char>(line[space + 3])) ||
          (line.size() > space + 4 && line[space + 4] != ' '))
        return "not an HTTP/1.x reply: '" + line.substr(0, 40) + "'";
      status = std::stoi(line.substr(space + 1, 3));
      reusable_ = version == "http/1.1";
      return {};
    }
    if (!line.empty()) {
      if ((line.front() == ' ' || line.front() == '\t') && !headers.empty()) {
        headers.back().second += " " + std::string{http_text::trimmed(line)}; // an obsolete folded line
        return {};
      }
      auto colon = line.find(':');
      if (colon == std::string::npos || colon == 0)
        return "a malformed header line in the reply: '" + line.substr(0, 40) + "'";
      headers.emplace_back(http_text::lowercase(std::string_view{line}.substr(0, colon)),
                           std::string{http_text::trimmed(std::string_view{line}.substr(colon + 1))});
      return {};
    }
    if (status < 200) { // 100 Continue, 103 Early Hints: the real head follows
      status = 0;
      headers.clear();
      return {};
    }
    return end_of_head(on_head);
  }

  template <class OnHead>
  std::string end_of_head(OnHead& on_head) {
    std::optional<int64_t> length;
    bool chunked = false;
    bool coded = false;
    for (auto& [name, value] : headers) {
      if (name == "content-encoding" && !value.empty() && http_text::lowercase(http_text::trimmed(value)) != "identity")
        return "the reply is compressed (Content-Encoding: " + value.substr(0, 40) +
               "), though the request asked for none; TROUPE_HTTP_CLIENT=libcurl decodes it";
      if (name == "connection" && http_text::lowercase(value).find("close") != std::string::npos)
        reusable_ = false;
      if (name == "transfer-encoding") {
        coded = true;
        auto codings = http_text::lowercase(value);
        auto last = codings.substr(codings.rfind(',') == std::string::npos ? 0 : codings.rfind(',') + 1);
        chunked = http_text::trimmed(last) == "chunked";
        // gzip, deflate… before the chunks: the body would be compressed bytes.
        for (size_t from = 0; from <= codings.size();) {
          auto comma = std::min(codings.find(',', from), codings.size());
          auto coding = http_text::trimmed(std::string_view{codings}.substr(from, comma - from));
          if (!coding.empty() && coding != "chunked" && coding != "identity")
            return "the reply is compressed (Transfer-Encoding: " + value.substr(0, 40) +
                   "), though the request asked for none; TROUPE_HTTP_CLIENT=libcurl decodes it";
          from = comma + 1;
        }
      }
      if (name == "content-length") {
        // One number, or the same number repeated in a list ("869, 869"), as RFC 9110 allows.
        std::string_view rest = value;
        while (!rest.empty()) {
          auto comma = rest.find(',');
          auto text = http_text::trimmed(rest.substr(0, comma));
          rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
          if (text.empty() || text.size() > 18 ||
              !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }))
            return "a malformed Content-Length in the reply: '" + value.substr(0, 40) + "'";
          auto n = std::stoll(std::string{text});
          if (length && *length != n)
            return "the reply gives two different Content-Lengths";
          length = n;
        }
      }
    }
    on_head();
    if (status == 204 || status == 304) {
      at_ = phase::complete;
    } else if (coded) {
      at_ = chunked ? phase::chunk_size : phase::until_close;
      if (!chunked)
        reusable_ = false;
    } else if (length) {
      left_ = *length;
      at_ = left_ == 0 ? phase::complete : phase::length;
    } else {
      at_ = phase::until_close;
      reusable_ = false;
    }
    return {};
  }

  phase at_ = phase::head;
  std::string line_;
  size_t head_bytes_ = 0;
  int64_t left_ = 0;
  bool reusable_ = true;
};

} // namespace troupe
