// check_output_path (include/tfm/output_path.h): what may be at an output path, judged by device
// and inode so that links and other spellings of a path count, before anything is opened.
#include "tfm/output_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>

#include "tfm/core/check.h"
#include "tfm/core/dir_lock.h"
#include "tfm/core/file_util.h"
#include "tfm/data/tokenizer_files.h"
#include "tfm/model/checkpoint.h"
#include "tfm/train/train_state.h"

namespace tfm {

namespace {

namespace fs = std::filesystem;

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t mode = 0;
  bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
};

std::optional<FileId> id_of(const struct stat& st) {
  return FileId{st.st_dev, st.st_ino, st.st_mode};
}

// stat(2), following links; nullopt when nothing is there.
std::optional<FileId> stat_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return id_of(st);
}

std::optional<FileId> fd_id(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return id_of(st);
}

bool is_stdio(const std::string& path) {
  return path.empty() || path == "-";
}

const char* what_is(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

// The path a regular file standard output is open on (via /proc), or "" when it is none.
std::string stdout_file() {
  const std::optional<FileId> out = fd_id(STDOUT_FILENO);
  if (!out || !S_ISREG(out->mode)) return "";
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink("/proc/self/fd/1", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  const std::string path(buf.data(), static_cast<size_t>(n));
  // A deleted file reads as "PATH (deleted)": nothing to protect by name then.
  const std::optional<FileId> there = stat_id(path);
  return there && *there == *out ? path : "";
}

// The directories above `path` (its parent first, up to the root) that exist, with their ids,
// and the name of `path` below each, as a canonical path spells it.
struct Ancestor {
  fs::path dir;
  FileId id;
  fs::path below;  // path relative to dir
};

std::vector<Ancestor> ancestors(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  std::vector<Ancestor> out;
  if (ec) return out;
  for (fs::path d = p.parent_path();; d = d.parent_path()) {
    if (const std::optional<FileId> id = stat_id(d.string()))
      out.push_back({d, *id, p.lexically_relative(d)});
    if (d == d.root_path() || d.empty()) break;
  }
  return out;
}

std::string first_component(const fs::path& p) {
  return p.empty() ? "" : p.begin()->string();
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A directory tfm trained or wrote a model into.
bool is_tfm_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "model.safetensors", ec) ||
         fs::is_directory(dir / "train_state", ec) ||
         fs::is_regular_file(dir / "train_config.json", ec);
}

// The data files a converted model's tfm_tokenizer.json names (source.spm, vocab.json, …): files
// of the model as much as its weights. None when there is no such file or it cannot be read.
std::vector<std::string> tokenizer_data_files(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / kTokenizerConfigFile, ec)) return {};
  try {
    return tokenizer_file_names(dir.string());
  } catch (const Error&) {
    return {};
  }
}

class Checker {
 public:
  Checker(const std::string& path, const OutputRule& rule) : rule_(rule), path_(path) {
    shown_ = path;
    if (is_stdio(path)) {
      TFM_CHECK_ARG(rule.kind == OutputKind::stream)
          << rule.name << ": standard output cannot be " << kind_words();
      const std::optional<FileId> out = fd_id(STDOUT_FILENO);
      // A pipe or a terminal holds nothing to protect.
      if (!out || !S_ISREG(out->mode)) return;
      target_ = out;
      path_ = stdout_file();
      shown_ = "standard output" + (path_.empty() ? std::string() : " (" + path_ + ")");
    } else {
      target_ = stat_id(path);
    }
    active_ = true;
  }

  void run() {
    if (!active_) return;
    check_type();
    check_inputs();
    check_model_dirs();
    if (path_.empty()) return;  // standard output on a file without a name left
    if (rule_.kind == OutputKind::stream || rule_.kind == OutputKind::file)
      check_not_model_file();
    else
      check_entries();
  }

 private:
  bool directory_kind() const {
    return rule_.kind == OutputKind::model_directory || rule_.kind == OutputKind::run_directory;
  }
  const char* kind_words() const {
    switch (rule_.kind) {
      case OutputKind::stream:
        return "an output file";
      case OutputKind::file:
        return "a file tfm replaces";
      case OutputKind::model_directory:
        return "a model directory";
      case OutputKind::run_directory:
        return "a training run's directory";
    }
    return "";
  }

  void check_type() const {
    if (!target_) return;
    const mode_t m = target_->mode;
    bool fits = true;
    if (rule_.kind == OutputKind::stream) fits = !S_ISDIR(m);
    if (rule_.kind == OutputKind::file) fits = S_ISREG(m);
    if (directory_kind()) fits = S_ISDIR(m);
    TFM_CHECK_ARG(fits) << rule_.name << " " << shown_ << " is " << what_is(m) << ", not "
                        << kind_words()
                        << (rule_.kind == OutputKind::file
                                ? " (the new file is renamed over the path)"
                                : "")
                        << "; give another path";
  }

  // Never an input: the same file, and for a directory output no input inside it.
  void check_inputs() const {
    for (const std::string& in : rule_.inputs) {
      if (in.empty()) continue;
      const std::optional<FileId> id = in == "-" ? fd_id(STDIN_FILENO) : stat_id(in);
      if (!id || !(S_ISREG(id->mode) || S_ISDIR(id->mode))) continue;  // pipes, devices
      TFM_CHECK_ARG(!target_ || !(*target_ == *id))
          << rule_.name << " " << shown_ << " is the input file "
          << (is_stdio(in) ? "(standard input)" : in) << "; write to another path";
      if (!directory_kind() || !target_ || is_stdio(in)) continue;
      for (const Ancestor& a : ancestors(in)) {
        if (!(a.id == *target_)) continue;
        const bool run_file = contains(run_file_names(), first_component(a.below));
        TFM_CHECK_ARG(rule_.kind == OutputKind::run_directory && !run_file)
            << rule_.name << " " << shown_ << " holds " << in << ", which this command reads"
            << (run_file ? " and a training run there writes" : ", and is replaced whole")
            << "; read it from elsewhere, or write to another directory";
      }
    }
  }

  // Never inside a model directory in use, nor (a directory output) one of them or above one.
  void check_model_dirs() const {
    for (const std::string& m : rule_.model_dirs) {
      const std::optional<FileId> id = stat_id(m);
      if (!id || !S_ISDIR(id->mode)) continue;
      TFM_CHECK_ARG(!target_ || !(*target_ == *id))
          << rule_.name << " " << shown_ << " is the model directory " << m
          << " that this command uses; write to another path";
      if (!path_.empty())
        for (const Ancestor& a : ancestors(path_))
          TFM_CHECK_ARG(!(a.id == *id))
              << rule_.name << " " << shown_ << " is inside the model directory " << m
              << " that this command uses; write outside it";
      if (!directory_kind() || !target_) continue;
      for (const Ancestor& a : ancestors(m))
        TFM_CHECK_ARG(!(a.id == *target_))
            << rule_.name << " " << shown_ << " holds the model directory " << m
            << " that this command uses; write to another directory";
    }
  }

  // A file or stream never replaces a file of a tfm model directory (model, config, vocabulary,
  // or anything of a training run): that is the work of tfm train, average and convert.
  void check_not_model_file() const {
    for (const Ancestor& a : ancestors(path_)) {
      const std::string top = first_component(a.below);
      const bool of_model =
          contains(run_file_names(), top) || contains(tokenizer_data_files(a.dir), top);
      TFM_CHECK_ARG(!of_model || !is_tfm_dir(a.dir))
          << rule_.name << " " << shown_ << " would replace " << top
          << " of the tfm model directory " << a.dir.string() << "; write elsewhere";
    }
  }

  void check_entries() const {
    if (!target_) return;
    const fs::path dir(path_);
    const bool run = rule_.kind == OutputKind::run_directory;
    // A run writes its files by name and leaves the others be: a directory a run has written is
    // one of its kind, whatever else it holds.
    std::error_code ec;
    const bool run_written = run && (fs::is_regular_file(dir / "train_config.json", ec) ||
                                     fs::is_directory(dir / "train_state", ec));
    std::vector<std::string> training, foreign;  // names that do not belong, sorted
    const std::vector<std::string> tokenizer_files = tokenizer_data_files(dir);
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const bool hidden = name.front() == '.';
      if (hidden && name.find(".tmp.") != std::string::npos) continue;  // a killed writer's
      if (contains(model_file_names(), name) || (run && contains(run_file_names(), name))) {
        check_own_entry(it->path(), name);
        continue;
      }
      if (contains(tokenizer_files, name)) continue;  // a converted model's
      if (run && (hidden || run_written || is_vocab_listing(dir, name))) continue;
      const bool of_a_run = contains(run_file_names(), name) || name == kDirLockFile;
      (of_a_run ? training : foreign).push_back(name);
    }
    TFM_CHECK_ARG(!ec) << rule_.name << " " << shown_ << " cannot be listed: " << ec.message();
    TFM_CHECK_ARG(training.empty())
        << rule_.name << " " << shown_ << " holds " << listed(training)
        << ", so it is a training run's directory, not a model directory: the output replaces the "
        << "directory whole; write to a new or empty directory";
    TFM_CHECK_ARG(foreign.empty())
        << rule_.name << " " << shown_ << " holds " << listed(foreign) << ", which "
        << (foreign.size() == 1 ? "is" : "are") << " not part of " << kind_words()
        << (run ? "" : ": the output replaces the directory whole")
        << "; write to a new or empty directory";
  }

  // "a, b, c and 4 more", sorted (a directory lists in no particular order).
  static std::string listed(std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    std::string s;
    for (size_t i = 0; i < names.size() && i < 3; ++i) s += (i ? ", " : "") + names[i];
    if (names.size() > 3) s += " and " + std::to_string(names.size() - 3) + " more";
    return s;
  }

  // `tfm vocab --out DIR/vocab` puts vocab.vocab beside vocab.model.
  static bool is_vocab_listing(const fs::path& dir, const std::string& name) {
    const std::string ext = ".vocab";
    if (name.size() <= ext.size() || !name.ends_with(ext)) return false;
    const std::string model = name.substr(0, name.size() - ext.size()) + ".model";
    return contains(model_file_names(), model);
  }

  // One of the names tfm writes: of the kind it writes (a directory for best/, a file for the
  // rest), and a config.json that is a tfm model config (another program's is not replaced).
  void check_own_entry(const fs::path& p, const std::string& name) const {
    std::error_code ec;
    const bool want_dir = name == "best" || name == "checkpoints" || name == "train_state";
    const bool ok = want_dir ? fs::is_directory(p, ec) : fs::is_regular_file(p, ec);
    TFM_CHECK_ARG(ok) << rule_.name << " " << shown_ << " holds " << name << ", which is "
                      << target_kind(p) << " where tfm writes "
                      << (want_dir ? "a directory" : "a regular file") << "; remove it first";
    if (name != "config.json") return;
    try {
      ModelConfig::from_json(read_file(p.string()));
    } catch (const Error& e) {
      TFM_FAIL_ARG() << rule_.name << " " << shown_ << " holds a config.json that is not a tfm "
                     << "model's (" << e.message() << "); tfm would replace it: write to a new "
                     << "or empty directory";
    }
  }

  static std::string target_kind(const fs::path& p) {
    const std::optional<FileId> id = stat_id(p.string());
    return id ? what_is(id->mode) : "a dangling link";
  }

  const OutputRule& rule_;
  std::string path_;   // what is checked: the path, or the file standard output is open on
  std::string shown_;  // how messages name it
  std::optional<FileId> target_;
  bool active_ = false;
};

}  // namespace

void check_output_path(const std::string& path, const OutputRule& rule) {
  Checker(path, rule).run();
}

}  // namespace tfm
