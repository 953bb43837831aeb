#include "tfm/runtime/step_relay.h"

#include "tfm/core/check.h"

namespace tfm::runtime {

StepRelay::StepRelay(StepCallback callback, std::function<std::string(int32_t)> piece)
    : callback_(std::move(callback)), piece_(std::move(piece)) {}

std::shared_ptr<StepRelay> StepRelay::attach(decode::SearchOptions& options,
                                             const TranslationOptions& t,
                                             std::function<std::string(int32_t)> piece) {
  if (!t.step_callback) return nullptr;
  auto relay = std::make_shared<StepRelay>(t.step_callback, std::move(piece));
  // A new callback object per call: SearchOptions compare it by identity, so the call shares no
  // batch with another (its step ids stay its own indices).
  options.on_step = std::make_shared<const decode::StepCallback>(
      [relay](const decode::Step& step) { return (*relay)(step); });
  return relay;
}

bool StepRelay::operator()(const decode::Step& step) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_) std::rethrow_exception(error_);
  TFM_CHECK(!cancelled_) << "the call was cancelled";
  StepResult r;
  r.index = static_cast<size_t>(step.id);
  r.step = step.step;
  r.token_id = step.token;
  r.token = piece_ ? piece_(step.token) : std::string();
  r.log_prob = step.log_prob;
  r.in_prefix = step.in_prefix;
  r.is_last = step.is_last;
  try {
    return callback_(r);
  } catch (...) {
    error_ = std::current_exception();
    throw;
  }
}

}  // namespace tfm::runtime
