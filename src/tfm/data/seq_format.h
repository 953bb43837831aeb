// How token-id sequences become model input: the special ids and the framing of a source
// sentence. ModelConfig (model/config.h) holds these and hands them down as a SeqFormat, since
// data/ sits below model/ (docs/architecture.md, "Layers").
#pragma once

#include <cstdint>

namespace tfm {

struct SeqFormat {
  int64_t pad_id = 0, bos_id = 1, eos_id = 2;
  // The encoder reads [BOS] x1 … xm [EOS]: BOS when source_bos, EOS when source_eos (CTranslate2
  // calls them add_source_bos / add_source_eos). The default, EOS only, is fairseq's and
  // Marian's; jadore801120's preprocessing and PyTorch's nn.Transformer tutorial add both.
  bool source_bos = false;
  bool source_eos = true;

  // Tokens the framing adds to each source sentence (0, 1 or 2).
  int64_t source_specials() const {
    return static_cast<int64_t>(source_bos) + static_cast<int64_t>(source_eos);
  }
};

}  // namespace tfm
