// The full model: embeddings and positions, encoder and decoder stacks, output projection; the
// full-sequence forward used in training and scoring, and the incremental decoder used in search.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "tfm/model/config.h"
#include "tfm/model/encode_chunks.h"
#include "tfm/model/layers.h"

namespace tfm {

// Everything a decoder needs between steps, for a batch of B rows (sentences or beams). Steps
// write the self-attention caches in place: a copy of a state shares them, so decode from one
// copy only.
struct DecoderState {
  Tensor src_mask;                        // u8 (B, S), undefined for decoder-only
  std::vector<DecoderLayerCache> layers;  // one per decoder layer
  int64_t position = 0;                   // positions consumed so far
  // Target positions to allocate the self-attention caches for on the first step (the search's
  // max length); 0 lets them start small and double.
  int64_t reserve = 0;
  // Which source (row of start()'s batch) each row decodes. The cross-attention keys/values and
  // src_mask keep start()'s rows, one per source, for the whole search: the beams of a sentence
  // read that one copy (through source_rows), so a reorder never copies them, and the beams'
  // reads of their source's keys hit the cache. Empty: unknown; a reorder then gathers the
  // cross-attention rows as it does the self-attention ones.
  std::vector<int64_t> source_of_row;
  // source_of_row as i32 (B) for the attention op; undefined while it is the identity.
  Tensor source_rows;
  int64_t batch() const;
  // Keeps row rows[i] of the old state as row i (beam search reordering; rows may repeat), in
  // the caches' own buffers (no allocation once they have room).
  void reorder(const std::vector<int64_t>& rows);
};

// An encoder or decoder stack: optional embed_norm, the layers, optional final_norm.
template <typename Layer>
class Stack : public nn::Module {
 public:
  using Module::register_module;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::unique_ptr<nn::LayerNorm> embed_norm_, final_norm_;
};

class Transformer : public nn::Module {
 public:
  // Initialised as the seeds do (Xavier uniform matrices, N(0, d^-0.5) embeddings, zero biases,
  // LayerNorm ones/zeros) from `seed`.
  explicit Transformer(const ModelConfig& config, uint64_t seed = 0);
  // The same structure with parameters left as allocated (biases and norms still 0 and 1), for a
  // load that overwrites every parameter: no random numbers drawn, no page touched twice.
  static std::unique_ptr<Transformer> uninitialised(const ModelConfig& config);
  // uninitialised(), with the weights an inference binding prepares not even allocated (left
  // undefined): every linear layer's, the output projection's, and the tied embedding table (the
  // output projection's weight too). For load_model_for_inference, which binds those straight
  // from the file (bind_weight) or allocates and fills the ones the binding keeps.
  static std::unique_ptr<Transformer> unallocated(const ModelConfig& config);

  const ModelConfig& config() const { return c_; }
  // Source of dropout streams while training (the default generator when null).
  void set_generator(Generator* gen) { gen_ = gen; }
  // How many streams one training forward draws from that generator: one per dropout site that
  // is on (embeddings and sublayer outputs at `dropout` > 0, attention probabilities at
  // `attention_dropout` > 0), whatever the batch's shape. Data-parallel training spaces its
  // batches' streams by this count, so one process draws them in the order it always has.
  int64_t dropout_streams_per_forward() const;

  // u8 (B, L): 1 where ids == pad_id.
  Tensor padding_mask(const Tensor& ids) const;
  // src i32 (B, S) -> memory (B, S, C).
  Tensor encode(const Tensor& src, AttentionWeights* weights = nullptr) const;
  // trg_in i32 (B, T) (starting with BOS) -> logits (B, T, V). memory/src_mask undefined for
  // decoder-only models.
  Tensor decode(const Tensor& trg_in, const Tensor& memory, const Tensor& src_mask,
                AttentionWeights* weights = nullptr) const;
  // Teacher-forced logits (B, T, V); src is ignored (may be undefined) for decoder-only models.
  Tensor forward(const Tensor& src, const Tensor& trg_in,
                 AttentionWeights* weights = nullptr) const;

  // Incremental decoding: encode once, then feed tokens (B) or (B, t) and get the logits of the
  // last position (B, V). The logits equal those of forward() over the same prefix.
  // last_cross_attention, when not null, receives the last decoder layer's cross-attention
  // probabilities of the new positions, f32 (B, H, t, S): that layer's alone are computed (what a
  // search returns as alignment), and the logits are bitwise the same as without.
  DecoderState start(const Tensor& src) const;
  DecoderState start_decoder_only(int64_t batch) const;
  Tensor step(DecoderState& state, const Tensor& tokens, AttentionWeights* weights = nullptr,
              Tensor* last_cross_attention = nullptr) const;

  // The parameters' element count, fixed at construction: the same once bindings have released
  // weights, or for an unallocated() model.
  int64_t parameter_count() const { return parameter_count_; }
  // Moves the model to `device`: its parameters and its fixed position table. Inference bindings
  // are dropped first (their prepared weights belong to the old device); the forward, the backward,
  // the training step and decoding then run where the tensors are. An error once a binding has
  // released weights (the binding is then their only copy): load the model again instead.
  void to(Device device);
  Device device() const { return embed_trg_.device(); }  // where the parameters are

  // Binds every linear layer and the output projection for inference at `t` (resolved: fp32,
  // bf16 or int8; see nn::LinearKernel), now, once; `output` overrides it for the output
  // projection alone. Every product without gradients then runs on the bound weights, whatever
  // its row count (fp32: the same values packed into panels). Without keep_f32, each weight the
  // binding replaces (weight_bindings: on the CPU all of them; on cuda bf16/int8 ones) is
  // released, so the model holds one copy of each: it can then translate and score f32 inputs,
  // not train, run f64 references, move to another device or be saved. Lookups of a tied
  // embedding table read the output projection's binding where it is fp32 on the CPU (the same
  // values, gathered from the panels) or int8 (the quantised rows dequantised, q · scale, as
  // CTranslate2's int8 embeddings are), and the table is then released with the other weights;
  // with bf16 they read the f32 table, which stays. A forward that needs gradients drops the
  // bindings it meets: bind again after training.
  // On cuda the weights are prepared on the device (bf16, int8; fp32 binds nothing there).
  void bind_inference(ComputeType t, std::optional<ComputeType> output = std::nullopt,
                      bool keep_f32 = true);
  // One weight bind_inference(t, output) prepares: the parameter named `name` (shape `shape`),
  // bound at `type`; `replaces`: the binding takes the f32 weight's place (so keep_f32 = false
  // releases it, and a loader may bind it from a file without ever filling it).
  struct WeightBinding {
    std::string name;
    Tensor* weight;
    Shape shape;
    ComputeType type;
    bool replaces;
    nn::Linear* layer;  // null: the output projection
    bool sequences;     // the layer multiplies whole sequences (LowpWeight)
  };
  // In parameter order; for a model on `device()`.
  std::vector<WeightBinding> weight_bindings(ComputeType t,
                                             std::optional<ComputeType> output = std::nullopt);
  // Binds b's layer from `w` (b.shape f32: the parameter itself or a file's copy of it).
  void bind_weight(const WeightBinding& b, const Tensor& w);
  // Back to the plain f32 path for inference (exactly the training path's GEMMs).
  void unbind_inference();
  // The compute type the linear layers are bound to (float32 when unbound).
  ComputeType inference_compute() const;
  // The GEMMs of training forwards and backwards (every linear layer and the output projection):
  // fp32 (default) or bf16 mixed precision. Attention's own products, layer norms, softmax,
  // the loss and the optimiser stay fp32; parameters and gradients are f32 either way.
  void set_train_compute(ComputeType t);
  ComputeType train_compute() const { return output_kernel_.train_compute(); }
  // Every linear layer (not the output projection), in parameter order.
  const std::vector<nn::Linear*>& linear_layers() const { return linears_; }
  const nn::LinearKernel& output_kernel() const { return output_kernel_; }

 private:
  Transformer(const ModelConfig& config, Generator init);
  // Whether lookups of a tied table read the output projection's binding at `t` on `device`
  // (lowp_weight_rows): fp32 on the CPU (the same values) and int8 (the quantised rows).
  static bool lookups_read_binding(ComputeType t, Device device) {
    return t == ComputeType::int8 || (t == ComputeType::float32 && device == Device::cpu);
  }
  // ids (B, L) at positions [offset, offset + L) -> (B, L, C), dropout and embed_norm applied.
  // The tied table is read from the output projection's binding where lookups_read_binding says
  // so (undefined then where the binding released it).
  Tensor embed(const Tensor& ids, const Tensor& table, const Tensor& positions,
               const nn::LayerNorm* norm, int64_t offset) const;
  Tensor project(const Tensor& h) const;  // (…, C) -> logits (…, V)
  // encode() with the source padding mask already computed.
  Tensor encode(const Tensor& src, const Tensor& src_mask, AttentionWeights* weights) const;
  // start()'s cross-attention keys and values of src (B, S), encoded in `chunks` (each row in
  // one): st.layers[i].cross, (B, S, C) each, zero past a row's length (masked there).
  void encode_chunked(const Tensor& src, const std::vector<EncodeChunk>& chunks,
                      DecoderState& st) const;
  const Tensor& trg_table() const { return embed_trg_; }
  const Tensor& src_table() const { return c_.share_embeddings ? embed_trg_ : embed_src_; }

  ModelConfig c_;
  Generator init_gen_;
  Generator* gen_ = nullptr;
  Tensor embed_src_, embed_trg_;  // (V, C)
  Tensor pos_src_, pos_trg_;      // (max_length, C): learned parameters or a fixed table
  Tensor output_weight_, output_bias_;
  nn::LinearKernel output_kernel_;
  Stack<EncoderLayer> encoder_;
  Stack<DecoderLayer> decoder_;
  std::vector<nn::Linear*> linears_;
  int64_t parameter_count_ = 0;
};

}  // namespace tfm
