// The transport's worker threads: they run the routes that wait (HttpHandlers::slow) and hand
// each answer back to the event loop, which they wake through an eventfd. Part of
// http_server.cpp's machinery; nothing else uses it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "tfm/serve/http_message.h"

namespace tfm::serve {

struct HttpJob {
  uint64_t connection = 0;
  HttpRequest request;
  HttpResponse response;
};

class HttpWorkers {
 public:
  using Run = std::function<HttpResponse(HttpRequest&)>;
  // `threads` workers running `run`; answers are announced on `wake_fd` (an eventfd).
  HttpWorkers(size_t threads, Run run, int wake_fd);
  ~HttpWorkers();  // runs the jobs posted (but those whose clients are gone), then joins

  void post(HttpJob job);
  // The answers done since the last call.
  std::vector<HttpJob> take_done();
  size_t busy() const;  // jobs posted and not yet taken back

 private:
  void work();

  Run run_;
  int wake_fd_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<HttpJob> todo_;
  std::vector<HttpJob> done_;
  size_t posted_ = 0, taken_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tfm::serve
