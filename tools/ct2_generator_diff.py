#!/usr/bin/env python3
"""The differential test of tfm's Generator against CTranslate2's, and the maker of its fixture.

A random-weight GPT-2 (2 layers, d 32, 37 tokens: a-z, 0-9 and "<|endoftext|>", GPT-2's BOS,
EOS and PAD) is saved by Transformers with its GPT2Tokenizer, converted by CTranslate2's own
converter (ctranslate2.converters.TransformersConverter) and by tfm's (tfm.convert_transformers),
and tools/ct2_generator_program.py runs on each: with the real `ctranslate2`, with
`tfm.ctranslate2` and with `tfm` itself (whose defaults are the model's: every case but
"defaults" sets what differs). Tokens must be equal, scores and log-probabilities within --tol.

    python tools/ct2_generator_diff.py [--tol 1e-4]            # the live comparison
    python tools/ct2_generator_diff.py --write-fixture DIR      # tests/fixtures/ct2_generator

--write-fixture stores tfm's converted model (DIR/model) and the real package's outputs
(DIR/expected.json) for python/tests/test_ctranslate2_generator.py, which runs the tfm side
without torch, transformers or ctranslate2. Exit 0: every case agrees but the known differences
(ct2_generator_program.KNOWN_DIFFERENCES); 1: some case differs; 77: a package is missing.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ct2_generator_program as program  # noqa: E402
import ct2_program  # noqa: E402

TOKENS = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
# Start sequences: from the start token alone, after it, and a text's own tokens (no start token).
PROMPTS = [[program.BOS, "a", "b"], [program.BOS], [program.BOS, "c", "o", "d", "e"],
           ["x", "y"], [program.BOS, "q"], ["h", "e", "l", "l", "o", "w"]]


def make_gpt2(out, seed=7):
    """A random-weight GPT-2 and its tokenizer, saved by Transformers into out."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    os.makedirs(out, exist_ok=True)
    vocab = {t: i for i, t in enumerate(TOKENS + [program.BOS])}
    eos = vocab[program.BOS]
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
    tokenizer = GPT2Tokenizer(os.path.join(out, "vocab.json"), os.path.join(out, "merges.txt"))
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=32, n_layer=2, n_head=4,
                        bos_token_id=eos, eos_token_id=eos)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.35)
        # A larger end-token row (the output is tied to it): some hypotheses end early.
        model.transformer.wte.weight[eos] *= 1.6
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def build(tmp):
    """(ctranslate2's model directory, tfm's) for a fresh random GPT-2."""
    from ctranslate2.converters import TransformersConverter

    import tfm

    hf = os.path.join(tmp, "hf")
    make_gpt2(hf)
    ct2_dir = os.path.join(tmp, "ct2")
    TransformersConverter(hf).convert(ct2_dir, force=True)
    tfm_dir = os.path.join(tmp, "tfm")
    tfm.convert_transformers(hf, tfm_dir)
    return ct2_dir, tfm_dir


def report(name, got, want, tol, skip=()):
    """Prints each case's state; the cases that differ (beyond the known ones and `skip`)."""
    known = dict(program.KNOWN_DIFFERENCES)
    bad = ct2_program.compare(got, want, tol, known=set(known) | set(skip))
    for case in want:
        state = ("skipped" if case in skip else
                 "differs (known: " + known[case] + ")" if case in known else
                 "DIFFERS" if case in bad else "equal")
        print(f"{name:16} {case:24} {state}")
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--write-fixture", metavar="DIR")
    a = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the models are local directories
    try:
        import ctranslate2
        import torch  # noqa: F401
        import transformers  # noqa: F401

        import tfm
        import tfm.ctranslate2 as tfm_ct2
    except ImportError as e:
        print(f"ct2_generator_diff: SKIPPED: {e}")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        ct2_dir, tfm_dir = build(tmp)
        real = program.run(ctranslate2, ct2_dir, PROMPTS)
        if a.write_fixture:
            model = os.path.join(a.write_fixture, "model")
            shutil.rmtree(model, ignore_errors=True)
            shutil.copytree(tfm_dir, model)
            with open(os.path.join(a.write_fixture, "expected.json"), "w",
                      encoding="utf-8") as f:
                json.dump({"ctranslate2": ctranslate2.__version__, "prompts": PROMPTS,
                           "outputs": real}, f, indent=0)
                f.write("\n")
            print(f"{a.write_fixture}: {len(real)} cases from ctranslate2 "
                  f"{ctranslate2.__version__}")
            return 0
        ours = program.run(tfm_ct2, tfm_dir, PROMPTS)
        plain = program.run(tfm, tfm_dir, PROMPTS)
    bad = report("tfm.ctranslate2", ours, real, a.tol)
    # tfm.Generator's defaults are the model's generation config (max_length 20 new tokens...).
    bad += report("tfm", plain, real, a.tol, skip=("defaults",))
    print(f"ct2_generator_diff: ctranslate2 {ctranslate2.__version__} against tfm: "
          f"{'every case agrees' if not bad else 'DIFFERENCES: ' + ', '.join(bad)} "
          f"(but the known differences)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
