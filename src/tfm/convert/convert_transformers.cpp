#include "tfm/convert/convert_transformers.h"

#include <filesystem>

#include "tfm/convert/hf_config.h"
#include "tfm/convert/hf_weights.h"
#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/model/checkpoint.h"

namespace tfm::convert {

namespace fs = std::filesystem;

void convert_transformers(const std::string& hf_dir, const std::string& out_dir, const Options& o) {
  TFM_CHECK(o.quantization == ComputeType::float32 || o.quantization == ComputeType::bfloat16 ||
            o.quantization == ComputeType::int8)
      << "convert: --quantization must be int8 or bf16 (or none), got "
      << compute_type_name(o.quantization);
  TFM_CHECK(!out_dir.empty()) << "convert: the output directory is empty";
  std::error_code ec;
  TFM_CHECK(!fs::exists(out_dir) || o.force || (fs::is_directory(out_dir) && fs::is_empty(out_dir)))
      << "convert: " << out_dir << " exists and is not empty (--force replaces it)";
  TFM_CHECK(!fs::exists(out_dir) || !fs::equivalent(out_dir, hf_dir, ec))
      << "convert: the output directory is the input directory " << hf_dir;
  HfModel m = read_hf_model(hf_dir);
  const auto model = build_from_hf(m, read_hf_tensors(hf_dir), hf_dir);
  if (o.quantization != ComputeType::float32)
    m.generation.compute_type = compute_type_name(o.quantization);
  write_dir_atomic(out_dir, [&](const std::string& tmp) {
    save_model(*model, tmp);
    write_generation_config(m.generation, tmp);
  });
}

}  // namespace tfm::convert
