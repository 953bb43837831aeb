#!/usr/bin/env python3
"""Makes tests/fixtures/ct2/: a tiny tfm model and what the real CTranslate2 package answers to
tools/ct2_program.py on it, for python/tests/test_ctranslate2.py (which runs the same program
through tfm.ctranslate2 and compares, without CTranslate2 installed).

    .venv/bin/python tools/make_ct2_fixture.py --model MODEL_DIR --src train.de --trg train.en \
        [--lines 8] [--out tests/fixtures/ct2]
    .venv/bin/python tools/make_ct2_fixture.py --update [--out tests/fixtures/ct2]

--update reruns the program on the committed model and pieces (a new case in ct2_program.py).

    .venv/bin/python tools/make_ct2_fixture.py --marian [--update] [--out tests/fixtures/ct2_marian]

--marian --update reruns the program on the committed Marian model (a new case); --marian alone
makes the Transformers side's fixture: a random-weight MarianMTModel (save_pretrained,
the vocabulary of tests/fixtures/hf_tokenizers/marian_shared, weights drawn wide enough that no
two tokens tie, EOS's output bias raised so that beams finish early), converted by CTranslate2's
own converter (ctranslate2.converters.TransformersConverter); OUT/model holds the Transformers
files without the tokenizer's (the tests add them), OUT/expected.json the program's outputs from
the real package, the pieces (the tokenizer's, EOS framing the sources) and the tokens the cases
name in this vocabulary. Needs torch and transformers too. With --update it reruns the
program on the committed model, pieces and tokens (a new case in ct2_program.py): transformers
and ctranslate2, no torch model made.

MODEL_DIR: a tfm model directory with its vocab.model (the committed one was trained by
`tfm vocab --size 36` and `tfm train --preset tiny --batch-tokens 400 --max-updates 1500
--seed 3 --threads 1` on the toy corpus of python/tests/conftest.py, 300 pairs of 2-6 words).
Its config and weights are copied to OUT/model, and its vocabulary with the normalizer reduced
to the identity (SentencePiece's NFKC table is 240 kB of the 240.5; the pieces, and the
encoding of every --src/--trg line, are checked to stay the same); the model is converted by
bench/ctranslate2/convert_tfm.py (same weights, same maths), the first --lines pairs of
--src/--trg are cut into SentencePiece pieces, and the program's outputs from the `ctranslate2`
package are written to OUT/expected.json with the pieces and the package's version.
Needs ctranslate2 and sentencepiece (scripts/setup_venv.sh).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "bench", "ctranslate2"))

import ct2_program  # noqa: E402


def small_vocabulary(src, out, texts):
    """src's SentencePiece model without its normalization table, written to out, once it
    encodes every text as src does."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    m = pb.ModelProto()
    with open(src, "rb") as f:
        m.ParseFromString(f.read())
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.precompiled_charsmap = b""
    with open(out, "wb") as f:
        f.write(m.SerializeToString())
    a, b = (spm.SentencePieceProcessor(model_file=p) for p in (src, out))
    if any(a.encode(t) != b.encode(t) for t in texts):
        raise SystemExit(f"{src}: the identity normalizer changes the encoding of the corpus")


def pieces(model_dir, path, lines):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "vocab.model"))
    with open(path, encoding="utf-8") as f:
        text = f.read().splitlines()[:lines]
    return [sp.encode(x, out_type=str) for x in text]


def reference(model_dir, sources, targets):
    """The program's outputs from the real ctranslate2 on model_dir converted."""
    import convert_tfm
    import ctranslate2

    with tempfile.TemporaryDirectory() as tmp:
        ct2_dir = convert_tfm.convert(model_dir, os.path.join(tmp, "ct2"))
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        return ctranslate2.__version__, ct2_program.run(ctranslate2, ct2_dir, sources, targets,
                                                         work)


MARIAN_TOKENIZER = os.path.join(HERE, "..", "tests", "fixtures", "hf_tokenizers", "marian_shared")
MARIAN_SEED = 5
MARIAN_EOS_BIAS = 3.5
MARIAN_MAX_DECODING = 24  # a bound on every case's output (ct2_program.translate_cases)
MARIAN_MIN_PROB = 0.002  # the alternatives' threshold (ct2_program.run)


def hf_marian_dir(model_dir, out):
    """A Transformers model directory at out: model_dir's files and the tokenizer's."""
    os.makedirs(out, exist_ok=True)
    for d in (model_dir, MARIAN_TOKENIZER):
        for f in os.listdir(d):
            if f != "reference.json":
                shutil.copy(os.path.join(d, f), os.path.join(out, f))
    return out


def make_marian(out):
    import torch
    from transformers import AutoTokenizer, GenerationConfig, MarianConfig, MarianMTModel
    import ctranslate2

    tok = AutoTokenizer.from_pretrained(MARIAN_TOKENIZER)
    pad, eos = tok.pad_token_id, tok.eos_token_id
    cfg = MarianConfig(vocab_size=len(tok), d_model=16, encoder_layers=1, decoder_layers=1,
                       encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                       decoder_ffn_dim=32, activation_function="swish",
                       max_position_embeddings=64, scale_embedding=True, pad_token_id=pad,
                       eos_token_id=eos, decoder_start_token_id=pad, forced_eos_token_id=eos,
                       share_encoder_decoder_embeddings=True, init_std=0.3)
    torch.manual_seed(MARIAN_SEED)
    model = MarianMTModel(cfg).eval()
    with torch.no_grad():
        model.final_logits_bias[0, eos] = MARIAN_EOS_BIAS
    model.generation_config = GenerationConfig(
        num_beams=4, max_length=40, bad_words_ids=[[pad]], eos_token_id=eos, pad_token_id=pad,
        decoder_start_token_id=pad, forced_eos_token_id=eos)
    model_out = os.path.join(out, "model")
    shutil.rmtree(model_out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(os.path.join(tmp, "saved"))
        os.makedirs(model_out)
        for f in ("config.json", "generation_config.json", "model.safetensors"):
            shutil.copy(os.path.join(tmp, "saved", f), os.path.join(model_out, f))
        hf = hf_marian_dir(model_out, os.path.join(tmp, "hf"))
        ct2_dir = ctranslate2.converters.TransformersConverter(hf).convert(
            os.path.join(tmp, "ct2"))
        with open(os.path.join(HERE, "..", "tests", "fixtures", "hf_tokenizers", "lines.json"),
                  encoding="utf-8") as f:
            lines = [l for l in json.load(f) if l.strip() and len(tok(l).input_ids) <= 16][:8]
        sources = [tok.convert_ids_to_tokens(tok(l).input_ids) for l in lines]
        targets = [tok.convert_ids_to_tokens(tok(text_target=l).input_ids)[:-1] for l in lines]
        # The tokens the cases name, here the most frequent of the default translations.
        t = ctranslate2.Translator(ct2_dir, compute_type="float32")
        counts = {}
        for r in t.translate_batch(sources, max_decoding_length=MARIAN_MAX_DECODING):
            for x in r.hypotheses[0]:
                counts[x] = counts.get(x, 0) + 1
        common = sorted(counts, key=lambda x: (-counts[x], x))
        tokens = dict(zip(["w", "\u2581", "t", "o", "e"], common))
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        outputs = ct2_program.run(ctranslate2, ct2_dir, sources, targets, work, tokens,
                                  MARIAN_MAX_DECODING, MARIAN_MIN_PROB)
    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"ctranslate2": ctranslate2.__version__, "sources": sources,
                   "targets": targets, "tokens": tokens,
                   "max_decoding_length": MARIAN_MAX_DECODING, "min_prob": MARIAN_MIN_PROB,
                   "outputs": outputs}, f, indent=0,
                  ensure_ascii=False)
        f.write("\n")
    lengths = [len(h) for r in outputs["defaults"] for h in r["hypotheses"]]
    print(f"{out}: {len(outputs)} cases from ctranslate2 {ctranslate2.__version__}; default "
          f"output lengths {lengths} (the bound: {MARIAN_MAX_DECODING})")


def update(out):
    """OUT/expected.json again from the real ctranslate2, on its own model and pieces."""
    path = os.path.join(out, "expected.json")
    with open(path, encoding="utf-8") as f:
        fixture = json.load(f)
    version, outputs = reference(os.path.join(out, "model"), fixture["sources"],
                                 fixture["targets"])
    fixture.update(ctranslate2=version, outputs=outputs)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fixture, f, indent=0, ensure_ascii=False)
        f.write("\n")
    print(f"{out}: {len(outputs)} cases from ctranslate2 {version}")


def update_marian(out):
    """OUT/expected.json's outputs again from the real ctranslate2 on the committed Marian model
    (converted by CTranslate2's converter), its pieces, tokens and bounds (a new case)."""
    import ctranslate2

    path = os.path.join(out, "expected.json")
    with open(path, encoding="utf-8") as f:
        fx = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        hf = hf_marian_dir(os.path.join(out, "model"), os.path.join(tmp, "hf"))
        ct2_dir = ctranslate2.converters.TransformersConverter(hf).convert(
            os.path.join(tmp, "ct2"))
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        outputs = ct2_program.run(ctranslate2, ct2_dir, fx["sources"], fx["targets"], work,
                                  fx["tokens"], fx["max_decoding_length"], fx["min_prob"])
    fx.update(ctranslate2=ctranslate2.__version__, outputs=outputs)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fx, f, indent=0, ensure_ascii=False)
        f.write("\n")
    print(f"{out}: {len(outputs)} cases from ctranslate2 {ctranslate2.__version__}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model")
    p.add_argument("--src")
    p.add_argument("--trg")
    p.add_argument("--lines", type=int, default=8)
    p.add_argument("--out", default=os.path.join(HERE, "..", "tests", "fixtures", "ct2"))
    p.add_argument("--update", action="store_true",
                   help="rerun the program on OUT's model and pieces (after a case was added)")
    p.add_argument("--marian", action="store_true",
                   help="make the Transformers Marian fixture (tests/fixtures/ct2_marian)")
    a = p.parse_args()
    if a.marian:
        marian_out = (a.out if a.out != p.get_default("out") else
                      os.path.join(HERE, "..", "tests", "fixtures", "ct2_marian"))
        return update_marian(marian_out) if a.update else make_marian(marian_out)
    if a.update:
        return update(a.out)
    if not (a.model and a.src and a.trg):
        p.error("--model, --src and --trg are required (or --update)")
    model_out = os.path.join(a.out, "model")
    os.makedirs(model_out, exist_ok=True)
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(a.model, f), os.path.join(model_out, f))
    texts = []
    for path in (a.src, a.trg):
        with open(path, encoding="utf-8") as f:
            texts += f.read().splitlines()
    small_vocabulary(os.path.join(a.model, "vocab.model"), os.path.join(model_out, "vocab.model"),
                     texts)
    sources = pieces(model_out, a.src, a.lines)
    targets = pieces(model_out, a.trg, a.lines)
    version, outputs = reference(model_out, sources, targets)
    with open(os.path.join(a.out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"ctranslate2": version, "sources": sources, "targets": targets,
                   "outputs": outputs}, f, indent=0, ensure_ascii=False)
        f.write("\n")
    print(f"{a.out}: {len(outputs)} cases from ctranslate2 {version}")


if __name__ == "__main__":
    main()
