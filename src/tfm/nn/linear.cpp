#include "tfm/nn/linear.h"

#include "tfm/ops/init.h"

namespace tfm::nn {

Linear::Linear(int64_t in, int64_t out, bool bias, Generator& gen) {
  weight_ = Tensor::empty({out, in});
  xavier_uniform_(weight_, gen);
  register_parameter("weight", &weight_);
  if (bias) {
    bias_ = Tensor::zeros({out});
    register_parameter("bias", &bias_);
  }
}

LayerNorm::LayerNorm(int64_t width, double eps) : eps_(eps) {
  weight_ = Tensor::ones({width});
  bias_ = Tensor::zeros({width});
  register_parameter("weight", &weight_);
  register_parameter("bias", &bias_);
}

}  // namespace tfm::nn
