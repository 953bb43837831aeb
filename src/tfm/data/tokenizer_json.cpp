#include "tfm/data/tokenizer_json.h"

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"

namespace tfm {

using nlohmann::json;

namespace {

json parse_file(const std::string& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    TFM_FAIL() << path << " is not valid JSON: " << e.what();
  }
  return {};
}

NormalizerStep read_normalizer(const json& j, const std::string& where,
                               const std::function<std::string(const std::string&)>& file) {
  NormalizerStep s;
  const std::string type = j.at("type").get<std::string>();
  if (type == "precompiled") {
    s.kind = NormalizerStep::Kind::precompiled;
    s.charsmap =
        std::make_shared<PrecompiledCharsmap>(read_file(file(j.at("charsmap").get<std::string>())));
  } else if (type == "collapse_spaces") {
    s.kind = NormalizerStep::Kind::collapse_spaces;
    s.content = j.at("content").get<std::string>();
  } else if (type == "replace") {
    s.kind = NormalizerStep::Kind::replace;
    s.pattern = j.at("pattern").get<std::string>();
    s.content = j.at("content").get<std::string>();
  } else {
    TFM_FAIL() << where << ": unknown normalizer \"" << type << "\"";
  }
  return s;
}

PreTokenizerStep read_pre_tokenizer(const json& j, const std::string& where) {
  PreTokenizerStep s;
  const std::string type = j.at("type").get<std::string>();
  if (type == "metaspace") {
    s.kind = PreTokenizerStep::Kind::metaspace;
    s.replacement = j.at("replacement").get<std::string>();
    s.prepend = j.at("prepend").get<bool>();
    s.split = j.at("split").get<bool>();
  } else if (type == "whitespace_split") {
    s.kind = PreTokenizerStep::Kind::whitespace_split;
  } else if (type == "byte_level") {
    s.kind = PreTokenizerStep::Kind::byte_level;
    s.add_prefix_space = j.at("add_prefix_space").get<bool>();
    s.use_regex = j.at("use_regex").get<bool>();
  } else {
    TFM_FAIL() << where << ": unknown pre-tokenizer \"" << type << "\"";
  }
  return s;
}

DecoderSpec read_decoder(const json& j, const std::string& where) {
  DecoderSpec d;
  const std::string type = j.at("type").get<std::string>();
  if (type == "metaspace") {
    d.kind = DecoderSpec::Kind::metaspace;
    d.replacement = j.at("replacement").get<std::string>();
    d.prepend = j.at("prepend").get<bool>();
  } else if (type == "byte_level") {
    d.kind = DecoderSpec::Kind::byte_level;
  } else if (type == "none") {
    d.kind = DecoderSpec::Kind::none;
  } else {
    TFM_FAIL() << where << ": unknown decoder \"" << type << "\"";
  }
  return d;
}

}  // namespace

std::unordered_map<std::string, int64_t> read_piece_ids(const std::string& path) {
  const json j = parse_file(path);
  TFM_CHECK(j.is_object()) << path << ": a vocabulary is a JSON object of piece: id";
  std::unordered_map<std::string, int64_t> out;
  out.reserve(j.size());
  for (const auto& [piece, id] : j.items()) {
    TFM_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0)
        << path << ": the id of \"" << piece << "\" is " << id.dump();
    out[piece] = id.get<int64_t>();
  }
  return out;
}

BpeModel::Merges read_merges_json(const json& j, const std::string& where) {
  TFM_CHECK(j.is_array()) << where << ": merges are a JSON list";
  BpeModel::Merges out;
  out.reserve(j.size());
  for (const json& m : j) {
    if (m.is_string()) {  // "a b"
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      TFM_CHECK(space != std::string::npos && s.find(' ', space + 1) == std::string::npos)
          << where << ": merge \"" << s << "\" is not two tokens separated by one space";
      out.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else {
      TFM_CHECK(m.is_array() && m.size() == 2) << where << ": merge " << m.dump();
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    }
  }
  return out;
}

std::vector<std::pair<std::string, double>> read_unigram_pieces(const json& j,
                                                                const std::string& where) {
  TFM_CHECK(j.is_array()) << where << ": Unigram pieces are a JSON list of [piece, score]";
  std::vector<std::pair<std::string, double>> out;
  out.reserve(j.size());
  for (const json& p : j) {
    TFM_CHECK(p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_number())
        << where << ": Unigram piece " << p.dump();
    out.emplace_back(p[0].get<std::string>(), p[1].get<double>());
  }
  return out;
}

std::vector<AddedToken> read_added_tokens(const json& j, const std::string& where) {
  std::vector<AddedToken> out;
  try {
    for (const json& t : j) {
      AddedToken a;
      a.content = t.at("content").get<std::string>();
      a.id = t.at("id").get<int64_t>();
      a.special = t.value("special", false);
      a.lstrip = t.value("lstrip", false);
      a.rstrip = t.value("rstrip", false);
      a.single_word = t.value("single_word", false);
      a.normalized = t.value("normalized", false);
      out.push_back(std::move(a));
    }
  } catch (const json::exception& e) {
    TFM_FAIL() << where << ": added tokens: " << e.what();
  }
  return out;
}

json added_tokens_json(const std::vector<AddedToken>& tokens) {
  json out = json::array();
  for (const AddedToken& t : tokens)
    out.push_back({{"id", t.id},
                   {"content", t.content},
                   {"special", t.special},
                   {"lstrip", t.lstrip},
                   {"rstrip", t.rstrip},
                   {"single_word", t.single_word},
                   {"normalized", t.normalized}});
  return out;
}

void read_pipeline_steps(const json& j, const std::string& where,
                         const std::function<std::string(const std::string&)>& file,
                         PipelineSpec& spec) {
  try {
    for (const json& n : j.value("normalizers", json::array()))
      spec.normalizers.push_back(read_normalizer(n, where, file));
    for (const json& p : j.value("pre_tokenizers", json::array()))
      spec.pre_tokenizers.push_back(read_pre_tokenizer(p, where));
    spec.decoder = read_decoder(j.at("decoder"), where);
    const json& m = j.at("model");
    const std::string type = m.at("type").get<std::string>();
    if (type == "bpe") {
      BpeModel::Options o;
      o.unk_token = m.value("unk_token", "");
      o.fuse_unk = m.value("fuse_unk", false);
      o.byte_fallback = m.value("byte_fallback", false);
      o.ignore_merges = m.value("ignore_merges", false);
      const std::string merges_file = file(m.at("merges").get<std::string>());
      spec.bpe =
          std::make_shared<BpeModel>(read_piece_ids(file(m.at("vocab").get<std::string>())),
                                     read_merges_json(parse_file(merges_file), merges_file), o);
    } else if (type == "unigram") {
      const std::string pieces_file = file(m.at("pieces").get<std::string>());
      spec.unigram = std::make_shared<UnigramModel>(
          read_unigram_pieces(parse_file(pieces_file), pieces_file), m.at("unk_id").get<int64_t>(),
          m.value("byte_fallback", false));
    } else {
      TFM_FAIL() << where << ": unknown model \"" << type << "\" (bpe or unigram)";
    }
  } catch (const json::exception& e) {
    TFM_FAIL() << where << ": " << e.what();
  }
}

}  // namespace tfm
