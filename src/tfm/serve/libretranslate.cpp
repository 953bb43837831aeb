#include "tfm/serve/libretranslate.h"

#include <algorithm>

#include "tfm/serve/html_text.h"

namespace tfm::serve {

namespace {

void check_languages(const LibreRequest& r, const std::vector<LanguagePair>& languages) {
  if (languages.empty()) return;  // not known: any codes, as one model translates one pair
  std::string pairs;
  bool source_ok = r.source == "auto", target_ok = false;
  for (const auto& p : languages) {
    pairs += (pairs.empty() ? "" : ", ") + p.source + " to " + p.target;
    source_ok = source_ok || p.source == r.source;
    target_ok = target_ok || (p.target == r.target && (r.source == "auto" || p.source == r.source));
  }
  if (!source_ok || !target_ok)
    throw HttpError(400, "this server translates " + pairs + " (GET /languages); not '" + r.source +
                             "' to '" + r.target + "'");
}

// n-best from a beam one wider than the hypotheses asked for, checked by the library's
// validator in the request's terms.
TranslationOptions alternatives_options(int64_t alternatives, const ModelInfo& model) {
  if (alternatives < 0)
    throw HttpError(400, "'alternatives' must be a non-negative integer (got " +
                             std::to_string(alternatives) + ")");
  TranslationOptions o;
  o.num_hypotheses = alternatives + 1;
  o.beam_size = alternatives > 0 ? alternatives + 2 : 1;
  o.search = search_for(o.beam_size, false);
  const OptionSpeller name = [](std::string_view field) {
    return field == "num_hypotheses" ? std::string("'alternatives' + 1")
           : field == "beam_size"    ? std::string("'alternatives' + 2 (the beam)")
                                     : json_name(field);
  };
  try {
    validate_translation_options(o, model, name, {.max_beam_size = kMaxBeamSize});
  } catch (const InvalidArgument& e) {
    throw HttpError(400, e.message());
  }
  return o;
}

std::vector<std::string> hypotheses_text(const TranslationResult& r) {
  std::vector<std::string> out;
  for (const auto& h : r.hypotheses) out.push_back(h.text);
  if (out.empty()) out.emplace_back();
  return out;
}

}  // namespace

LibreRequest parse_libre_request(const HttpRequest& request, int64_t max_sentences) {
  const std::string_view type = request.header("Content-Type").value_or("");
  switch (form_kind(type)) {
    case FormKind::urlencoded:
      return parse_libre_form(parse_urlencoded(request.body), max_sentences);
    case FormKind::multipart:
      return parse_libre_form(parse_multipart(request.body, type), max_sentences);
    case FormKind::none:
      break;
  }
  return parse_libre_json(request.body, max_sentences);
}

std::string run_libre_request(const LibreRequest& r, const std::vector<LanguagePair>& languages,
                              const ModelInfo& model, int64_t max_sentences,
                              const TranslateTexts& translate) {
  if (r.format != "text" && r.format != "html")
    throw HttpError(400, "format '" + r.format + "' is not supported: \"text\" or \"html\"");
  check_languages(r, languages);
  const TranslationOptions o = alternatives_options(r.alternatives, model);
  std::vector<std::vector<std::string>> out;
  if (r.format == "text") {
    for (const auto& result : translate(r.q, o)) out.push_back(hypotheses_text(result));
    return libre_response(r, out);
  }
  // HTML: every document's text runs in one call, then each document put back together with
  // its best translation (alternatives of a whole document would be every run's n-th best).
  std::vector<HtmlPieces> docs;
  std::vector<std::string> runs;
  for (const auto& q : r.q) {
    docs.push_back(split_html(q));
    for (size_t i : docs.back().texts) runs.push_back(docs.back().pieces[i]);
  }
  if (static_cast<int64_t>(runs.size()) > max_sentences)
    throw HttpError(413, "the HTML holds " + std::to_string(runs.size()) +
                             " texts between its tags; the limit is " +
                             std::to_string(max_sentences) + " (--max-sentences)");
  const auto results = translate(runs, o);
  size_t next = 0;
  for (const auto& doc : docs) {
    std::vector<std::vector<std::string>> texts;
    for (size_t k = 0; k < doc.texts.size(); ++k) texts.push_back(hypotheses_text(results[next++]));
    std::vector<std::string> alternatives;
    for (size_t a = 0; a <= static_cast<size_t>(r.alternatives); ++a) {
      std::vector<std::string> nth;
      for (const auto& t : texts) nth.push_back(t[std::min(a, t.size() - 1)]);
      alternatives.push_back(join_html(doc, nth));
    }
    out.push_back(std::move(alternatives));
  }
  return libre_response(r, out);
}

}  // namespace tfm::serve
