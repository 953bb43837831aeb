#include "tfm/serve/api.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "tfm/core/suggest.h"

namespace tfm::serve {

namespace {

using json = nlohmann::json;

constexpr size_t kMaxDepth = 32;

// The fields each request may have; any other is a 400 naming the closest of these.
const std::vector<std::string> kTranslateFields = {
    "text",           "target_prefix",    "beam_size",          "n_best",
    "length_penalty", "normalize_scores", "max_length",         "max_new_tokens",
    "min_length",     "source_lang",      "target_lang",        "sampling",
    "return_scores",  "return_attention", "repetition_penalty", "no_repeat_ngram_size"};
const std::vector<std::string> kSamplingFields = {"topk", "topp", "temperature", "seed"};
const std::vector<std::string> kLibreFields = {"q",      "source",       "target",
                                               "format", "alternatives", "api_key"};

std::string dump(const json& j) {
  // Replace rather than throw: a detokenised piece is not trusted to be valid UTF-8.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag.
std::string untagged(const char* what) {
  const std::string_view w(what);
  const size_t close = w.find("] ");
  return std::string(w.rfind("[json.exception.", 0) == 0 && close != std::string_view::npos
                         ? w.substr(close + 2)
                         : w);
}

// An object or array the parser is inside: an object's keys so far and the current one.
struct Frame {
  bool object = false;
  std::string key;
  std::set<std::string> keys;
};

// The body as a JSON object. Numbers that do not fit a double are a 400 naming their field
// ("sampling.temperature"), which the parser's callback tracks; so is a field given twice (the
// parser would keep the last silently); nesting is bounded.
json parse_object(const std::string& body) {
  std::vector<Frame> frames;
  const auto path = [&] {
    std::string p;
    for (const Frame& f : frames)
      if (f.object && !f.key.empty()) p += (p.empty() ? "" : ".") + f.key;
    return p;
  };
  const json::parser_callback_t track = [&](int, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::object_start || event == E::array_start) {
      frames.push_back({event == E::object_start, {}, {}});
    } else if ((event == E::object_end || event == E::array_end) && !frames.empty()) {
      frames.pop_back();
    } else if (event == E::key && !frames.empty()) {
      frames.back().key = parsed.get<std::string>();
      if (!frames.back().keys.insert(frames.back().key).second)
        throw HttpError(400, "'" + path() + "' is given twice");
    }
    if (frames.size() > kMaxDepth)
      throw HttpError(400,
                      "the JSON is nested deeper than " + std::to_string(kMaxDepth) + " levels");
    return true;
  };
  json j;
  try {
    j = json::parse(body, track);
  } catch (const json::out_of_range& e) {
    const std::string what = untagged(e.what());
    const size_t quote = what.find('\'');
    const std::string literal = quote == std::string::npos ? what : what.substr(quote);
    const std::string field = path();
    throw HttpError(400, (field.empty() ? std::string("a number") : "'" + field + "'") +
                             " is out of the range of a double: " + literal);
  } catch (const json::exception& e) {
    throw HttpError(400, "malformed JSON: " + untagged(e.what()));
  }
  if (!j.is_object()) throw HttpError(400, "the body must be a JSON object");
  return j;
}

// The texts' field of one API sent to the other: the route it belongs to.
const std::map<std::string_view, const char*> kOtherApiFields = {
    {"q", "LibreTranslate's: POST /translate takes it; POST /v1/translate takes 'text'"},
    {"text", "POST /v1/translate's: LibreTranslate's POST /translate takes 'q'"},
};

// A 400 for the first field of `j` that is not in `known`, naming it (prefix.name) and the
// closest known ones (core/suggest.h), or all of them when none is close.
void check_fields(const json& j, const std::vector<std::string>& known, const std::string& prefix) {
  for (const auto& [name, value] : j.items()) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string message = "unknown field '" + prefix + name + "'";
    if (const auto other = kOtherApiFields.find(name);
        prefix.empty() && other != kOtherApiFields.end())
      throw HttpError(400, message + " (" + other->second + ")");
    std::vector<std::string> close = closest_names(name, known);
    for (auto& c : close) c = prefix + c;
    if (!close.empty())
      message += " (did you mean " + one_of(close, "'") + "?)";
    else
      message += " (the fields are " + one_of(known, "") + ")";
    throw HttpError(400, message);
  }
}

// j[key] when present and not null, else nullptr.
const json* field(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// A field's name in messages: 'sampling.topk'.
std::string quoted(const std::string& prefix, const char* key) {
  return "'" + prefix + key + "'";
}

// An integer (a JSON type check only: what its value may be is validate_translation_options').
int64_t get_int(const json& j, const char* key, int64_t fallback, const std::string& prefix = "") {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_number_integer())
    throw HttpError(400, quoted(prefix, key) + " must be an integer (got " + v->type_name() + ")");
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX})
    throw HttpError(400, quoted(prefix, key) + " does not fit a 64-bit integer");
  return v->get<int64_t>();
}

// A non-negative integer of 64 bits (a seed).
uint64_t get_uint(const json& j, const char* key, uint64_t fallback, const std::string& prefix) {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_number_unsigned())
    throw HttpError(400, quoted(prefix, key) + " must be a non-negative integer (got " +
                             (v->is_number_integer() ? "a negative one" : v->type_name()) + ")");
  return v->get<uint64_t>();
}

double get_number(const json& j, const char* key, double fallback, const std::string& prefix = "") {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_number())
    throw HttpError(400, quoted(prefix, key) + " must be a number (got " + v->type_name() + ")");
  return v->get<double>();
}

bool get_bool(const json& j, const char* key, bool fallback) {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_boolean())
    throw HttpError(400, quoted("", key) + " must be true or false (got " + v->type_name() + ")");
  return v->get<bool>();
}

std::string get_string(const json& j, const char* key, const std::string& fallback) {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_string())
    throw HttpError(400, quoted("", key) + " must be a string (got " + v->type_name() + ")");
  return v->get<std::string>();
}

void check_count(size_t n, int64_t max_sentences) {
  if (static_cast<int64_t>(n) > max_sentences)
    throw HttpError(413, std::to_string(n) + " sentences in one request; the limit is " +
                             std::to_string(max_sentences) + " (--max-sentences)");
}

// A string or a list of strings; `single` tells which.
std::vector<std::string> get_texts(const json& j, const char* key, int64_t max_sentences,
                                   bool& single) {
  const json* v = field(j, key);
  if (!v) throw HttpError(400, quoted("", key) + " is required");
  std::vector<std::string> out;
  if (v->is_string()) {
    single = true;
    out.push_back(v->get<std::string>());
    return out;
  }
  if (!v->is_array())
    throw HttpError(400, quoted("", key) + " must be a string or a list of strings (got " +
                             v->type_name() + ")");
  check_count(v->size(), max_sentences);
  single = false;
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string())
      throw HttpError(400, quoted("", key) + " must be a list of strings (element " +
                               std::to_string(i) + " is " + (*v)[i].type_name() + ")");
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

void read_sampling(const json& j, TranslationOptions& o) {
  const json* s = field(j, "sampling");
  if (s && !s->is_object())
    throw HttpError(400, std::string("'sampling' must be an object (got ") + s->type_name() + ")");
  o.search = search_for(o.beam_size, /*sampling=*/s != nullptr);
  if (!s) return;
  check_fields(*s, kSamplingFields, "sampling.");
  o.sampling_topk = get_int(*s, "topk", 0, "sampling.");
  o.sampling_topp = get_number(*s, "topp", 1.0, "sampling.");
  o.sampling_temperature = get_number(*s, "temperature", 1.0, "sampling.");
  o.seed = get_uint(*s, "seed", 0, "sampling.");
}

// Attention weights rounded to 6 decimals: the JSON of a long sentence's matrix stays small.
json attention_json(const TranslationHypothesis& h, const AttentionLabels& labels, size_t k) {
  json weights = json::array();
  for (const auto& row : h.attention) {
    json r = json::array();
    for (float w : row) r.push_back(std::round(static_cast<double>(w) * 1e6) / 1e6);
    weights.push_back(std::move(r));
  }
  return {
      {"source_tokens", labels.source},
      {"target_tokens", k < labels.target.size() ? labels.target[k] : std::vector<std::string>{}},
      {"weights", std::move(weights)}};
}

}  // namespace

TranslateRequest parse_translate_request(const std::string& body, int64_t max_sentences,
                                         const TranslationOptions& defaults) {
  const json j = parse_object(body);
  check_fields(j, kTranslateFields, "");
  TranslateRequest r;
  r.texts = get_texts(j, "text", max_sentences, r.single);
  if (field(j, "target_prefix")) {
    bool single = false;
    r.target_prefix = get_texts(j, "target_prefix", max_sentences, single);
    if (single != r.single || r.target_prefix.size() != r.texts.size())
      throw HttpError(
          400,
          "'target_prefix' must have the shape of 'text': " +
              std::string(r.single ? "a string"
                                   : "a list of " + std::to_string(r.texts.size()) + " strings"));
  }
  TranslationOptions& o = r.options;
  o = defaults;
  o.beam_size = get_int(j, "beam_size", defaults.beam_size);
  o.num_hypotheses = get_int(j, "n_best", std::min(defaults.num_hypotheses, o.beam_size));
  o.length_penalty = get_number(j, "length_penalty", defaults.length_penalty);
  o.normalize_scores = get_bool(j, "normalize_scores", defaults.normalize_scores);
  o.max_decoding_length = get_int(j, "max_length", o.max_decoding_length);
  o.max_new_tokens = get_int(j, "max_new_tokens", o.max_new_tokens);
  o.min_decoding_length = get_int(j, "min_length", o.min_decoding_length);
  o.repetition_penalty = get_number(j, "repetition_penalty", defaults.repetition_penalty);
  o.no_repeat_ngram_size = get_int(j, "no_repeat_ngram_size", defaults.no_repeat_ngram_size);
  o.source_lang = get_string(j, "source_lang", "");
  o.target_lang = get_string(j, "target_lang", "");
  o.return_attention = get_bool(j, "return_attention", false);
  r.return_scores = get_bool(j, "return_scores", false);
  o.return_scores = r.return_scores;  // greedy search without them skips the log-softmax
  read_sampling(j, o);
  return r;
}

std::string json_name(std::string_view field) {
  static const std::map<std::string_view, std::string> names = {
      {"num_hypotheses", "'n_best'"},
      {"max_decoding_length", "'max_length'"},
      {"min_decoding_length", "'min_length'"},
      {"sampling_topk", "'sampling.topk'"},
      {"sampling_topp", "'sampling.topp'"},
      {"sampling_temperature", "'sampling.temperature'"},
      {"seed", "'sampling.seed'"},
      {"search=sampling", "'sampling'"},
      {"search=beam", "a 'beam_size' above 1"},
  };
  const auto it = names.find(field);
  if (it != names.end()) return it->second;
  std::string quoted(1, '\'');  // not "'" + ...: GCC 12 warns (-Wrestrict) on that
  return quoted.append(field).append(1, '\'');
}

void validate_request(const TranslateRequest& request, const ModelInfo& model) {
  try {
    validate_translation_options(request.options, model, json_name,
                                 {.max_beam_size = kMaxBeamSize});
  } catch (const InvalidArgument& e) {
    throw HttpError(400, e.message());
  }
}

std::string translate_response(const TranslateRequest& request,
                               const std::vector<TranslationResult>& results,
                               int64_t model_positions, const char* key,
                               const std::vector<AttentionLabels>& labels) {
  const bool nested = request.options.num_hypotheses > 1;
  const bool attention = request.options.return_attention;
  json translations = json::array(), scores = json::array(), weights = json::array();
  json warnings = json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& hyps = results[i].hypotheses;
    const AttentionLabels none;
    const AttentionLabels& l = i < labels.size() ? labels[i] : none;
    json t = json::array(), s = json::array(), a = json::array();
    for (size_t k = 0; k < hyps.size(); ++k) {
      t.push_back(hyps[k].text);
      s.push_back(hyps[k].score);
      if (attention) a.push_back(attention_json(hyps[k], l, k));
    }
    if (nested) {
      translations.push_back(std::move(t));
      scores.push_back(std::move(s));
      weights.push_back(std::move(a));
    } else {
      translations.push_back(hyps.empty() ? json(std::string()) : t[0]);
      scores.push_back(hyps.empty() ? json(0.0) : s[0]);
      weights.push_back(hyps.empty() ? json(nullptr) : a[0]);
    }
    if (results[i].source_truncated)
      warnings.push_back("text " + std::to_string(i) + " is longer than the model's " +
                         std::to_string(model_positions) +
                         " positions: only its beginning was translated");
  }
  json out = {{key, std::move(translations)}};
  if (request.return_scores) out["scores"] = std::move(scores);
  if (attention) out["attention"] = std::move(weights);
  if (!warnings.empty()) out["warnings"] = std::move(warnings);
  return dump(out);
}

LibreRequest parse_libre_json(const std::string& body, int64_t max_sentences) {
  const json j = parse_object(body);
  check_fields(j, kLibreFields, "");
  LibreRequest r;
  r.q = get_texts(j, "q", max_sentences, r.single);
  r.source = get_string(j, "source", "auto");
  r.target = get_string(j, "target", "");
  r.format = get_string(j, "format", "text");
  r.api_key = get_string(j, "api_key", "");
  r.alternatives = get_int(j, "alternatives", 0);
  return r;
}

LibreRequest parse_libre_form(const FormFields& fields, int64_t max_sentences) {
  LibreRequest r;
  std::set<std::string> seen;
  for (const auto& [name, value] : fields) {
    if (name == "q") {
      r.q.push_back(value);
      continue;
    }
    // Each other field once (which of two would be meant?); an unknown one is named as in JSON.
    if (!seen.insert(name).second)
      throw HttpError(400, "'" + name + "' is given twice (only 'q' may repeat)");
    if (name == "alternatives") {
      try {
        size_t used = 0;
        r.alternatives = std::stoll(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
      } catch (const std::exception&) {
        throw HttpError(400, "'alternatives' must be an integer (got '" + value + "')");
      }
      continue;
    }
    std::string* slot = name == "source"    ? &r.source
                        : name == "target"  ? &r.target
                        : name == "format"  ? &r.format
                        : name == "api_key" ? &r.api_key
                                            : nullptr;
    if (!slot) check_fields(json{{name, value}}, kLibreFields, "");  // throws: unknown
    if (slot) *slot = value;
  }
  if (r.q.empty()) throw HttpError(400, "'q' is required");
  check_count(r.q.size(), max_sentences);
  r.single = r.q.size() == 1;
  return r;
}

std::string libre_response(const LibreRequest& request,
                           const std::vector<std::vector<std::string>>& translations) {
  json text = json::array(), alternatives = json::array();
  for (const auto& hyps : translations) {
    text.push_back(hyps.empty() ? std::string() : hyps[0]);
    json rest = json::array();
    for (size_t k = 1; k < hyps.size(); ++k) rest.push_back(hyps[k]);
    alternatives.push_back(std::move(rest));
  }
  json out;
  out["translatedText"] = request.single ? (text.empty() ? json("") : text[0]) : text;
  if (request.alternatives > 0)
    out["alternatives"] =
        request.single ? (alternatives.empty() ? json::array() : alternatives[0]) : alternatives;
  return dump(out);
}

std::string language_name(std::string_view code) {
  static const std::map<std::string_view, const char*> names = {
      {"ar", "Arabic"},    {"bg", "Bulgarian"}, {"ca", "Catalan"},    {"cs", "Czech"},
      {"da", "Danish"},    {"de", "German"},    {"el", "Greek"},      {"en", "English"},
      {"es", "Spanish"},   {"et", "Estonian"},  {"fa", "Persian"},    {"fi", "Finnish"},
      {"fr", "French"},    {"ga", "Irish"},     {"he", "Hebrew"},     {"hi", "Hindi"},
      {"hr", "Croatian"},  {"hu", "Hungarian"}, {"id", "Indonesian"}, {"it", "Italian"},
      {"ja", "Japanese"},  {"ko", "Korean"},    {"lt", "Lithuanian"}, {"lv", "Latvian"},
      {"nb", "Norwegian"}, {"nl", "Dutch"},     {"pl", "Polish"},     {"pt", "Portuguese"},
      {"ro", "Romanian"},  {"ru", "Russian"},   {"sk", "Slovak"},     {"sl", "Slovenian"},
      {"sq", "Albanian"},  {"sv", "Swedish"},   {"th", "Thai"},       {"tr", "Turkish"},
      {"uk", "Ukrainian"}, {"ur", "Urdu"},      {"vi", "Vietnamese"}, {"zh", "Chinese"},
  };
  const auto it = names.find(code);
  return it != names.end() ? it->second : std::string(code);
}

std::string languages_response(const std::vector<LanguagePair>& pairs) {
  json out = json::array();
  std::map<std::string, size_t> at;  // source code -> its entry
  for (const auto& p : pairs) {
    auto it = at.find(p.source);
    if (it == at.end()) {
      it = at.emplace(p.source, out.size()).first;
      out.push_back(
          {{"code", p.source}, {"name", language_name(p.source)}, {"targets", json::array()}});
    }
    out[it->second]["targets"].push_back(p.target);
  }
  return dump(out);
}

std::string frontend_settings_response(const std::vector<LanguagePair>& pairs, bool key_required,
                                       int64_t frontend_timeout_ms) {
  const auto language = [](const std::string& code) {
    return json{{"code", code},
                {"name", code == "auto" ? std::string("Auto Detect") : language_name(code)}};
  };
  json out = {{"charLimit", -1},
              {"frontendTimeout", frontend_timeout_ms},
              {"apiKeys", key_required},
              {"keyRequired", key_required},
              {"suggestions", false},
              {"filesTranslation", false},
              {"supportedFilesFormat", json::array()}};
  out["language"] = {{"source", language(pairs.empty() ? "auto" : pairs[0].source)},
                     {"target", language(pairs.empty() ? "" : pairs[0].target)}};
  return dump(out);
}

std::string model_response(const ModelInfo& info, const TranslatorOptions& options) {
  json out;
  out["config"] = json::parse(info.config_json);
  out["decoder_only"] = info.decoder_only;
  out["src_vocab_size"] = info.src_vocab_size;
  out["trg_vocab_size"] = info.trg_vocab_size;
  out["max_length"] = info.max_length;
  out["parameters"] = info.parameter_count;
  out["compute_type"] = compute_type_name(options.compute_type);
  out["inter_threads"] = options.inter_threads;
  out["intra_threads"] = options.intra_threads;
  return dump(out);
}

std::string error_body(const std::string& message) {
  return dump(json{{"error", message}});
}

}  // namespace tfm::serve
