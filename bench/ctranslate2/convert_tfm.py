#!/usr/bin/env python3
"""Converts a tfm model directory into a CTranslate2 model directory.

  .venv/bin/python bench/ctranslate2/convert_tfm.py --model TFM_DIR --out CT2_DIR \
      [--quantization int8] [--force]

(any interpreter with the `ctranslate2` and `sentencepiece` packages: scripts/setup_venv.sh
installs the index's into .venv/)

A tfm model directory (docs/design.md, "Files" and "Parameter names and config keys") holds
model.safetensors (f32 weights; __metadata__["config"] = the config JSON), config.json, and the
SentencePiece model(s): vocab.model (joint) or vocab.src.model + vocab.trg.model (or the
older .spm names). The CT2 model gets
the same math:
  * norm pre|post -> TransformerSpec pre_norm; final_norm -> encoder/decoder layer_norm (CT2
    applies a stack's output norm whenever the variable exists, pre- or post-norm);
  * embed_norm -> layernorm_embedding (CT2 applies it after scale + positions, as tfm);
  * embed_scale emb -> scale_embeddings (x sqrt(d)); prj -> decoder scale_outputs = 1/sqrt(d)
    (and output bias / sqrt(d)); none -> no scaling;
  * positions: tfm's exact table (interleaved sin/cos for 'sinusoidal', [sin | cos] for
    'sinusoidal_concat', computed in float64 like src/tfm/nn/positional.cpp; or the learned
    pos.src/pos.trg tables) stored as position_encodings/encodings (row p = position p, starting
    at 0 for the first source token and for BOS), so CT2's own sinusoid is never used;
  * q/k/v projections fused as CT2 expects (self: [q;k;v], cross: q and [k;v]);
  * return_attention: the last decoder layer's cross-attention averaged over all heads, as tfm's
    (alignment_heads = heads; CT2's default is the first head);
  * shared embeddings / tied output: the same array (CT2 stores an alias);
  * layer_norm_eps -> config layer_norm_epsilon; relu|gelu (erf) -> RELU|GELU;
  * vocabularies: the SentencePiece pieces in id order (ids 0-3 = <pad> <s> </s> <unk>);
    bos/eos/unk tokens = the pieces at bos_id/eos_id/unk id; decoder_start_token = BOS;
    add_source_eos = true (tfm's encoder reads [x1 ... xm, EOS]).
decoder_only models are not converted (tfm translate does not take them either).
"""
import argparse
import json
import math
import os
import shutil
import struct
import sys

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I32": np.int32, "I64": np.int64}


def read_safetensors(path):
    """Returns ({name: np.ndarray}, metadata) without the safetensors package."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        dt = info["dtype"]
        if dt == "BF16":
            raw = np.frombuffer(data[b:e], dtype=np.uint16).astype(np.uint32) << 16
            arr = raw.view(np.float32)
        else:
            arr = np.frombuffer(data[b:e], dtype=_DTYPES[dt])
        out[name] = arr.reshape(info["shape"]).astype(np.float32, copy=True)
    return out, meta


def sinusoidal_table(length, d):
    """tfm's Positions::sinusoidal: interleaved, angle = p / 10000^(2*(j//2)/d)."""
    p = np.arange(length, dtype=np.float64)[:, None]
    j = np.arange(d)
    angle = p / np.power(10000.0, 2.0 * (j // 2) / d)[None, :]
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32)


def sinusoidal_concat_table(length, d):
    """tfm's Positions::sinusoidal_concat: [sin | cos], timescales exp(-j*log(1e4)/(n-1))."""
    n = d // 2
    inc = math.log(10000.0) / max(n - 1, 1)
    t = np.arange(length, dtype=np.float64)[:, None] * np.exp(-np.arange(n) * inc)[None, :]
    table = np.zeros((length, d), np.float64)
    table[:, :n] = np.sin(t)
    table[:, n:2 * n] = np.cos(t)
    return table.astype(np.float32)


def spm_pieces(path):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=path)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    if len(set(pieces)) != len(pieces):
        raise SystemExit("%s: duplicate pieces; CT2 maps tokens by string" % path)
    return pieces, sp.unk_id()


def find_vocabs(model_dir, src=None, trg=None):
    if src or trg:
        if not (src and trg):
            raise SystemExit("give both --vocab-src and --vocab-trg (or --vocab)")
        return src, trg
    for ext in ("model", "spm"):  # tfm's names, then the older ones
        shared = os.path.join(model_dir, "vocab." + ext)
        if os.path.exists(shared):
            return shared, shared
        s, t = (os.path.join(model_dir, "vocab.%s.%s" % (side, ext)) for side in ("src", "trg"))
        if os.path.exists(s) and os.path.exists(t):
            return s, t
    raise SystemExit("%s holds no vocab.model nor vocab.src.model + vocab.trg.model; pass --vocab"
                     % model_dir)


def build_spec(cfg, W, src_pieces, trg_pieces, unk_piece):
    from ctranslate2.specs import common_spec, transformer_spec

    if cfg.get("decoder_only"):
        raise SystemExit("decoder_only models are not supported by this converter")
    d, heads = cfg["d_model"], cfg["heads"]
    pre = cfg.get("norm", "post") == "pre"
    final_norm = cfg.get("final_norm", False)
    act = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU}[
        cfg.get("activation", "relu")]
    used = set()

    def get(name):
        used.add(name)
        return W[name]

    def opt(name):
        if name in W:
            used.add(name)
            return W[name]
        return None

    # pre_norm=True at construction creates the stack's output LayerNorm slot; the real placement
    # is set right after (CT2 applies the output norm whenever the variable exists).
    enc = transformer_spec.TransformerEncoderSpec(
        cfg["encoder_layers"], heads, pre_norm=True, no_final_norm=not final_norm,
        activation=act, layernorm_embedding=cfg.get("embed_norm", False))
    # alignment_heads=heads: CT2's attention is then tfm's, the last layer's averaged over all
    # heads (CT2's default takes the first head alone).
    dec = transformer_spec.TransformerDecoderSpec(
        cfg["decoder_layers"], heads, pre_norm=True, no_final_norm=not final_norm,
        activation=act, layernorm_embedding=cfg.get("embed_norm", False),
        alignment_heads=heads)
    enc.pre_norm = pre
    dec.pre_norm = pre

    def set_linear(spec, prefix):
        spec.weight = get(prefix + ".weight")
        b = opt(prefix + ".bias")
        if b is not None:
            spec.bias = b

    def set_fused(spec, prefixes):
        spec.weight = np.concatenate([get(p + ".weight") for p in prefixes], axis=0)
        bs = [opt(p + ".bias") for p in prefixes]
        if any(b is not None for b in bs):
            spec.bias = np.concatenate(
                [b if b is not None else np.zeros(get(p + ".weight").shape[0], np.float32)
                 for p, b in zip(prefixes, bs)])

    def set_norm(spec, prefix):
        spec.gamma = get(prefix + ".weight")
        spec.beta = get(prefix + ".bias")

    def set_attention(spec, prefix, cross):
        q, k, v, o = (prefix + "." + n for n in ("q_proj", "k_proj", "v_proj", "out_proj"))
        if cross:
            set_linear(spec.linear[0], q)
            set_fused(spec.linear[1], [k, v])
            set_linear(spec.linear[2], o)
        else:
            set_fused(spec.linear[0], [q, k, v])
            set_linear(spec.linear[1], o)

    def set_ffn(spec, prefix):
        set_linear(spec.linear_0, prefix + ".fc1")
        set_linear(spec.linear_1, prefix + ".fc2")

    # Embeddings, scales, positions.
    trg_emb = get("embed.trg.weight")
    src_emb = trg_emb if cfg.get("share_embeddings", False) else get("embed.src.weight")
    enc.embeddings[0].weight = src_emb
    dec.embeddings.weight = trg_emb
    scale = cfg.get("embed_scale", "emb")
    enc.scale_embeddings = dec.scale_embeddings = (scale == "emb")
    positions = cfg.get("positions", "sinusoidal")
    max_len = cfg.get("max_length", 1024)
    if positions == "learned":
        enc.position_encodings.encodings = get("pos.src.weight")
        dec.position_encodings.encodings = get("pos.trg.weight")
    else:
        table = (sinusoidal_table if positions == "sinusoidal" else sinusoidal_concat_table)(max_len, d)
        enc.position_encodings.encodings = table
        dec.position_encodings.encodings = table
    if cfg.get("embed_norm", False):
        set_norm(enc.layernorm_embedding, "encoder.embed_norm")
        set_norm(dec.layernorm_embedding, "decoder.embed_norm")
    if final_norm:
        set_norm(enc.layer_norm, "encoder.final_norm")
        set_norm(dec.layer_norm, "decoder.final_norm")

    for i, layer in enumerate(enc.layer):
        p = "encoder.layers.%d." % i
        set_attention(layer.self_attention, p + "self_attn", cross=False)
        set_norm(layer.self_attention.layer_norm, p + "self_attn_norm")
        set_ffn(layer.ffn, p + "ffn")
        set_norm(layer.ffn.layer_norm, p + "ffn_norm")
    for i, layer in enumerate(dec.layer):
        p = "decoder.layers.%d." % i
        set_attention(layer.self_attention, p + "self_attn", cross=False)
        set_norm(layer.self_attention.layer_norm, p + "self_attn_norm")
        set_attention(layer.attention, p + "cross_attn", cross=True)
        set_norm(layer.attention.layer_norm, p + "cross_attn_norm")
        set_ffn(layer.ffn, p + "ffn")
        set_norm(layer.ffn.layer_norm, p + "ffn_norm")

    # Output projection: tied (alias of the target embedding) or its own; prj scale.
    dec.projection.weight = trg_emb if cfg.get("tie_output", True) else get("output.weight")
    out_bias = opt("output.bias")
    if scale == "prj":
        s = 1.0 / math.sqrt(d)
        dec.scale_outputs = np.float32(s)  # h * s before the projection: (h W^T) * s
        if out_bias is not None:
            out_bias = out_bias * np.float32(s)  # (h W^T + b) * s = (h s) W^T + b s
    if out_bias is not None:
        dec.projection.bias = out_bias

    unused = sorted(set(W) - used)
    if unused:
        raise SystemExit("tensors not mapped to CT2 (converter bug or unknown variant): %s" % unused)

    spec = transformer_spec.TransformerSpec(enc, dec)
    if len(src_pieces) != cfg["src_vocab_size"] or len(trg_pieces) != cfg["trg_vocab_size"]:
        raise SystemExit("vocabulary sizes %d/%d differ from the config's %d/%d"
                         % (len(src_pieces), len(trg_pieces), cfg["src_vocab_size"], cfg["trg_vocab_size"]))
    spec.register_source_vocabulary(src_pieces)
    spec.register_target_vocabulary(trg_pieces)
    c = spec.config
    c.bos_token = trg_pieces[cfg.get("bos_id", 1)]
    c.eos_token = trg_pieces[cfg.get("eos_id", 2)]
    c.decoder_start_token = c.bos_token
    c.unk_token = unk_piece
    c.add_source_bos = False
    c.add_source_eos = True
    if src_pieces[cfg.get("eos_id", 2)] != c.eos_token:
        raise SystemExit("source and target vocabularies disagree on the EOS piece")
    c.layer_norm_epsilon = float(cfg.get("layer_norm_eps", 1e-5))
    return spec


def convert(model_dir, out_dir, quantization=None, force=False, vocab_src=None, vocab_trg=None):
    weights = os.path.join(model_dir, "model.safetensors")
    W, meta = read_safetensors(weights)
    if "config" in meta:
        cfg = json.loads(meta["config"])
    else:
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
    src_vocab, trg_vocab = find_vocabs(model_dir, vocab_src, vocab_trg)
    src_pieces, src_unk = spm_pieces(src_vocab)
    trg_pieces, trg_unk = spm_pieces(trg_vocab)
    spec = build_spec(cfg, W, src_pieces, trg_pieces, trg_pieces[trg_unk])
    spec.validate()
    spec.optimize(quantization=quantization)
    if os.path.exists(out_dir):
        if not force:
            raise SystemExit("%s exists; use --force" % out_dir)
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    spec.save(out_dir)
    # Keep the tokenizers and the tfm config beside the CT2 model (translate_ct2.py uses them).
    if src_vocab == trg_vocab:
        shutil.copy(src_vocab, os.path.join(out_dir, "vocab.spm"))
    else:
        shutil.copy(src_vocab, os.path.join(out_dir, "vocab.src.spm"))
        shutil.copy(trg_vocab, os.path.join(out_dir, "vocab.trg.spm"))
    with open(os.path.join(out_dir, "tfm_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    return out_dir


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="tfm model directory")
    p.add_argument("--out", required=True, help="CTranslate2 model directory to write")
    p.add_argument("--quantization", default=None,
                   help="weights stored as int8 / int8_float32 / float32 ... (default: float32 as in tfm; "
                        "CT2 can also quantize at load time with compute_type)")
    p.add_argument("--vocab", help="joint SentencePiece model (default: found in --model)")
    p.add_argument("--vocab-src")
    p.add_argument("--vocab-trg")
    p.add_argument("--force", action="store_true")
    a = p.parse_args()
    vs, vt = (a.vocab, a.vocab) if a.vocab else (a.vocab_src, a.vocab_trg)
    print(convert(a.model, a.out, a.quantization, a.force, vs, vt))


if __name__ == "__main__":
    main()
