// Adam and AdamW, exactly as torch.optim.Adam/AdamW compute them (bias corrections applied to
// the step size and to the denominator, eps added after the square root).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tfm/core/tensor.h"
#include "tfm/train/param_arena.h"

namespace tfm {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.98, eps = 1e-9;  // the paper's
  double weight_decay = 0.0;
  bool decoupled = false;  // AdamW: decay the weights directly instead of adding λp to g
};

class Adam {
 public:
  // The parameters (named, for saving state) whose .grad() each step uses. They are moved into
  // one parameter arena and one gradient arena (param_arena.h: every handle on them sees the
  // move), and the moments are two more arenas of the same layout, so a step is one pass over
  // flat memory.
  Adam(std::vector<std::pair<std::string, Tensor>> params, AdamOptions options);
  ~Adam();  // drops the bf16 copies it attached to the parameters
  Adam(const Adam&) = delete;
  Adam& operator=(const Adam&) = delete;
  // One update with learning rate `lr` (the schedule's); parameters without a gradient are
  // left alone. Runs without recording. Each gradient is used multiplied by `grad_scale` (what
  // torch does after `clip_grad_norm_` and a division by the token count, without writing the
  // gradients).
  void step(double lr, double grad_scale = 1.0);
  // Every gradient to none: one memset of the gradient arena.
  void zero_grad();
  int64_t steps() const { return step_; }
  const std::vector<std::pair<std::string, Tensor>>& params() const { return params_; }
  const AdamOptions& options() const { return opt_; }
  // The arenas the parameters live in: the flat gradient buffer and each parameter's place in it.
  const ParameterArena& arena() const { return *arena_; }
  ParameterArena& arena() { return *arena_; }
  // First and second moments, by parameter name, for checkpoints (views of the moment arenas).
  std::vector<std::pair<std::string, Tensor>> state() const;
  // Also refreshes the bf16 copies (resume writes the parameters just before).
  void load_state(const std::vector<std::pair<std::string, Tensor>>& state, int64_t steps);

  // bf16 mixed precision: keeps a bf16 copy of every parameter (one flat bf16 arena of the
  // parameters' layout, on their device) and attaches each to its parameter's AutogradMeta, where
  // linear() finds it instead of rounding the weight at every call. Each step writes the copies of
  // the parameters it updates in its own pass; the copies are exactly the roundings linear() made
  // before, so results do not change by a bit. Rounds every parameter now.
  void keep_bf16_copies();
  bool keeps_bf16_copies() const { return w16_.defined(); }
  // Rounds every copy again from the parameters: after they were written outside step().
  void refresh_bf16_copies();

 private:
  std::vector<std::pair<std::string, Tensor>> params_;
  std::unique_ptr<ParameterArena> arena_;
  Tensor m_, v_;  // flat, the arena's layout
  Tensor w16_;    // bf16, the arena's layout, when keeping bf16 copies
  AdamOptions opt_;
  int64_t step_ = 0;
};

}  // namespace tfm
