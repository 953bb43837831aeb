// tfm::check_output_path, the one rule for every output path: each kind of output against what
// may be at its path, inputs by inode (hard links, other spellings, links), model directories in
// use, and the files of a model directory. Nothing is written by the check. FIFOs stand in for
// devices.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/test_util.h"
#include "tfm/core/file_util.h"
#include "tfm/model/config.h"
#include "tfm/output_path.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

class OutputPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tfm_output_path_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories(fs::path(path(name)).parent_path());
    std::ofstream(path(name)) << text;
  }
  // A directory that looks like a model: a tfm config and weights (their contents are not read
  // but the config's).
  void model(const std::string& name) const {
    write(name + "/config.json", ModelConfig::preset("tiny").to_json());
    write(name + "/model.safetensors", "weights");
    write(name + "/vocab.model", "vocab");
  }
  static std::string refusal(const std::string& p, const OutputRule& rule) {
    try {
      check_output_path(p, rule);
    } catch (const InvalidArgument& e) {
      return e.message();
    }
    return "";
  }
  fs::path dir_;
};

OutputRule rule(OutputKind kind, std::vector<std::string> inputs = {},
                std::vector<std::string> model_dirs = {}) {
  return {.kind = kind,
          .name = "--out",
          .inputs = std::move(inputs),
          .model_dirs = std::move(model_dirs)};
}

TEST_F(OutputPathTest, NeverAnInputByInode) {
  write("in.txt", "source\n");
  ASSERT_EQ(::link(path("in.txt").c_str(), path("hard.txt").c_str()), 0);
  fs::create_symlink(path("in.txt"), path("soft.txt"));
  for (const auto kind : {OutputKind::stream, OutputKind::file}) {
    for (const std::string& out :
         {path("in.txt"), (dir_ / "." / "in.txt").string(), path("hard.txt"), path("soft.txt")}) {
      EXPECT_NE(refusal(out, rule(kind, {path("in.txt")})).find("is the input file"),
                std::string::npos)
          << out;
    }
    EXPECT_EQ(refusal(path("new.txt"), rule(kind, {path("in.txt")})), "");
  }
  // "" is no input; a missing input holds nothing to protect.
  EXPECT_EQ(refusal(path("in.txt"), rule(OutputKind::stream, {"", path("missing")})), "");
  EXPECT_EQ(read_file(path("in.txt")), "source\n");
}

TEST_F(OutputPathTest, WhatMayBeAtEachKindOfPath) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  write("file.txt", "x");
  fs::create_directories(path("dir"));
  // A stream writes into a FIFO (or a device); a renamed file would replace it.
  EXPECT_EQ(refusal(path("fifo"), rule(OutputKind::stream)), "");
  EXPECT_NE(
      refusal(path("fifo"), rule(OutputKind::file)).find("is a FIFO, not a file tfm replaces"),
      std::string::npos);
  EXPECT_NE(refusal(path("dir"), rule(OutputKind::stream)).find("is a directory"),
            std::string::npos);
  EXPECT_NE(refusal(path("dir"), rule(OutputKind::file)).find("is a directory"), std::string::npos);
  for (const auto kind : {OutputKind::model_directory, OutputKind::run_directory}) {
    EXPECT_NE(refusal(path("fifo"), rule(kind)).find("is a FIFO"), std::string::npos);
    EXPECT_NE(refusal(path("file.txt"), rule(kind)).find("is a regular file"), std::string::npos);
    EXPECT_EQ(refusal(path("dir"), rule(kind)), "");     // empty
    EXPECT_EQ(refusal(path("absent"), rule(kind)), "");  // made by the writer
  }
}

TEST_F(OutputPathTest, ModelDirectoryOnlyOverAModel) {
  model("avg");
  write("avg/.config.json.tmp.1.2", "a killed writer's");
  EXPECT_EQ(refusal(path("avg"), rule(OutputKind::model_directory)), "");
  write("avg/notes.txt", "mine");
  fs::create_directories(path("avg/sub"));
  EXPECT_NE(refusal(path("avg"), rule(OutputKind::model_directory))
                .find("holds notes.txt, sub, which are not part of a model directory"),
            std::string::npos);
  model("run");
  fs::create_directories(path("run/train_state"));
  EXPECT_NE(refusal(path("run"), rule(OutputKind::model_directory))
                .find("holds train_state, so it is a training run's directory"),
            std::string::npos);
  // Another program's config.json is not replaced.
  write("hf/config.json", R"({"architectures": ["BertModel"]})");
  EXPECT_NE(refusal(path("hf"), rule(OutputKind::model_directory))
                .find("holds a config.json that is not a tfm model's"),
            std::string::npos);
  // A model file of the wrong kind there.
  fs::create_directories(path("odd/model.safetensors"));
  EXPECT_NE(refusal(path("odd"), rule(OutputKind::model_directory))
                .find("holds model.safetensors, which is a directory where tfm writes a regular"),
            std::string::npos);
}

// A model converted from Hugging Face: tfm_tokenizer.json and the data files it names are the
// model's (an average of converted models is written over an earlier one; translate --output never
// replaces one of them), and a file it does not name is still foreign.
TEST_F(OutputPathTest, ConvertedModelsTokenizerFiles) {
  model("conv");
  fs::remove(path("conv/vocab.model"));
  write("conv/tfm_tokenizer.json",
        R"({"family": "marian", "source": {"type": "sentencepiece", "model": "source.spm"},
            "target": {"type": "sentencepiece", "model": "target.spm", "vocab": "vocab.json"}})");
  for (const char* f : {"source.spm", "target.spm", "vocab.json"})
    write(std::string("conv/") + f, "x");
  EXPECT_EQ(refusal(path("conv"), rule(OutputKind::model_directory)), "");
  for (const char* f : {"source.spm", "vocab.json", "tfm_tokenizer.json"}) {
    EXPECT_NE(refusal(path(std::string("conv/") + f), rule(OutputKind::stream))
                  .find(std::string("would replace ") + f + " of the tfm model directory"),
              std::string::npos)
        << f;
  }
  EXPECT_EQ(refusal(path("conv/hyp.txt"), rule(OutputKind::stream)), "");
  write("conv/README.md", "x");
  EXPECT_NE(refusal(path("conv"), rule(OutputKind::model_directory))
                .find("holds README.md, which is not part of a model directory"),
            std::string::npos);
}

TEST_F(OutputPathTest, RunDirectory) {
  // Only a run's names (a vocabulary put there first), or a run's directory with the user's
  // files beside its own.
  write("prepared/vocab.model", "vocab");
  write("prepared/vocab.vocab", "listing");
  EXPECT_EQ(refusal(path("prepared"), rule(OutputKind::run_directory)), "");
  model("run");
  write("run/train_config.json", "{}");
  write("run/NOTES", "the user's");
  write("run/.hidden", "the user's");
  EXPECT_EQ(refusal(path("run"), rule(OutputKind::run_directory)), "");
  write("other/notes.txt", "x");
  EXPECT_NE(refusal(path("other"), rule(OutputKind::run_directory))
                .find("holds notes.txt, which is not part of a training run's directory"),
            std::string::npos);
  write("hf/config.json", R"({"model_type": "marian"})");
  EXPECT_NE(refusal(path("hf"), rule(OutputKind::run_directory)).find("not a tfm model's"),
            std::string::npos);
  // An input the run writes (or --overwrite removes): refused; one beside them is the user's.
  EXPECT_NE(refusal(path("run"), rule(OutputKind::run_directory, {path("run/vocab.model")}))
                .find("which this command reads and a training run there writes"),
            std::string::npos);
  EXPECT_EQ(refusal(path("run"), rule(OutputKind::run_directory, {path("run/NOTES")})), "");
}

TEST_F(OutputPathTest, ModelDirectoriesInUseAndTheirFiles) {
  model("m");
  model("other");
  for (const auto kind : {OutputKind::stream, OutputKind::file}) {
    EXPECT_NE(refusal(path("m/hyp.txt"), rule(kind, {}, {path("m")}))
                  .find("is inside the model directory"),
              std::string::npos);
    EXPECT_NE(refusal(path("m/../m/model.safetensors"), rule(kind, {}, {path("m")}))
                  .find("is inside the model directory"),
              std::string::npos);
    // Not in use, but a file of a model all the same.
    EXPECT_NE(refusal(path("other/vocab.model"), rule(kind, {}, {path("m")}))
                  .find("would replace vocab.model of the tfm model directory"),
              std::string::npos);
    EXPECT_EQ(refusal(path("other/hyp.txt"), rule(kind, {}, {path("m")})), "");
  }
  // A directory output: never a model in use, nor above one.
  EXPECT_NE(refusal(path("m"), rule(OutputKind::model_directory, {}, {path("m")}))
                .find("is the model directory"),
            std::string::npos);
  EXPECT_NE(refusal(dir_.string(), rule(OutputKind::model_directory, {}, {path("m")}))
                .find("holds the model directory"),
            std::string::npos);
}

TEST_F(OutputPathTest, StandardOutputIsJudgedByItsFile) {
  write("in.txt", "source\n");
  // Standard output on the input, as `tfm score ... >> in.txt` leaves it.
  const int saved = ::dup(STDOUT_FILENO);
  ASSERT_GE(saved, 0);
  std::fflush(stdout);
  const int fd = ::open(path("in.txt").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ::dup2(fd, STDOUT_FILENO);
  const std::string refused = refusal("-", rule(OutputKind::stream, {path("in.txt")}));
  const std::string other = refusal("", rule(OutputKind::stream, {path("missing")}));
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(fd);
  ::close(saved);
  EXPECT_NE(refused.find("standard output (" + fs::canonical(path("in.txt")).string() +
                         ") is the input file"),
            std::string::npos)
      << refused;
  EXPECT_EQ(other, "");
  EXPECT_NE(refusal("-", rule(OutputKind::file)).find("standard output cannot be"),
            std::string::npos);
  EXPECT_EQ(read_file(path("in.txt")), "source\n");
}

}  // namespace
}  // namespace tfm
