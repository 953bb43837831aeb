// The registry of op_registry.h: one or more cases per op of src/tfm/ops/*.h, each made with
// case_("op", ...) so tests/structure/check_op_registry.py can see which ops have one. Shapes are
// small and odd (the checks run every case several times, the gradient check once per input
// element); the per-op tests cover the large and the edge shapes.
#include "support/op_registry.h"

#include "support/test_util.h"
#include "tfm/core/rng.h"
#include "tfm/ops/activation.h"
#include "tfm/ops/attention.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/ops/decode_attention.h"
#include "tfm/ops/decode_steps.h"
#include "tfm/ops/dropout.h"
#include "tfm/ops/elementwise.h"
#include "tfm/ops/embedding.h"
#include "tfm/ops/index.h"
#include "tfm/ops/init.h"
#include "tfm/ops/kernel_args.h"
#include "tfm/ops/layer_norm.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/linear_lowp.h"
#include "tfm/ops/matmul.h"
#include "tfm/ops/optimizer.h"
#include "tfm/ops/reduce.h"
#include "tfm/ops/shape.h"
#include "tfm/ops/softmax.h"

namespace tfm::testing {

namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

OpCase case_(std::string op, std::string variant, std::function<Inputs(DType)> inputs,
             std::function<Outputs(const Inputs&)> run) {
  OpCase c;
  c.op = std::move(op);
  c.variant = std::move(variant);
  c.inputs = std::move(inputs);
  c.run = std::move(run);
  return c;
}

Tensor R(const Shape& shape, DType dt, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return random_tensor(shape, dt, seed, lo, hi);
}

// Values at least 0.1 away from 0 (relu's kink), of alternating sign.
Tensor away_from_zero(const Shape& shape, DType dt, uint64_t seed) {
  std::vector<double> sign(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < sign.size(); ++i) sign[i] = i % 2 ? -1.0 : 1.0;
  return mul(R(shape, dt, seed, 0.1, 1.0), Tensor::from_vector<double>(shape, sign).to(dt));
}

const std::vector<StepRule> kRules = {StepRule::normal, StepRule::no_eos, StepRule::eos_only,
                                      StepRule::keep};

std::vector<OpCase> elementwise_cases() {
  auto two = [](uint64_t seed) {
    return [seed](DType dt) { return Inputs{R({4, 7}, dt, seed), R({4, 7}, dt, seed + 1)}; };
  };
  auto one = [](uint64_t seed) { return [seed](DType dt) { return Inputs{R({5, 9}, dt, seed)}; }; };
  return {
      case_(
          "relu", "(4, 7) away from 0",
          [](DType dt) {
            return Inputs{away_from_zero({4, 7}, dt, 3)};
          },
          [](const Inputs& in) { return Outputs{relu(in[0])}; })
          .grads({0}),
      case_("gelu", "(5, 9)", one(5), [](const Inputs& in) { return Outputs{gelu(in[0])}; })
          .grads({0}),
      case_("silu", "(5, 9)", one(6), [](const Inputs& in) { return Outputs{silu(in[0])}; })
          .grads({0}),
      case_("gelu_tanh", "(5, 9)", one(8),
            [](const Inputs& in) { return Outputs{gelu_tanh(in[0])}; })
          .grads({0}),
      case_("add", "(4, 7)", two(7), [](const Inputs& in) { return Outputs{add(in[0], in[1])}; })
          .grads({0, 1}),
      case_("sub", "(4, 7)", two(9), [](const Inputs& in) { return Outputs{sub(in[0], in[1])}; })
          .grads({0, 1}),
      case_("mul", "(4, 7)", two(11), [](const Inputs& in) { return Outputs{mul(in[0], in[1])}; })
          .grads({0, 1}),
      case_("scale", "(5, 9) by 0.7", one(13),
            [](const Inputs& in) { return Outputs{scale(in[0], 0.7)}; })
          .grads({0}),
      case_("add_", "(4, 7) += 0.5 b", two(15),
            [](const Inputs& in) {
              Tensor a = in[0].clone();
              add_(a, in[1], 0.5);
              return Outputs{a};
            }),
      case_("div_", "(5, 9) /= 3", one(17),
            [](const Inputs& in) {
              Tensor a = in[0].clone();
              div_(a, 3.0);
              return Outputs{a};
            }),
      case_("sum", "(6, 5)", one(19), [](const Inputs& in) { return Outputs{sum(in[0])}; })
          .grads({0}),
      case_("mean", "(6, 5)", one(21), [](const Inputs& in) { return Outputs{mean(in[0])}; })
          .grads({0}),
      case_("sum_last", "(5, 9)", one(23),
            [](const Inputs& in) { return Outputs{sum_last(in[0])}; })
          .grads({0}),
      case_("softmax", "(5, 9)", one(25), [](const Inputs& in) { return Outputs{softmax(in[0])}; })
          .grads({0}),
      case_("log_softmax", "(5, 9)", one(27),
            [](const Inputs& in) { return Outputs{log_softmax(in[0])}; })
          .grads({0}),
  };
}

std::vector<OpCase> shape_cases() {
  auto x = [](DType dt) { return Inputs{R({2, 3, 4}, dt, 31)}; };
  return {
      case_("reshape", "(2, 3, 4) to (6, 4)", x,
            [](const Inputs& in) {
              return Outputs{reshape(in[0], {6, 4}).contiguous()};
            })
          .grads({0}),
      case_("transpose", "axes 1 and 2", x,
            [](const Inputs& in) { return Outputs{transpose(in[0], 1, 2).contiguous()}; })
          .grads({0}),
      case_("narrow", "axis 2 from 1, 2 long", x,
            [](const Inputs& in) { return Outputs{narrow(in[0], 2, 1, 2).contiguous()}; })
          .grads({0}),
      case_(
          "concat", "axis 1",
          [](DType dt) {
            return Inputs{R({2, 3, 4}, dt, 33), R({2, 2, 4}, dt, 34)};
          },
          [](const Inputs& in) {
            return Outputs{concat({in[0], in[1]}, 1)};
          })
          .grads({0, 1}),
      case_("split", "axis 2 into 1 + 3", x,
            [](const Inputs& in) {
              std::vector<Tensor> parts = split(in[0], {1, 3}, 2);
              return Outputs{parts[1].contiguous(), parts[0].contiguous()};
            })
          .grads({0}),
  };
}

std::vector<OpCase> gemm_cases() {
  auto linear_inputs = [](DType dt) {
    return Inputs{R({3, 5, 6}, dt, 41), R({7, 6}, dt, 42), R({7}, dt, 43)};
  };
  auto lowp = [](ComputeType precision) {
    return [precision](const Inputs& in) {
      const LowpWeight w(in[1], precision);
      return Outputs{linear_lowp(in[0], w, in[2], Activation::relu)};
    };
  };
  return {
      // oneDNN's GEMM fixes its split per thread count and per level: a fixed count reproduces.
      case_(
          "matmul", "(3, 4) x (5, 4)^T",
          [](DType dt) {
            return Inputs{R({3, 4}, dt, 45), R({5, 4}, dt, 46)};
          },
          [](const Inputs& in) { return Outputs{matmul(in[0], in[1], false, true)}; })
          .grads({0, 1})
          .per_thread_count()
          .close_across_levels(1e-6),
      case_("linear", "(3, 5, 6) -> 7, bias, GELU", linear_inputs,
            [](const Inputs& in) { return Outputs{linear(in[0], in[1], in[2], Activation::gelu)}; })
          .grads({0, 1, 2})
          .per_thread_count()
          .close_across_levels(1e-6),
      case_("linear_lowp", "fp32 panels, ReLU", linear_inputs, lowp(ComputeType::float32))
          .cpu_only(),
      case_("linear_lowp", "bf16 panels, ReLU", linear_inputs, lowp(ComputeType::bfloat16))
          .cpu_only(),
      case_("linear_lowp", "int8, ReLU", linear_inputs, lowp(ComputeType::int8)).cpu_only(),
      // A tied table's lookups read the output projection's panels: 50 columns, a panel and a
      // part, so the ids reach both.
      case_(
          "lowp_weight_rows", "(2, 3) ids of a (50, 6) fp32 panel weight",
          [](DType dt) {
            return Inputs{Tensor::from_vector<int32_t>({2, 3}, {0, 49, 47, 48, 5, 0}),
                          R({50, 6}, dt, 47)};
          },
          [](const Inputs& in) {
            return Outputs{lowp_weight_rows(in[0], LowpWeight(in[1], ComputeType::float32))};
          })
          .cpu_only(),
      case_(
          "round_to_bf16", "(7, 6), ties and signs",
          [](DType) {
            return Inputs{R({7, 6}, DType::f32, 44, -3, 3)};
          },
          [](const Inputs& in) {
            Tensor out = Tensor::empty(in[0].shape(), DType::bf16, in[0].device());
            round_to_bf16(in[0], out);
            return Outputs{out};
          }),
      // The copy is of 2·w, so the product shows it is the copy that linear() multiplies.
      case_(
          "attach_bf16_copy", "bf16 linear multiplies the attached copy",
          [](DType) {
            return Inputs{R({3, 5, 6}, DType::f32, 41), R({7, 6}, DType::f32, 42)};
          },
          [](const Inputs& in) {
            Tensor w = in[1].clone().set_requires_grad(true);
            Tensor copy = Tensor::empty(w.shape(), DType::bf16, w.device());
            round_to_bf16(scale(in[1], 2.0), copy);
            attach_bf16_copy(w, copy);
            Tensor y = linear(in[0], w, Tensor(), Activation::none, ComputeType::bfloat16);
            attach_bf16_copy(w, Tensor());
            return Outputs{y};
          })
          .per_thread_count()
          .close_across_levels(1e-6),
  };
}

std::vector<OpCase> norm_and_loss_cases() {
  auto norm_inputs = [](DType dt) {
    return Inputs{R({4, 3, 10}, dt, 51), R({10}, dt, 52, 0.5, 1.5), R({10}, dt, 53),
                  R({4, 3, 10}, dt, 54)};
  };
  return {
      case_("layer_norm", "(4, 3, 10)", norm_inputs,
            [](const Inputs& in) { return Outputs{layer_norm(in[0], in[1], in[2], 1e-5)}; })
          .grads({0, 1, 2}),
      case_("add_layer_norm", "(4, 3, 10) with a residual", norm_inputs,
            [](const Inputs& in) {
              AddLayerNormResult r = add_layer_norm(in[0], in[3], in[1], in[2], 1e-5);
              return Outputs{r.y, r.sum};
            })
          .grads({0, 1, 2, 3}),
      case_(
          "softmax_cross_entropy", "(2, 3, 11), smoothing 0.1, ignore 0",
          [](DType dt) {
            return Inputs{R({2, 3, 11}, dt, 57, -3.0, 3.0), random_ids({2, 3}, 11, 58)};
          },
          [](const Inputs& in) {
            CrossEntropyResult r = softmax_cross_entropy(in[0], in[1], 0.1, 0);
            return Outputs{r.loss};
          })
          .grads({0}),
      case_(
          "embedding", "(3, 4) ids into (10, 6)",
          [](DType dt) {
            return Inputs{random_ids({3, 4}, 10, 61), R({10, 6}, dt, 62)};
          },
          [](const Inputs& in) { return Outputs{embedding(in[0], in[1])}; })
          .grads({1}),
      // A padding index's row gets no gradient by definition (test_embedding.cpp checks that).
      case_(
          "embedding", "padding index 0",
          [](DType dt) {
            return Inputs{random_ids({3, 4}, 10, 63), R({10, 6}, dt, 64)};
          },
          [](const Inputs& in) { return Outputs{embedding(in[0], in[1], 0)}; }),
      case_(
          "dropout", "(6, 10), p 0.3",
          [](DType dt) {
            return Inputs{R({6, 10}, dt, 65)};
          },
          [](const Inputs& in) {
            Generator g(7);  // the same mask on every call: the gradient check's too
            return Outputs{dropout(in[0], 0.3, /*training=*/true, &g)};
          })
          .grads({0}),
  };
}

std::vector<OpCase> attention_cases() {
  auto qkv = [](DType dt) {
    return Inputs{R({2, 3, 8}, dt, 71), R({2, 5, 8}, dt, 72), R({2, 5, 8}, dt, 73),
                  equal_mask(random_ids({2, 5}, 4, 74), 0)};
  };
  return {
      case_("attention", "B 2, T 3, S 5, 2 heads, padding mask", qkv,
            [](const Inputs& in) { return Outputs{attention(in[0], in[1], in[2], 2, in[3]).out}; })
          .grads({0, 1, 2}),
      case_("attention", "causal, weights", qkv,
            [](const Inputs& in) {
              AttentionOptions o;
              o.causal = true;
              o.return_weights = true;
              AttentionResult r = attention(in[0], in[1], in[2], 2, Tensor(), o);
              return Outputs{r.out, r.weights};
            })
          .grads({0, 1, 2})
          .cpu_only(),  // the CUDA kernel does not return the weights
      case_("attention", "causal", qkv,
            [](const Inputs& in) {
              AttentionOptions o;
              o.causal = true;
              return Outputs{attention(in[0], in[1], in[2], 2, Tensor(), o).out};
            })
          .grads({0, 1, 2}),
      case_(
          "decode_attention", "B 3, S 6, 2 heads, padding mask",
          [](DType dt) {
            return Inputs{R({3, 1, 8}, dt, 75), R({3, 6, 8}, dt, 76), R({3, 6, 8}, dt, 77),
                          equal_mask(random_ids({3, 6}, 4, 78), 0)};
          },
          [](const Inputs& in) {
            Tensor weights;
            Tensor out = decode_attention(in[0], in[1], in[2], 2, in[3], 0.0, &weights);
            return Outputs{out, weights};
          }),
      case_(
          "mean_over_heads", "(3, 2, 1, 6)",
          [](DType dt) {
            return Inputs{R({3, 2, 1, 6}, dt, 79, 0.0, 1.0)};
          },
          [](const Inputs& in) { return Outputs{mean_over_heads(in[0])}; }),
  };
}

std::vector<OpCase> search_cases() {
  auto logits = [](DType dt) { return Inputs{R({4, 12}, dt, 81, -4.0, 4.0)}; };
  return {
      case_("mask_step_rows", "one row per rule", logits,
            [](const Inputs& in) {
              Tensor lp = log_softmax(in[0]).contiguous().clone();
              mask_step_rows(lp, kRules, SpecialIds{});
              return Outputs{lp};
            }),
      case_("top_k_rows", "k 3", logits,
            [](const Inputs& in) {
              TopK t = top_k_rows(in[0], 3);
              return Outputs{t.values, t.ids};
            }),
      case_("top_k_log_probs", "k 3, one row per rule", logits,
            [](const Inputs& in) {
              TopK t = top_k_log_probs(in[0], kRules, SpecialIds{}, 3);
              return Outputs{t.values, t.ids};
            }),
      // On CUDA top_k_logits is top_k_log_probs (the case above), whose values are log-probs.
      case_("top_k_logits", "k 3, one row per rule", logits,
            [](const Inputs& in) {
              TopK t = top_k_logits(in[0], kRules, SpecialIds{}, 3);
              return Outputs{t.values, t.ids};
            })
          .cpu_only(),
      case_(
          "pick_columns", "(4, 12)",
          [](DType dt) {
            return Inputs{R({4, 12}, dt, 83), random_ids({4}, 12, 84)};
          },
          [](const Inputs& in) { return Outputs{pick_columns(in[0], in[1])}; }),
      case_(
          "index_rows", "rows 4, 0, 2, 0 of (5, 3)",
          [](DType dt) {
            return Inputs{R({5, 3}, dt, 85)};
          },
          [](const Inputs& in) {
            return Outputs{index_rows(in[0], {4, 0, 2, 0})};
          }),
      case_(
          "copy_rows", "a reorder of (3, 2, 4)",
          [](DType dt) {
            return Inputs{R({3, 2, 4}, dt, 87), R({3, 2, 4}, dt, 88)};
          },
          [](const Inputs& in) {
            Tensor dst = in[1].clone();
            const std::vector<int64_t> index = {2, 2, 0};
            copy_rows(in[0], &index, dst);
            return Outputs{dst};
          }),
      case_(
          "equal_mask", "ids == 3",
          [](DType) {
            return Inputs{random_ids({3, 7}, 5, 89)};
          },
          [](const Inputs& in) { return Outputs{equal_mask(in[0], 3)}; }),
  };
}

std::vector<OpCase> state_cases() {
  auto zeros = [](DType dt) { return Inputs{Tensor::zeros({7, 9}, dt)}; };
  auto init = [](auto fill) {
    return [fill](const Inputs& in) {
      Tensor t = in[0].clone();
      Generator g(11);
      fill(t, g);
      return Outputs{t};
    };
  };
  // The initialisers fill host tensors (a model is drawn on the CPU, then moved).
  return {
      case_("uniform_", "(7, 9) in [-0.5, 0.5)", zeros,
            init([](Tensor& t, Generator& g) { uniform_(t, -0.5, 0.5, g); }))
          .cpu_only(),
      case_("normal_", "(7, 9), N(0.1, 0.2)", zeros,
            init([](Tensor& t, Generator& g) { normal_(t, 0.1, 0.2, g); }))
          .cpu_only(),
      case_("xavier_uniform_", "(7, 9), gain 1.5", zeros,
            init([](Tensor& t, Generator& g) { xavier_uniform_(t, g, 1.5); }))
          .cpu_only(),
      case_(
          "adam_step", "40 values, two ranges, AdamW",
          [](DType dt) {
            return Inputs{R({40}, dt, 91), R({40}, dt, 92), R({40}, dt, 93, -0.1, 0.1),
                          R({40}, dt, 94, 0.0, 0.1)};
          },
          [](const Inputs& in) {
            Tensor p = in[0].clone(), m = in[2].clone(), v = in[3].clone();
            const auto update =
                kernels::adam_update_for_step(3, 1e-3, 0.9, 0.98, 1e-9, 0.01, true, 0.5);
            adam_step(update, p, in[1], m, v, {{0, 17}, {20, 15}});
            return Outputs{p, m, v};
          }),
      case_(
          "sum_of_squares", "two tensors",
          [](DType dt) {
            return Inputs{R({5, 9}, dt, 95), R({33}, dt, 96)};
          },
          [](const Inputs& in) {
            return Outputs{Tensor::full({}, sum_of_squares({in[0], in[1]}), DType::f64)};
          }),
  };
}

std::vector<OpCase> all_cases() {
  std::vector<OpCase> all;
  for (auto part : {elementwise_cases, shape_cases, gemm_cases, norm_and_loss_cases,
                    attention_cases, search_cases, state_cases})
    for (OpCase& c : part()) all.push_back(std::move(c));
  return all;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = all_cases();
  return cases;
}

}  // namespace tfm::testing
