// A call's step callback (TranslationOptions::step_callback) between the search and the caller:
// the search's decode::Step turned into a StepResult (the token's piece), the calls from every
// thread that decodes serialised, and the call's end (an exception, a cancel) stopping the rest.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "tfm/decode/search.h"
#include "tfm/translator.h"

namespace tfm::runtime {

class StepRelay {
 public:
  // piece(id): the target vocabulary's piece of a token ("" when the model has none).
  StepRelay(StepCallback callback, std::function<std::string(int32_t)> piece);

  // Sets options.on_step to a new relay of t.step_callback (nothing without one) and returns
  // the relay (null without one). The search's step ids are the sentences' keys: their index in
  // the call (runtime::Request::keys, a stream's line), which StepResult::index reports.
  static std::shared_ptr<StepRelay> attach(decode::SearchOptions& options,
                                           const TranslationOptions& t,
                                           std::function<std::string(int32_t)> piece);

  // One step, under the relay's lock. Once the callback has thrown, or the call was cancelled,
  // every later step throws (the first exception, or a tfm::Error) without calling it, so the
  // other batches and shards of the call stop at their next token.
  bool operator()(const decode::Step& step);
  // The caller gave up (AsyncResults::cancel): the searches stop at their next token.
  void cancel() { cancelled_ = true; }

 private:
  std::mutex mu_;
  StepCallback callback_;
  std::function<std::string(int32_t)> piece_;
  std::exception_ptr error_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace tfm::runtime
