// Training config files (YAML and JSON): flat option maps, lists, and clear errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/test_util.h"
#include "tfm/train/config_file.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using Entries = std::vector<std::pair<std::string, std::vector<std::string>>>;

std::string write(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("tfm_cfg_" + std::to_string(::getpid()) + name);
  std::ofstream(p) << text;
  return p.string();
}

TEST(ConfigFile, YamlFlatMapWithListsCommentsAndUnderscores) {
  const std::string path = write("a.yaml",
                                 "# a comment\n"
                                 "preset: small\n"
                                 "batch_tokens: 4096   # underscores become dashes\n"
                                 "valid-bleu: true\n"
                                 "lr: 5e-4\n"
                                 "vocab-src: [a.spm, 'b c.spm']\n"
                                 "train-src:\n"
                                 "  - x.de\n");
  const Entries want = {
      {"preset", {"small"}}, {"batch-tokens", {"4096"}},          {"valid-bleu", {"true"}},
      {"lr", {"5e-4"}},      {"vocab-src", {"a.spm", "b c.spm"}}, {"train-src", {"x.de"}}};
  EXPECT_EQ(read_config_file(path), want);
  fs::remove(path);
}

TEST(ConfigFile, JsonObject) {
  const std::string path =
      write("a.json", R"({"preset": "base", "max_updates": 100, "valid-bleu": false,
                          "lr": 0.25, "vocab-src": ["a", "b"]})");
  const Entries got = read_config_file(path);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0], (std::pair<std::string, std::vector<std::string>>{"lr", {"0.25"}}));
  EXPECT_EQ(got[1].first, "max-updates");
  EXPECT_EQ(got[1].second, std::vector<std::string>{"100"});
  EXPECT_EQ(got[3].second, std::vector<std::string>{"false"});
  EXPECT_EQ(got[4].second, (std::vector<std::string>{"a", "b"}));
  fs::remove(path);
}

TEST(ConfigFile, EmptyFileHasNoOptions) {
  const std::string path = write("e.yaml", "# nothing yet\n");
  EXPECT_TRUE(read_config_file(path).empty());
  fs::remove(path);
}

TEST(ConfigFile, ErrorsNameTheFileAndLine) {
  std::string p = write("n.yaml", "preset: small\nmodel:\n  d_model: 512\n");
  EXPECT_TFM_ERROR(read_config_file(p), "n.yaml:2: option \"model\" must be a value or a list");
  p = write("d.yaml", "lr: 1\nlr: 2\n");
  EXPECT_TFM_ERROR(read_config_file(p), "option \"lr\" is given twice");
  p = write("s.yaml", "- a\n- b\n");
  EXPECT_TFM_ERROR(read_config_file(p), "must be a mapping of option: value");
  p = write("bad.yaml", "a: [1, 2\n");
  EXPECT_TFM_ERROR(read_config_file(p), "invalid YAML");
  p = write("bad.json", "{\"a\": }");
  EXPECT_TFM_ERROR(read_config_file(p), "invalid JSON");
  p = write("o.json", "{\"a\": {\"b\": 1}}");
  EXPECT_TFM_ERROR(read_config_file(p), "must be a string, number or boolean");
  EXPECT_TFM_ERROR(read_config_file("/nonexistent/x.yaml"), "/nonexistent/x.yaml");
  for (const char* n : {"n.yaml", "d.yaml", "s.yaml", "bad.yaml", "bad.json", "o.json"}) {
    fs::remove(fs::temp_directory_path() / ("tfm_cfg_" + std::to_string(::getpid()) + n));
  }
}

}  // namespace
}  // namespace tfm
