#include "tfm/model/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include <sys/mman.h>
#include <unistd.h>

#include "tfm/core/check.h"
#include "tfm/core/device_copy.h"
#include "tfm/core/file_util.h"

namespace tfm {

// The format stores little-endian data and tensors view it without conversion.
static_assert(std::endian::native == std::endian::little,
              "safetensors support assumes a little-endian host");

namespace {

using Json = nlohmann::ordered_json;  // keeps header order, so errors and ties follow the file

struct DtypeInfo {
  const char* name;
  size_t size;
  std::optional<DType> dtype;  // nullopt: in the spec, but tfm has no such dtype
};

// The spec's byte-sized dtypes. Sub-byte ones (F4, F6_*) are not accepted: their sizes are not
// whole bytes per element and tfm has no use for them.
constexpr DtypeInfo kDtypes[] = {
    {"F64", 8, DType::f64},    {"F32", 4, DType::f32},       {"F16", 2, DType::f16},
    {"BF16", 2, DType::bf16},  {"I64", 8, DType::i64},       {"I32", 4, DType::i32},
    {"I8", 1, DType::i8},      {"U8", 1, DType::u8},         {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt},  {"U32", 4, std::nullopt},     {"U64", 8, std::nullopt},
    {"BOOL", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const char* safetensors_name(DType dt) {
  for (const auto& d : kDtypes)
    if (d.dtype == dt) return d.name;
  TFM_FAIL() << "dtype " << dtype_name(dt) << " has no safetensors name";
  return "";
}

// Offset of the first byte that breaks strict UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or npos when all is well.
size_t invalid_utf8_at(const unsigned char* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07;
    } else {
      return i;
    }
    if (n - i < len) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return i;
    if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return i;
    i += len;
  }
  return std::string::npos;
}

bool valid_utf8(const std::string& s) {
  return invalid_utf8_at(reinterpret_cast<const unsigned char*>(s.data()), s.size()) ==
         std::string::npos;
}

// Names in messages are quoted as JSON strings: control characters and quotes cannot break the
// one-line error.
std::string json_quoted(const std::string& s) {
  return Json(s).dump();
}

std::string shape_list(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

struct Entry {
  std::string name;
  const DtypeInfo* dtype = nullptr;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

// Parses the header, rejecting duplicate keys (nlohmann keeps the last one silently) and
// nesting deeper than any valid header has (so a hostile header cannot build a deep tree).
Json parse_header(const char* p, size_t n, const std::string& what) {
  std::vector<std::set<std::string>> open_keys;  // one set per open object
  std::string top_key;                           // the entry being parsed, for messages
  std::string problem;
  // Top object 0, entry 1, shape/offsets 2; one more level still gets the precise type error.
  constexpr int kMaxContainerDepth = 3;
  Json::parser_callback_t guard = [&](int depth, nlohmann::json::parse_event_t event,
                                      Json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (!problem.empty()) return false;  // discard everything after the first problem
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (depth > kMaxContainerDepth) {
          problem = "header nests deeper than a safetensors header can";
          return false;
        }
        if (event == E::object_start) open_keys.emplace_back();
        return true;
      case E::object_end:
        if (!open_keys.empty()) open_keys.pop_back();
        return true;
      case E::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (open_keys.size() == 1) top_key = key;
        if (open_keys.empty() || open_keys.back().insert(key).second) return true;
        if (open_keys.size() == 1)
          problem = key == "__metadata__" ? "duplicate __metadata__"
                                          : "duplicate tensor name " + json_quoted(key);
        else
          problem = "duplicate key " + json_quoted(key) + " in " +
                    (top_key == "__metadata__" ? "__metadata__" : "tensor " + json_quoted(top_key));
        return false;
      }
      default:
        return true;
    }
  };
  Json header;
  try {
    header = Json::parse(p, p + n, guard, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const nlohmann::json::exception& e) {
    TFM_CHECK(!problem.empty()) << what << ": header is not valid JSON: " << e.what();
  }
  TFM_CHECK(problem.empty()) << what << ": " << problem;
  TFM_CHECK(header.is_object()) << what << ": header is not a JSON object";
  return header;
}

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Entry parse_entry(const std::string& name, const Json& v, uint64_t data_len,
                  const std::string& what) {
  const std::string tn = "tensor " + json_quoted(name);
  TFM_CHECK(v.is_object()) << what << ": entry of " << tn << " is not a JSON object";
  for (const auto& [key, _] : v.items())
    TFM_CHECK(key == "dtype" || key == "shape" || key == "data_offsets")
        << what << ": " << tn << " has unexpected key " << json_quoted(key);
  for (const char* key : {"dtype", "shape", "data_offsets"})
    TFM_CHECK(v.contains(key)) << what << ": " << tn << " lacks \"" << key << "\"";

  Entry e;
  e.name = name;
  const Json& dt = v.at("dtype");
  TFM_CHECK(dt.is_string()) << what << ": dtype of " << tn << " is not a string";
  e.dtype = find_dtype(dt.get_ref<const std::string&>());
  TFM_CHECK(e.dtype != nullptr) << what << ": " << tn << " has unknown dtype " << dt.dump();

  const Json& shape = v.at("shape");
  bool shape_ok = shape.is_array();
  if (shape_ok)
    for (const Json& d : shape) shape_ok = shape_ok && d.is_number_unsigned();
  TFM_CHECK(shape_ok) << what << ": shape of " << tn << " is not an array of non-negative integers";

  const Json& offs = v.at("data_offsets");
  const bool offs_ok = offs.is_array() && offs.size() == 2 && offs[0].is_number_unsigned() &&
                       offs[1].is_number_unsigned();
  TFM_CHECK(offs_ok) << what << ": data_offsets of " << tn << " is not two non-negative integers";
  e.begin = offs[0].get<uint64_t>();
  e.end = offs[1].get<uint64_t>();
  TFM_CHECK(e.begin <= e.end) << what << ": " << tn << " has data_offsets [" << e.begin << ", "
                              << e.end << "] with begin > end";
  TFM_CHECK(e.end <= data_len) << what << ": " << tn << " has data_offsets [" << e.begin << ", "
                               << e.end << "] past the end of the " << data_len
                               << "-byte data buffer";

  // Checked arithmetic: a hostile shape must not wrap around to a size that happens to match.
  uint64_t nbytes = e.dtype->size;
  bool overflow = false;
  for (const Json& d : shape) {
    const uint64_t dim = d.get<uint64_t>();
    overflow = overflow || dim > static_cast<uint64_t>(INT64_MAX) ||
               __builtin_mul_overflow(nbytes, dim, &nbytes);
    if (!overflow) e.shape.push_back(static_cast<int64_t>(dim));
  }
  TFM_CHECK(!overflow && nbytes <= static_cast<uint64_t>(INT64_MAX))
      << what << ": size of " << tn << " (shape " << shape.dump() << " of " << e.dtype->name
      << ") overflows";
  TFM_CHECK(nbytes == e.end - e.begin)
      << what << ": " << tn << " is " << e.dtype->name << " " << shape_list(e.shape) << " = "
      << nbytes << " bytes but data_offsets [" << e.begin << ", " << e.end << "] hold "
      << e.end - e.begin;
  return e;
}

// Sorted by begin, the tensors must tile [0, data_len) exactly.
void check_layout(std::vector<Entry>& entries, uint64_t data_len, const std::string& what) {
  // Zero-size tensors sort before a tensor starting at the same offset; stable keeps the header
  // order among equal offsets, so the file order is deterministic.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < cursor)
      TFM_FAIL() << what << ": tensors " << json_quoted(prev->name) << " [" << prev->begin << ", "
                 << prev->end << "] and " << json_quoted(e.name) << " [" << e.begin << ", " << e.end
                 << "] overlap";
    if (e.begin > cursor) {
      if (prev == nullptr)
        TFM_FAIL() << what << ": data buffer does not start with a tensor: the first, "
                   << json_quoted(e.name) << ", begins at offset " << e.begin;
      else
        TFM_FAIL() << what << ": gap of " << e.begin - cursor << " bytes between tensors "
                   << json_quoted(prev->name) << " and " << json_quoted(e.name);
    }
    cursor = e.end;
    prev = &e;
  }
  TFM_CHECK(cursor == data_len) << what << ": " << data_len - cursor
                                << " trailing bytes after the last tensor (data buffer is "
                                << data_len << " bytes, tensors cover " << cursor << ")";
}

// Tensor order and header for writing; tensors made contiguous.
struct Plan {
  std::string header;  // padded so 8 + header.size() is a multiple of 8
  std::vector<std::pair<std::string, Tensor>> tensors;
  uint64_t data_bytes = 0;
};

Plan plan_file(const std::vector<std::pair<std::string, Tensor>>& tensors,
               const std::map<std::string, std::string>& metadata, const std::string& what) {
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    const std::string tn = "tensor " + (valid_utf8(name) ? json_quoted(name) : "(name not UTF-8)");
    TFM_CHECK(valid_utf8(name)) << what << ": a tensor name is not valid UTF-8";
    TFM_CHECK(name != "__metadata__")
        << what << ": \"__metadata__\" is reserved, not a tensor name";
    TFM_CHECK(names.insert(name).second) << what << ": duplicate " << tn;
    TFM_CHECK(t.defined()) << what << ": " << tn << " is undefined";
  }
  for (const auto& [k, v] : metadata)
    TFM_CHECK(valid_utf8(k) && valid_utf8(v))
        << what << ": __metadata__ entry " << (valid_utf8(k) ? json_quoted(k) : "(key not UTF-8)")
        << " is not valid UTF-8";

  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dtype_size(tensors[a].second.dtype()) > dtype_size(tensors[b].second.dtype());
  });

  Plan plan;
  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  for (size_t i : order) {
    const auto& [name, t] = tensors[i];
    Tensor c = to_device(t, Device::cpu).contiguous();  // a device tensor through one copy
    const uint64_t begin = plan.data_bytes, end = begin + c.nbytes();
    header[name] = Json{{"dtype", safetensors_name(c.dtype())},
                        {"shape", c.shape()},
                        {"data_offsets", {begin, end}}};
    plan.data_bytes = end;
    plan.tensors.emplace_back(name, std::move(c));
  }
  plan.header = header.dump();
  // Spaces, as the reference writer pads, so the data buffer starts 8-byte aligned.
  plan.header.append((8 - plan.header.size() % 8) % 8, ' ');
  TFM_CHECK(plan.header.size() <= kSafetensorsMaxHeader)
      << what << ": header of " << plan.header.size() << " bytes exceeds the "
      << kSafetensorsMaxHeader << "-byte limit";
  return plan;
}

std::string length_prefix(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out;
}

}  // namespace

const Tensor& SafetensorsFile::get(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  TFM_FAIL() << source << ": no tensor named " << json_quoted(name);
  return tensors.front().second;  // not reached
}

bool SafetensorsFile::contains(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return true;
  return false;
}

SafetensorsFile parse_safetensors(std::shared_ptr<Storage> bytes, const std::string& what) {
  TFM_CHECK(bytes != nullptr) << what << ": no data";
  TFM_CHECK(bytes->device == Device::cpu) << what << ": bytes must be in cpu memory";
  const uint64_t size = bytes->nbytes;
  const auto* base = static_cast<const unsigned char*>(bytes->data.get());
  TFM_CHECK(base != nullptr || size == 0)
      << what << ": storage of " << size << " bytes has no data";
  TFM_CHECK(size >= 8) << what << ": file is " << size
                       << " bytes, shorter than the 8-byte header length";
  const uint64_t n = read_u64_le(base);
  TFM_CHECK(n <= kSafetensorsMaxHeader)
      << what << ": header too large (" << n << " bytes, limit " << kSafetensorsMaxHeader << ")";
  TFM_CHECK(n <= size - 8) << what << ": header length past end of file (header of " << n
                           << " bytes, file of " << size << ")";
  const char* hp = reinterpret_cast<const char*>(base + 8);
  const size_t bad = invalid_utf8_at(base + 8, n);
  TFM_CHECK(bad == std::string::npos)
      << what << ": header is not valid UTF-8 (byte " << bad << " of the header)";
  // The reference implementation insists on '{' first; a clear message beats a JSON one.
  TFM_CHECK(n > 0 && hp[0] == '{')
      << what << ": header is not a JSON object (it must start with '{')";
  const Json header = parse_header(hp, n, what);

  const uint64_t data_len = size - 8 - n;
  SafetensorsFile out;
  out.source = what;
  std::vector<Entry> entries;
  for (const auto& [key, v] : header.items()) {
    if (key == "__metadata__") {
      TFM_CHECK(v.is_object()) << what << ": __metadata__ is not a JSON object";
      for (const auto& [mk, mv] : v.items()) {
        TFM_CHECK(mv.is_string()) << what << ": __metadata__ value of " << json_quoted(mk)
                                  << " is not a string";
        out.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    entries.push_back(parse_entry(key, v, data_len, what));
  }
  check_layout(entries, data_len, what);
  for (const Entry& e : entries)
    TFM_CHECK(e.dtype->dtype.has_value())
        << what << ": tensor " << json_quoted(e.name) << " has dtype " << e.dtype->name
        << ", which tfm does not support";

  const unsigned char* data = base + 8 + n;
  for (const Entry& e : entries) {
    const DType dt = *e.dtype->dtype;
    auto view = std::make_shared<Storage>();
    // Aliasing shared_ptr: points at this tensor's bytes, owns the whole mapping.
    view->data = std::shared_ptr<void>(bytes->data, const_cast<unsigned char*>(data + e.begin));
    view->nbytes = e.end - e.begin;
    Tensor t;
    try {
      t = Tensor::from_storage(view, e.shape, dt);
    } catch (const Error& err) {
      // Tensor's own limits (e.g. a zero-size tensor with absurd dimensions); keep its words,
      // drop its source location so the message stays one line about this file.
      std::string msg = err.what();
      msg.resize(std::min(msg.size(), msg.rfind(" [")));
      TFM_FAIL() << what << ": tensor " << json_quoted(e.name) << ": " << msg;
    }
    if (view->nbytes > 0 && reinterpret_cast<uintptr_t>(view->data.get()) % dtype_size(dt) != 0) {
      Tensor aligned = Tensor::empty(e.shape, dt);
      std::memcpy(aligned.raw_data(), view->data.get(), view->nbytes);
      t = aligned;
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

void SafetensorsFile::drop_pages(const std::string& name) const {
  if (mapping == nullptr || mapping->nbytes == 0) return;
  const Tensor& t = get(name);
  const auto base = reinterpret_cast<uintptr_t>(mapping->data.get());
  const auto begin = reinterpret_cast<uintptr_t>(t.raw_data());
  const uintptr_t end = begin + t.nbytes();
  if (t.nbytes() == 0 || begin < base || end > base + mapping->nbytes) return;  // an aligned copy
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  // Pages shared with a neighbour stay until it is dropped too, or the mapping goes.
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::shared_ptr<Storage> bytes = map_file(path);
  SafetensorsFile f = parse_safetensors(bytes, path);
  f.mapping = std::move(bytes);
  return f;
}

std::string serialize_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  Plan plan = plan_file(tensors, metadata, "safetensors");
  std::string out = length_prefix(plan.header.size()) + plan.header;
  out.reserve(out.size() + plan.data_bytes);
  for (const auto& [name, t] : plan.tensors)
    if (t.nbytes() > 0) out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  Plan plan = plan_file(tensors, metadata, "cannot save '" + path + "'");
  AtomicFileWriter w(path);
  w.write(length_prefix(plan.header.size()));
  w.write(plan.header);
  for (const auto& [name, t] : plan.tensors)
    if (t.nbytes() > 0) w.write(t.raw_data(), t.nbytes());
  w.commit();
}

}  // namespace tfm
