// "Did you mean ...?": the known names closest to a mistyped one, for every front door that
// refuses a name it does not know (the command line's commands, flags and config keys; a
// request's fields).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tfm {

// The names of `known` closest to `word`: those it differs from by the fewest single-character
// edits (insert, delete, substitute, swap two neighbours), when that is at most a third of its
// length (a word of three characters or more); else those it begins (`--beam` for
// `--beam-size`), up to three. Case, '_' for '-' and the leading dashes count for nothing. Empty
// when none is close.
std::vector<std::string> closest_names(std::string_view word,
                                       const std::vector<std::string>& known);

// "'a'", "'a' or 'b'", "'a', 'b' or 'c'" (quote: "'", or "" for flags).
std::string one_of(const std::vector<std::string>& names, std::string_view quote);

}  // namespace tfm
