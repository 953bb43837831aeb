// CTranslate2's return_alternatives (search.h, make_alternatives): the n_best tokens at the first
// position after each sentence's target prefix, each continued by the search the options name.
// CTranslate2 decodes the alternatives of one example as a batch after a one-step beam
// expansion; here the expansion runs per sentence (its prefix fed one token a step) and every
// continuation of the call is one batch of the inner search, its prefix the sentence's prefix
// and the alternative.
#include <algorithm>
#include <cmath>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/profile.h"
#include "tfm/decode/detail.h"
#include "tfm/ops/host.h"
#include "tfm/ops/softmax.h"

namespace tfm::decode {
namespace {

struct Alternative {
  float log_prob;
  int32_t token;
};

// The log-softmax at the position after `prefix` (source `source`), the end tokens removed before
// it and CTranslate2's processors applied without history; PAD and BOS masked after it (tfm's
// conventions); its n_best best tokens, best first (equal values: the lower id), down to the
// first below min_alternative_prob.
std::vector<Alternative> expand(const Transformer& model, const Ids& source, const Ids& prefix,
                                const SearchOptions& o) {
  const ModelConfig& c = model.config();
  DecoderState state = detail::start(model, {&source}, std::ssize(prefix) + 1);
  std::vector<int32_t> token{static_cast<int32_t>(c.bos_id)};
  Tensor logits;  // (1, V)
  for (size_t t = 0; t <= prefix.size(); ++t) {
    logits = detail::step_logits(model, state, token);
    if (t < prefix.size()) token[0] = prefix[t];
  }
  static const Ids none;
  const HostView<float> raw = to_host<float>(detail::process_logits(logits, {&none}, o));
  std::vector<float> x(raw.begin(), raw.end());
  for (int32_t end : detail::end_ids(c, o)) x[static_cast<size_t>(end)] = detail::kNegInf;
  const int64_t V = c.trg_vocab_size;
  const HostView<float> lp = to_host<float>(
      log_softmax(to_device(Tensor::from_vector<float>({1, V}, x), logits.device())));
  std::vector<Alternative> all;
  for (int32_t v = 0; v < V; ++v)
    if (v != c.pad_id && v != c.bos_id && lp[static_cast<size_t>(v)] != detail::kNegInf)
      all.push_back({lp[static_cast<size_t>(v)], v});
  const auto n = std::min<size_t>(all.size(), static_cast<size_t>(o.n_best));
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(),
                    [](const Alternative& a, const Alternative& b) {
                      return a.log_prob != b.log_prob ? a.log_prob > b.log_prob : a.token < b.token;
                    });
  all.resize(n);
  for (size_t k = 0; k < all.size(); ++k)
    if (std::exp(double{all[k].log_prob}) < o.min_alternative_prob) {
      all.resize(k);
      break;
    }
  return all;
}

class AlternativesSearch : public Search {
 public:
  explicit AlternativesSearch(const SearchOptions& o) : o_(o) {
    inner_ = o;
    inner_.n_best = 1;
    inner_.shard_size = 0;
  }

  std::vector<NBest> run(const Transformer& model, const std::vector<Ids>& sources,
                         const std::vector<uint64_t>& ids,
                         const std::vector<Ids>& prefixes) const override {
    profile::Scope scope(profile::Phase::search);
    detail::check_inputs(model, sources, o_, prefixes);
    NoGradGuard no_grad;
    std::vector<NBest> out(sources.size());
    // Every continuation of the call: its sentence, expansion and prefix + alternative.
    std::vector<size_t> owner;
    std::vector<float> expansion;
    std::vector<Ids> src, pre;
    std::vector<uint64_t> inner_ids;
    for (size_t i = 0; i < sources.size(); ++i) {
      const Ids& prefix = detail::prefix_of(prefixes, i);
      for (const Alternative& a : expand(model, sources[i], prefix, o_)) {
        owner.push_back(i);
        expansion.push_back(a.log_prob);
        src.push_back(sources[i]);
        pre.push_back(prefix);
        pre.back().push_back(a.token);
        inner_ids.push_back(ids.empty() ? i : ids[i]);
      }
    }
    if (src.empty()) return out;
    const std::vector<NBest> cont = inner()->run(model, src, inner_ids, pre);
    for (size_t j = 0; j < cont.size(); ++j) {
      Hypothesis h = cont[j].at(0);
      h.score += expansion[j];  // the continuation's own score (search.h, alternatives)
      out[owner[j]].push_back(std::move(h));
    }
    return out;
  }

 private:
  // The continuations' search: the options' own, with `alternatives` telling it so.
  std::unique_ptr<Search> inner() const {
    if (inner_.sampling) return make_sampling(inner_);
    return inner_.beam_size == 1 ? make_greedy(inner_) : make_beam(inner_);
  }

  SearchOptions o_, inner_;
};

}  // namespace

std::unique_ptr<Search> make_alternatives(const SearchOptions& o) {
  TFM_CHECK(o.rule == SearchRule::tfm) << "search: alternatives follow the tfm rule";
  return std::make_unique<AlternativesSearch>(o);
}

}  // namespace tfm::decode
