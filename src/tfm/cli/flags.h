// How the validators' messages name options on the command line: an OptionSpeller (error.h)
// from field names to flags. A field the table does not name is spelled as its flag by the
// common rule, "--" and '_' as '-' (max_updates: --max-updates).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "tfm/error.h"

namespace tfm::cli {

// The speller of one command: `names` maps fields (and "field=value" choices) to how the
// command's user writes them.
OptionSpeller flag_speller(std::initializer_list<std::pair<std::string_view, std::string>> names);

}  // namespace tfm::cli
