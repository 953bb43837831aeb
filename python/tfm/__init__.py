"""tfm: encoder-decoder Transformer translation in C++ (transformer.cpp), from Python.

The API follows CTranslate2's names where the concepts match:

    import tfm
    translator = tfm.Translator("model/", compute_type="auto")
    results = translator.translate_batch(["Ein Hund läuft."], beam_size=4)
    print(results[0].hypotheses[0])

Translator (translate_batch, translate_iterable, translate_file, score_batch, score_iterable,
score_file, model_info; CTranslate2's arguments and result types, tfm.ctranslate2 with its
defaults too), Generator (decoder-only models: generate_batch, generate_iterable,
generate_tokens, score_batch, as CTranslate2's Generator),
Trainer and train (`tfm train` from Python, with progress callbacks), read_model_info, convert
(PyTorch checkpoints to a model directory), convert_transformers (Hugging Face Transformers
models: Marian/OPUS-MT, M2M100/NLLB, BART/mBART, GPT-2), and the exceptions Error (a RuntimeError)
and InvalidArgumentError (also a ValueError); __version__ and build_commit are the library's (those
`tfm --version` prints). docs/python.md describes everything.
"""
from ._tfm import (Error, InvalidArgumentError, ModelInfo, TrainResult, TrainStatsEvent,
                   TrainUpdateEvent, TrainValidationEvent, TranslationResult, __version__,
                   build_commit, read_model_info)
from ._results import (AsyncScoringResult, AsyncTranslationResult, ExecutionStats,
                       ScoringResult)
from .convert import convert, convert_transformers
from .generator import (AsyncGenerationResult, GenerationResult, GenerationStepResult,
                        Generator)
from .trainer import Trainer, train
from .translator import Translator

__all__ = ["AsyncGenerationResult", "AsyncScoringResult", "AsyncTranslationResult",
           "ExecutionStats", "GenerationResult", "GenerationStepResult", "Generator",
           "ScoringResult", "Error", "InvalidArgumentError", "ModelInfo", "TrainResult",
           "TrainStatsEvent", "TrainUpdateEvent", "TrainValidationEvent", "Trainer", "TranslationResult",
           "Translator", "build_commit", "convert", "convert_transformers", "read_model_info",
           "train", "__version__"]
