#!/usr/bin/env python3
"""The differential test: tools/ct2_program.py run twice on the same weights, with the real
`ctranslate2` package (on the model converted by bench/ctranslate2/convert_tfm.py) and with
`tfm.ctranslate2` (on the tfm model directory), its outputs compared case by case (tokens
exactly, scores and log-probabilities within --tol). Then, where transformers is installed, the
same on the random-weight Transformers Marian model of tests/fixtures/ct2_marian, converted by
CTranslate2's own converter and by tfm's.

    python tools/ct2_diff.py [--fixture tests/fixtures/ct2] [--tol 1e-4]

Needs an interpreter with ctranslate2 and sentencepiece (scripts/setup_venv.sh) and the tfm
package importable (PYTHONPATH; tests/python/ct2_diff_test.sh arranges it). Exit 0: every case
agrees but the known differences (ct2_program.KNOWN_DIFFERENCES); 1: some case differs; 77:
ctranslate2 or tfm is missing (skipped).
"""
import argparse
import importlib.util
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "bench", "ctranslate2"))

import ct2_program  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fixture", default=os.path.join(HERE, "..", "tests", "fixtures", "ct2"))
    p.add_argument("--tol", type=float, default=1e-4)
    a = p.parse_args()
    try:
        import ctranslate2
        import tfm.ctranslate2 as tfm_ct2
    except ImportError as e:
        print(f"ct2_diff: SKIPPED: {e}")
        return 77
    if importlib.util.find_spec("sentencepiece") is None:  # convert_tfm reads the vocabulary
        print("ct2_diff: SKIPPED: no sentencepiece")
        return 77
    import convert_tfm

    with open(os.path.join(a.fixture, "expected.json"), encoding="utf-8") as f:
        fixture = json.load(f)
    model = os.path.join(a.fixture, "model")
    with tempfile.TemporaryDirectory() as tmp:
        ct2_dir = convert_tfm.convert(model, os.path.join(tmp, "ct2"))
        for name in ("real", "tfm"):
            os.makedirs(os.path.join(tmp, name))
        real = ct2_program.run(ctranslate2, ct2_dir, fixture["sources"], fixture["targets"],
                               os.path.join(tmp, "real"))
        ours = ct2_program.run(tfm_ct2, model, fixture["sources"], fixture["targets"],
                               os.path.join(tmp, "tfm"))
    bad = report("tfm model", real, ours, a.tol, ct2_program.KNOWN_DIFFERENCES)
    if importlib.util.find_spec("transformers") is None:
        print("ct2_diff: the Marian model SKIPPED: no transformers")
    else:
        bad += marian(ctranslate2, tfm_ct2, os.path.join(a.fixture, "..", "ct2_marian"), a.tol)
    return 1 if bad else 0


def report(what, real, ours, tol, known):
    """Prints each case's state; the cases that differ unexpectedly."""
    import ctranslate2

    bad = ct2_program.compare(ours, real, tol, known=known)
    for case in real:
        state = ("differs (known: " + known[case] + ")" if case in known else
                 "DIFFERS" if case in bad else "equal")
        print(f"{case:22} {state}")
    print(f"ct2_diff ({what}): ctranslate2 {ctranslate2.__version__} against tfm: "
          f"{len(real) - len(bad)}/{len(real)} cases agree or differ as documented")
    return bad


def marian(ctranslate2, tfm_ct2, fixture, tol):
    """The program on the Transformers Marian model, each side converting it its own way."""
    import make_ct2_fixture
    import tfm

    with open(os.path.join(fixture, "expected.json"), encoding="utf-8") as f:
        fx = json.load(f)
    args = (fx["sources"], fx["targets"])
    kw = dict(tokens=fx["tokens"], max_decoding_length=fx["max_decoding_length"],
              min_prob=fx["min_prob"])
    with tempfile.TemporaryDirectory() as tmp:
        hf = make_ct2_fixture.hf_marian_dir(os.path.join(fixture, "model"),
                                            os.path.join(tmp, "hf"))
        ct2_dir = ctranslate2.converters.TransformersConverter(hf).convert(
            os.path.join(tmp, "ct2"))
        tfm.convert_transformers(hf, os.path.join(tmp, "tfm"))
        for name in ("real", "tfm"):
            os.makedirs(os.path.join(tmp, "w" + name))
        real = ct2_program.run(ctranslate2, ct2_dir, *args, os.path.join(tmp, "wreal"), **kw)
        ours = ct2_program.run(tfm_ct2, os.path.join(tmp, "tfm"), *args,
                               os.path.join(tmp, "wtfm"), **kw)
    return report("Marian converted from Transformers", real, ours, tol,
                  ct2_program.KNOWN_MARIAN_DIFFERENCES)


if __name__ == "__main__":
    sys.exit(main())
