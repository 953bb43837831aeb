"""Shared by hf_marian_equal.py and hf_opus_speed.py: a random-weight Transformers Marian model
converted for both engines — tfm's `tfm convert --from transformers`, and CTranslate2's converter
(ctranslate2.converters.TransformersConverter, what ct2-transformers-converter runs) — and the
token-id plumbing between them.

A random model has no tokenizer; CTranslate2's converter reads one only for its vocabulary and
special tokens, so it is given a stand-in whose pieces are "t<id>" ("</s>", "<unk>" and "<pad>"
at their ids). CTranslate2 drops Marian's final <pad> (the decoder starts from a zero embedding,
which the pad row of a Transformers Marian model is), exactly as it does for OPUS-MT.
"""
from __future__ import annotations

import os
import subprocess


def piece(i: int, eos: int, pad: int, unk: int) -> str:
    return "</s>" if i == eos else "<pad>" if i == pad else "<unk>" if i == unk else f"t{i}"


class StandInTokenizer:
    """What CTranslate2's Marian loader reads of a tokenizer."""

    def __init__(self, vocab: int, eos: int, pad: int, unk: int = 1):
        self.vocab = {piece(i, eos, pad, unk): i for i in range(vocab)}
        self.eos_token, self.unk_token, self.pad_token, self.bos_token = "</s>", "<unk>", "<pad>", None
        self.special_tokens_map = {}

    def get_vocab(self):
        return dict(self.vocab)


def ct2_convert(hf_dir: str, out_dir: str, vocab: int, eos: int, pad: int) -> None:
    """CTranslate2's Transformers converter on hf_dir, with the stand-in tokenizer."""
    from ctranslate2.converters import TransformersConverter

    class Converter(TransformersConverter):
        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            return StandInTokenizer(vocab, eos, pad)

    Converter(hf_dir).convert(out_dir, force=True)


def tfm_convert(tfm: str, hf_dir: str, out_dir: str) -> None:
    subprocess.run([tfm, "convert", "--from", "transformers", hf_dir, "--out", out_dir, "--force"],
                   check=True, stdout=subprocess.DEVNULL)


def to_pieces(ids, eos: int, pad: int):
    return [piece(i, eos, pad, 1) for i in ids]


def to_ids(pieces):
    return [0 if p == "</s>" else 1 if p == "<unk>" else int(p[1:]) for p in pieces]


def write_ids(path: str, rows) -> None:
    with open(path, "w") as f:
        for r in rows:
            f.write(" ".join(map(str, r)) + "\n")


def read_ids(path: str):
    with open(path) as f:
        return [[int(x) for x in line.split()] for line in f]


def tfm_binary() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("TFM", os.path.join(here, "..", "..", "build", "tfm"))
