#include "tfm/cli/flags.h"

#include <algorithm>
#include <map>

namespace tfm::cli {

OptionSpeller flag_speller(std::initializer_list<std::pair<std::string_view, std::string>> names) {
  std::map<std::string, std::string, std::less<>> table;
  for (const auto& [field, flag] : names) table.emplace(field, flag);
  return [table = std::move(table)](std::string_view field) {
    if (const auto it = table.find(field); it != table.end()) return it->second;
    std::string s = "--" + std::string(field.substr(0, field.find('=')));
    std::replace(s.begin(), s.end(), '_', '-');
    return s;
  };
}

}  // namespace tfm::cli
