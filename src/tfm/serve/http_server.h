// The server's HTTP/1.1 transport: one event-loop thread (epoll) reads, parses and writes every
// connection, and a pool of worker threads runs the routes that wait (a translation waits for
// its batch). It enforces the limits on what a request decodes, not on what it sends: bodies
// counted as they are de-chunked and decompressed (http_parser.h), a deadline for a request's
// head and body from its first byte (a client sending a byte a second is answered 408 at the
// deadline and costs nothing meanwhile), a cap on connections waiting for a request (the oldest
// is closed to make room), pipelined requests answered one after another in order, half-closed
// clients answered while a client that closed (reset or FIN) cancels its request at once, and a
// drain that answers every request already read and closes the rest.
// It knows nothing of routes or JSON: HttpHandlers are the server's (server.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tfm/serve/http_message.h"
#include "tfm/serve/http_parser.h"

namespace tfm::serve {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  HttpLimits limits;
  // A request's head and body must arrive within this of its first byte (else 408).
  int64_t read_timeout_ms = 30000;
  std::string read_timeout_name = "the read timeout";  // what a 408 cites
  int64_t idle_timeout_ms = 5000;                      // a connection without a request in progress
  int64_t write_timeout_ms = 30000;  // an answer's bytes without the client taking any
  // Connections waiting for (or sending) a request, at most; a new one closes the oldest.
  size_t max_pending_connections = 1024;
  int max_requests_per_connection = 100;
  // Threads that run HttpHandlers::slow; a request that finds every one busy gets 503.
  size_t workers = 16;
};

struct HttpHandlers {
  // A route that answers without waiting, on the event loop (/health, /metrics, static files);
  // nullopt hands the request to `slow` on a worker. May throw HttpError.
  std::function<std::optional<HttpResponse>(HttpRequest&)> quick;
  // Runs on a worker thread; may throw HttpError (or anything: a 500).
  std::function<HttpResponse(HttpRequest&)> slow;
  // Every answer before it is sent (on the event loop): headers every answer carries (CORS),
  // the access log and the metrics. Requests the transport refuses itself (413, 408, ...) come
  // here too, with what was parsed of them, and so do answers whose client has left.
  std::function<void(const HttpRequest&, HttpResponse&)> finish;
  // The body of an error answer (status, message).
  std::function<HttpResponse(int, const std::string&)> error;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandlers handlers);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; the port (the kernel's pick for port 0). tfm::Error when it cannot.
  int bind();
  // Serves until stop(), then drains: stops accepting, closes connections without a complete
  // request, answers (and closes) those with one, and returns once none is left.
  void run();
  // Starts the drain; from any thread (the signal watcher).
  void stop();
  // Requests read and not yet answered.
  size_t requests_in_progress() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfm::serve
