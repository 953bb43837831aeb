#include <sys/resource.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "support/test_util.h"
#include "tfm/core/file_util.h"
#include "tfm/model/safetensors.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using testing::bitwise_equal;
using testing::random_tensor;
using Named = std::vector<std::pair<std::string, Tensor>>;

std::string u64_le(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out;
}

// A file as a writer lays it out: length prefix, header, data.
std::string file_of(const std::string& header, const std::string& data = "") {
  return u64_le(header.size()) + header + data;
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Parses from a heap block of exactly the file's size, so ASan sees any read past the end.
SafetensorsFile parse_bytes(const std::string& bytes) {
  auto s = std::make_shared<Storage>();
  s->data = std::shared_ptr<void>(new unsigned char[bytes.size()],
                                  [](void* p) { delete[] static_cast<unsigned char*>(p); });
  if (!bytes.empty()) std::memcpy(s->data.get(), bytes.data(), bytes.size());
  s->nbytes = bytes.size();
  return parse_safetensors(s, "test.safetensors");
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// A header object from entries; avoids "{" + std::string&& chains, which trip a GCC 12
// -Wrestrict false positive.
std::string object_of(const std::vector<std::string>& entries) {
  std::string out = "{";
  for (size_t i = 0; i < entries.size(); ++i) out += (i ? "," : "") + entries[i];
  return out + "}";
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tfm_st_XXXXXX").string();
    TFM_CHECK(::mkdtemp(tmpl.data()) != nullptr) << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  fs::path path_;
};

void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Tensors of every dtype, incl. 0-d, zero-size and a non-contiguous view.
Named sample_tensors() {
  Tensor bf16 = Tensor::empty({3}, DType::bf16);
  const std::vector<uint16_t> bf16_bits = {0x3F80, 0xC000, 0x7FC0};  // 1, -2, NaN
  std::memcpy(bf16.raw_data(), bf16_bits.data(), 6);
  Tensor f16 = Tensor::empty({2, 2}, DType::f16);
  const std::vector<uint16_t> f16_bits = {0x3C00, 0x0001, 0x7C00, 0x8000};  // 1, denormal, inf, -0
  std::memcpy(f16.raw_data(), f16_bits.data(), 8);
  Tensor i8 = Tensor::empty({5}, DType::i8);  // from_vector has no int8_t instance
  const std::vector<int8_t> i8_values = {-128, -1, 0, 1, 127};
  std::memcpy(i8.raw_data(), i8_values.data(), 5);
  return {
      {"encoder.layers.0.self_attn.q_proj.weight", random_tensor({2, 3}, DType::f32, 1)},
      {"scalar", Tensor::full({}, 3.25, DType::f64)},
      {"empty", Tensor::zeros({0, 5}, DType::i32)},
      {"mask", Tensor::from_vector<uint8_t>({7}, {0, 1, 1, 0, 255, 7, 1})},
      {"bf16", bf16},
      {"f16", f16},
      {"i8", i8},
      {"ids", Tensor::from_vector<int64_t>({4}, {0, -1, INT64_MAX, INT64_MIN})},
      {"transposed", random_tensor({3, 4}, DType::f32, 2).transpose(0, 1)},
      {"empty_f64", Tensor::zeros({2, 0}, DType::f64)},
      {"rows", random_tensor({4, 3}, DType::f32, 5).slice(1, 3)},  // a view with an offset
  };
}

TEST(Safetensors, RoundTripEveryDtypeShapeAndMetadata) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  const Named in = sample_tensors();
  const std::map<std::string, std::string> meta = {
      {"format", "tfm"}, {"config", "{\"d_model\": 512}"}, {"unicode", "Übersetzung ✓"}};
  save_safetensors(path, in, meta);

  const std::string bytes = read_file(path);
  EXPECT_EQ(bytes, serialize_safetensors(in, meta));
  SafetensorsFile f = load_safetensors(path);
  EXPECT_EQ(f.source, path);
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), in.size());
  for (const auto& [name, t] : in) {
    ASSERT_TRUE(f.contains(name)) << name;
    EXPECT_TRUE(bitwise_equal(f.get(name), t)) << name;
    EXPECT_TRUE(f.get(name).is_contiguous());
  }
  // Layout: data starts 8-aligned; largest elements first, so each tensor is naturally aligned.
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  size_t prev_size = 8;
  for (const auto& [name, t] : f.tensors) {
    EXPECT_LE(dtype_size(t.dtype()), prev_size) << name;
    prev_size = dtype_size(t.dtype());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % dtype_size(t.dtype()), 0u) << name;
  }
  EXPECT_EQ(f.tensors.front().first, "scalar");  // f64/i64 first, in the caller's order
  EXPECT_EQ(f.tensors[1].first, "ids");
  // What we read back writes out bitwise-identically.
  EXPECT_EQ(serialize_safetensors(f.tensors, f.metadata), bytes);
}

// Found by the fuzzer: the reader accepted an empty tensor name that the writer refused.
TEST(Safetensors, EmptyNameRoundTrips) {
  SafetensorsFile f = parse_bytes(file_of(object_of({entry("", "U8", "[1]", 0, 1)}), "x"));
  EXPECT_EQ(f.get("").to_vector<uint8_t>(), std::vector<uint8_t>{'x'});
  EXPECT_TRUE(bitwise_equal(parse_bytes(serialize_safetensors(f.tensors)).get(""), f.get("")));
}

TEST(Safetensors, NoTensorsAndNoMetadata) {
  SafetensorsFile f = parse_bytes(serialize_safetensors({}));
  EXPECT_TRUE(f.tensors.empty());
  EXPECT_TRUE(f.metadata.empty());
  EXPECT_EQ(serialize_safetensors({}), file_of("{}      "));
}

TEST(Safetensors, LoadedTensorsViewTheFileWithoutCopying) {
  const std::string bytes = serialize_safetensors({{"w", random_tensor({4, 4}, DType::f32, 3)}});
  auto s = std::make_shared<Storage>();
  s->data = std::shared_ptr<void>(new unsigned char[bytes.size()],
                                  [](void* p) { delete[] static_cast<unsigned char*>(p); });
  std::memcpy(s->data.get(), bytes.data(), bytes.size());
  s->nbytes = bytes.size();
  const auto* lo = static_cast<const char*>(s->data.get());
  Tensor w = parse_safetensors(s, "mem").get("w");
  const auto* p = static_cast<const char*>(w.raw_data());
  EXPECT_GE(p, lo);
  EXPECT_LE(p + w.nbytes(), lo + bytes.size());
  EXPECT_EQ(p - lo, static_cast<ptrdiff_t>(bytes.size() - 64));
}

TEST(Safetensors, TensorsOutliveTheFileAndInPlaceEditsStayPrivate) {
  TempDir dir;
  const std::string path = dir.file("w.safetensors");
  Tensor w0 = random_tensor({8}, DType::f32, 4);
  save_safetensors(path, {{"w", w0}});
  Tensor w;
  {
    SafetensorsFile f = load_safetensors(path);
    w = f.get("w");
  }
  EXPECT_TRUE(bitwise_equal(w, w0));  // the mapping lives as long as the tensor
  w.fill_(0.0);                       // copy-on-write: the file keeps its values
  EXPECT_EQ(w.at({3}), 0.0);
  EXPECT_TRUE(bitwise_equal(load_safetensors(path).get("w"), w0));
}

// The layout Python's safetensors writes (torch.save_file / numpy save): header with
// __metadata__ first, padded with spaces to 8 bytes, tensors sorted by dtype size then name.
TEST(Safetensors, ReadsTheReferenceWritersLayout) {
  std::string header =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"embed.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[16,40]},"
      "\"ids\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]},"
      "\"half\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[40,42]}}";
  header.append((8 - (8 + header.size()) % 8) % 8, ' ');
  const std::vector<int64_t> ids = {7, -3};
  const std::vector<float> w = {0.5f, -1.25f, 3.0f, 1e-20f, -0.0f, 65504.0f};
  const std::vector<uint16_t> half = {0x3555};  // ~0.333 in f16
  SafetensorsFile f = parse_bytes(file_of(header, bytes_of(ids) + bytes_of(w) + bytes_of(half)));
  EXPECT_EQ(f.metadata.at("format"), "pt");
  ASSERT_EQ(f.tensors.size(), 3u);
  EXPECT_EQ(f.tensors[0].first, "ids");  // file order is offset order, not header order
  EXPECT_EQ(f.tensors[1].first, "embed.weight");
  EXPECT_EQ(f.get("ids").to_vector<int64_t>(), ids);
  EXPECT_EQ(f.get("embed.weight").shape(), (Shape{2, 3}));
  EXPECT_EQ(f.get("embed.weight").to_vector<float>(), w);
  EXPECT_EQ(f.get("half").dtype(), DType::f16);
  EXPECT_EQ(*static_cast<const uint16_t*>(f.get("half").raw_data()), 0x3555);
}

TEST(Safetensors, AcceptsPaddingZeroSizeTensorsAndMisalignedData) {
  // Zero-size tensors share an offset with their neighbour; the header is padded so that the f32
  // tensor after a 1-byte one is misaligned (parse_bytes allocates 16-byte aligned) and must arrive
  // as an aligned copy.
  std::string header =
      object_of({entry("z1", "F32", "[0]", 1, 1), entry("u", "U8", "[1]", 0, 1),
                 entry("f", "F32", "[2]", 1, 9), entry("z0", "I64", "[3,0]", 0, 0)});
  while ((8 + header.size() + 1) % 4 != 2) header += ' ';  // trailing spaces are legal padding
  ASSERT_NE((8 + header.size() + 1) % 4, 0u);              // "f" really is misaligned in the file
  const std::vector<float> fv = {1.5f, -2.0f};
  SafetensorsFile f = parse_bytes(file_of(header, std::string(1, '\x2a') + bytes_of(fv)));
  ASSERT_EQ(f.tensors.size(), 4u);
  EXPECT_EQ(f.tensors[0].first, "z0");
  EXPECT_EQ(f.tensors[1].first, "u");
  EXPECT_EQ(f.tensors[2].first, "z1");
  EXPECT_EQ(f.tensors[3].first, "f");
  EXPECT_EQ(f.get("u").to_vector<uint8_t>(), std::vector<uint8_t>{42});
  EXPECT_EQ(f.get("f").to_vector<float>(), fv);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.get("f").raw_data()) % 4, 0u);
  EXPECT_EQ(f.get("z0").shape(), (Shape{3, 0}));
  // 0-d tensor.
  SafetensorsFile s = parse_bytes(
      file_of(object_of({entry("s", "F64", "[]", 0, 8)}), bytes_of(std::vector<double>{2.5})));
  EXPECT_EQ(s.get("s").dim(), 0);
  EXPECT_EQ(s.get("s").item(), 2.5);
}

struct BrokenCase {
  const char* label;
  std::string bytes;
  const char* error;
};

std::vector<BrokenCase> broken_files() {
  const std::string f32x6(24, '\0');
  const auto one = [&](const std::string& e, const std::string& data) {
    return file_of("{" + e + "}", data);
  };
  std::string deep = "{\"a\":{\"dtype\":[[[[[1]]]]]}}";
  return {
      {"truncated", std::string("\x10\0\0\0\0", 5),
       "5 bytes, shorter than the 8-byte header length"},
      {"length past eof", u64_le(40) + "{}", "header length past end of file (header of 40 bytes"},
      {"huge length", u64_le(uint64_t{1} << 63) + "{}", "header too large"},
      {"length just over limit", u64_le(100'000'001) + "{}", "header too large (100000001 bytes"},
      {"invalid utf-8", file_of("{\"a\xff\":{}}"), "header is not valid UTF-8 (byte 3"},
      {"overlong utf-8", file_of("{\"\xc0\xaf\":{}}"), "header is not valid UTF-8"},
      {"surrogate utf-8", file_of("{\"\xed\xa0\x80\":{}}"), "header is not valid UTF-8"},
      {"bad json", file_of("{\"a\": {\"dtype\": \"F32\""), "header is not valid JSON"},
      {"trailing junk in header", file_of("{} x"), "header is not valid JSON"},
      {"json array", file_of("[1, 2]"), "header is not a JSON object"},
      {"empty header", file_of(""), "header is not a JSON object"},
      {"entry not object", file_of("{\"a\": 5}"), "entry of tensor \"a\" is not a JSON object"},
      {"unknown dtype", one(entry("a", "F33", "[6]", 0, 24), f32x6),
       "tensor \"a\" has unknown dtype \"F33\""},
      {"lowercase dtype", one(entry("a", "f32", "[6]", 0, 24), f32x6), "unknown dtype \"f32\""},
      {"dtype not string",
       file_of("{\"a\":{\"dtype\":4,\"shape\":[6],\"data_offsets\":[0,24]}}", f32x6),
       "dtype of tensor \"a\" is not a string"},
      {"negative shape", one(entry("a", "F32", "[-6]", 0, 24), f32x6),
       "shape of tensor \"a\" is not an array of non-negative integers"},
      {"fractional shape", one(entry("a", "F32", "[1.5]", 0, 24), f32x6),
       "shape of tensor \"a\" is not an array of non-negative integers"},
      {"shape not array", one(entry("a", "F32", "6", 0, 24), f32x6),
       "shape of tensor \"a\" is not an array"},
      {"nested shape", one(entry("a", "F32", "[[6]]", 0, 24), f32x6),
       "shape of tensor \"a\" is not an array"},
      {"shape/size mismatch", one(entry("a", "F32", "[2,3]", 0, 20), std::string(20, '\0')),
       "tensor \"a\" is F32 [2, 3] = 24 bytes but data_offsets [0, 20] hold 20"},
      {"numel overflow", one(entry("a", "F32", "[4611686018427387904,4]", 0, 24), f32x6),
       "size of tensor \"a\" (shape [4611686018427387904,4] of F32) overflows"},
      {"dim above int64", one(entry("a", "U8", "[18446744073709551615,0]", 0, 0), ""), "overflows"},
      {"number overflow", one(entry("a", "F32", "[1e400]", 0, 24), f32x6), "not valid JSON"},
      {"zero-size but absurd dims", one(entry("a", "U8", "[1099511627776,1048576,0]", 0, 0), ""),
       "test.safetensors: tensor \"a\": shape"},
      {"begin > end", one(entry("a", "U8", "[0]", 8, 4), std::string(8, '\0')),
       "tensor \"a\" has data_offsets [8, 4] with begin > end"},
      {"offsets past end", one(entry("a", "F32", "[6]", 0, 24), std::string(20, '\0')),
       "data_offsets [0, 24] past the end of the 20-byte data buffer"},
      {"offsets not integers",
       file_of("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,\"1\"]}}", "x"),
       "data_offsets of tensor \"a\" is not two non-negative integers"},
      {"three offsets",
       file_of("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,1]}}", "x"),
       "data_offsets of tensor \"a\" is not two non-negative integers"},
      {"negative offset",
       file_of("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,1]}}", "x"),
       "data_offsets of tensor \"a\""},
      {"overlap",
       file_of(object_of({entry("a", "F32", "[2]", 0, 8), entry("b", "F32", "[2]", 4, 12)}),
               std::string(12, '\0')),
       "tensors \"a\" [0, 8] and \"b\" [4, 12] overlap"},
      {"same offsets twice",
       file_of(object_of({entry("a", "F32", "[2]", 0, 8), entry("b", "F32", "[2]", 0, 8)}),
               std::string(8, '\0')),
       "overlap"},
      {"gap",
       file_of(object_of({entry("a", "F32", "[2]", 0, 8), entry("b", "F32", "[2]", 12, 20)}),
               std::string(20, '\0')),
       "gap of 4 bytes between tensors \"a\" and \"b\""},
      {"data not starting at 0", one(entry("a", "F32", "[2]", 8, 16), std::string(16, '\0')),
       "data buffer does not start with a tensor: the first, \"a\", begins at offset 8"},
      {"trailing bytes", one(entry("a", "F32", "[2]", 0, 8), std::string(11, '\0')),
       "3 trailing bytes after the last tensor"},
      {"bytes but no tensors", file_of("{}", "abc"), "3 trailing bytes after the last tensor"},
      {"duplicate names",
       file_of(object_of({entry("a", "F32", "[1]", 0, 4), entry("a", "F32", "[1]", 4, 8)}),
               std::string(8, '\0')),
       "duplicate tensor name \"a\""},
      {"duplicate key in entry",
       file_of("{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
               "x"),
       "duplicate key \"dtype\" in tensor \"a\""},
      {"extra key",
       file_of("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],"
               "\"foo\":1}}",
               "x"),
       "tensor \"a\" has unexpected key \"foo\""},
      {"missing data_offsets", file_of("{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", "x"),
       "tensor \"a\" lacks \"data_offsets\""},
      {"metadata value not string", file_of("{\"__metadata__\":{\"k\":1}}"),
       "__metadata__ value of \"k\" is not a string"},
      {"metadata not object", file_of("{\"__metadata__\":[\"k\"]}"),
       "__metadata__ is not a JSON object"},
      {"duplicate metadata", file_of("{\"__metadata__\":{},\"__metadata__\":{}}"),
       "duplicate __metadata__"},
      {"duplicate metadata key", file_of("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}"),
       "duplicate key \"k\" in __metadata__"},
      {"deep nesting", file_of(deep), "header nests deeper than a safetensors header can"},
      {"unsupported dtype", one(entry("a", "BOOL", "[3]", 0, 3), "abc"),
       "tensor \"a\" has dtype BOOL, which tfm does not support"},
      {"control chars in name", file_of("{\"a\\nb\": 5}"), "entry of tensor \"a\\nb\""},
  };
}

TEST(Safetensors, BrokenFilesGetTheirOwnError) {
  const auto cases = broken_files();
  EXPECT_GE(cases.size(), 20u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    EXPECT_TFM_ERROR(parse_bytes(c.bytes), c.error);
    EXPECT_TFM_ERROR(parse_bytes(c.bytes), "test.safetensors: ");
  }
}

TEST(Safetensors, BrokenFilesOnDiskNameThePath) {
  TempDir dir;
  const std::string empty = dir.file("empty.safetensors");
  write_raw(empty, "");
  EXPECT_TFM_ERROR(load_safetensors(empty),
                   empty + ": file is 0 bytes, shorter than the 8-byte header length");
  const std::string gap = dir.file("gap.safetensors");
  for (const auto& c : broken_files())
    if (std::string(c.label) == "gap") write_raw(gap, c.bytes);
  EXPECT_TFM_ERROR(load_safetensors(gap), gap + ": gap of 4 bytes");
  EXPECT_TFM_ERROR(load_safetensors(dir.file("missing.safetensors")),
                   "missing.safetensors': No such file or directory");
  EXPECT_TFM_ERROR(load_safetensors(dir.file("")), "not a regular file");
}

TEST(Safetensors, ErrorsNameTheMissingTensorAndTheFile) {
  SafetensorsFile f = parse_bytes(serialize_safetensors({{"a", Tensor::zeros({1})}}));
  EXPECT_TFM_ERROR(f.get("encoder.x"), "test.safetensors: no tensor named \"encoder.x\"");
  EXPECT_FALSE(f.contains("encoder.x"));
}

TEST(Safetensors, WriterRejectsBadInput) {
  const Tensor t = Tensor::zeros({2});
  EXPECT_TFM_ERROR(serialize_safetensors({{"a", t}, {"a", t}}), "duplicate tensor \"a\"");
  EXPECT_TFM_ERROR(serialize_safetensors({{"__metadata__", t}}), "\"__metadata__\" is reserved");
  EXPECT_TFM_ERROR(serialize_safetensors({{"bad\xff", t}}), "not valid UTF-8");
  EXPECT_TFM_ERROR(serialize_safetensors({{"a", Tensor()}}), "tensor \"a\" is undefined");
  EXPECT_TFM_ERROR(serialize_safetensors({}, {{"k", "\xc0"}}), "__metadata__ entry \"k\"");
  TempDir dir;
  EXPECT_TFM_ERROR(save_safetensors(dir.file("x.safetensors"), {{"a", t}, {"a", t}}),
                   "cannot save '" + dir.file("x.safetensors") + "': duplicate");
  EXPECT_TRUE(dir.entries().empty());
}

TEST(Safetensors, AtomicWrite) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  // A directory that does not exist: clean error, nothing created.
  EXPECT_TFM_ERROR(save_safetensors(dir.file("nope/m.safetensors"), {{"a", Tensor::zeros({1})}}),
                   "No such file or directory");
  EXPECT_TFM_ERROR(save_safetensors(dir.file("nope/m.safetensors"), {{"a", Tensor::zeros({1})}}),
                   dir.file("nope/m.safetensors"));
  // After a save only the file remains; saving again replaces it.
  save_safetensors(path, {{"a", Tensor::full({3}, 1.0)}});
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.safetensors"});
  save_safetensors(path, {{"b", Tensor::full({2}, 2.0, DType::f64)}}, {{"v", "2"}});
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.safetensors"});
  SafetensorsFile f = load_safetensors(path);
  EXPECT_FALSE(f.contains("a"));
  EXPECT_EQ(f.get("b").to_vector<double>(), (std::vector<double>{2.0, 2.0}));
  EXPECT_EQ(f.metadata.at("v"), "2");
}

TEST(Safetensors, AtomicWriterWithoutCommitLeavesNothing) {
  TempDir dir;
  const std::string path = dir.file("f.bin");
  write_file_atomic(path, "old");
  {
    AtomicFileWriter w(path);
    w.write("new content");
    EXPECT_EQ(dir.entries().size(), 2u);  // the temporary file sits beside the target
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"f.bin"});
  EXPECT_EQ(read_file(path), "old");
}

// A write that fails part way (here a file size limit: EFBIG, as ENOSPC would be on a full
// disk) is an error naming the path and errno text; the old file survives, the temp file goes.
TEST(Safetensors, FailedWriteKeepsTheOldFile) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  save_safetensors(path, {{"a", Tensor::full({3}, 1.0)}});
  const std::string old = read_file(path);

  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string err = testing::error_of([&] {
    save_safetensors(path, {{"big", Tensor::zeros({100000})}});
  });
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_NE(err.find("cannot write '" + path + "': " + std::strerror(EFBIG)), std::string::npos)
      << err;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.safetensors"});
  EXPECT_EQ(read_file(path), old);
}

}  // namespace
}  // namespace tfm
