#include "tfm/convert.h"

#include "tfm/convert/convert_transformers.h"
#include "tfm/core/check.h"

namespace tfm {

ModelInfo convert_transformers(const std::string& hf_dir, const std::string& output_dir,
                               const ConvertOptions& options) {
  convert::Options o;
  o.force = options.force;
  if (!options.quantization.empty()) {
    o.quantization = parse_compute_type(options.quantization);
    TFM_CHECK(o.quantization == ComputeType::int8 || o.quantization == ComputeType::bfloat16 ||
              o.quantization == ComputeType::float32)
        << "quantization must be int8, bf16 or fp32, got \"" << options.quantization << "\"";
  }
  convert::convert_transformers(hf_dir, output_dir, o);
  return read_model_info(output_dir);
}

}  // namespace tfm
