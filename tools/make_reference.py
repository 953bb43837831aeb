#!/usr/bin/env python3
"""Generate tests/fixtures/: PyTorch reference numbers the C++ tests compare against.

    /usr/bin/python3 tools/make_reference.py [--out tests/fixtures]

For each variant in VARIANTS, tests/fixtures/<variant>/ holds
  config.json, model.safetensors   a model directory (f32 weights; __metadata__ config,
                                   format_version "1")
  reference.safetensors            src (i32 B x S, each row x + [EOS]; absent when decoder_only),
                                   trg_in (i32 B x T, [BOS] + y), trg_out (i32 B x T, y + [EOS]),
                                   logits (f32 B x T x V), grad.<name> (f32, every parameter: the
                                   gradient of the mean label-smoothed (0.1) cross-entropy over
                                   non-pad targets), scores (f64 B: per-sentence log P(y + EOS),
                                   as `tfm score`), loss_trajectory (f64 10: the loss before each
                                   of 10 Adam steps, lr 1e-3, betas (0.9, 0.98), eps 1e-9, no
                                   weight decay, the same batch every step)
and tests/fixtures/convert/<name>/ holds a model converted by tools/convert_pytorch.py from a
tools/seed_models.py checkpoint (CONVERT_CASES: a layout and converter flags), with src.ids /
trg.ids (space-separated ids, no BOS/EOS, as `tfm score --ids` reads them) and
expected_scores.txt (one log-probability a line, %.9g, computed by the seed model itself on the
source framed as the converted config says: source_bos / source_eos).

Every number is computed in float64 from the f32 weights as stored, with dropout 0 (the fixture
configs say dropout 0); f32 tensors are float64 results rounded once. Weights come from the
contract's init (numpy PCG64, seeded) with every bias and LayerNorm parameter then perturbed, so a
fixture notices a bias or norm parameter that is read but not used. Batches have padding in both
source and target. The output is byte-identical from run to run (one thread, fixed seeds).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import zlib

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert_pytorch as cp  # noqa: E402
import reference_model as rm  # noqa: E402
import safetensors_io  # noqa: E402
import seed_models as sm  # noqa: E402

LABEL_SMOOTHING = 0.1
ADAM = dict(lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
ADAM_STEPS = 10
SRC_LENGTHS = [6, 4, 2]  # tokens before EOS: S = 7
TRG_LENGTHS = [5, 3, 1]  # tokens after BOS: T = 6

BASE = dict(d_model=16, heads=4, d_ff=32, encoder_layers=2, decoder_layers=2, dropout=0.0,
            attention_dropout=0.0, src_vocab_size=23, trg_vocab_size=19, max_length=32,
            pad_id=0, bos_id=1, eos_id=2, layer_norm_eps=1e-5, norm="post", final_norm=False,
            embed_norm=False, embed_scale="emb", share_embeddings=False, tie_output=False,
            output_bias=False, positions="sinusoidal", decoder_only=False, bias=True,
            activation="relu")

# name -> overrides of BASE. Together: pre/post, each position kind, each sharing option, each
# embed_scale, embed_norm, bias on/off, relu/gelu, final_norm (with pre and post), decoder_only,
# output bias (tied and untied), odd widths, two eps, unequal layer counts, non-default ids.
VARIANTS = {
    # the paper's base model (+ output bias): post-norm, interleaved sinusoid, nothing shared
    "post_sin_untied": dict(output_bias=True),
    "pre_learned_tied_gelu": dict(norm="pre", final_norm=True, positions="learned",
                                  tie_output=True, embed_scale="none", bias=False,
                                  activation="gelu", heads=2),
    "post_concat_shared_final": dict(final_norm=True, positions="sinusoidal_concat",
                                     share_embeddings=True, src_vocab_size=21,
                                     trg_vocab_size=21, output_bias=True),
    "pre_sin_shared_tied_prj": dict(norm="pre", share_embeddings=True, tie_output=True,
                                    src_vocab_size=21, trg_vocab_size=21, embed_scale="prj",
                                    embed_norm=True, activation="gelu", layer_norm_eps=1e-6),
    # odd width: the [sin | cos] table gets its zero column
    "odd_width_concat": dict(d_model=15, heads=3, norm="pre", final_norm=True,
                             positions="sinusoidal_concat", tie_output=True, output_bias=True),
    # decoder-only (seed 000 has_inputs=False), odd width with the interleaved sinusoid
    "decoder_only_odd": dict(decoder_only=True, encoder_layers=0, src_vocab_size=0, d_model=15,
                             heads=5, norm="pre", final_norm=True, tie_output=True,
                             output_bias=True, activation="gelu"),
    "post_learned_nobias": dict(positions="learned", embed_scale="none", embed_norm=True,
                                bias=False, activation="gelu", output_bias=True, final_norm=True,
                                encoder_layers=1, d_ff=24, heads=2),
    # seed 004 (jadore801120): the attention projections of seed 004 have no bias, its FFN has;
    # the contract's one `bias` key covers both, so the seed's model is bias: true with zero
    # attention biases (what convert_pytorch writes); here the biases are random like all others.
    "seed004": dict(share_embeddings=True, tie_output=True, src_vocab_size=23,
                    trg_vocab_size=23, embed_scale="prj", embed_norm=True, layer_norm_eps=1e-6),
    # seed 000 (fixed): pre-norm, final norms, [sin | cos], shared + tied, 8 heads as the seed
    "seed000": dict(norm="pre", final_norm=True, positions="sinusoidal_concat",
                    share_embeddings=True, tie_output=True, src_vocab_size=23,
                    trg_vocab_size=23, layer_norm_eps=1e-6, heads=8),
    # torch.nn.Transformer tutorial: post-norm + final norms, generator bias, the tutorial's ids
    "torch_nn": dict(final_norm=True, output_bias=True, pad_id=1, bos_id=2, eos_id=3),
}


def variant_seed(name: str) -> int:
    return zlib.crc32(name.encode())


def perturb_vectors(model: torch.nn.Module, rng: np.random.Generator) -> None:
    """Biases ~ N(0, 0.1), LayerNorm weights 1 + N(0, 0.1): no parameter is neutral."""
    with torch.no_grad():
        for name, p in model.state_dict(keep_vars=True).items():
            if p.dim() != 1:
                continue
            noise = torch.from_numpy(rng.standard_normal(tuple(p.shape)) * 0.1).to(p.dtype)
            if name.endswith("norm.weight"):
                p.copy_(1.0 + noise)
            else:
                p.copy_(noise)


def random_ids(rng, lengths, vocab, specials):
    allowed = np.array([i for i in range(vocab) if i not in specials])
    return [rng.choice(allowed, size=n).tolist() for n in lengths]


def write_variant(out_dir: str, name: str, overrides: dict) -> None:
    cfg = rm.ModelConfig(**{**BASE, **overrides}).validate()
    rng = np.random.default_rng(variant_seed(name))
    model = rm.Transformer(cfg)
    rm.init_parameters(model, int(rng.integers(2 ** 31)))
    perturb_vectors(model, rng)
    d = os.path.join(out_dir, name)
    rm.save_model_dir(d, cfg, rm.named_tensors(model))

    # Everything below starts from the f32 file, as the C++ side will.
    specials = {cfg.pad_id, cfg.bos_id, cfg.eos_id}
    src = None if cfg.decoder_only else random_ids(rng, SRC_LENGTHS, cfg.src_vocab_size, specials)
    trg = random_ids(rng, TRG_LENGTHS, cfg.trg_vocab_size, specials)
    s, ti, to = rm.make_batch(cfg, src, trg)

    ref = rm.load_model_dir(d, torch.float64)
    ref.train()  # dropout is 0: train and eval compute the same thing
    logits = ref(s, ti)
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), to.reshape(-1), ignore_index=cfg.pad_id,
        label_smoothing=LABEL_SMOOTHING)
    loss.backward()
    out = {}
    if s is not None:
        out["src"] = s.numpy().astype(np.int32)
    out["trg_in"] = ti.numpy().astype(np.int32)
    out["trg_out"] = to.numpy().astype(np.int32)
    out["logits"] = logits.detach().numpy().astype(np.float32)
    for n, p in ref.state_dict(keep_vars=True).items():
        out[f"grad.{n}"] = p.grad.numpy().astype(np.float32)
    with torch.no_grad():
        out["scores"] = ref.batch_log_probs(s, ti, to).numpy()
        assert np.allclose(out["scores"], ref.log_probs(src, trg).numpy(), rtol=1e-12)

    # Adam from the stored weights, the same batch each step; loss recorded before each step.
    ref = rm.load_model_dir(d, torch.float64)
    opt = torch.optim.Adam(ref.parameters(), **ADAM)
    traj = []
    for _ in range(ADAM_STEPS):
        opt.zero_grad()
        loss = ref.loss(s, ti, to, LABEL_SMOOTHING)
        traj.append(loss.item())
        loss.backward()
        opt.step()
    out["loss_trajectory"] = np.array(traj, dtype=np.float64)
    meta = {
        "config": cfg.to_json(indent=None),
        "label_smoothing": repr(LABEL_SMOOTHING),
        "adam": json.dumps({"lr": ADAM["lr"], "beta1": ADAM["betas"][0],
                            "beta2": ADAM["betas"][1], "eps": ADAM["eps"],
                            "weight_decay": 0.0, "steps": ADAM_STEPS}),
        "generator": "tools/make_reference.py",
    }
    safetensors_io.save_file(out, os.path.join(d, "reference.safetensors"), meta)


# ----------------------------------------------------------------------------- convert fixtures

def randomize(model: torch.nn.Module, seed: int) -> None:
    """Portable random weights for a seed model (numpy PCG64): Xavier-uniform matrices and
    embeddings, biases N(0, 0.1), LayerNorm weight 1 + N(0, 0.1) / bias N(0, 0.1). Shared
    parameters are drawn once; buffers are left alone."""
    rng = np.random.default_rng(seed)
    seen = set()
    with torch.no_grad():
        for mod in model.modules():
            for pname, p in mod.named_parameters(recurse=False):
                if id(p) in seen:
                    continue
                seen.add(id(p))
                shape = tuple(p.shape)
                if p.dim() >= 2:
                    bound = (6.0 / (shape[0] + shape[1])) ** 0.5
                    a = rng.uniform(-bound, bound, shape)
                elif isinstance(mod, torch.nn.LayerNorm) and pname == "weight":
                    a = 1.0 + 0.1 * rng.standard_normal(shape)
                else:
                    a = 0.1 * rng.standard_normal(shape)
                p.copy_(torch.from_numpy(a).to(p.dtype))


# convert/<name> -> (layout, converter flags). seed004 twice: its layout's source framing
# [BOS] x [EOS], and the same checkpoint and ids with --no-source-eos ([BOS] x), so that scoring
# with and without the source EOS is checked against PyTorch.
CONVERT_CASES = {"seed004": ("seed004", ["--heads", "4"]),
                 "seed004-no-source-eos": ("seed004", ["--heads", "4", "--no-source-eos"]),
                 "seed000": ("seed000", ["--heads", "4", "--max-length", "64"]),
                 "torch-nn": ("torch-nn", ["--heads", "4"])}  # torch-nn: the tutorial's ids 1/2/3


def seed_checkpoints():
    """layout -> seed model (f32, randomized). Small, each a bit different."""
    torch.manual_seed(0)  # the constructors' own init, overwritten by randomize()
    m004 = sm.Seed004Transformer(23, 23, 0, 0, d_word_vec=16, d_model=16, d_inner=32, n_layers=2,
                                 n_head=4, d_k=4, d_v=4, dropout=0.1, n_position=64)
    m000 = sm.Seed000Transformer(23, 19, num_layers=2, hidden_size=16, filter_size=32,
                                 dropout_rate=0.1, share_target_embedding=False, src_pad_idx=0,
                                 trg_pad_idx=0, num_heads=4)
    mnn = sm.TorchNNSeq2Seq(2, 2, 16, 4, 23, 19, dim_feedforward=32, dropout=0.1, pad_idx=1,
                            maxlen=128)
    models = {"seed004": m004, "seed000": m000, "torch-nn": mnn}
    for layout, m in models.items():
        randomize(m, variant_seed("convert/" + layout))
        m.eval()
    return models


def seed_model_scores(model, cfg: rm.ModelConfig, src, trg):
    """log P(y + EOS | framed x) per sentence from the seed model itself, in float64 (the source
    framed as cfg's source_bos / source_eos say)."""
    m = sm.to_float64(model).eval()
    s, ti, to = rm.make_batch(cfg, src, trg)
    with torch.no_grad():
        logp = torch.log_softmax(sm.logits(m, s, ti), dim=-1)
    tok = logp.gather(-1, to.unsqueeze(-1)).squeeze(-1)
    return (tok * (to != cfg.pad_id)).sum(dim=1)


def write_convert(out_dir: str) -> None:
    models = seed_checkpoints()
    for name, (layout, flags) in CONVERT_CASES.items():
        model = copy.deepcopy(models[layout])  # seed_model_scores turns it into float64
        d = os.path.join(out_dir, "convert", name)
        args = cp.parser().parse_args(["--layout", layout, "--checkpoint", "-", "--out", d]
                                      + flags)
        cfg, tensors, _ = cp.convert(model.state_dict(), layout, args)
        rm.save_model_dir(d, cfg, tensors)
        rng = np.random.default_rng(variant_seed("convert-data/" + layout))
        specials = {cfg.pad_id, cfg.bos_id, cfg.eos_id}
        src = random_ids(rng, [5, 1, 8, 3, 6], cfg.src_vocab_size, specials)
        trg = random_ids(rng, [4, 2, 7, 0, 5], cfg.trg_vocab_size, specials)  # one empty target
        scores = seed_model_scores(model, cfg, src, trg)
        ref = rm.load_model_dir(d, torch.float64).eval()
        check = ref.log_probs(src, trg)
        assert torch.allclose(scores, check, rtol=1e-9, atol=0), (name, scores, check)
        for fname, rows in (("src.ids", src), ("trg.ids", trg)):
            with open(os.path.join(d, fname), "w") as f:
                f.writelines(" ".join(map(str, r)) + "\n" for r in rows)
        with open(os.path.join(d, "expected_scores.txt"), "w") as f:
            f.writelines(f"{v:.9g}\n" for v in scores.tolist())


def generate(out_dir: str) -> None:
    torch.set_num_threads(1)  # a fixed summation order
    for name, overrides in VARIANTS.items():
        write_variant(out_dir, name, overrides)
    write_convert(out_dir)


def main(argv=None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description="Generate the PyTorch reference fixtures.")
    p.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures"))
    args = p.parse_args(argv)
    generate(os.path.normpath(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
