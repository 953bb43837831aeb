#!/usr/bin/env python3
"""Convert a PyTorch state_dict into a tfm model directory (config.json + model.safetensors).

    /usr/bin/python3 tools/convert_pytorch.py --layout seed004|seed000|torch-nn \
        --checkpoint FILE.pt --out DIR [--heads N] [--pad-id N] [--bos-id N] [--eos-id N] \
        [--max-length N] [--embed-scale emb|prj|none] [--norm pre|post] [--activation relu|gelu] \
        [--source-bos | --no-source-bos] [--source-eos | --no-source-eos]

FILE.pt is torch.save(model.state_dict()) (a dict holding it under "model" or "state_dict", as
training scripts save, is accepted too). Layouts (tools/seed_models.py implements each):

  seed004   jadore801120/attention-is-all-you-need-pytorch (seed 004): post-norm, eps 1e-6,
            bias-free attention, embed_norm, sinusoidal; 'prj' scaling when the projection is
            tied to the target embedding, else none (the original's rule; --embed-scale wins).
  seed000   seed 000's `transformer`: pre-norm, final norms, sinusoidal_concat, 'emb' scaling,
            output tied to the target embedding, eps 1e-6; no encoder names = decoder-only.
  torch-nn  the Seq2SeqTransformer of PyTorch's nn.Transformer translation tutorial: eps 1e-5,
            'emb' scaling, final norms, generator with bias; --norm (norm_first is not in a
            state dict, default post) and --activation (default relu) as the model was built.

What the state dict determines is inferred: d_model, d_ff, layer counts, vocabulary sizes,
whether biases exist, sharing/tying (by comparing tensors), and learned vs sinusoidal positions
(a stored position table that is not the sinusoid becomes `positions: learned`; its length sets
max_length). The number of heads, the special ids and dropout rates are not in a state dict:
they come from flags. Unknown or missing names are an error that lists them.

Source framing (config keys source_bos / source_eos: what tfm adds around each source sentence)
is not in a state dict either; each layout's default is what its training pipeline fed the
encoder, and the flags override it for a model trained otherwise:
  seed004   [BOS] x [EOS]: jadore801120's preprocess.py gives the source Field init_token <s>
            and eos_token </s>
  seed000   x [EOS]: tensor2tensor appends EOS to the inputs, no BOS
  torch-nn  [BOS] x [EOS]: the tutorial's tensor_transform wraps source and target alike
"""
from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np
import torch

import reference_model as rm


class ConvertError(Exception):
    pass


class Names:
    """The source state dict, with a record of which names were used."""

    def __init__(self, sd: dict):
        self.sd = {k: v.detach().to(torch.float64) for k, v in sd.items()}
        self.used: set[str] = set()

    def has(self, name):
        return name in self.sd

    def get(self, name):
        if name not in self.sd:
            raise ConvertError(f"missing tensor {name!r}")
        self.used.add(name)
        return self.sd[name]

    def opt(self, name):
        return self.get(name) if name in self.sd else None

    def drop(self, prefix):
        """Mark names under `prefix` as used (known, but not part of the converted model)."""
        dropped = [k for k in self.sd if k.startswith(prefix)]
        self.used.update(dropped)
        return dropped

    def layer_count(self, pattern):
        rx = re.compile(pattern)
        idx = {int(m.group(1)) for k in self.sd if (m := rx.match(k))}
        if idx and idx != set(range(len(idx))):
            raise ConvertError(f"layer indices of {pattern} are not 0..N-1: {sorted(idx)}")
        return len(idx)

    def check_all_used(self):
        unknown = sorted(set(self.sd) - self.used)
        if unknown:
            raise ConvertError("unknown tensor names for this layout: " + ", ".join(unknown))


def same(a, b):
    return a is not None and b is not None and a.shape == b.shape and torch.equal(a, b)


def is_sinusoid(table: torch.Tensor, kind: str) -> bool:
    """Whether a (L, C) table is the sinusoid, allowing for a float32 computation (whose argument
    error grows with the position)."""
    L, C = table.shape
    ref = torch.from_numpy(rm.sinusoid_table(L, C, kind))
    tol = 1e-6 + 2e-7 * torch.arange(L, dtype=torch.float64)[:, None]
    return bool(((table - ref).abs() <= tol).all())


def put_attn(out, prefix, w, b):
    """w, b: dicts q/k/v/out -> tensor (b values may be None)."""
    for p in ("q", "k", "v", "out"):
        out[f"{prefix}.{p}_proj.weight"] = w[p]
        if b[p] is not None:
            out[f"{prefix}.{p}_proj.bias"] = b[p]


def put_norm(out, prefix, w, b):
    out[f"{prefix}.weight"] = w
    out[f"{prefix}.bias"] = b if b is not None else torch.zeros_like(w)


def finish_biases(cfg_kw, out, notes):
    """Set `bias` from what exists; when only some projections have biases (seed 004: FFN yes,
    attention no), the missing ones become zeros, which computes the same function."""
    bias_names = [n for n in rm_names_with_bias(cfg_kw) if n.endswith(".bias")]
    present = [n for n in bias_names if n in out]
    cfg_kw["bias"] = bool(present)
    if present and len(present) != len(bias_names):
        for n in bias_names:
            if n not in out:
                out[n] = torch.zeros(cfg_kw["d_model"] if "fc1" not in n else cfg_kw["d_ff"],
                                     dtype=torch.float64)
        notes.append(f"{len(bias_names) - len(present)} projection biases absent in the "
                     "checkpoint are written as zeros (bias: true)")


def rm_names_with_bias(cfg_kw):
    """Names of the attention/FFN biases a bias: true config of this shape has."""
    cfg = rm.ModelConfig(**{**cfg_kw, "bias": True})
    return [n for n in rm.expected_shapes(cfg)
            if n.endswith(".bias") and ("_proj." in n or ".ffn." in n)]


# ----------------------------------------------------------------------------- layouts

def convert_seed004(src: Names, args, notes):
    out, kw = {}, {}
    trg_emb = src.get("decoder.trg_word_emb.weight")
    src_emb = src.get("encoder.src_word_emb.weight")
    prj = src.get("trg_word_prj.weight")
    C = trg_emb.shape[1]
    kw.update(d_model=C, norm="post", final_norm=False, embed_norm=True, layer_norm_eps=1e-6,
              activation="relu", output_bias=False, decoder_only=False,
              src_vocab_size=src_emb.shape[0], trg_vocab_size=trg_emb.shape[0])
    kw["share_embeddings"] = same(src_emb, trg_emb)
    kw["tie_output"] = same(prj, trg_emb)
    # The original scales only when the projection is tied ('prj' by default).
    kw["embed_scale"] = args.embed_scale or ("prj" if kw["tie_output"] else "none")
    out["embed.trg.weight"] = trg_emb
    if not kw["share_embeddings"]:
        out["embed.src.weight"] = src_emb
    if not kw["tie_output"]:
        out["output.weight"] = prj
    tables = {s: src.get(f"{st}.position_enc.pos_table")[0]
              for s, st in (("src", "encoder"), ("trg", "decoder"))}
    positions(kw, out, tables, "sinusoidal", args, notes)
    n_enc = src.layer_count(r"encoder\.layer_stack\.(\d+)\.")
    n_dec = src.layer_count(r"decoder\.layer_stack\.(\d+)\.")
    kw.update(encoder_layers=n_enc, decoder_layers=n_dec)
    for stack in ("encoder", "decoder"):
        put_norm(out, f"{stack}.embed_norm", src.get(f"{stack}.layer_norm.weight"),
                 src.get(f"{stack}.layer_norm.bias"))
    names = {"q": "w_qs", "k": "w_ks", "v": "w_vs", "out": "fc"}
    for stack, n in (("encoder", n_enc), ("decoder", n_dec)):
        subs = [("slf_attn", "self_attn")] + ([("enc_attn", "cross_attn")] if stack == "decoder"
                                               else [])
        for i in range(n):
            s, d = f"{stack}.layer_stack.{i}", f"{stack}.layers.{i}"
            for sname, dname in subs:
                w = {p: src.get(f"{s}.{sname}.{q}.weight") for p, q in names.items()}
                b = {p: src.opt(f"{s}.{sname}.{q}.bias") for p, q in names.items()}
                put_attn(out, f"{d}.{dname}", w, b)
                put_norm(out, f"{d}.{dname}_norm", src.get(f"{s}.{sname}.layer_norm.weight"),
                         src.opt(f"{s}.{sname}.layer_norm.bias"))
            ffn(out, d, src, f"{s}.pos_ffn.w_1", f"{s}.pos_ffn.w_2")
            put_norm(out, f"{d}.ffn_norm", src.get(f"{s}.pos_ffn.layer_norm.weight"),
                     src.opt(f"{s}.pos_ffn.layer_norm.bias"))
    return out, kw


def convert_seed000(src: Names, args, notes):
    out, kw = {}, {}
    trg_emb = src.get("target_vocab_embedding.weight")
    C = trg_emb.shape[1]
    has_inputs = any(k.startswith("encoder.") for k in src.sd) or src.has(
        "input_vocab_embedding.weight")
    kw.update(d_model=C, norm="pre", final_norm=True, embed_norm=False, layer_norm_eps=1e-6,
              activation="relu", output_bias=False, tie_output=True,
              embed_scale=args.embed_scale or "emb", decoder_only=not has_inputs,
              trg_vocab_size=trg_emb.shape[0])
    out["embed.trg.weight"] = trg_emb
    inv = src.get("inv_timescales")
    n = C // 2
    want = torch.exp(torch.arange(n, dtype=torch.float64) * -(np.log(10000.0) / max(n - 1, 1)))
    if inv.shape != (n,) or not torch.allclose(inv, want, rtol=1e-6, atol=0):
        raise ConvertError(f"inv_timescales {tuple(inv.shape)} is not seed 000's timescales for "
                           f"d_model {C}")
    kw["positions"] = "sinusoidal_concat"
    kw["max_length"] = args.max_length or 1024
    if has_inputs:
        in_emb = src.opt("input_vocab_embedding.weight")
        # Shared: the seed registers one module under both names (or only the target's).
        kw["share_embeddings"] = in_emb is None or same(in_emb, trg_emb)
        kw["src_vocab_size"] = trg_emb.shape[0] if in_emb is None else in_emb.shape[0]
        if not kw["share_embeddings"]:
            out["embed.src.weight"] = in_emb
    else:
        kw.update(share_embeddings=False, src_vocab_size=0)
    n_enc = src.layer_count(r"encoder\.Encoder_layers\.(\d+)\.") if has_inputs else 0
    n_dec = src.layer_count(r"decoder\.Decoder_layers\.(\d+)\.")
    kw.update(encoder_layers=n_enc, decoder_layers=n_dec)
    proj = {"q": "q_linear", "k": "k_linear", "v": "v_linear", "out": "output_layer"}

    def attn(s, d, sname, dname):
        put_attn(out, f"{d}.{dname}", {p: src.get(f"{s}.{sname}.{q}.weight") for p, q in proj.items()},
                 {p: src.opt(f"{s}.{sname}.{q}.bias") for p, q in proj.items()})
        put_norm(out, f"{d}.{dname}_norm", src.get(f"{s}.{sname}_norm.weight"),
                 src.opt(f"{s}.{sname}_norm.bias"))

    for stack, n, lname in (("encoder", n_enc, "Encoder_layers"), ("decoder", n_dec, "Decoder_layers")):
        for i in range(n):
            s, d = f"{stack}.{lname}.{i}", f"{stack}.layers.{i}"
            attn(s, d, "MutilHeadAttention", "self_attn")
            if stack == "decoder":
                if has_inputs:
                    attn(s, d, "Encoder_Decoder_MutilHeadAttention", "cross_attn")
                else:  # built by the seed even without inputs, never used
                    src.drop(f"{s}.Encoder_Decoder_MutilHeadAttention")
            ffn(out, d, src, f"{s}.FeedForwardNetwork.layer1", f"{s}.FeedForwardNetwork.layer2")
            # The seed's encoder layer spells it FeedForwardNetwork_nrom.
            nm = f"{s}.FeedForwardNetwork_nrom" if src.has(f"{s}.FeedForwardNetwork_nrom.weight") \
                else f"{s}.FeedForwardNetwork_norm"
            put_norm(out, f"{d}.ffn_norm", src.get(f"{nm}.weight"), src.opt(f"{nm}.bias"))
        if stack == "decoder" or has_inputs:
            put_norm(out, f"{stack}.final_norm", src.get(f"{stack}.Last_norm.weight"),
                     src.opt(f"{stack}.Last_norm.bias"))
    if not has_inputs:
        notes.append("decoder-only: the unused Encoder_Decoder_MutilHeadAttention weights are "
                     "dropped")
    return out, kw


def convert_torch_nn(src: Names, args, notes):
    out, kw = {}, {}
    trg_emb = src.get("tgt_tok_emb.embedding.weight")
    src_emb = src.get("src_tok_emb.embedding.weight")
    gen_w, gen_b = src.get("generator.weight"), src.opt("generator.bias")
    C = trg_emb.shape[1]
    kw.update(d_model=C, norm=args.norm or "post", embed_norm=False, layer_norm_eps=1e-5,
              activation=args.activation or "relu", embed_scale=args.embed_scale or "emb",
              decoder_only=False, src_vocab_size=src_emb.shape[0],
              trg_vocab_size=trg_emb.shape[0], output_bias=gen_b is not None)
    kw["share_embeddings"] = same(src_emb, trg_emb)
    kw["tie_output"] = same(gen_w, trg_emb)
    out["embed.trg.weight"] = trg_emb
    if not kw["share_embeddings"]:
        out["embed.src.weight"] = src_emb
    if not kw["tie_output"]:
        out["output.weight"] = gen_w
    if gen_b is not None:
        out["output.bias"] = gen_b
    table = src.get("positional_encoding.pos_embedding")
    if table.dim() == 3:
        table = table[:, 0, :]
    positions(kw, out, {"src": table, "trg": table}, "sinusoidal", args, notes)
    n_enc = src.layer_count(r"transformer\.encoder\.layers\.(\d+)\.")
    n_dec = src.layer_count(r"transformer\.decoder\.layers\.(\d+)\.")
    kw.update(encoder_layers=n_enc, decoder_layers=n_dec)

    def attn(s, d):
        w = src.get(f"{s}.in_proj_weight")
        if w.shape != (3 * C, C):
            raise ConvertError(f"{s}.in_proj_weight is {tuple(w.shape)}, expected {(3 * C, C)} "
                               "(separate q/k/v weights are not supported)")
        b = src.opt(f"{s}.in_proj_bias")
        ws, bs = w.split(C), (b.split(C) if b is not None else (None,) * 3)
        put_attn(out, d, {"q": ws[0], "k": ws[1], "v": ws[2],
                          "out": src.get(f"{s}.out_proj.weight")},
                 {"q": bs[0], "k": bs[1], "v": bs[2], "out": src.opt(f"{s}.out_proj.bias")})

    def norm(s, d):
        put_norm(out, d, src.get(f"{s}.weight"), src.opt(f"{s}.bias"))

    for stack, n in (("encoder", n_enc), ("decoder", n_dec)):
        for i in range(n):
            s, d = f"transformer.{stack}.layers.{i}", f"{stack}.layers.{i}"
            attn(f"{s}.self_attn", f"{d}.self_attn")
            norm(f"{s}.norm1", f"{d}.self_attn_norm")
            if stack == "decoder":
                attn(f"{s}.multihead_attn", f"{d}.cross_attn")
                norm(f"{s}.norm2", f"{d}.cross_attn_norm")
                norm(f"{s}.norm3", f"{d}.ffn_norm")
            else:
                norm(f"{s}.norm2", f"{d}.ffn_norm")
            ffn(out, d, src, f"{s}.linear1", f"{s}.linear2")
    finals = [src.has(f"transformer.{s}.norm.weight") for s in ("encoder", "decoder")]
    if finals[0] != finals[1]:
        raise ConvertError("final norm present in only one of transformer.encoder / decoder")
    kw["final_norm"] = finals[0]
    if finals[0]:
        for s in ("encoder", "decoder"):
            norm(f"transformer.{s}.norm", f"{s}.final_norm")
    return out, kw


def ffn(out, d, src: Names, fc1, fc2):
    out[f"{d}.ffn.fc1.weight"] = src.get(f"{fc1}.weight")
    out[f"{d}.ffn.fc2.weight"] = src.get(f"{fc2}.weight")
    for dn, sn in (("fc1", fc1), ("fc2", fc2)):
        b = src.opt(f"{sn}.bias")
        if b is not None:
            out[f"{d}.ffn.{dn}.bias"] = b


def positions(kw, out, tables, kind, args, notes):
    """Sinusoidal if every stored table is the sinusoid, else learned tables."""
    L = min(t.shape[0] for t in tables.values())
    if all(is_sinusoid(t, kind) for t in tables.values()):
        kw["positions"] = kind
        kw["max_length"] = args.max_length or L
    else:
        kw["positions"] = "learned"
        kw["max_length"] = args.max_length or L
        if kw["max_length"] > L:
            raise ConvertError(f"--max-length {kw['max_length']} exceeds the stored position "
                               f"table ({L} rows)")
        for side, t in tables.items():
            out[f"pos.{side}.weight"] = t[:kw["max_length"]]
        notes.append("position tables are not the sinusoid: converted as learned positions")


LAYOUTS = {"seed004": convert_seed004, "seed000": convert_seed000, "torch-nn": convert_torch_nn}
# Special ids when no flag says: the tutorial's constants for torch-nn, the project's otherwise.
DEFAULT_IDS = {"seed004": (0, 1, 2), "seed000": (0, 1, 2), "torch-nn": (1, 2, 3)}
# (source_bos, source_eos) when no flag says: what each layout's training pipeline fed the encoder
# (the module docstring says where each comes from).
DEFAULT_FRAMING = {"seed004": (True, True), "seed000": (False, True), "torch-nn": (True, True)}


def load_state_dict(path):
    if not os.path.isfile(path):
        raise ConvertError("no such file")
    try:
        obj = torch.load(path, map_location="cpu")
    except Exception as e:  # torch.load fails in many ways on a file that is not a checkpoint
        raise ConvertError(f"not a torch checkpoint ({type(e).__name__}: {e})") from None
    if isinstance(obj, torch.nn.Module):
        obj = obj.state_dict()
    if isinstance(obj, dict):
        for key in ("model", "state_dict", "model_state_dict"):
            if key in obj and isinstance(obj[key], dict):
                obj = obj[key]
                break
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise ConvertError(f"{path}: not a state_dict (a dict of tensors)")
    return obj


def convert(state_dict: dict, layout: str, args) -> tuple[rm.ModelConfig, dict, list[str]]:
    """(config, contract name -> float64 tensor, notes) for a source state dict."""
    src, notes = Names(state_dict), []
    out, kw = LAYOUTS[layout](src, args, notes)
    src.check_all_used()
    if args.heads is None:
        args_heads = 8
        notes.append("--heads not given: 8 (the layouts' default)")
    else:
        args_heads = args.heads
    pad, bos, eos = DEFAULT_IDS[layout]
    src_bos, src_eos = DEFAULT_FRAMING[layout]
    src_bos = src_bos if args.source_bos is None else args.source_bos
    src_eos = src_eos if args.source_eos is None else args.source_eos
    if kw["decoder_only"]:
        src_bos, src_eos = False, True  # no source: keep the keys at their defaults
    else:
        notes.append("source framing: " + "[BOS] " * src_bos + "x" + " [EOS]" * src_eos
                     + (" (the layout's; see --source-bos / --source-eos)"
                        if (args.source_bos, args.source_eos) == (None, None) else ""))
    kw.update(heads=args_heads, source_bos=src_bos, source_eos=src_eos,
              pad_id=pad if args.pad_id is None else args.pad_id,
              bos_id=bos if args.bos_id is None else args.bos_id,
              eos_id=eos if args.eos_id is None else args.eos_id,
              dropout=args.dropout, attention_dropout=args.attention_dropout)
    fc1 = next(v for k, v in out.items() if k.endswith("ffn.fc1.weight"))
    kw["d_ff"] = fc1.shape[0]
    if kw["d_model"] % kw["heads"]:
        raise ConvertError(f"d_model {kw['d_model']} is not a multiple of --heads {kw['heads']}")
    finish_biases(kw, out, notes)
    try:
        cfg = rm.ModelConfig(**kw).validate()
        rm.check_tensors(cfg, out)
    except ValueError as e:
        raise ConvertError(str(e)) from None
    return cfg, out, notes


def parser():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layout", required=True, choices=sorted(LAYOUTS))
    p.add_argument("--checkpoint", required=True, help="torch.save(model.state_dict()) file")
    p.add_argument("--out", required=True, help="model directory to write")
    p.add_argument("--heads", type=int, help="attention heads (not in a state dict; default 8)")
    p.add_argument("--pad-id", type=int, help="default 0 (torch-nn: the tutorial's 1)")
    p.add_argument("--bos-id", type=int, help="default 1 (torch-nn: 2)")
    p.add_argument("--eos-id", type=int, help="default 2 (torch-nn: 3)")
    p.add_argument("--max-length", type=int,
                   help="longest sequence (default: the stored position table's length; 1024 "
                        "for seed000, which stores none)")
    p.add_argument("--embed-scale", choices=["emb", "prj", "none"],
                   help="override the layout's embedding/projection scaling")
    p.add_argument("--norm", choices=["pre", "post"], help="torch-nn only: norm_first (default post)")
    p.add_argument("--activation", choices=["relu", "gelu"], help="torch-nn only (default relu)")
    p.add_argument("--source-bos", action=argparse.BooleanOptionalAction, default=None,
                   help="put BOS before each source sentence (default: the layout's; seed004 and "
                        "torch-nn yes, seed000 no)")
    p.add_argument("--source-eos", action=argparse.BooleanOptionalAction, default=None,
                   help="put EOS after each source sentence (default: the layout's; yes for all "
                        "three)")
    p.add_argument("--dropout", type=float, default=0.1, help="for further training (default 0.1)")
    p.add_argument("--attention-dropout", type=float, default=0.1, help="default 0.1")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.layout != "torch-nn" and (args.norm or args.activation):
        print("error: --norm and --activation apply to --layout torch-nn only", file=sys.stderr)
        return 2
    try:
        sd = load_state_dict(args.checkpoint)
        cfg, tensors, notes = convert(sd, args.layout, args)
    except ConvertError as e:
        print(f"error: {args.checkpoint}: {e}", file=sys.stderr)
        return 1
    try:
        rm.save_model_dir(args.out, cfg, tensors)
    except OSError as e:
        print(f"error: {args.out}: {e}", file=sys.stderr)
        return 1
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    print(f"wrote {args.out}: {args.layout}, d_model {cfg.d_model}, {cfg.heads} heads, "
          f"{cfg.encoder_layers}+{cfg.decoder_layers} layers, vocab {cfg.src_vocab_size}/"
          f"{cfg.trg_vocab_size}, {len(tensors)} tensors", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
