// A search step's vocabulary-wide work on the device, as ops/cpu/decode_steps_cpu.h: the masks of
// the step rules, the k best entries of each row, and attention rows averaged over heads. Device
// pointers; arguments already checked by the front end (ops/decode_steps.cpp).
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"

namespace tfm::cuda {

// Row r of lp (rows, v) under rule rules[r] (the values of tfm::StepRule): -inf where the rule
// forbids (pad, bos; eos under no_eos; everything but eos under eos_only).
void mask_step_rows(int64_t rows, int64_t v, float* lp, const uint8_t* rules, int32_t pad,
                    int32_t bos, int32_t eos, const Stream& stream = default_stream());

// The k best of each row of x (rows, v), best first, equal values lower id first: ids and vals
// (rows, k). NaN is never picked; a row with fewer than k other values gets id -1 and NaN.
void top_k_rows(int64_t rows, int64_t v, int64_t k, const float* x, int32_t* ids, float* vals,
                const Stream& stream = default_stream());

// out (n, s) = (Σ_h w (n, heads, s)[:, h, :]) / heads, summed in head order.
void mean_over_heads(int64_t n, int64_t heads, int64_t s, const float* w, float* out,
                     const Stream& stream = default_stream());

}  // namespace tfm::cuda
