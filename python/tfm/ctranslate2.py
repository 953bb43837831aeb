"""CTranslate2's Python API on tfm, defaults and meanings included: a CTranslate2 program runs on a
tfm model directory with one line changed,

    import tfm.ctranslate2 as ctranslate2

tfm.Translator takes the same arguments with tfm's defaults (greedy search, no length penalty,
text in and out of translate_file); this module's Translator is that class with CTranslate2's:
beam_size 2, length_penalty 1 in CTranslate2's form (log P / len^α, len with the end token),
max_decoding_length 256 tokens without the end token and not scaled by the source length,
min_decoding_length 1, max_input_length 1024, and translate_file / score_file on files of
tokenized lines. Generator is tfm.Generator with CTranslate2's generation defaults (beam_size 1,
length_penalty 1, max_length 512, min_length 0, patience 1). docs/python.md ("Migrating from
CTranslate2") lists what differs and why.
"""
from __future__ import annotations

import os

from . import _options
from ._results import (AsyncScoringResult, AsyncTranslationResult, ExecutionStats,
                       ScoringResult)
from ._tfm import TranslationResult, __version__
from . import generator as _generator
from .generator import AsyncGenerationResult, GenerationResult, GenerationStepResult
from .translator import Translator as _Translator


class Translator(_Translator):
    """tfm.Translator with CTranslate2's defaults and meanings (see the module's doc)."""

    _defaults = _options.CT2_DEFAULTS
    _ct2_lengths = True
    _ct2_files = True


class Generator(_generator.Generator):
    """tfm.Generator with CTranslate2's defaults (see the module's doc)."""

    _defaults = _generator.CT2_DEFAULTS


def contains_model(path: str) -> bool:
    """Whether `path` holds a model tfm loads (a config.json and a model.safetensors)."""
    return all(os.path.isfile(os.path.join(path, f)) for f in ("config.json",
                                                              "model.safetensors"))


__all__ = ["AsyncGenerationResult", "AsyncScoringResult", "AsyncTranslationResult",
           "ExecutionStats", "GenerationResult", "GenerationStepResult", "Generator",
           "ScoringResult", "TranslationResult", "Translator", "contains_model", "__version__"]
