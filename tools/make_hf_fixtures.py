#!/usr/bin/env python3
"""Builds tests/fixtures/hf/: random-weight Hugging Face Transformers models of each family tfm
converts (MarianMT, M2M100/NLLB, BART, mBART, GPT-2; two configurations each), saved with
save_pretrained, and what Transformers computes with them, for tfm's tests to compare against:

  tests/fixtures/hf/<name>/model/         config.json, model.safetensors, generation_config.json
  tests/fixtures/hf/<name>/reference.json teacher-forced log-probabilities, generate() outputs

    /work/main/.venv/bin/python tools/make_hf_fixtures.py [--out tests/fixtures/hf]

(the virtual environment of scripts/setup_venv.sh: torch and transformers from the Python index).
The default test command needs none of this: the fixtures are committed.

reference.json holds, per model:
  - "teacher_forced": 20 (source, target) pairs of ids, the decoder reading [start] + target and
    predicting target + [eos], with the log-probability Transformers gives each predicted token
    (GPT-2: the prompt-free sequence, each position predicting the next token);
  - "greedy" and "beam": for 20 sources (GPT-2: prompts), generate()'s output with the model's
    generation config at num_beams 1 and 4: "tokens" (after the decoder start, without a final
    EOS), "eos" (whether it ended with EOS), and for beam "score" (sequences_scores).
From Transformers' random init, each model is trained a little (TRAIN_STEPS Adam steps) on a toy
task — the target is the source reversed through a fixed permutation; GPT-2 continues arithmetic
progressions — so that its distributions are peaked, its outputs end with EOS at varied lengths
and beams disagree (an untrained model's outputs are flat or repeat one token to max_length).
A model is kept only if float64 generate() gives the same tokens as float32, so that no
reference output sits on a near-tie that rounding could flip; the seed is bumped until it does.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import torch
import transformers
from transformers import (BartConfig, BartForConditionalGeneration, GenerationConfig, GPT2Config,
                          GPT2LMHeadModel, M2M100Config, M2M100ForConditionalGeneration,
                          MarianConfig, MarianMTModel, MBartConfig, MBartForConditionalGeneration)

N_SENTENCES = 20
TRAIN_STEPS = 300

# name -> (model class, config kwargs, generation kwargs, framing). Framing says how a source is
# made (as the family's tokenizer makes it): "eos" x </s>; "lang_eos" [lang] x </s>; "eos_lang"
# x </s> [lang]; "bos_eos" <s> x </s>; "prompt" (GPT-2).
SPECS = {
    # OPUS-MT's shape: post-norm, swish, [sin|cos] positions, shared and tied embeddings, pad as
    # the decoder start, pad banned, √d scale. forced_eos at max_length.
    "marian_shared": (MarianMTModel, dict(
        vocab_size=96, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        activation_function="swish", max_position_embeddings=64, scale_embedding=True,
        pad_token_id=95, eos_token_id=0, decoder_start_token_id=95, forced_eos_token_id=0,
        share_encoder_decoder_embeddings=True), dict(
        num_beams=4, max_length=24, bad_words_ids=[[95], [7, 8]], length_penalty=1.0), "eos"),
    # Separate source and target vocabularies (Marian's two SentencePiece models), gelu, no scale,
    # final_logits_bias, early_stopping true, a length penalty below 1.
    "marian_separate": (MarianMTModel, dict(
        vocab_size=90, decoder_vocab_size=70, d_model=24, encoder_layers=1, decoder_layers=2,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=40,
        decoder_ffn_dim=40, activation_function="gelu", max_position_embeddings=48,
        scale_embedding=False, pad_token_id=69, eos_token_id=0, decoder_start_token_id=69,
        forced_eos_token_id=0, share_encoder_decoder_embeddings=False), dict(
        num_beams=4, max_length=20, bad_words_ids=[[69]], length_penalty=0.6,
        early_stopping=True), "eos"),
    # M2M100: pre-norm with final norms, fairseq sinusoids from pad + 1, language codes on the
    # source and forced as the first target token, relu.
    "m2m100": (M2M100ForConditionalGeneration, dict(
        vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        activation_function="relu", max_position_embeddings=64, scale_embedding=True,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2), dict(
        num_beams=4, max_length=22, forced_bos_token_id=97, length_penalty=1.0), "lang_eos"),
    # NLLB's shape: the same family, gelu, untied output projection, no embedding scale,
    # max_new_tokens, min_length.
    "nllb": (M2M100ForConditionalGeneration, dict(
        vocab_size=110, d_model=24, encoder_layers=1, decoder_layers=3, encoder_attention_heads=3,
        decoder_attention_heads=3, encoder_ffn_dim=48, decoder_ffn_dim=48,
        activation_function="gelu", max_position_embeddings=40, scale_embedding=False,
        tie_word_embeddings=False, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=2), dict(
        num_beams=4, max_new_tokens=18, min_length=4, forced_bos_token_id=105,
        length_penalty=1.2), "lang_eos"),
    # BART (cnn-style generation): post-norm, learned positions from 2, embedding LayerNorm, gelu,
    # final_logits_bias; no_repeat_ngram_size, min_length, forced BOS and EOS, early stopping,
    # length penalty 2.
    "bart": (BartForConditionalGeneration, dict(
        vocab_size=96, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        activation_function="gelu", max_position_embeddings=40, scale_embedding=False,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
        forced_eos_token_id=2), dict(
        num_beams=4, max_length=24, min_length=6, no_repeat_ngram_size=3, forced_bos_token_id=0,
        length_penalty=2.0, early_stopping=True), "bos_eos"),
    # BART with √d scale, an untied output projection, relu and early_stopping "never".
    "bart_untied": (BartForConditionalGeneration, dict(
        vocab_size=80, d_model=24, encoder_layers=2, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
        activation_function="relu", max_position_embeddings=32, scale_embedding=True,
        tie_word_embeddings=False, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=2, forced_eos_token_id=2), dict(
        num_beams=4, max_length=20, no_repeat_ngram_size=2, length_penalty=0.8,
        early_stopping="never"), "bos_eos"),
    # mBART-50: pre-norm, final norms, embedding LayerNorm, learned positions, the target
    # language forced as the first token.
    "mbart50": (MBartForConditionalGeneration, dict(
        vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        activation_function="gelu", max_position_embeddings=40, scale_embedding=True,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
        forced_eos_token_id=2), dict(
        num_beams=4, max_length=22, forced_bos_token_id=98, length_penalty=1.0), "lang_eos"),
    # mBART (cc25): the target language as the decoder's start token, the source language after
    # </s>; gelu_new for the tanh GELU.
    "mbart_cc25": (MBartForConditionalGeneration, dict(
        vocab_size=90, d_model=24, encoder_layers=1, decoder_layers=2, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=48, decoder_ffn_dim=48,
        activation_function="gelu_new", max_position_embeddings=36, scale_embedding=False,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=88,
        forced_eos_token_id=2), dict(
        num_beams=4, max_length=20, length_penalty=1.0), "eos_lang"),
    # GPT-2: pre-norm, learned positions, gelu_new, Conv1D weights, fused q/k/v, tied output.
    "gpt2": (GPT2LMHeadModel, dict(
        vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=48,
        activation_function="gelu_new", bos_token_id=99, eos_token_id=99), dict(
        num_beams=4, max_new_tokens=16, length_penalty=1.0), "prompt"),
    # GPT-2 with an untied head, n_inner, exact gelu, its own epsilon, max_length (prompt counted).
    "gpt2_untied": (GPT2LMHeadModel, dict(
        vocab_size=80, n_embd=24, n_layer=3, n_head=2, n_inner=40, n_positions=40,
        activation_function="gelu", layer_norm_epsilon=1e-6, tie_word_embeddings=False,
        bos_token_id=79, eos_token_id=79), dict(
        num_beams=4, max_length=22, no_repeat_ngram_size=3, length_penalty=1.0), "prompt"),
}

# Source language ids (lang_eos / eos_lang framings): the last ids of the vocabulary below the
# target language ids, as NLLB's and mBART's codes sit at the end of theirs.
SOURCE_LANG = {"m2m100": 96, "nllb": 104, "mbart50": 97, "mbart_cc25": 87}


def special_ids(cfg) -> set[int]:
    ids = {cfg.pad_token_id, cfg.eos_token_id, getattr(cfg, "bos_token_id", None),
           getattr(cfg, "decoder_start_token_id", None)}
    return {i for i in ids if i is not None}


def toy_pair(name: str, cfg, gen: torch.Generator, ordinary: list[int], perm: dict[int, int]):
    """A (source, labels) pair of the toy task the fixture models learn a little of: the target is
    the source reversed through a fixed permutation (GPT-2: an arithmetic progression to continue),
    so that outputs mean something, end with EOS at varied lengths, and beams disagree."""
    eos = cfg.eos_token_id
    if not cfg.is_encoder_decoder:
        n = int(torch.randint(3, 12, (1,), generator=gen))
        a = int(torch.randint(len(ordinary), (1,), generator=gen))
        k = int(torch.randint(1, 4, (1,), generator=gen))
        return None, [ordinary[(a + k * i) % len(ordinary)] for i in range(n)] + [eos]
    n = int(torch.randint(2, 11, (1,), generator=gen))
    x = [ordinary[int(torch.randint(len(ordinary), (1,), generator=gen))] for _ in range(n)]
    y = [perm[t] for t in reversed(x)]
    first = SPECS[name][2].get("forced_bos_token_id")
    return frame(name, cfg, x), ([first] if first is not None else []) + y + [eos]


def train_toy(model, cfg, name: str, gen: torch.Generator, steps: int) -> None:
    """A few hundred Adam steps on the toy task: enough for peaked, meaningful distributions."""
    ordinary = ordinary_ids(name, cfg)
    trg_ordinary = [t for t in ordinary if t < trg_vocab(cfg) - 2]
    shuffled = [trg_ordinary[int(i)] for i in torch.randperm(len(trg_ordinary), generator=gen)]
    perm = {t: shuffled[i % len(shuffled)] for i, t in enumerate(ordinary)}
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    pad = cfg.pad_token_id if cfg.pad_token_id is not None else cfg.eos_token_id
    for _ in range(steps):
        pairs = [toy_pair(name, cfg, gen, ordinary, perm) for _ in range(32)]
        labels, lmask = padded([p[1] for p in pairs], pad)
        labels = labels.masked_fill(lmask == 0, -100)
        if cfg.is_encoder_decoder:
            src, smask = padded([p[0] for p in pairs], pad)
            start = model.config.decoder_start_token_id
            dec_in = torch.cat([torch.full((len(pairs), 1), start), labels[:, :-1]], dim=1)
            dec_in = dec_in.masked_fill(dec_in == -100, pad)
            loss = model(input_ids=src, attention_mask=smask, decoder_input_ids=dec_in,
                         labels=labels).loss
        else:
            ids = labels.masked_fill(labels == -100, pad)
            loss = model(input_ids=ids, attention_mask=lmask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


def trg_vocab(cfg) -> int:
    return getattr(cfg, "decoder_vocab_size", None) or cfg.vocab_size


def ordinary_ids(name: str, cfg) -> list[int]:
    banned = special_ids(cfg) | set(SOURCE_LANG.values()) | {97, 98, 105, 88}
    return [i for i in range(3, cfg.vocab_size - 6) if i not in banned]


def frame(name: str, cfg, x: list[int]) -> list[int]:
    """x as the family's tokenizer frames a source."""
    framing, eos = SPECS[name][3], cfg.eos_token_id
    if framing == "eos":
        return x + [eos]
    if framing == "lang_eos":
        return [SOURCE_LANG[name]] + x + [eos]
    if framing == "eos_lang":
        return x + [eos, SOURCE_LANG[name]]
    if framing == "bos_eos":
        return [cfg.bos_token_id] + x + [eos]
    return x


def make_sources(name: str, cfg, gen: torch.Generator, count: int, lo: int, hi: int):
    """count sources as the family's tokenizer frames them; a GPT-2 list starts with an empty
    prompt (generate() then starts from BOS alone)."""
    ordinary = ordinary_ids(name, cfg)
    out = [[]] if SPECS[name][3] == "prompt" else []
    while len(out) < count:
        n = int(torch.randint(lo, hi + 1, (1,), generator=gen))
        out.append(frame(name, cfg, [ordinary[int(torch.randint(len(ordinary), (1,),
                                                                  generator=gen))]
                                     for _ in range(n)]))
    return out


def padded(seqs, pad):
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = 1
    return ids, mask


def generated(seq: list[int], eos: int, start_len: int) -> tuple[list[int], bool]:
    """generate()'s row after the decoder prompt: tokens up to EOS (excluded), whether EOS ended
    it; the padding after it dropped."""
    body = seq[start_len:]
    if eos in body:
        return body[:body.index(eos)], True
    return body, False


def run_generate(model, cfg, sources, beams: int):
    """generate() on each source (GPT-2: each prompt alone, as a batch would left-pad)."""
    results = []
    is_lm = not cfg.is_encoder_decoder
    eos = model.generation_config.eos_token_id
    batches = [[s] for s in sources] if is_lm else [sources]
    for batch in batches:
        # An empty prompt: generate() reads BOS alone, which the output does not hold.
        inputs = [s if s else [cfg.bos_token_id] for s in batch]
        ids, mask = padded(inputs, cfg.pad_token_id if cfg.pad_token_id is not None else eos)
        out = model.generate(input_ids=ids, attention_mask=mask, num_beams=beams,
                             num_return_sequences=1, return_dict_in_generate=True,
                             output_scores=True, do_sample=False)
        start = ids.shape[1] if is_lm else 1
        for i, row in enumerate(out.sequences.tolist()):
            tokens, ended = generated(row, eos, start)
            if is_lm:
                tokens = batch[i] + tokens
            r = {"tokens": tokens, "eos": ended}
            if beams > 1:
                r["score"] = float(out.sequences_scores[i])
            results.append(r)
    return results


def teacher_forced(model, cfg, sources, targets, name):
    """Per-token log-probabilities of target + [eos] (enc-dec) or of seq[1:] (GPT-2)."""
    out = []
    with torch.no_grad():
        for src, trg in zip(sources, targets):
            if cfg.is_encoder_decoder:
                dec_in = torch.tensor([[model.config.decoder_start_token_id] + trg])
                labels = trg + [cfg.eos_token_id]
                logits = model(input_ids=torch.tensor([src]), decoder_input_ids=dec_in).logits[0]
            else:
                labels = trg[1:]
                logits = model(input_ids=torch.tensor([trg])).logits[0][:-1]
            lp = torch.log_softmax(logits.double(), dim=-1)
            out.append({"source": src, "target": trg,
                        "log_probs": [float(lp[t, y]) for t, y in enumerate(labels)]})
    return out


def build(name: str, seed: int):
    cls, ckw, gkw, _ = SPECS[name]
    cfg_cls = {MarianMTModel: MarianConfig, M2M100ForConditionalGeneration: M2M100Config,
               BartForConditionalGeneration: BartConfig, MBartForConditionalGeneration: MBartConfig,
               GPT2LMHeadModel: GPT2Config}[cls]
    cfg = cfg_cls(**ckw)
    torch.manual_seed(seed)
    model = cls(cfg).eval()
    gen = torch.Generator().manual_seed(seed)
    if hasattr(model, "final_logits_bias"):  # a buffer, not trained: random, to be seen applied
        with torch.no_grad():
            model.final_logits_bias.copy_(0.5 * torch.randn(model.final_logits_bias.shape,
                                                            generator=gen))
    train_toy(model, cfg, name, gen, TRAIN_STEPS)
    model.generation_config = GenerationConfig(
        **gkw, eos_token_id=cfg.eos_token_id,
        pad_token_id=cfg.pad_token_id if cfg.pad_token_id is not None else cfg.eos_token_id,
        bos_token_id=getattr(cfg, "bos_token_id", None),
        decoder_start_token_id=getattr(cfg, "decoder_start_token_id", None),
        forced_eos_token_id=getattr(cfg, "forced_eos_token_id", None))
    return model, cfg, gen


def float64_twin(model):
    """model in float64, with its generation config: its generate() shows where float32's sits
    on a near-tie."""
    m64 = type(model)(model.config).eval()
    m64.load_state_dict(model.state_dict())
    m64.generation_config = model.generation_config
    return m64.double()


def stable(model, cfg, sources) -> bool:
    """float64 generate() equals float32's for greedy and beam 4 on every source."""
    m64 = float64_twin(model)
    for beams in (1, 4):
        a = [r["tokens"] for r in run_generate(model, cfg, sources, beams)]
        b = [r["tokens"] for r in run_generate(m64, cfg, sources, beams)]
        if a != b:
            return False
    return True


def make(name: str, out_dir: str) -> None:
    for seed in range(1, 50):
        model, cfg, gen = build(name, seed)
        is_lm = not cfg.is_encoder_decoder
        sources = make_sources(name, cfg, gen, N_SENTENCES, 1 if is_lm else 2, 8 if is_lm else 12)
        if stable(model, cfg, sources):
            break
        print(f"{name}: seed {seed} has a near-tie in generate(); trying the next", file=sys.stderr)
    else:
        raise SystemExit(f"{name}: no seed below 50 without near-ties")
    pairs_src = make_sources(name, cfg, gen, N_SENTENCES, 2, 12)
    trg_vocab = getattr(cfg, "decoder_vocab_size", None) or cfg.vocab_size
    targets = []
    for _ in range(N_SENTENCES):
        n = int(torch.randint(2, 12, (1,), generator=gen))
        t = [int(torch.randint(3, trg_vocab - 2, (1,), generator=gen)) for _ in range(n)]
        if name in ("m2m100", "nllb", "mbart50"):
            t = [model.generation_config.forced_bos_token_id] + t
        targets.append(t)
    ref = {
        "family": name,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "seed": seed,
        "generation": model.generation_config.to_diff_dict(),
        "teacher_forced": teacher_forced(model, cfg, pairs_src, targets, name),
        "sources": sources,
        "greedy": run_generate(model, cfg, sources, 1),
        "beam": run_generate(model, cfg, sources, 4),
    }
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(os.path.join(d, "model"))
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    ends = sum(r["eos"] for r in ref["beam"])
    print(f"{name}: seed {seed}, beam outputs ending in EOS {ends}/{len(ref['beam'])}, "
          f"{os.path.getsize(os.path.join(d, 'model', 'model.safetensors')) // 1024} KiB")


def fixture_main(doc: str, fixture_dir: str, names, make_one) -> None:
    """The command line of a fixture tool: --out (default tests/fixtures/<fixture_dir>) and
    --only NAMES; make_one(name, out_dir) for each name, on one thread."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "tests", "fixtures", fixture_dir))
    ap.add_argument("--only", nargs="*", help="names to make (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    for name in args.only or names:
        make_one(name, args.out)


if __name__ == "__main__":
    fixture_main(__doc__, "hf", SPECS, make)
