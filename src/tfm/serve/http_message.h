// An HTTP/1.1 request as the transport (http_server.h) hands it to the routes, and the answer
// they give back. Plain data: no sockets here, so the routes and the JSON layer are tested and
// fuzzed without a network.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfm::serve {

using Clock = std::chrono::steady_clock;

// An answer other than 200: its status code and a message (sent as {"error": message}).
class HttpError : public std::runtime_error {
 public:
  HttpError(int status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// The value of header `name` (names compare without case), or nullopt.
std::optional<std::string_view> find_header(const Headers& headers, std::string_view name);
bool iequals(std::string_view a, std::string_view b);

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path and query
  std::string path;    // the target up to '?'
  std::string query;   // after '?', not decoded ("" when none)
  int minor_version = 1;
  Headers headers;
  std::string body;  // decoded: de-chunked and decompressed
  std::string remote_addr;
  // The first byte of this request arrived (the durations in the log and metrics start here).
  Clock::time_point arrived;
  // Set when the client's connection is gone, so that a route may stop waiting for it.
  std::shared_ptr<const std::atomic<bool>> gone;

  std::optional<std::string_view> header(std::string_view name) const {
    return find_header(headers, name);
  }
  bool keep_alive() const;  // what the client asked for (Connection, and the version)
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  Headers headers;  // besides Content-Type, Content-Length and Connection
  std::string body;
  size_t sentences = 0;  // texts the request carried, for the access log
};

// The standard reason phrase of `status` ("Not Found").
const char* reason_phrase(int status);

}  // namespace tfm::serve
