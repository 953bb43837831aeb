// "Did you mean ...?": the known name closest to a misspelled one (a JSON field, a flag), for
// error messages that name both.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfm {

// Edits (insertions, deletions, substitutions) between a and b.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`: one that starts with it or that it starts with ("beam" ->
// "beam_size"), or one within a third of its length in edits ("nbest" -> "n_best", "top_k" ->
// "topk"); the fewest edits wins, the earlier candidate on a tie. nullopt when none is close.
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

}  // namespace tfm
