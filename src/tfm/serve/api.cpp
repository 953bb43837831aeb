#include "tfm/serve/api.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <string_view>

namespace tfm::serve {

namespace {

using json = nlohmann::json;

std::string dump(const json& j) {
  // Replace rather than throw: a detokenised piece is not trusted to be valid UTF-8.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json parse_object(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    throw HttpError(400, std::string("malformed JSON: ") + e.what());
  }
  if (!j.is_object()) throw HttpError(400, "the body must be a JSON object");
  return j;
}

// j[key] when present and not null, else nullptr.
const json* field(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// An integer (a JSON type check only: what its value may be is validate_translation_options').
int64_t get_int(const json& j, const char* key, int64_t fallback) {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_number_integer())
    throw HttpError(400,
                    std::string("'") + key + "' must be an integer (got " + v->type_name() + ")");
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX})
    throw HttpError(400, std::string("'") + key + "' does not fit a 64-bit integer");
  return v->get<int64_t>();
}

// A non-negative integer of 64 bits (a seed).
uint64_t get_uint(const json& j, const char* key, uint64_t fallback) {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_number_unsigned())
    throw HttpError(400, std::string("'") + key + "' must be a non-negative integer (got " +
                             (v->is_number_integer() ? "a negative one" : v->type_name()) + ")");
  return v->get<uint64_t>();
}

double get_number(const json& j, const char* key, double fallback) {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_number())
    throw HttpError(400,
                    std::string("'") + key + "' must be a number (got " + v->type_name() + ")");
  return v->get<double>();
}

bool get_bool(const json& j, const char* key, bool fallback) {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_boolean())
    throw HttpError(
        400, std::string("'") + key + "' must be true or false (got " + v->type_name() + ")");
  return v->get<bool>();
}

std::string get_string(const json& j, const char* key, const std::string& fallback) {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_string())
    throw HttpError(400,
                    std::string("'") + key + "' must be a string (got " + v->type_name() + ")");
  return v->get<std::string>();
}

// A string or a list of strings; `single` tells which.
std::vector<std::string> get_texts(const json& j, const char* key, int64_t max_sentences,
                                   bool& single) {
  const json* v = field(j, key);
  if (!v) throw HttpError(400, std::string("'") + key + "' is required");
  std::vector<std::string> out;
  if (v->is_string()) {
    single = true;
    out.push_back(v->get<std::string>());
    return out;
  }
  if (!v->is_array())
    throw HttpError(400, std::string("'") + key + "' must be a string or a list of strings (got " +
                             v->type_name() + ")");
  if (static_cast<int64_t>(v->size()) > max_sentences)
    throw HttpError(413, std::to_string(v->size()) + " sentences in one request; the limit is " +
                             std::to_string(max_sentences) + " (--max-sentences)");
  single = false;
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string())
      throw HttpError(400, std::string("'") + key + "' must be a list of strings (element " +
                               std::to_string(i) + " is " + (*v)[i].type_name() + ")");
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

}  // namespace

TranslateRequest parse_translate_request(const std::string& body, int64_t max_sentences) {
  const json j = parse_object(body);
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
  o.beam_size = get_int(j, "beam_size", 1);
  o.num_hypotheses = get_int(j, "n_best", 1);
  o.length_penalty = get_number(j, "length_penalty", 0.0);
  o.normalize_scores = get_bool(j, "normalize_scores", false);
  o.max_decoding_length = get_int(j, "max_length", o.max_decoding_length);
  o.min_decoding_length = get_int(j, "min_length", 0);
  r.return_scores = get_bool(j, "return_scores", false);
  const json* s = field(j, "sampling");
  if (s && !s->is_object())
    throw HttpError(400, std::string("'sampling' must be an object (got ") + s->type_name() + ")");
  o.search = search_for(o.beam_size, /*sampling=*/s != nullptr);
  if (s) {
    o.sampling_topk = get_int(*s, "topk", 0);
    o.sampling_topp = get_number(*s, "topp", 1.0);
    o.sampling_temperature = get_number(*s, "temperature", 1.0);
    o.seed = get_uint(*s, "seed", 0);
  }
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
  return it != names.end() ? it->second : "'" + std::string(field) + "'";
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
                               int64_t model_positions, const char* key) {
  const bool nested = request.options.num_hypotheses > 1;
  json translations = json::array(), scores = json::array(), warnings = json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& hyps = results[i].hypotheses;
    if (nested) {
      json t = json::array(), s = json::array();
      for (const auto& h : hyps) {
        t.push_back(h.text);
        s.push_back(h.score);
      }
      translations.push_back(std::move(t));
      scores.push_back(std::move(s));
    } else {
      translations.push_back(hyps.empty() ? std::string() : hyps[0].text);
      scores.push_back(hyps.empty() ? 0.0 : hyps[0].score);
    }
    if (results[i].source_truncated)
      warnings.push_back("text " + std::to_string(i) + " is longer than the model's " +
                         std::to_string(model_positions) +
                         " positions: only its beginning was translated");
  }
  json out = {{key, std::move(translations)}};
  if (request.return_scores) out["scores"] = std::move(scores);
  if (!warnings.empty()) out["warnings"] = std::move(warnings);
  return dump(out);
}

LibreRequest parse_libre_json(const std::string& body, int64_t max_sentences) {
  const json j = parse_object(body);
  LibreRequest r;
  r.q = get_texts(j, "q", max_sentences, r.single);
  r.source = get_string(j, "source", "auto");
  r.target = get_string(j, "target", "");
  r.format = get_string(j, "format", "text");
  r.api_key = get_string(j, "api_key", "");
  return r;
}

LibreRequest parse_libre_form(const std::multimap<std::string, std::string>& fields,
                              int64_t max_sentences) {
  LibreRequest r;
  const auto [begin, end] = fields.equal_range("q");
  for (auto it = begin; it != end; ++it) r.q.push_back(it->second);
  if (r.q.empty()) throw HttpError(400, "'q' is required");
  if (static_cast<int64_t>(r.q.size()) > max_sentences)
    throw HttpError(413, std::to_string(r.q.size()) + " sentences in one request; the limit is " +
                             std::to_string(max_sentences) + " (--max-sentences)");
  r.single = r.q.size() == 1;
  auto one = [&](const char* key, const std::string& fallback) {
    auto it = fields.find(key);
    return it == fields.end() ? fallback : it->second;
  };
  r.source = one("source", "auto");
  r.target = one("target", "");
  r.format = one("format", "text");
  r.api_key = one("api_key", "");
  return r;
}

std::string libre_response(const LibreRequest& request,
                           const std::vector<TranslationResult>& results) {
  auto text = [](const TranslationResult& r) {
    return r.hypotheses.empty() ? std::string() : r.hypotheses[0].text;
  };
  json out;
  if (request.single) {
    out["translatedText"] = results.empty() ? std::string() : text(results[0]);
  } else {
    json list = json::array();
    for (const auto& r : results) list.push_back(text(r));
    out["translatedText"] = std::move(list);
  }
  return dump(out);
}

std::string model_response(const ModelInfo& info, const TranslatorOptions& options) {
  json out;
  out["config"] = json::parse(info.config_json);
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
