#!/usr/bin/env python3
"""tfm and CTranslate2 on the same random-weight Transformers Marian model: beam-4 outputs equal.

  .venv/bin/python bench/ctranslate2/hf_marian_equal.py [--sentences 200] [--work DIR]

Builds, with Transformers, a Marian model of the fixtures' shape (tools/make_hf_fixtures.py's
marian_shared: d 32, 2 + 2 layers, swish, a vocabulary of 96) trained a little on the fixtures'
toy task so that outputs end with EOS at varied lengths, saves it with save_pretrained, converts
it with `tfm convert --from transformers` and with CTranslate2's Transformers converter
(hf_common.py), translates the same source ids with beam 4 in both (and with Transformers'
generate()), and counts equal outputs. Exit 1 unless all are equal.

The generation config is one both engines implement alike: num_beams 4, early_stopping true
(CTranslate2 stops a sentence once beam_size hypotheses are finished: patience 1),
length_penalty 0 (CTranslate2's length counts no EOS, generate()'s does: with 0 neither
divides), max_length 64 (outputs end before it), the pad id banned (bad_words_ids; CTranslate2
drops <pad> from Marian's vocabulary), min length 0 (CTranslate2's default is 1). The pad row of
the embedding is zeroed, as OPUS-MT's is: CTranslate2 starts Marian's decoder from a zero vector
where Transformers reads that row. tfm decodes with the model's generation config (the
transformers rule); CTranslate2 with those options.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

import hf_common  # noqa: E402


def build_model(out_dir: str, sentences: int):
    import torch
    from transformers import GenerationConfig
    import make_hf_fixtures as fx

    model, cfg, gen = fx.build("marian_shared", 1)
    # OPUS-MT's pad row is zero (Marian had no pad; the converter added a zero row), and
    # CTranslate2 relies on it: it starts Marian's decoder from a zero vector, not the row.
    # Transformers' random init leaves the row random (tfm reads it as stored either way).
    with torch.no_grad():
        model.get_input_embeddings().weight[cfg.pad_token_id].zero_()
    model.generation_config = GenerationConfig(
        num_beams=4, early_stopping=True, length_penalty=0.0, max_length=64,
        bad_words_ids=[[cfg.pad_token_id]], eos_token_id=cfg.eos_token_id,
        pad_token_id=cfg.pad_token_id, decoder_start_token_id=cfg.decoder_start_token_id)
    model.save_pretrained(out_dir)
    sources = fx.make_sources("marian_shared", cfg, gen, sentences, 2, 12)
    with torch.no_grad():
        hf = fx.run_generate(model, cfg, sources, 4)
    return cfg, sources, [r["tokens"] for r in hf]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--work", help="working directory (default: a temporary one)")
    ap.add_argument("--tfm", default=hf_common.tfm_binary())
    a = ap.parse_args()
    import ctranslate2

    work = a.work or tempfile.mkdtemp(prefix="tfm_ct2_equal_")
    hf_dir, tfm_dir, ct2_dir = (os.path.join(work, d) for d in ("hf", "tfm", "ct2"))
    cfg, sources, hf_out = build_model(hf_dir, a.sentences)
    eos, pad = cfg.eos_token_id, cfg.pad_token_id
    hf_common.tfm_convert(a.tfm, hf_dir, tfm_dir)
    hf_common.ct2_convert(hf_dir, ct2_dir, cfg.vocab_size, eos, pad)

    src_file, out_file = os.path.join(work, "src.ids"), os.path.join(work, "tfm.ids")
    hf_common.write_ids(src_file, sources)
    subprocess.run([a.tfm, "translate", "--model", tfm_dir, "--ids", "--input", src_file,
                    "--output", out_file], check=True)
    tfm_out = hf_common.read_ids(out_file)

    translator = ctranslate2.Translator(ct2_dir, device="cpu", compute_type="float32")
    results = translator.translate_batch(
        [hf_common.to_pieces(s, eos, pad) for s in sources], beam_size=4, length_penalty=0.0,
        max_decoding_length=63, min_decoding_length=0, max_batch_size=32)
    ct2_out = [hf_common.to_ids(r.hypotheses[0]) for r in results]

    same_ct2 = sum(x == y for x, y in zip(tfm_out, ct2_out))
    same_hf = sum(x == y for x, y in zip(tfm_out, hf_out))
    print(f"tfm {a.tfm}, ctranslate2 {ctranslate2.__version__}; {len(sources)} sentences, beam 4")
    print(f"tfm == CTranslate2: {same_ct2}/{len(sources)}")
    print(f"tfm == Transformers generate(): {same_hf}/{len(sources)}")
    for i, (x, y) in enumerate(zip(tfm_out, ct2_out)):
        if x != y:
            print(f"  sentence {i}: tfm {x} | ct2 {y} | hf {hf_out[i]}")
    sys.exit(0 if same_ct2 == same_hf == len(sources) else 1)


if __name__ == "__main__":
    main()
