// Standalone driver for a libFuzzer-style target (LLVMFuzzerTestOneInput), for compilers without
// libFuzzer (GCC). It is not coverage guided: it runs every seed, then deterministic mutations of
// them (bit flips, byte edits, truncations, splices, dictionary tokens, edits of the leading
// 8-byte length field that binary formats such as safetensors start with). The same seed gives
// the same inputs, so a failure reproduces; the failing input is also written out.
//
// Usage: fuzz_driver [-runs=N] [-seed=S] [-max_total_time=SECONDS] [-dict=FILE]
//                    [-artifact_prefix=PATH] CORPUS_DIR_OR_FILE...
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Present when built with a sanitizer: lets us save the input before a sanitizer report exits.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

using Bytes = std::vector<uint8_t>;

// The input being run, for the crash handlers (which may only use async-signal-safe calls).
const Bytes* current_input = nullptr;
char crash_path[4096] = "crash-input";

void save_current_input() {
  if (current_input == nullptr) return;
  const int fd = ::open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  const char* p = reinterpret_cast<const char*>(current_input->data());
  size_t n = current_input->size();
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) break;
    p += w;
    n -= static_cast<size_t>(w);
  }
  ::close(fd);
  const char msg[] = "fuzz_driver: failing input written to ";
  (void)!::write(2, msg, sizeof msg - 1);
  (void)!::write(2, crash_path, std::strlen(crash_path));
  (void)!::write(2, "\n", 1);
}

void on_signal(int sig) {
  save_current_input();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

struct SplitMix64 {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
};

Bytes read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// libFuzzer dictionary lines: name="value" or "value", with \\, \" and \xNN escapes.
std::vector<Bytes> read_dict(const std::string& path) {
  std::vector<Bytes> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find('"'), b = line.rfind('"');
    if (line.empty() || line[0] == '#' || a == std::string::npos || b <= a) continue;
    Bytes tok;
    for (size_t i = a + 1; i < b; ++i) {
      if (line[i] == '\\' && i + 1 < b && line[i + 1] == 'x' && i + 3 < b) {
        tok.push_back(static_cast<uint8_t>(std::stoi(line.substr(i + 2, 2), nullptr, 16)));
        i += 3;
      } else if (line[i] == '\\' && i + 1 < b) {
        tok.push_back(static_cast<uint8_t>(line[++i]));
      } else {
        tok.push_back(static_cast<uint8_t>(line[i]));
      }
    }
    out.push_back(tok);
  }
  return out;
}

void set_length_field(Bytes& b, uint64_t v) {
  if (b.size() < 8) b.resize(8);
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t length_field(const Bytes& b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0 && b.size() >= 8; --i) v = (v << 8) | b[i];
  return v;
}

void mutate(Bytes& b, const std::vector<Bytes>& corpus, const std::vector<Bytes>& dict,
            SplitMix64& rng) {
  static const uint8_t kInteresting[] = {0,   1,   0x7F, 0x80, 0xFF, '"', '{', '}', '[',  ']',
                                         ',', ':', '-',  '0',  '9',  ' ', 'e', '.', 0xC0, 0xED};
  switch (rng.below(11)) {
    case 0:  // flip one bit
      if (!b.empty()) b[rng.below(b.size())] ^= static_cast<uint8_t>(1u << rng.below(8));
      break;
    case 1:  // set a byte to an interesting value
      if (!b.empty()) b[rng.below(b.size())] = kInteresting[rng.below(sizeof kInteresting)];
      break;
    case 2:  // random byte
      if (!b.empty()) b[rng.below(b.size())] = static_cast<uint8_t>(rng.next());
      break;
    case 3:  // truncate
      b.resize(rng.below(b.size() + 1));
      break;
    case 4: {  // delete a range
      if (b.empty()) break;
      const size_t at = rng.below(b.size()), n = 1 + rng.below(std::min<size_t>(16, b.size() - at));
      b.erase(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(at + n));
      break;
    }
    case 5: {  // insert random or repeated bytes
      const size_t at = rng.below(b.size() + 1), n = 1 + rng.below(8);
      const uint8_t v = kInteresting[rng.below(sizeof kInteresting)];
      b.insert(b.begin() + static_cast<ptrdiff_t>(at), n, v);
      break;
    }
    case 6:    // a dictionary token, inserted or overwriting
    case 7: {  // (twice as likely: tokens reach the JSON structure)
      if (dict.empty()) break;
      const Bytes& tok = dict[rng.below(dict.size())];
      const size_t at = rng.below(b.size() + 1);
      if (rng.below(2) || at + tok.size() > b.size())
        b.insert(b.begin() + static_cast<ptrdiff_t>(at), tok.begin(), tok.end());
      else
        std::copy(tok.begin(), tok.end(), b.begin() + static_cast<ptrdiff_t>(at));
      break;
    }
    case 8: {  // length field: off by a little, to the edges, or huge
      const uint64_t n = b.size() >= 8 ? b.size() - 8 : 0;
      const uint64_t choices[] = {length_field(b) + 1,
                                  length_field(b) - 1,
                                  n,
                                  n + 1,
                                  0,
                                  100'000'000,
                                  100'000'001,
                                  uint64_t{1} << 63,
                                  ~uint64_t{0},
                                  rng.next() % 4096};
      set_length_field(b, choices[rng.below(std::size(choices))]);
      break;
    }
    case 9: {  // splice: a piece of another corpus input
      const Bytes& other = corpus[rng.below(corpus.size())];
      if (other.empty()) break;
      const size_t from = rng.below(other.size()), n = 1 + rng.below(other.size() - from);
      const size_t at = rng.below(b.size() + 1);
      b.insert(b.begin() + static_cast<ptrdiff_t>(at), other.begin() + static_cast<ptrdiff_t>(from),
               other.begin() + static_cast<ptrdiff_t>(from + n));
      break;
    }
    case 10: {  // duplicate a range in place (repeated keys, entries)
      if (b.empty()) break;
      const size_t from = rng.below(b.size()),
                   n = 1 + rng.below(std::min<size_t>(64, b.size() - from));
      const Bytes piece(b.begin() + static_cast<ptrdiff_t>(from),
                        b.begin() + static_cast<ptrdiff_t>(from + n));
      b.insert(b.begin() + static_cast<ptrdiff_t>(from + n), piece.begin(), piece.end());
      break;
    }
  }
  if (b.size() > 1 << 16) b.resize(1 << 16);  // keep inputs small, as libFuzzer's -max_len does
}

bool flag(const std::string& arg, const char* name, std::string& value) {
  const std::string prefix = std::string("-") + name + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  value = arg.substr(prefix.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t runs = 10000, seed = 1;
  double max_seconds = 0;
  std::string dict_path, artifact_prefix, v;
  std::vector<Bytes> corpus;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (flag(arg, "runs", v)) {
      runs = std::stoull(v);
    } else if (flag(arg, "seed", v)) {
      seed = std::stoull(v);
    } else if (flag(arg, "max_total_time", v)) {
      max_seconds = std::stod(v);
    } else if (flag(arg, "dict", v)) {
      dict_path = v;
    } else if (flag(arg, "artifact_prefix", v)) {
      artifact_prefix = v;
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "fuzz_driver: unknown flag %s\n", arg.c_str());
      return 2;
    } else if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());  // directory order is not deterministic
      for (const auto& f : files) corpus.push_back(read_bytes(f));
    } else if (std::filesystem::is_regular_file(arg)) {
      corpus.push_back(read_bytes(arg));
    } else {
      std::fprintf(stderr, "fuzz_driver: no such corpus file or directory: %s\n", arg.c_str());
      return 2;
    }
  }
  if (corpus.empty()) corpus.push_back({});
  const std::vector<Bytes> dict = dict_path.empty() ? std::vector<Bytes>{} : read_dict(dict_path);
  std::snprintf(crash_path, sizeof crash_path, "%scrash-seed%llu", artifact_prefix.c_str(),
                static_cast<unsigned long long>(seed));
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_signal);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(save_current_input);

  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  uint64_t executed = 0;
  for (const Bytes& input : corpus) {
    current_input = &input;
    LLVMFuzzerTestOneInput(input.data(), input.size());
    ++executed;
  }
  SplitMix64 rng{seed};
  Bytes input;
  for (uint64_t r = 0; r < runs; ++r) {
    if (max_seconds > 0 && (r & 63) == 0 && elapsed() > max_seconds) break;
    input = corpus[rng.below(corpus.size())];
    const size_t n = 1 + rng.below(4);  // stacked mutations, as libFuzzer does
    for (size_t k = 0; k < n; ++k) mutate(input, corpus, dict, rng);
    current_input = &input;
    LLVMFuzzerTestOneInput(input.data(), input.size());
    ++executed;
  }
  current_input = nullptr;
  std::printf("fuzz_driver: %llu inputs (%zu seeds) in %.1f s, seed %llu, no failures\n",
              static_cast<unsigned long long>(executed), corpus.size(), elapsed(),
              static_cast<unsigned long long>(seed));
  return 0;
}
