"""CTranslate2's translate_file and score_file over tfm.Translator's iterables: files of
tokenized lines (tokens split on spaces, or the caller's tokenize functions) in, CTranslate2's
output lines out."""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterator, List, Optional

from ._inputs import _path
from ._options import _bool, _int
from ._results import ExecutionStats


def _cpp_float(x: float) -> str:
    """A float as C++'s ostream writes it by default (CTranslate2's files): 6 significant
    digits, %g style."""
    return "%g" % x


def _lines(path: str) -> Iterator[str]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n")


def _tokenizer(fn: Optional[Callable], name: str) -> Callable[[str], List[str]]:
    if fn is None:
        return lambda line: line.split()
    if not callable(fn):
        raise TypeError(f"{name} must be callable, not {type(fn).__name__}")
    return fn


def _detokenizer(fn: Optional[Callable]) -> Callable[[List[Any]], str]:
    if fn is None:
        return lambda tokens: " ".join(map(str, tokens))
    if not callable(fn):
        raise TypeError(f"target_detokenize_fn must be callable, not {type(fn).__name__}")
    return fn


def _read_window(options: Dict[str, Any]) -> tuple:
    """(max_batch_size, read_ahead) of CTranslate2's max_batch_size and read_batch_size (0: an
    automatic value; ours is 16 batches)."""
    size = _int("max_batch_size", options.pop("max_batch_size", 32))
    read = _int("read_batch_size", options.pop("read_batch_size", 0))
    ahead = -(-read // size) if read and size else 16
    return size, max(ahead, 1)


def translate_tokens_file(translator: Any, source_path: Any, output_path: Any,
                          target_path: Any, options: Dict[str, Any]) -> ExecutionStats:
    options = dict(options)
    src_fn = options.pop("source_tokenize_fn", None)
    trg_fn = options.pop("target_tokenize_fn", None)
    detok_fn = options.pop("target_detokenize_fn", None)
    if (src_fn is None) != (detok_fn is None):
        raise ValueError("source_tokenize_fn and target_detokenize_fn should both be set or none "
                         "at all")
    if target_path is not None and src_fn is not None and trg_fn is None:
        raise ValueError("target_tokenize_fn should be set when passing a target file")
    with_scores = _bool("with_scores", options.pop("with_scores", False))
    size, ahead = _read_window(options)
    src_tok, trg_tok, detok = (_tokenizer(src_fn, "source_tokenize_fn"),
                               _tokenizer(trg_fn, "target_tokenize_fn"), _detokenizer(detok_fn))
    source = map(src_tok, _lines(_path("source_path", source_path)))
    prefixes = (None if target_path is None
                else map(trg_tok, _lines(_path("target_path", target_path))))
    options["return_scores"] = with_scores or options.get("return_scores", False)
    start = time.perf_counter()
    examples = tokens = 0
    out_path = _path("output_path", output_path)
    with open(out_path, "w", encoding="utf-8") as out:
        for r in translator.translate_iterable(source, prefixes, max_batch_size=size,
                                               read_ahead=ahead, **options):
            examples += 1
            tokens += len(r.hypotheses[0]) if r.hypotheses else 0
            for n, hyp in enumerate(r.hypotheses):
                if with_scores:
                    out.write(_cpp_float(r.scores[n] if r.scores else 0) + " ||| ")
                out.write(detok(hyp) + "\n")
    return ExecutionStats(examples, tokens, (time.perf_counter() - start) * 1000.0)


def score_tokens_file(translator: Any, source_path: Any, target_path: Any, output_path: Any,
                      options: Dict[str, Any]) -> ExecutionStats:
    options = dict(options)
    fns = [options.pop(k, None) for k in ("source_tokenize_fn", "target_tokenize_fn",
                                          "target_detokenize_fn")]
    if len({f is None for f in fns}) != 1:
        raise ValueError("source_tokenize_fn, target_tokenize_fn, and target_detokenize_fn "
                         "should all be set or none at all")
    with_tokens = _bool("with_tokens_score", options.pop("with_tokens_score", False))
    size, ahead = _read_window(options)
    src_tok, trg_tok = (_tokenizer(fns[0], "source_tokenize_fn"),
                        _tokenizer(fns[1], "target_tokenize_fn"))
    detok = _detokenizer(fns[2])
    source = map(src_tok, _lines(_path("source_path", source_path)))
    target = map(trg_tok, _lines(_path("target_path", target_path)))
    start = time.perf_counter()
    examples = tokens = 0
    with open(_path("output_path", output_path), "w", encoding="utf-8") as out:
        for r in translator.score_iterable(source, target, max_batch_size=size,
                                           read_ahead=ahead, **options):
            examples += 1
            tokens += len(r.log_probs)
            line = _cpp_float(r.normalized_score()) + " ||| " + detok(r.tokens)
            if with_tokens:
                line += " |||" + "".join(" " + _cpp_float(x) for x in r.log_probs)
            out.write(line + "\n")
    return ExecutionStats(examples, tokens, (time.perf_counter() - start) * 1000.0)
