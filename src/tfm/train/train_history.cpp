#include "tfm/train/train_history.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <string_view>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"

namespace tfm {

namespace {

// The " | "-separated fields of a line.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  for (size_t pos = 0;;) {
    const size_t bar = line.find(" | ", pos);
    out.push_back(line.substr(pos, bar == std::string_view::npos ? bar : bar - pos));
    if (bar == std::string_view::npos) return out;
    pos = bar + 3;
  }
}

bool number(std::string_view s, double& v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

// "12.3k" / "4.56M" / "789": format_count's numbers.
bool count(std::string_view s, double& v) {
  double scale = 1;
  if (!s.empty() && (s.back() == 'k' || s.back() == 'M' || s.back() == 'G')) {
    scale = s.back() == 'k' ? 1e3 : s.back() == 'M' ? 1e6 : 1e9;
    s.remove_suffix(1);
  }
  if (!number(s, v)) return false;
  v *= scale;
  return true;
}

// The value of the field "NAME VALUE" (VALUE without `suffix`); false when there is none.
bool named(const std::vector<std::string_view>& f, std::string_view name, double& v,
           std::string_view suffix = "") {
  for (std::string_view x : f) {
    if (x.size() <= name.size() + 1 || x.substr(0, name.size()) != name || x[name.size()] != ' ')
      continue;
    x.remove_prefix(name.size() + 1);
    if (!suffix.empty()) {
      if (x.size() < suffix.size() || x.substr(x.size() - suffix.size()) != suffix) return false;
      x.remove_suffix(suffix.size());
    }
    return number(x, v);
  }
  return false;
}

// "epoch 4 | update 1000 | sents 112.3k | trg tok 1.75M | loss 3.4069 | ppl 12.48 | acc 55.9% |
// lr 1.000e-03 | gnorm 1.158 | 5078 tok/s | 12:06" (train_loop.cpp's log_window).
bool stats_line(std::string_view line, TrainStatsEvent& e) {
  const auto f = fields_of(line);
  double epoch = 0, update = 0, sents = 0, tok = 0, acc = 0;
  if (f.size() < 10 || !named(f, "epoch", epoch) || !named(f, "update", update) ||
      !named(f, "loss", e.loss) || !named(f, "ppl", e.perplexity) || !named(f, "acc", acc, "%") ||
      !named(f, "lr", e.learning_rate) || !named(f, "gnorm", e.grad_norm) || f[9].size() < 7 ||
      f[9].substr(f[9].size() - 6) != " tok/s" ||
      !count(f[9].substr(0, f[9].size() - 6), e.tokens_per_second))
    return false;
  if (f[2].rfind("sents ", 0) == 0) count(f[2].substr(6), sents);
  if (f[3].rfind("trg tok ", 0) == 0) count(f[3].substr(8), tok);
  e.epoch = static_cast<int64_t>(epoch);
  e.update = static_cast<int64_t>(update);
  e.accuracy = acc / 100;
  e.sentences = static_cast<int64_t>(sents);
  e.target_tokens = static_cast<int64_t>(tok);
  return true;
}

// "valid | update 1000 | loss 2.3667 | ppl 10.662 | acc 57.7% | bleu 26.34 | best ..."
bool validation_line(std::string_view line, TrainValidationEvent& e) {
  const auto f = fields_of(line);
  double update = 0, acc = 0;
  if (f.empty() || f[0] != "valid" || !named(f, "update", update) || !named(f, "loss", e.loss) ||
      !named(f, "ppl", e.perplexity) || !named(f, "acc", acc, "%"))
    return false;
  if (!named(f, "bleu", e.bleu)) e.bleu = -1;
  e.update = static_cast<int64_t>(update);
  e.accuracy = acc / 100;
  e.improved = std::find(f.begin(), f.end(), "saved best/") != f.end();
  return true;
}

template <typename Event>
void drop_after(std::vector<Event>& events, int64_t update) {
  std::erase_if(events, [update](const Event& e) { return e.update > update; });
}

}  // namespace

TrainHistory read_train_log(const std::string& path) {
  std::istringstream in(read_file(path));
  TrainHistory h;
  constexpr std::string_view kResume = "resuming from update ";
  for (std::string line; std::getline(in, line);) {
    TrainStatsEvent s;
    TrainValidationEvent v;
    double from = 0;
    if (line.rfind(kResume, 0) == 0) {
      const std::string_view rest = std::string_view(line).substr(kResume.size());
      if (number(rest.substr(0, rest.find(' ')), from)) {
        drop_after(h.stats, static_cast<int64_t>(from));
        drop_after(h.validations, static_cast<int64_t>(from));
      }
    } else if (line.rfind("epoch ", 0) == 0 && stats_line(line, s)) {
      h.stats.push_back(s);
    } else if (line.rfind("valid | ", 0) == 0 && validation_line(line, v)) {
      h.validations.push_back(v);
    }
  }
  TFM_CHECK(!h.stats.empty() || !h.validations.empty())
      << path << " holds no training log lines (\"epoch N | update N | ...\" or \"valid | ...\")";
  return h;
}

}  // namespace tfm
