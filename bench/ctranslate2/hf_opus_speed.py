#!/usr/bin/env python3
"""tfm against CTranslate2 on an OPUS-MT-shaped Transformers Marian model: real sentences, fp32
and int8, greedy and beam 4, the same model converted by each engine's own converter.

  .venv/bin/python bench/ctranslate2/hf_opus_speed.py [--input test.de] [--lines 1000] \
      [--beam-size 1 4] [--precision fp32 int8] [--threads 1 2] [--isa native avx2] \
      [--rounds 3] [--max-new-tokens 24] [--work DIR] [--tiny]

The model is MarianMTModel as OPUS-MT's config builds it (6 + 6 layers, d 512, 8 heads, FFN
2048, swish, a shared vocabulary of 58101 with pad 58100 and EOS 0, √d scale, sinusoids) with
Transformers' random init, the pad row zeroed as OPUS-MT's is; it is saved with
save_pretrained and converted by `tfm convert --from transformers` and by CTranslate2's
Transformers converter (hf_common.py). A random model has nothing to say, so EOS is banned
(final_logits_bias -1e4) and every sentence decodes exactly --max-new-tokens tokens in both
engines: the same work, whatever the outputs. The sources are real: the first --lines of
--input (default Multi30k's test_2016_flickr.de), as ids of a SentencePiece model trained here
on Multi30k's German (8000 pieces, shifted past EOS), so source lengths are real ones.

For each (CPU level, threads, precision, beam) it runs, alternating, `tfm translate --ids --profile` and
CTranslate2's translate_batch (in a process of its own, OMP_WAIT_POLICY=active, its fastest),
--rounds times each, and prints the medians: tfm's whole command (process start to exit) and its
search (the command less model load and I/O, from its profile); CTranslate2's search (its
translate_batch calls); the ratios CT2 search / tfm command and CT2 search / tfm search (above 1:
tfm faster); output lines equal between the two (all, in fp32, when both compute the same
function; int8's quantisations differ); the peak RSS of each process (tfm's whole command; the
peer's Python process, interpreter and package included, whose search is the only work it
does). Batches of 32 sentences in both unless --tfm-batch-size / --ct2-batch-size say otherwise;
--threads for both. CPU levels as bench/translate_real.py forces them (`avx2`: TFM_CPU_ISA / ONEDNN_MAX_CPU_ISA for tfm, CT2_FORCE_CPU_ISA and MKL's for
the peer).
--tiny: a d-64, 2 + 2 layer, 1000-token model on 40 lines, to check the script, not to time.
The machine should be idle; the numbers belong in docs/performance.md with the command.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import hf_common  # noqa: E402
from translate_real import ISA_ENV, parse_profile, run_measured  # noqa: E402

MULTI30K = "/work/shared/data/multi30k"

CT2_RUN = r'''
import json, sys, time
sys.path.insert(0, %(here)r)
import ctranslate2, hf_common
a = json.loads(sys.argv[1])
t = ctranslate2.Translator(a["model"], device="cpu", compute_type=a["compute_type"],
                           intra_threads=a["threads"], inter_threads=1)
src = [hf_common.to_pieces(r, 0, a["pad"]) for r in hf_common.read_ids(a["input"])]
t0 = time.perf_counter()
res = t.translate_batch(src, beam_size=a["beam"], max_batch_size=a["batch"], max_decoding_length=a["new"],
                        min_decoding_length=0, length_penalty=1.0)
search = time.perf_counter() - t0
out = [hf_common.to_ids(r.hypotheses[0]) for r in res]
hf_common.write_ids(a["output"], out)
print(json.dumps({"search_s": search, "generated_tokens": sum(len(o) for o in out)}), file=sys.stderr)
'''


def build_model(hf_dir: str, tiny: bool, seed: int = 1):
    import torch
    from transformers import GenerationConfig, MarianConfig, MarianMTModel

    if tiny:
        cfg = MarianConfig(vocab_size=1001, d_model=64, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=4, decoder_attention_heads=4,
                           encoder_ffn_dim=128, decoder_ffn_dim=128, pad_token_id=1000,
                           decoder_start_token_id=1000, max_position_embeddings=256,
                           activation_function="swish", scale_embedding=True)
    else:  # Helsinki-NLP/opus-mt-*'s config
        cfg = MarianConfig(vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6,
                           encoder_attention_heads=8, decoder_attention_heads=8,
                           encoder_ffn_dim=2048, decoder_ffn_dim=2048, pad_token_id=58100,
                           decoder_start_token_id=58100, max_position_embeddings=512,
                           activation_function="swish", scale_embedding=True)
    cfg.eos_token_id = 0
    cfg.forced_eos_token_id = None
    torch.manual_seed(seed)
    model = MarianMTModel(cfg).eval()
    with torch.no_grad():
        model.get_input_embeddings().weight[cfg.pad_token_id].zero_()
        model.final_logits_bias.zero_()
        model.final_logits_bias[0, cfg.eos_token_id] = -1e4  # no EOS: every output the same length
    model.generation_config = GenerationConfig(
        num_beams=4, max_length=512, bad_words_ids=[[cfg.pad_token_id]], eos_token_id=0,
        pad_token_id=cfg.pad_token_id, decoder_start_token_id=cfg.pad_token_id)
    model.save_pretrained(hf_dir)
    return cfg


def source_ids(path: str, lines: int, vocab: int, work: str):
    """The first `lines` of path as ids of a SentencePiece model of Multi30k's German, shifted
    past EOS (0) and ended by it, as a Marian tokenizer frames a source."""
    import sentencepiece as spm

    size = min(8000, vocab - 2)
    prefix = os.path.join(work, "spm")
    if not os.path.exists(prefix + ".model"):
        spm.SentencePieceTrainer.train(input=os.path.join(MULTI30K, "train.de"),
                                       model_prefix=prefix, vocab_size=size,
                                       input_sentence_size=20000, shuffle_input_sentence=False,
                                       minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    with open(path, encoding="utf-8") as f:
        text = [next(f).rstrip("\n") for _ in range(lines)]
    return [[i + 1 for i in sp.encode(t)] + [0] for t in text]


def same(a: str, b: str):
    x, y = hf_common.read_ids(a), hf_common.read_ids(b)
    return sum(p == q for p, q in zip(x, y)), max(len(x), len(y))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=os.path.join(MULTI30K, "test_2016_flickr.de"))
    ap.add_argument("--lines", type=int, default=1000)
    ap.add_argument("--beam-size", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--precision", nargs="+", default=["fp32", "int8"])
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--isa", nargs="+", default=["native"], choices=sorted(ISA_ENV))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--tfm-batch-size", type=int, default=32, help="tfm's sentences a batch")
    ap.add_argument("--ct2-batch-size", type=int, default=32, help="CTranslate2's max_batch_size")
    ap.add_argument("--work", help="working directory (default: a temporary one); kept")
    ap.add_argument("--tfm", default=hf_common.tfm_binary())
    ap.add_argument("--tiny", action="store_true", help="a tiny model on 40 lines: a smoke test")
    ap.add_argument("--prepare-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.tiny:
        a.lines = min(a.lines, 40)
    work = a.work or tempfile.mkdtemp(prefix="tfm_opus_speed_")
    os.makedirs(work, exist_ok=True)
    tfm_dir, ct2_dir, src = (os.path.join(work, d) for d in ("tfm", "ct2", "src.ids"))
    if a.prepare_only:
        prepare(a, work)
        return
    # The models are made in a process of their own: a child forked from a parent holding torch
    # and a model would report the parent's pages in its peak RSS (ru_maxrss counts them).
    subprocess.run([sys.executable, __file__, "--prepare-only", "--work", work, "--tfm", a.tfm,
                    "--input", a.input, "--lines", str(a.lines)] + (["--tiny"] if a.tiny else []),
                   check=True)
    with open(os.path.join(work, "prepared.json"), encoding="utf-8") as f:
        pad = json.load(f)["pad"]
    rows = []
    for isa in a.isa:
        for threads in a.threads:
            for prec in a.precision:
                for beam in a.beam_size:
                    rows.append(measure(a, isa, threads, prec, beam, work, tfm_dir, ct2_dir, src,
                                        pad))
    print(f"\n{'tiny model' if a.tiny else 'OPUS-MT-shaped model'}, {a.lines} lines of "
          f"{os.path.basename(a.input)}, {a.max_new_tokens} tokens each, medians of {a.rounds}; "
          f"batches tfm {a.tfm_batch_size}, CT2 {a.ct2_batch_size}; "
          f"ctranslate2 {importlib.metadata.version('ctranslate2')}")
    print("| CPU level | threads | precision | beam | tfm command s | tfm search s | CT2 search s "
          "| CT2 / tfm command | CT2 / tfm search | peak RSS tfm / CT2 MB | equal lines |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['isa']} | {r['threads']} | {r['prec']} | {r['beam']} | {r['wall']:.2f} "
              f"| {r['search']:.2f} | {r['ct2']:.2f} | {r['ct2'] / r['wall']:.2f} "
              f"| {r['ct2'] / r['search']:.2f} | {r['rss']:.0f} / {r['ct2_rss']:.0f} "
              f"| {r['equal']}/{r['n']} |")


def prepare(a, work: str) -> None:
    """The model, its two conversions and the source ids, in `work`."""
    hf_dir, tfm_dir, ct2_dir = (os.path.join(work, d) for d in ("hf", "tfm", "ct2"))
    cfg = build_model(hf_dir, a.tiny)
    hf_common.tfm_convert(a.tfm, hf_dir, tfm_dir)
    hf_common.ct2_convert(hf_dir, ct2_dir, cfg.vocab_size, 0, cfg.pad_token_id)
    hf_common.write_ids(os.path.join(work, "src.ids"),
                        source_ids(a.input, a.lines, cfg.vocab_size, work))
    with open(os.path.join(work, "prepared.json"), "w", encoding="utf-8") as f:
        json.dump({"pad": cfg.pad_token_id}, f)


def measure(a, isa, threads, prec, beam, work, tfm_dir, ct2_dir, src, pad):
    """One row: tfm and CTranslate2 alternating, --rounds times each; medians."""
    tfm_env, peer_env = ISA_ENV[isa]
    tfm_env = dict(os.environ, **tfm_env)
    ct2_env = dict(os.environ, OMP_WAIT_POLICY="active", **peer_env)
    tag = f"{isa}-{threads}-{prec}-{beam}"
    tfm_out, ct2_out = (os.path.join(work, f"{e}-{tag}.ids") for e in ("tfm", "ct2"))
    tfm_runs, ct2_runs = [], []
    for _ in range(a.rounds):  # alternating, so both see the same load
        cmd = [a.tfm, "translate", "--model", tfm_dir, "--ids", "--input", src, "--output",
               tfm_out, "--beam-size", str(beam), "--precision", prec, "--threads",
               str(threads), "--batch-size", str(a.tfm_batch_size),
               "--max-new-tokens", str(a.max_new_tokens),
               "--profile"]
        wall, rss, err = run_measured(cmd, env=tfm_env)
        tfm_runs.append((wall, parse_profile(err)[1], rss))
        args = {"model": ct2_dir, "compute_type": "float32" if prec == "fp32" else prec,
                "threads": threads, "input": src, "output": ct2_out, "beam": beam,
                "new": a.max_new_tokens, "pad": pad, "batch": a.ct2_batch_size}
        _, ct2_rss, err = run_measured([sys.executable, "-c", CT2_RUN % {"here": HERE},
                                        json.dumps(args)], env=ct2_env)
        ct2_runs.append((json.loads(err.strip().splitlines()[-1])["search_s"], ct2_rss))
    equal, n = same(tfm_out, ct2_out)
    row = dict(isa=isa, threads=threads, prec=prec, beam=beam, equal=equal, n=n,
               wall=statistics.median(r[0] for r in tfm_runs),
               search=statistics.median(r[1] for r in tfm_runs),
               rss=max(r[2] for r in tfm_runs),
               ct2=statistics.median(r[0] for r in ct2_runs),
               ct2_rss=max(r[1] for r in ct2_runs))
    print(f"{tag}: tfm command {row['wall']:.2f} s, search {row['search']:.2f} s, "
          f"{row['rss']:.0f} MB; CT2 search {row['ct2']:.2f} s, {row['ct2_rss']:.0f} MB", flush=True)
    return row

if __name__ == "__main__":
    main()
