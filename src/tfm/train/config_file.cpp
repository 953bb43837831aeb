#include "tfm/train/config_file.h"

#include <yaml.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"

namespace tfm {

namespace {

using Entries = std::vector<std::pair<std::string, std::vector<std::string>>>;

std::string normalise_key(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

void add_entry(Entries& out, std::set<std::string>& seen, const std::string& path,
               const std::string& key, std::vector<std::string> values) {
  const std::string k = normalise_key(key);
  TFM_CHECK(!k.empty()) << path << ": empty option name";
  TFM_CHECK(seen.insert(k).second) << path << ": option \"" << k << "\" is given twice";
  out.emplace_back(k, std::move(values));
}

std::string json_scalar(const nlohmann::json& v, const std::string& path, const std::string& key) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) return v.dump();
  TFM_FAIL() << path << ": option \"" << key << "\" must be a string, number or boolean, got "
             << v.type_name();
  return "";
}

Entries parse_json(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    TFM_FAIL() << path << ": invalid JSON: " << e.what();
  }
  TFM_CHECK(j.is_object()) << path << ": a config file must be a JSON object of options";
  Entries out;
  std::set<std::string> seen;
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::vector<std::string> values;
    if (it->is_array()) {
      for (const auto& v : *it) values.push_back(json_scalar(v, path, it.key()));
    } else {
      values.push_back(json_scalar(*it, path, it.key()));
    }
    add_entry(out, seen, path, it.key(), std::move(values));
  }
  return out;
}

// libyaml's event stream, one event at a time, with errors that carry the line.
class YamlEvents {
 public:
  YamlEvents(const std::string& text, std::string path) : path_(std::move(path)) {
    TFM_CHECK(yaml_parser_initialize(&parser_)) << path_ << ": cannot initialise the YAML parser";
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~YamlEvents() {
    if (has_event_) yaml_event_delete(&event_);
    yaml_parser_delete(&parser_);
  }
  const yaml_event_t& next() {
    if (has_event_) yaml_event_delete(&event_);
    has_event_ = false;
    if (!yaml_parser_parse(&parser_, &event_)) {
      TFM_FAIL() << path_ << ":" << parser_.problem_mark.line + 1
                 << ": invalid YAML: " << (parser_.problem ? parser_.problem : "parse error");
    }
    has_event_ = true;
    return event_;
  }
  int64_t line() const { return has_event_ ? event_.start_mark.line + 1 : 0; }
  const std::string& path() const { return path_; }

 private:
  yaml_parser_t parser_{};
  yaml_event_t event_{};
  bool has_event_ = false;
  std::string path_;
};

std::string scalar_text(const yaml_event_t& e) {
  return std::string(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
}

Entries parse_yaml(const std::string& text, const std::string& path) {
  YamlEvents ev(text, path);
  Entries out;
  std::set<std::string> seen;
  TFM_CHECK(ev.next().type == YAML_STREAM_START_EVENT) << path << ": not a YAML stream";
  const yaml_event_t* e = &ev.next();
  if (e->type == YAML_STREAM_END_EVENT) return out;  // an empty file: no options
  TFM_CHECK(e->type == YAML_DOCUMENT_START_EVENT) << path << ": expected a YAML document";
  e = &ev.next();
  if (e->type == YAML_SCALAR_EVENT && e->data.scalar.length == 0) return out;  // only comments
  TFM_CHECK(e->type == YAML_MAPPING_START_EVENT)
      << path << ":" << ev.line() << ": a config file must be a mapping of option: value";
  for (;;) {
    e = &ev.next();
    if (e->type == YAML_MAPPING_END_EVENT) break;
    TFM_CHECK(e->type == YAML_SCALAR_EVENT)
        << path << ":" << ev.line() << ": option names must be plain words";
    const std::string key = scalar_text(*e);
    const int64_t key_line = ev.line();
    e = &ev.next();
    std::vector<std::string> values;
    if (e->type == YAML_SCALAR_EVENT) {
      values.push_back(scalar_text(*e));
    } else if (e->type == YAML_SEQUENCE_START_EVENT) {
      for (;;) {
        e = &ev.next();
        if (e->type == YAML_SEQUENCE_END_EVENT) break;
        TFM_CHECK(e->type == YAML_SCALAR_EVENT)
            << path << ":" << ev.line() << ": the list of \"" << key << "\" must hold plain values";
        values.push_back(scalar_text(*e));
      }
    } else {
      TFM_FAIL() << path << ":" << key_line << ": option \"" << key
                 << "\" must be a value or a list of values (nested options are not supported)";
    }
    add_entry(out, seen, path, key, std::move(values));
  }
  TFM_CHECK(ev.next().type == YAML_DOCUMENT_END_EVENT)
      << path << ":" << ev.line() << ": one YAML document expected";
  TFM_CHECK(ev.next().type == YAML_STREAM_END_EVENT)
      << path << ":" << ev.line() << ": one YAML document expected";
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::vector<std::string>>> read_config_file(
    const std::string& path) {
  const std::string text = read_file(path);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return parse_json(text, path);
  return parse_yaml(text, path);
}

}  // namespace tfm
