#include "tfm/data/hf_tokenizer_config.h"

#include <algorithm>
#include <filesystem>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"

namespace tfm {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The language codes of Transformers' tokenizer modules (FAIRSEQ_LANGUAGE_CODES), in their order:
// the order fixes the ids Transformers gives the codes it adds.
const std::vector<std::string> kNllb = {
    "ace_Arab", "ace_Latn", "acm_Arab", "acq_Arab", "aeb_Arab", "afr_Latn", "ajp_Arab", "aka_Latn",
    "amh_Ethi", "apc_Arab", "arb_Arab", "ars_Arab", "ary_Arab", "arz_Arab", "asm_Beng", "ast_Latn",
    "awa_Deva", "ayr_Latn", "azb_Arab", "azj_Latn", "bak_Cyrl", "bam_Latn", "ban_Latn", "bel_Cyrl",
    "bem_Latn", "ben_Beng", "bho_Deva", "bjn_Arab", "bjn_Latn", "bod_Tibt", "bos_Latn", "bug_Latn",
    "bul_Cyrl", "cat_Latn", "ceb_Latn", "ces_Latn", "cjk_Latn", "ckb_Arab", "crh_Latn", "cym_Latn",
    "dan_Latn", "deu_Latn", "dik_Latn", "dyu_Latn", "dzo_Tibt", "ell_Grek", "eng_Latn", "epo_Latn",
    "est_Latn", "eus_Latn", "ewe_Latn", "fao_Latn", "pes_Arab", "fij_Latn", "fin_Latn", "fon_Latn",
    "fra_Latn", "fur_Latn", "fuv_Latn", "gla_Latn", "gle_Latn", "glg_Latn", "grn_Latn", "guj_Gujr",
    "hat_Latn", "hau_Latn", "heb_Hebr", "hin_Deva", "hne_Deva", "hrv_Latn", "hun_Latn", "hye_Armn",
    "ibo_Latn", "ilo_Latn", "ind_Latn", "isl_Latn", "ita_Latn", "jav_Latn", "jpn_Jpan", "kab_Latn",
    "kac_Latn", "kam_Latn", "kan_Knda", "kas_Arab", "kas_Deva", "kat_Geor", "knc_Arab", "knc_Latn",
    "kaz_Cyrl", "kbp_Latn", "kea_Latn", "khm_Khmr", "kik_Latn", "kin_Latn", "kir_Cyrl", "kmb_Latn",
    "kon_Latn", "kor_Hang", "kmr_Latn", "lao_Laoo", "lvs_Latn", "lij_Latn", "lim_Latn", "lin_Latn",
    "lit_Latn", "lmo_Latn", "ltg_Latn", "ltz_Latn", "lua_Latn", "lug_Latn", "luo_Latn", "lus_Latn",
    "mag_Deva", "mai_Deva", "mal_Mlym", "mar_Deva", "min_Latn", "mkd_Cyrl", "plt_Latn", "mlt_Latn",
    "mni_Beng", "khk_Cyrl", "mos_Latn", "mri_Latn", "zsm_Latn", "mya_Mymr", "nld_Latn", "nno_Latn",
    "nob_Latn", "npi_Deva", "nso_Latn", "nus_Latn", "nya_Latn", "oci_Latn", "gaz_Latn", "ory_Orya",
    "pag_Latn", "pan_Guru", "pap_Latn", "pol_Latn", "por_Latn", "prs_Arab", "pbt_Arab", "quy_Latn",
    "ron_Latn", "run_Latn", "rus_Cyrl", "sag_Latn", "san_Deva", "sat_Beng", "scn_Latn", "shn_Mymr",
    "sin_Sinh", "slk_Latn", "slv_Latn", "smo_Latn", "sna_Latn", "snd_Arab", "som_Latn", "sot_Latn",
    "spa_Latn", "als_Latn", "srd_Latn", "srp_Cyrl", "ssw_Latn", "sun_Latn", "swe_Latn", "swh_Latn",
    "szl_Latn", "tam_Taml", "tat_Cyrl", "tel_Telu", "tgk_Cyrl", "tgl_Latn", "tha_Thai", "tir_Ethi",
    "taq_Latn", "taq_Tfng", "tpi_Latn", "tsn_Latn", "tso_Latn", "tuk_Latn", "tum_Latn", "tur_Latn",
    "twi_Latn", "tzm_Tfng", "uig_Arab", "ukr_Cyrl", "umb_Latn", "urd_Arab", "uzn_Latn", "vec_Latn",
    "vie_Latn", "war_Latn", "wol_Latn", "xho_Latn", "ydd_Hebr", "yor_Latn", "yue_Hant", "zho_Hans",
    "zho_Hant", "zul_Latn",
};
const std::vector<std::string> kMbart = {
    "ar_AR", "cs_CZ", "de_DE", "en_XX", "es_XX", "et_EE", "fi_FI", "fr_XX", "gu_IN",
    "hi_IN", "it_IT", "ja_XX", "kk_KZ", "ko_KR", "lt_LT", "lv_LV", "my_MM", "ne_NP",
    "nl_XX", "ro_RO", "ru_RU", "si_LK", "tr_TR", "vi_VN", "zh_CN",
};
const std::vector<std::string> kMbart50 = {
    "ar_AR", "cs_CZ", "de_DE", "en_XX", "es_XX", "et_EE", "fi_FI", "fr_XX", "gu_IN",
    "hi_IN", "it_IT", "ja_XX", "kk_KZ", "ko_KR", "lt_LT", "lv_LV", "my_MM", "ne_NP",
    "nl_XX", "ro_RO", "ru_RU", "si_LK", "tr_TR", "vi_VN", "zh_CN", "af_ZA", "az_AZ",
    "bn_IN", "fa_IR", "he_IL", "hr_HR", "id_ID", "ka_GE", "km_KH", "mk_MK", "ml_IN",
    "mn_MN", "mr_IN", "pl_PL", "ps_AF", "pt_XX", "sv_SE", "sw_KE", "ta_IN", "te_IN",
    "th_TH", "tl_XX", "uk_UA", "ur_PK", "xh_ZA", "gl_ES", "sl_SI",
};
const std::vector<std::string> kM2m100 = {
    "af", "am", "ar", "ast", "az", "ba", "be", "bg", "bn", "br",  "bs", "ca", "ceb", "cs", "cy",
    "da", "de", "el", "en",  "es", "et", "fa", "ff", "fi", "fr",  "fy", "ga", "gd",  "gl", "gu",
    "ha", "he", "hi", "hr",  "ht", "hu", "hy", "id", "ig", "ilo", "is", "it", "ja",  "jv", "ka",
    "kk", "km", "kn", "ko",  "lb", "lg", "ln", "lo", "lt", "lv",  "mg", "mk", "ml",  "mn", "mr",
    "ms", "my", "ne", "nl",  "no", "ns", "oc", "or", "pa", "pl",  "ps", "pt", "ro",  "ru", "sd",
    "si", "sk", "sl", "so",  "sq", "sr", "ss", "su", "sv", "sw",  "ta", "th", "tl",  "tn", "tr",
    "uk", "ur", "uz", "vi",  "wo", "xh", "yi", "yo", "zh", "zu",
};
const std::vector<std::string> kWmt21 = {
    "en", "ha", "is", "ja", "cs", "ru", "zh", "de",
};

AddedToken token_from_json(const json& v, const std::string& where) {
  AddedToken t;
  if (v.is_string()) {
    t.content = v.get<std::string>();
    t.special = true;
    return t;
  }
  TFM_CHECK(v.is_object() && v.contains("content") && v["content"].is_string())
      << where << ": a token is a string or an object with \"content\" (got " << v.dump() << ")";
  t.content = v["content"].get<std::string>();
  t.special = v.value("special", true);
  t.lstrip = v.value("lstrip", false);
  t.rstrip = v.value("rstrip", false);
  t.single_word = v.value("single_word", false);
  t.normalized = v.value("normalized", !t.special);
  return t;
}

// Transformers 5 reads a "...Fast" class as the class itself.
std::string strip_fast(std::string name) {
  if (name.ends_with("Fast")) name.resize(name.size() - 4);
  return name;
}

std::string class_for_model_type(const std::string& model_type) {
  if (model_type == "marian") return "MarianTokenizer";
  if (model_type == "m2m_100") return "M2M100Tokenizer";
  if (model_type == "mbart") return "MBartTokenizer";
  if (model_type == "bart") return "RobertaTokenizer";
  if (model_type == "gpt2") return "GPT2Tokenizer";
  if (model_type == "nllb" || model_type == "nllb-moe") return "NllbTokenizer";
  return "";
}

}  // namespace

std::optional<AddedToken> HfTokenizerConfig::named(const std::string& key,
                                                   const std::string& fallback) const {
  if (raw.contains(key)) {
    const json& v = raw[key];
    if (v.is_null()) return std::nullopt;
    return token_from_json(v, path("tokenizer_config.json") + ": " + key);
  }
  if (fallback.empty()) return std::nullopt;
  AddedToken t;
  t.content = fallback;
  t.special = true;
  return t;
}

std::vector<AddedToken> HfTokenizerConfig::added_tokens_decoder() const {
  std::vector<AddedToken> out;
  if (!raw.contains("added_tokens_decoder")) return out;
  const std::string where = path("tokenizer_config.json") + ": added_tokens_decoder";
  for (const auto& [id, v] : raw["added_tokens_decoder"].items()) {
    AddedToken t = token_from_json(v, where);
    try {
      t.id = std::stoll(id);
    } catch (const std::exception&) {
      TFM_FAIL() << where << ": \"" << id << "\" is not an id";
    }
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(),
            [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  return out;
}

std::optional<std::vector<AddedToken>> HfTokenizerConfig::extra_special_tokens() const {
  for (const char* key : {"extra_special_tokens", "additional_special_tokens"}) {
    if (!raw.contains(key) || raw[key].is_null()) continue;
    const std::string where = path("tokenizer_config.json") + ": " + key;
    TFM_CHECK(raw[key].is_array())
        << where << " is not a list (a mapping of named extra tokens is not supported)";
    std::vector<AddedToken> out;
    for (const json& v : raw[key]) out.push_back(token_from_json(v, where));
    return out;
  }
  return std::nullopt;
}

std::string HfTokenizerConfig::string_or(const std::string& key,
                                         const std::string& fallback) const {
  return raw.contains(key) && raw[key].is_string() ? raw[key].get<std::string>() : fallback;
}

bool HfTokenizerConfig::bool_or(const std::string& key, bool fallback) const {
  return raw.contains(key) && raw[key].is_boolean() ? raw[key].get<bool>() : fallback;
}

std::string HfTokenizerConfig::path(const std::string& file) const {
  return (fs::path(dir) / file).string();
}

bool HfTokenizerConfig::has_file(const std::string& file) const {
  return fs::exists(fs::path(dir) / file);
}

HfTokenizerConfig read_hf_tokenizer_config(const std::string& dir, const std::string& model_type) {
  HfTokenizerConfig c;
  c.dir = dir;
  if (c.has_file("tokenizer_config.json")) {
    try {
      c.raw = json::parse(read_file(c.path("tokenizer_config.json")));
    } catch (const json::exception& e) {
      TFM_FAIL() << c.path("tokenizer_config.json") << " is not valid JSON: " << e.what();
    }
    TFM_CHECK(c.raw.is_object()) << c.path("tokenizer_config.json") << " is not a JSON object";
  }
  c.tokenizer_class = strip_fast(c.string_or("tokenizer_class", ""));
  if (c.tokenizer_class.empty()) c.tokenizer_class = class_for_model_type(model_type);
  TFM_CHECK(!c.tokenizer_class.empty())
      << dir << ": tokenizer_config.json names no tokenizer_class and the model type \""
      << model_type << "\" has no tokenizer tfm knows";
  return c;
}

const std::vector<std::string>& nllb_language_codes() {
  return kNllb;
}
const std::vector<std::string>& mbart_language_codes() {
  return kMbart;
}
const std::vector<std::string>& mbart50_language_codes() {
  return kMbart50;
}
const std::vector<std::string>& m2m100_language_codes(const std::string& set) {
  TFM_CHECK(set == "m2m100" || set == "wmt21")
      << "M2M100Tokenizer: unknown language_codes \"" << set << "\" (m2m100 or wmt21)";
  return set == "m2m100" ? kM2m100 : kWmt21;
}

}  // namespace tfm
