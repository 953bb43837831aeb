// Checked output, atomic copies and directories, the directory lock and the value checks
// (issue 15: nothing lost, nothing silently wrong).
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "support/test_util.h"
#include "tfm/core/dir_lock.h"
#include "tfm/core/file_util.h"
#include "tfm/core/output_file.h"
#include "tfm/core/validate.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tfm_output_file_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(OutputFileTest, WritesAndAppends) {
  {
    OutputFile out(path("a.txt"));
    out << "one\n";
    out.close();
  }
  {
    OutputFile out(path("a.txt"), OutputFile::Mode::append);
    out << std::string(100000, 'x') << "\n";  // past the buffer: written directly
    out.close();
  }
  EXPECT_EQ(read_file(path("a.txt")), "one\n" + std::string(100000, 'x') + "\n");
}

TEST_F(OutputFileTest, FullDeviceIsAnErrorWithTheRealReason) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  OutputFile out("/dev/full");
  out << "some text\n";
  EXPECT_TFM_ERROR(out.close(), "cannot write '/dev/full': No space left on device");
}

TEST_F(OutputFileTest, DirectoryAndMissingParentAreRefused) {
  EXPECT_TFM_ERROR(OutputFile(dir_.string()), "it is a directory");
  EXPECT_TFM_ERROR(OutputFile(path("no/such/file")), "No such file or directory");
}

TEST_F(OutputFileTest, CopyFileAtomic) {
  write_file_atomic(path("from"), "vocabulary bytes");
  copy_file_atomic(path("from"), path("to"));
  EXPECT_EQ(read_file(path("to")), "vocabulary bytes");
  EXPECT_TFM_ERROR(copy_file_atomic(path("missing"), path("to2")), "cannot copy");
  EXPECT_FALSE(fs::exists(path("to2")));
  if (fs::exists("/dev/full")) {
    // The target stays as it was when the copy fails (here: the source cannot be read whole).
    EXPECT_TFM_ERROR(copy_file_atomic(dir_.string(), path("to")), "cannot copy");
    EXPECT_EQ(read_file(path("to")), "vocabulary bytes");
  }
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST_F(OutputFileTest, WriteDirAtomicReplacesWholeOrNotAtAll) {
  const std::string d = path("best");
  write_dir_atomic(d, [](const std::string& tmp) { write_file_atomic(tmp + "/a", "1"); });
  EXPECT_EQ(read_file(d + "/a"), "1");
  write_dir_atomic(d, [](const std::string& tmp) { write_file_atomic(tmp + "/b", "2"); });
  EXPECT_FALSE(fs::exists(d + "/a"));  // the old contents are gone, not merged
  EXPECT_EQ(read_file(d + "/b"), "2");
  // A failure while filling leaves the old directory and no temporary.
  EXPECT_TFM_ERROR(write_dir_atomic(d,
                                    [](const std::string& tmp) {
                                      write_file_atomic(tmp + "/c", "3");
                                      TFM_FAIL() << "disk full (simulated)";
                                    }),
                   "disk full");
  EXPECT_EQ(read_file(d + "/b"), "2");
  EXPECT_FALSE(fs::exists(d + "/c"));
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) ++entries, (void)e;
  EXPECT_EQ(entries, 1);
}

TEST_F(OutputFileTest, StaleTemporariesAreRemoved) {
  write_file_atomic(path(".state.safetensors.tmp.123.0"), "stale");
  fs::create_directories(path(".best.tmp.123.1"));
  write_file_atomic(path("model.safetensors"), "keep");
  write_file_atomic(path(".hidden"), "keep");
  const auto removed = remove_stale_temp_files(dir_.string());
  EXPECT_EQ(removed.size(), 2u);
  EXPECT_FALSE(fs::exists(path(".state.safetensors.tmp.123.0")));
  EXPECT_FALSE(fs::exists(path(".best.tmp.123.1")));
  EXPECT_TRUE(fs::exists(path("model.safetensors")));
  EXPECT_TRUE(fs::exists(path(".hidden")));
}

// A rename replaces whatever is at the target: the atomic writers replace only their own kind
// (tfm average once turned /dev/null into a directory). FIFOs stand in for devices.
TEST_F(OutputFileTest, AtomicWritersReplaceOnlyTheirOwnKind) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_TFM_ERROR(write_file_atomic(path("fifo"), "x"), "it exists and is not a regular file");
  EXPECT_TFM_ERROR(write_dir_atomic(path("fifo"), [](const std::string&) {}),
                   "it exists and is not a directory");
  write_file_atomic(path("file"), "keep");
  EXPECT_TFM_ERROR(write_dir_atomic(path("file"), [](const std::string&) {}),
                   "it exists and is not a directory");
  struct stat st {};
  ASSERT_EQ(::stat(path("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(read_file(path("file")), "keep");
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

// A FIFO where a model's file should be would block its reader forever (no writer comes): it is
// refused without opening it for a blocking read; a directory is named as one.
TEST_F(OutputFileTest, ModelFilesMustBeRegular) {
  ASSERT_EQ(::mkfifo(path("model.safetensors").c_str(), 0600), 0);
  EXPECT_TFM_ERROR(map_file(path("model.safetensors")), "it is a FIFO, not a regular file");
  EXPECT_TFM_ERROR(require_regular_file(path("model.safetensors")), "it is a FIFO");
  fs::create_directories(path("vocab.model"));
  EXPECT_TFM_ERROR(require_regular_file(path("vocab.model")), "it is a directory");
  require_regular_file(path("missing"));  // left to the open that follows
}

TEST_F(OutputFileTest, DirLockIsExclusiveAndNamesTheHolder) {
  {
    DirLock first(dir_.string());
    // flock locks belong to an open file: a second open conflicts even in one process.
    EXPECT_TFM_ERROR(DirLock(dir_.string()), "in use by another user in this process");
  }
  DirLock again(dir_.string());  // released with the first
}

TEST(Validate, ReadableMessages) {
  EXPECT_TFM_ERROR(require_at_least("--beam-size", 0, 1), "--beam-size must be at least 1 (got 0)");
  EXPECT_TFM_ERROR(require_in_range("--max-length-factor", 1e30, 0.0, 1000.0),
                   "--max-length-factor must be in [0, 1000] (got 1e+30)");
  EXPECT_TFM_ERROR(require_in_range("--lr", std::nan(""), 0.0, 1.0),
                   "--lr must be a finite number");
  EXPECT_TFM_ERROR(require_finite("--x", -std::numeric_limits<double>::infinity()), "(got -inf)");
  EXPECT_TFM_ERROR(require_in_range("--topp", 0.0, 0.0, 1.0, true), "must be in (0, 1] (got 0)");
  require_in_range("--topp", 1.0, 0.0, 1.0, true);
  require_in_range("--n", int64_t{5}, int64_t{1}, int64_t{5});
}

}  // namespace
}  // namespace tfm
