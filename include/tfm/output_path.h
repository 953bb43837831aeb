// The one rule for every path tfm writes (docs/failure.md, "Output paths"), checked by every
// front door before anything is read or written: the CLI's commands, the Python package's
// *_file methods and tfm::Trainer call check_output_path.
//
//   tfm::check_output_path("out.txt", {.kind = tfm::OutputKind::stream, .name = "--output",
//                                      .inputs = {"in.txt"}, .model_dirs = {"model/"}});
//
// An output is never one of the call's inputs (by device and inode: the same path, another
// spelling, a hard link, the file standard input reads), never inside a model directory the call
// uses, and never a file of a tfm model directory; a directory output is written only where a
// directory of its kind, or nothing, is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tfm {

enum class OutputKind : uint8_t {
  // A file opened and written in place (tfm translate --output, translate_file): "" or "-" is
  // standard output, judged by the file it is open on. A FIFO or a device is written, never
  // replaced; a directory is refused.
  stream,
  // A file replaced by rename (a vocabulary, a prepared corpus's files): absent or a regular
  // file. A FIFO, a device or a directory there is refused (a rename would replace it).
  file,
  // A directory replaced whole by a model (tfm average --out): absent, empty, or a model
  // directory (config.json with a tfm model config, model.safetensors, its vocabularies) and
  // nothing else: a training run, or any other file, is refused.
  model_directory,
  // A training run's directory (tfm train --model), whose files are written by name: absent,
  // empty, a directory a run has written (train_config.json or train_state/), or one holding
  // only the names a run writes. A config.json there must be a tfm model config.
  run_directory,
};

struct OutputRule {
  OutputKind kind = OutputKind::stream;
  // How errors name the output ("--output", "output_path").
  std::string name{};
  // What the call reads: files or directories ("-": standard input; "" and paths that do not
  // exist are skipped).
  std::vector<std::string> inputs{};
  // The model directories the call uses: the output may be neither inside one nor (for a
  // directory output) one of them or above one.
  std::vector<std::string> model_dirs{};
};

// Throws tfm::InvalidArgument naming rule.name, the path and the reason when `path` breaks the
// rule; does nothing to the file system.
void check_output_path(const std::string& path, const OutputRule& rule);

}  // namespace tfm
