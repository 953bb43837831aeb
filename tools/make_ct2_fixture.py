#!/usr/bin/env python3
"""Makes tests/fixtures/ct2/: a tiny tfm model and what the real CTranslate2 package answers to
tools/ct2_program.py on it, for python/tests/test_ctranslate2.py (which runs the same program
through tfm.ctranslate2 and compares, without CTranslate2 installed).

    .venv/bin/python tools/make_ct2_fixture.py --model MODEL_DIR --src train.de --trg train.en \
        [--lines 8] [--out tests/fixtures/ct2]
    .venv/bin/python tools/make_ct2_fixture.py --update [--out tests/fixtures/ct2]

--update reruns the program on the committed model and pieces (a new case in ct2_program.py).

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
    a = p.parse_args()
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
