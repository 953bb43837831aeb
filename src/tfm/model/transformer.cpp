#include "tfm/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/device_copy.h"
#include "tfm/core/profile.h"
#include "tfm/nn/positional.h"
#include "tfm/ops/dropout.h"
#include "tfm/ops/elementwise.h"
#include "tfm/ops/embedding.h"
#include "tfm/ops/index.h"
#include "tfm/ops/init.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/linear_lowp.h"
#include "tfm/ops/shape.h"

namespace tfm {

namespace {

Tensor position_ids(int64_t batch, int64_t length, int64_t offset) {
  std::vector<int32_t> v(batch * length);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < length; ++t) v[b * length + t] = static_cast<int32_t>(offset + t);
  return Tensor::from_vector<int32_t>({batch, length}, v);
}

Tensor fixed_positions(const ModelConfig& c) {
  const int64_t n = c.max_length, d = c.d_model, offset = c.position_offset;
  if (c.positions == Positions::sinusoidal) return nn::sinusoidal_table(n, d, offset);
  if (c.positions == Positions::sinusoidal_marian) return nn::sinusoidal_marian_table(n, d, offset);
  return nn::sinusoidal_concat_table(n, d, offset);
}

}  // namespace

int64_t DecoderState::batch() const {
  for (const auto& l : layers)
    if (l.self.k.defined()) return l.self.batch();
  if (source_rows.defined()) return source_rows.size(0);
  return src_mask.defined() ? src_mask.size(0) : 0;
}

void DecoderState::reorder(const std::vector<int64_t>& rows) {
  const int64_t b = batch();
  for (int64_t r : rows)
    TFM_CHECK(b == 0 || (r >= 0 && r < b))
        << "DecoderState::reorder: row " << r << " out of range for batch " << b;
  for (auto& l : layers) l.self.reorder(rows);
  if (source_of_row.empty()) {  // unknown sources: gather the cross-attention rows too
    if (src_mask.defined()) src_mask = index_rows(src_mask, rows);
    for (auto& l : layers) l.cross.gather_rows(rows);
    return;
  }
  std::vector<int64_t> next(rows.size());
  bool identity = src_mask.defined() && src_mask.size(0) == static_cast<int64_t>(rows.size());
  std::vector<int32_t> map(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    next[i] = source_of_row[static_cast<size_t>(rows[i])];
    map[i] = static_cast<int32_t>(next[i]);
    identity = identity && next[i] == static_cast<int64_t>(i);
  }
  source_of_row = std::move(next);
  source_rows =
      identity ? Tensor()
               : to_device(Tensor::from_vector<int32_t>({static_cast<int64_t>(map.size())}, map),
                           src_mask.defined() ? src_mask.device() : Device::cpu);
}

Transformer::Transformer(const ModelConfig& config, uint64_t seed)
    : Transformer(config, Generator(seed)) {}

std::unique_ptr<Transformer> Transformer::uninitialised(const ModelConfig& config) {
  return std::unique_ptr<Transformer>(new Transformer(config, Generator::no_fill()));
}

std::unique_ptr<Transformer> Transformer::unallocated(const ModelConfig& config) {
  return std::unique_ptr<Transformer>(new Transformer(config, Generator::weights_unallocated()));
}

Transformer::Transformer(const ModelConfig& config, Generator init) : c_(config), init_gen_(init) {
  c_.validate();
  Generator& g = init_gen_;
  const double emb_std = 1.0 / std::sqrt(static_cast<double>(c_.d_model));
  // The tied table is the output projection's weight: a binding may take its place.
  if (g.allocates_weights() || !c_.tie_output) {
    embed_trg_ = Tensor::empty({c_.trg_vocab_size, c_.d_model});
    normal_(embed_trg_, 0.0, emb_std, g);
  }
  register_parameter("embed.trg.weight", &embed_trg_);
  if (c_.has_encoder() && !c_.share_embeddings) {
    embed_src_ = Tensor::empty({c_.src_vocab_size, c_.d_model});
    normal_(embed_src_, 0.0, emb_std, g);
    register_parameter("embed.src.weight", &embed_src_);
  }
  if (c_.positions == Positions::learned) {
    if (c_.has_encoder()) {
      pos_src_ = Tensor::empty({c_.max_length, c_.d_model});
      normal_(pos_src_, 0.0, emb_std, g);
      register_parameter("pos.src.weight", &pos_src_);
    }
    pos_trg_ = Tensor::empty({c_.max_length, c_.d_model});
    normal_(pos_trg_, 0.0, emb_std, g);
    register_parameter("pos.trg.weight", &pos_trg_);
  } else {
    pos_trg_ = fixed_positions(c_);
    pos_src_ = pos_trg_;
  }
  auto build_stack = [&]<typename Layer>(Stack<Layer>& s, int64_t n) {
    if (c_.embed_norm) {
      s.embed_norm_ = std::make_unique<nn::LayerNorm>(c_.d_model, c_.layer_norm_eps);
      s.register_module("embed_norm", s.embed_norm_.get());
    }
    for (int64_t i = 0; i < n; ++i) {
      s.layers_.push_back(std::make_unique<Layer>(c_, g));
      s.register_module("layers." + std::to_string(i), s.layers_.back().get());
    }
    if (c_.final_norm) {
      s.final_norm_ = std::make_unique<nn::LayerNorm>(c_.d_model, c_.layer_norm_eps);
      s.register_module("final_norm", s.final_norm_.get());
    }
  };
  if (c_.has_encoder()) {
    build_stack(encoder_, c_.encoder_layers);
    register_module("encoder", &encoder_);
  }
  build_stack(decoder_, c_.decoder_layers);
  register_module("decoder", &decoder_);
  if (!c_.tie_output) {
    if (g.allocates_weights()) {
      output_weight_ = Tensor::empty({c_.trg_vocab_size, c_.d_model});
      xavier_uniform_(output_weight_, g);
    }
    register_parameter("output.weight", &output_weight_);
  }
  if (c_.output_bias) {
    output_bias_ = Tensor::zeros({c_.trg_vocab_size});
    register_parameter("output.bias", &output_bias_);
  }
  linears_ = linears();
  for (const auto& [name, t] : named_parameters())
    parameter_count_ += t->defined() ? t->numel() : 0;
  for (const WeightBinding& b : weight_bindings(ComputeType::float32))
    if (!b.weight->defined()) parameter_count_ += shape_numel(b.shape);
}

std::vector<Transformer::WeightBinding> Transformer::weight_bindings(
    ComputeType t, std::optional<ComputeType> output) {
  // Layers that multiply whole sources (the encoder's, and cross-attention's key and value
  // projections, which run once per batch) and the decoding steps' few-row layers may take
  // different kernels: bf16 takes oneDNN's blocked kernel for the first where the CPU has
  // AVX512-BF16, tfm's panels for the second. fp32 and int8: one kernel for both. On cuda:
  // cuBLASLt for all (fp32 binds nothing there, nn::LinearKernel::bind).
  std::vector<nn::Linear*> sequences;
  if (c_.has_encoder()) {
    sequences = encoder_.linears();
    for (const auto& layer : decoder_.layers_) {
      sequences.push_back(&layer->cross_attn_->k_proj_);
      sequences.push_back(&layer->cross_attn_->v_proj_);
    }
  }
  std::map<const Tensor*, std::string> names;
  for (const auto& [name, p] : named_parameters()) names.emplace(p, name);
  const Device d = device();
  std::vector<WeightBinding> out;
  for (nn::Linear* l : linears_) {
    const bool seq = std::find(sequences.begin(), sequences.end(), l) != sequences.end();
    out.push_back({names.at(&l->weight_),
                   &l->weight_,
                   {l->out_features(), l->in_features()},
                   t,
                   nn::Linear::binding_replaces_weight(t, d),
                   l,
                   seq});
  }
  const ComputeType o = output.value_or(t);
  Tensor* w = c_.tie_output ? &embed_trg_ : &output_weight_;
  // The tied weight is the embedding table, whose lookups then read the binding where it gives
  // them back (lookups_read_binding): fp32 panels on the CPU (the same values) and int8 (the
  // quantised rows, as CTranslate2's int8 embeddings). bf16 keeps the f32 table for lookups.
  const bool replaces =
      c_.tie_output ? lookups_read_binding(o, d) : nn::Linear::binding_replaces_weight(o, d);
  out.push_back({names.at(w), w, {c_.trg_vocab_size, c_.d_model}, o, replaces, nullptr, false});
  return out;
}

void Transformer::bind_weight(const WeightBinding& b, const Tensor& w) {
  TFM_CHECK(w.defined() && w.shape() == b.shape)
      << "bind_weight: " << b.name << " must be " << shape_str(b.shape) << ", got "
      << (w.defined() ? w.describe() : std::string("an undefined tensor"));
  if (b.layer)
    b.layer->kernel().bind(w, b.type, b.sequences);
  else
    output_kernel_.bind(w, b.type, false, c_.tie_output && lookups_read_binding(b.type, device()));
}

void Transformer::bind_inference(ComputeType t, std::optional<ComputeType> output, bool keep_f32) {
  for (const WeightBinding& b : weight_bindings(t, output)) {
    TFM_CHECK(b.weight->defined())
        << "bind_inference: " << b.name << " was released by an earlier binding (keep_f32 = "
        << "false; its only copy was that binding): load the model again to bind it otherwise";
    bind_weight(b, *b.weight);
    if (!keep_f32 && b.replaces) *b.weight = Tensor();
  }
}

void Transformer::to(Device device) {
  for (const auto& [name, p] : named_parameters())
    TFM_CHECK(p->defined()) << "to(" << device_name(device) << "): " << name
                            << " was released by an inference binding (keep_f32 = false), which "
                            << "held its only copy: load the model again for another device";
  unbind_inference();
  nn::Module::to(device);
  if (c_.positions != Positions::learned) {
    pos_trg_ = to_device(pos_trg_, device);
    pos_src_ = pos_trg_;
  }
}

void Transformer::unbind_inference() {
  for (nn::Linear* l : linears_) l->kernel().unbind();
  output_kernel_.unbind();
}

ComputeType Transformer::inference_compute() const {
  return linears_.empty() ? output_kernel_.inference_compute()
                          : linears_.front()->kernel().inference_compute();
}

void Transformer::set_train_compute(ComputeType t) {
  for (nn::Linear* l : linears_) l->kernel().set_train_compute(t);
  output_kernel_.set_train_compute(t);
}

int64_t Transformer::dropout_streams_per_forward() const {
  const int64_t sub = c_.dropout > 0 ? 1 : 0, att = c_.attention_dropout > 0 ? 1 : 0;
  // Encoder layer: self-attention and feed-forward sublayers, one attention. Decoder layer: the
  // same plus cross-attention's sublayer and attention. Each stack's embeddings: one.
  const int64_t cross = c_.has_encoder() ? 1 : 0;
  const int64_t encoder = cross * (sub + c_.encoder_layers * (2 * sub + att));
  const int64_t decoder = sub + c_.decoder_layers * ((2 + cross) * sub + (1 + cross) * att);
  return encoder + decoder;
}

Tensor Transformer::padding_mask(const Tensor& ids) const {
  TFM_CHECK(ids.defined() && ids.dtype() == DType::i32 && ids.dim() == 2)
      << "padding_mask: expected i32 ids (B, L), got " << ids.describe();
  return equal_mask(ids, c_.pad_id);
}

Tensor Transformer::embed(const Tensor& ids, const Tensor& table, const Tensor& positions,
                          const nn::LayerNorm* norm, int64_t offset) const {
  TFM_CHECK(ids.dim() == 2) << "embed: expected ids (B, L), got " << ids.describe();
  const int64_t b = ids.size(0), l = ids.size(1);
  TFM_CHECK(offset + l <= c_.max_length)
      << "sequence of " << offset + l << " positions exceeds max_length " << c_.max_length;
  // The tied table (src_table() and trg_table() return the member itself) is read from the output
  // projection's binding where lookups_read_binding says so, released or not, so that int8
  // results do not depend on keep_f32; a forward that trains the table reads the table.
  const LowpWeight* bound = output_kernel_.bound_weight();
  const bool from_binding = c_.tie_output && &table == &embed_trg_ && bound != nullptr &&
                            lookups_read_binding(bound->precision(), bound->device()) &&
                            !(table.defined() && autograd::needs_grad({&table}));
  Tensor x;  // (B, L, C)
  if (from_binding) {
    x = lowp_weight_rows(ids, *bound);
  } else {
    TFM_CHECK(table.defined())
        << "embed: the embedding table was released by an inference binding and is no longer "
        << "bound (unbind_inference): load the model again";
    x = embedding(ids, table, c_.pad_id);
  }
  if (c_.embed_scale == EmbedScale::emb) x = scale(x, std::sqrt(static_cast<double>(c_.d_model)));
  x = add(x, embedding(to_device(position_ids(b, l, offset), table.device()), positions));
  x = dropout(x, c_.dropout, training(), gen_);
  return norm ? (*norm)(x) : x;
}

Tensor Transformer::project(const Tensor& h) const {
  profile::Scope scope(profile::Phase::vocab_projection);
  Tensor logits = output_kernel_.forward(h, c_.tie_output ? embed_trg_ : output_weight_,
                                         output_bias_, Activation::none);
  if (c_.embed_scale == EmbedScale::prj)
    logits = scale(logits, 1.0 / std::sqrt(static_cast<double>(c_.d_model)));
  return logits;
}

Tensor Transformer::encode(const Tensor& src, AttentionWeights* weights) const {
  return encode(src, padding_mask(src), weights);
}

Tensor Transformer::encode(const Tensor& src_in, const Tensor& mask,
                           AttentionWeights* weights) const {
  TFM_CHECK(c_.has_encoder()) << "encode: this is a decoder-only model";
  const Tensor src = to_device(src_in, device());
  Tensor x = embed(src, src_table(), pos_src_, encoder_.embed_norm_.get(), 0);
  for (const auto& layer : encoder_.layers_)
    x = (*layer)(x, mask, gen_, weights ? &weights->encoder_self : nullptr);
  return encoder_.final_norm_ ? (*encoder_.final_norm_)(x) : x;
}

Tensor Transformer::decode(const Tensor& trg_in_arg, const Tensor& memory, const Tensor& src_mask,
                           AttentionWeights* weights) const {
  const Tensor trg_in = to_device(trg_in_arg, device());
  // Padding sits after every real token, where causal attention never looks; the mask only keeps
  // padded queries finite. A decoder that starts from PAD (Marian: BOS = PAD) must not have its
  // first key masked, so it goes without (its padded queries' outputs are never read).
  Tensor trg_mask = c_.bos_id == c_.pad_id ? Tensor() : padding_mask(trg_in);
  Tensor x = embed(trg_in, trg_table(), pos_trg_, decoder_.embed_norm_.get(), 0);
  for (const auto& layer : decoder_.layers_)
    x = (*layer)(x, trg_mask, memory, src_mask, gen_, weights);
  if (decoder_.final_norm_) x = (*decoder_.final_norm_)(x);
  return project(x);
}

Tensor Transformer::forward(const Tensor& src_in, const Tensor& trg_in,
                            AttentionWeights* weights) const {
  if (!c_.has_encoder()) return decode(trg_in, Tensor(), Tensor(), weights);
  const Tensor src = to_device(src_in, device());  // host ids to the model's device
  Tensor src_mask = padding_mask(src);
  Tensor memory = encode(src, src_mask, weights);
  return decode(trg_in, memory, src_mask, weights);
}

DecoderState Transformer::start(const Tensor& src_in) const {
  TFM_CHECK(c_.has_encoder()) << "start: decoder-only models use start_decoder_only";
  const Tensor src = to_device(src_in, device());  // host ids to the model's device
  DecoderState st;
  st.src_mask = padding_mask(src);
  st.layers.resize(decoder_.layers_.size());
  // On the CPU in chunks of similar lengths (model/encode_chunks.h); a GPU wants the batch whole.
  const std::vector<EncodeChunk> chunks =
      device() == Device::cpu ? encode_chunks(source_lengths(src, c_.pad_id), kEncodeChunkRows)
                              : std::vector<EncodeChunk>{};
  if (chunks.size() > 1) {
    encode_chunked(src, chunks, st);
  } else {
    const Tensor memory = encode(src, st.src_mask, nullptr);
    for (size_t i = 0; i < decoder_.layers_.size(); ++i)
      st.layers[i].cross = decoder_.layers_[i]->cross_attn_->project(memory);
  }
  st.source_of_row.resize(src.size(0));
  for (int64_t b = 0; b < src.size(0); ++b) st.source_of_row[b] = b;
  return st;
}

void Transformer::encode_chunked(const Tensor& src, const std::vector<EncodeChunk>& chunks,
                                 DecoderState& st) const {
  const int64_t b = src.size(0), s = src.size(1);
  for (const EncodeChunk& chunk : chunks) {
    const Tensor ids = narrow(index_rows(src, chunk.rows), 1, 0, chunk.length).contiguous();
    const Tensor memory = encode(ids, padding_mask(ids), nullptr);  // (n, length, C)
    for (size_t i = 0; i < decoder_.layers_.size(); ++i) {
      const nn::KVCache part = decoder_.layers_[i]->cross_attn_->project(memory);
      nn::KVCache& kv = st.layers[i].cross;
      for (auto [whole, piece] : {std::pair{&kv.k, &part.k}, std::pair{&kv.v, &part.v}}) {
        if (!whole->defined())
          *whole = Tensor::zeros({b, s, piece->size(2)}, piece->dtype(), piece->device());
        for (size_t j = 0; j < chunk.rows.size(); ++j) {  // the row's own positions
          const auto r = chunk.rows[j], n = static_cast<int64_t>(j), len = chunk.lengths[j];
          copy_rows(narrow(piece->slice(n, n + 1), 1, 0, len), nullptr,
                    narrow(whole->slice(r, r + 1), 1, 0, len));
        }
      }
    }
  }
}

DecoderState Transformer::start_decoder_only(int64_t batch) const {
  TFM_CHECK(!c_.has_encoder()) << "start_decoder_only: this model has an encoder";
  TFM_CHECK(batch > 0) << "start_decoder_only: batch must be positive";
  DecoderState st;
  st.layers.resize(decoder_.layers_.size());
  return st;
}

Tensor Transformer::step(DecoderState& st, const Tensor& tokens, AttentionWeights* weights,
                         Tensor* last_cross_attention) const {
  Tensor ids =
      to_device(tokens.dim() == 1 ? tokens.reshape({tokens.size(0), 1}) : tokens, device());
  TFM_CHECK(ids.dim() == 2) << "step: expected tokens (B) or (B, t), got " << tokens.describe();
  TFM_CHECK(st.layers.size() == decoder_.layers_.size())
      << "step: state has " << st.layers.size() << " layers, the model " << decoder_.layers_.size();
  Tensor x = embed(ids, trg_table(), pos_trg_, decoder_.embed_norm_.get(), st.position);
  TFM_CHECK(!last_cross_attention || c_.has_encoder())
      << "step: a decoder-only model has no cross-attention";
  const size_t n = decoder_.layers_.size();
  for (size_t i = 0; i < n; ++i)
    x = decoder_.layers_[i]->step(x, st.layers[i], st.src_mask, weights, st.reserve,
                                  i + 1 == n ? last_cross_attention : nullptr, st.source_rows);
  st.position += ids.size(1);
  if (decoder_.final_norm_) x = (*decoder_.final_norm_)(x);
  const int64_t t = x.size(1);
  Tensor last = narrow(x, 1, t - 1, 1);                    // (B, 1, C)
  return project(reshape(last, {x.size(0), c_.d_model}));  // (B, V)
}

}  // namespace tfm
