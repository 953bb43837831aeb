// A model directory (docs/design.md, "Files"): model.safetensors (weights; its __metadata__ holds
// the config JSON and the format version) and config.json (the same config, readable).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tfm/data/tokenizer_files.h"
#include "tfm/model/safetensors.h"
#include "tfm/model/transformer.h"

namespace tfm {

// A model is a directory: throws tfm::InvalidArgument when `dir` is a file (a model directory's
// model.safetensors or config.json, given for the directory: the message names the directory to
// give instead) and, with must_exist, when it does not exist.
void check_model_dir(const std::string& dir, bool must_exist = true);

// Writes dir/model.safetensors and dir/config.json atomically (dir is created if missing).
void save_model(const Transformer& model, const std::string& dir);
// The config of a model directory (from the weights' metadata, checked against config.json).
ModelConfig read_model_config(const std::string& dir);
// Builds the model of dir's config and loads its weights; every parameter must be present with
// its exact shape and dtype f32, finite (no NaN or Inf: such a model translates and scores with
// plausible numbers), and no other tensor may be in the file.
// A model to train, convert, average or inspect: every parameter held in f32.
std::unique_ptr<Transformer> load_model(const std::string& dir);
// A model for inference on the CPU: what load_model(dir) then bind_inference(t, output,
// /*keep_f32=*/false) give (the same checks, the same products), without ever holding two copies
// of a weight. Each weight the binding replaces (Transformer::weight_bindings) is bound straight
// from the file's tensor and never allocated in f32; the others are copied; the file's pages are
// given back tensor by tensor, and the file is unmapped before the model is returned. So the peak
// is the model's own memory plus one tensor, not the file plus the model.
std::unique_ptr<Transformer> load_model_for_inference(
    const std::string& dir, ComputeType t, std::optional<ComputeType> output = std::nullopt);

// The two halves of load_model on a file already parsed (`path` names it in messages): the
// config in the weights' metadata (format_version checked), and a model built from `config` with
// every tensor of `f` checked against it (names, shapes, dtype, finite values).
ModelConfig config_from_weights(const SafetensorsFile& f, const std::string& path);
std::unique_ptr<Transformer> model_from_weights(const ModelConfig& config, const SafetensorsFile& f,
                                                const std::string& path);
// load_model_for_inference's second half (f's pages are dropped as its tensors are read).
std::unique_ptr<Transformer> inference_model_from_weights(const ModelConfig& config,
                                                          const SafetensorsFile& f,
                                                          const std::string& path, ComputeType t,
                                                          std::optional<ComputeType> output);

// Throws naming `what` (a tensor name) and `file` when an f32 tensor holds a NaN or an Inf.
void check_finite(const Tensor& t, const std::string& what, const std::string& file);

// Vocabularies that do not match the model score silently wrong or fail late with "invalid id":
// each side's size must be the config's vocabulary size and the pad/bos/eos ids the config's
// (a converted model's tokenizer: ids below the config's vocabulary size, and its EOS). Null
// members (no vocabulary, --ids) are not checked. Throws naming the file and both numbers.
void check_vocabs(const ModelConfig& config, const ModelTokenizers& tokenizers,
                  const std::string& dir);

// load_model_tokenizers(dir), checked against `config` with check_vocabs.
ModelTokenizers load_checked_tokenizers(const std::string& dir, const ModelConfig& config);

// The names a model directory holds: config.json, model.safetensors, tfm_tokenizer.json and the
// vocabulary files (their legacy names included); a converted model's tokenizer data files are
// named by its tfm_tokenizer.json (tokenizer_file_names). What a model directory may hold and
// nothing else (tfm::check_output_path).
const std::vector<std::string>& model_file_names();

}  // namespace tfm
