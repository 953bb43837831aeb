"""tfm.Translator: CTranslate2's Translator API over libtfm's tfm::Translator.

This layer checks argument *types* (a TypeError names the argument), tells text input from token
ids, and rebatches iterables; every option *value* is checked by the C++ library, and all
compute (loading, tokenisation, the search, scoring) runs there with the GIL released.
"""
from __future__ import annotations

import collections
import numbers
import os
import warnings
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Union

from . import _tfm
from ._tfm import ModelInfo, TranslationResult

TextBatch = Sequence[str]
IdsBatch = Sequence[Sequence[int]]
Source = Union[TextBatch, IdsBatch, Any]  # Any: a 2-D NumPy integer array

_TEXT, _IDS, _TOKENS = "text", "ids", "tokens"


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return int(value)


def _uint64(name: str, value: Any) -> int:
    """An int that fits the library's unsigned 64 bits (a representation, not a range: the values
    of the options are checked by the library)."""
    value = _int(name, value)
    if not 0 <= value < 1 << 64:
        raise _tfm.InvalidArgumentError(f"{name} must fit an unsigned 64-bit integer (got {value})")
    return value


def _float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    return float(value)


def _bool(name: str, value: Any) -> bool:
    # NumPy's bool_ is not a bool subclass; accept it through its type name.
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return bool(value)


def _str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _path(name: str, value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), not {type(value).__name__}")
    return os.fspath(value)


def _is_int_array(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and getattr(dtype, "kind", "") in "iu" and hasattr(x, "tolist")


def _batch(name: str, source: Any, allow_none: bool = False) -> tuple[str, list]:
    """(kind, items): a batch of text lines, or of token id lists (lists, tuples, NumPy arrays).

    Only the container shapes are checked here; the C++ conversion checks every element (and a
    failure there is re-raised naming the argument)."""
    if source is None and allow_none:
        return _IDS, []
    if isinstance(source, (str, bytes)):
        raise TypeError(f"{name} must be a list of sentences (or of token id lists), not a "
                        f"single {type(source).__name__}; wrap it in a list")
    if _is_int_array(source):
        if source.ndim != 2:
            raise TypeError(f"{name}: a NumPy array must be 2-D (sentences x ids), got "
                            f"{source.ndim}-D")
        items = source.tolist()
        _check_ids(name, items)
        return _IDS, items
    if getattr(source, "dtype", None) is not None:
        raise TypeError(f"{name}: a NumPy array must hold integer token ids, not {source.dtype}")
    try:
        items = list(source)
    except TypeError:
        raise TypeError(f"{name} must be a list of str or a list of token id lists, not "
                        f"{type(source).__name__}") from None
    if not items:
        return _TEXT, []
    first = items[0]
    if isinstance(first, str):
        return _TEXT, items
    if _is_int_array(first):
        items = [x.tolist() if _is_int_array(x) else x for x in items]
        _check_ids(name, items)
        return _IDS, items
    if isinstance(first, (list, tuple)):
        # Empty sentences say nothing: the first non-empty one tells tokens from ids.
        nonempty = next((x for x in items if isinstance(x, (list, tuple)) and x), first)
        if nonempty and isinstance(nonempty[0], str):
            return _TOKENS, items
        _check_ids(name, items)
        return _IDS, items
    raise TypeError(f"{name} must be a list of str or a list of token id lists, not a list of "
                    f"{type(first).__name__}")


def _check_ids(name: str, items: list) -> None:
    """Every id an int that fits 64 bits, never a bool (True would be id 1, BOS): the C++
    conversion took booleans as ints. The library checks the range of each id."""
    for i, x in enumerate(items):
        if not isinstance(x, (list, tuple)):
            continue  # the C++ conversion names a sentence of the wrong type
        for t in x:
            if isinstance(t, bool) or not isinstance(t, numbers.Integral):
                raise TypeError(f"{name}: sentence {i + 1} holds a {type(t).__name__}, not an "
                                "int token id")
            if not -(1 << 63) <= t < 1 << 63:
                raise _tfm.InvalidArgumentError(
                    f"{name}: sentence {i + 1}: token id {t} does not fit 64 bits")


def _prefixes(kind: str, count: int, target_prefix: Any) -> list:
    """target_prefix as the C++ layer takes it for a source batch of `kind`: [] for None, else one
    entry per source, of the source's kind (text, token list or id list; None: no prefix).

    Every element is checked here, so a conversion failure in the C++ layer can only be the
    source's. The library checks the ids and the lengths."""
    if target_prefix is None:
        return []
    if isinstance(target_prefix, (str, bytes)):
        raise TypeError("target_prefix must be a list with one prefix per source, not a single "
                        f"{type(target_prefix).__name__}; wrap it in a list")
    if _is_int_array(target_prefix) and target_prefix.ndim == 2:
        target_prefix = target_prefix.tolist()
    try:
        items = list(target_prefix)
    except TypeError:
        raise TypeError("target_prefix must be a list with one prefix per source, not "
                        f"{type(target_prefix).__name__}") from None
    out = []
    for x in items:
        if kind == _TEXT:
            if x is not None and not isinstance(x, str):
                raise TypeError("target_prefix: for text sources, each prefix must be a str (or "
                                f"None), not {type(x).__name__}")
            out.append(x or "")
            continue
        if x is None:
            out.append([])
            continue
        if _is_int_array(x):
            x = x.tolist()
        if isinstance(x, (str, bytes)) or not isinstance(x, (list, tuple)):
            what = "a list of str tokens" if kind == _TOKENS else "a list of int token ids"
            raise TypeError(f"target_prefix: for {'token' if kind == _TOKENS else 'id'} sources, "
                            f"each prefix must be {what} (or None), not {type(x).__name__}")
        for t in x:
            ok = (isinstance(t, str) if kind == _TOKENS else
                  isinstance(t, numbers.Integral) and not isinstance(t, bool))
            if not ok:
                what = "str tokens" if kind == _TOKENS else "int token ids"
                raise TypeError(f"target_prefix: every prefix must hold {what}, as the source "
                                f"does, not {type(t).__name__}")
            if kind != _TOKENS and not -(1 << 63) <= t < 1 << 63:
                raise _tfm.InvalidArgumentError(f"target_prefix: token id {t} does not fit 64 bits")
        out.append([t if kind == _TOKENS else int(t) for t in x])
    return out


def _call(name: str, kind: str, fn, *args):
    """Calls the C++ layer; its argument conversion failing means a bad element in `name`."""
    try:
        return fn(*args)
    except TypeError as e:
        if "incompatible function arguments" not in str(e):
            raise
        what = {_TEXT: "str", _IDS: "lists of int token ids",
                _TOKENS: "lists of str tokens"}[kind]
        raise TypeError(f"{name}: every item must be of the first's kind ({what})") from None


class Translator:
    """A model directory loaded once, translating and scoring text or token ids.

    >>> translator = tfm.Translator("model/", compute_type="auto", inter_threads=2)
    >>> results = translator.translate_batch(["Ein Hund läuft."], beam_size=4)
    >>> results[0].hypotheses[0]
    'A dog runs.'

    Arguments:
      model_dir: a tfm model directory (config.json, model.safetensors and, for text, the
        SentencePiece vocabularies: vocab.model, or vocab.src.model + vocab.trg.model).
      device: "cpu", or "cuda" with a libtfm built with the CUDA backend on a machine with a
        GPU (fp32, inter_threads=1; docs/cuda.md); elsewhere "cuda" raises a tfm.Error.
      compute_type: of the linear layers: "default" (the type the model was saved in: float32,
        or the quantization a converted model was given by convert_transformers),
        "float32"/"fp32", "bfloat16"/"bf16", "int8", or "auto" (a converted model's quantization,
        else bf16 where the CPU multiplies bf16, else float32).
      intra_threads: threads of each batch's ops; 0: all cores / inter_threads.
      inter_threads: batches translated at once, sharing the weights. Calls from several Python
        threads run at once (the GIL is released) on these workers.
      max_batch_size: sentences a batch. max_batch_tokens: padded source tokens a batch (0: no
        limit). Each call sorts its sentences by length and cuts them into such batches.

    Results do not depend on the batching or the thread counts. Every method may be called from
    several threads at once. Errors: tfm.Error (a RuntimeError) with the library's message;
    tfm.InvalidArgumentError (also a ValueError) for a bad compute_type/device or search option
    value; TypeError naming the argument for a wrong type.
    """

    def __init__(self, model_dir: Union[str, os.PathLike], device: str = "cpu",
                 compute_type: str = "default", intra_threads: int = 0, inter_threads: int = 1,
                 max_batch_size: int = 32, max_batch_tokens: int = 0) -> None:
        self._impl = _tfm.Translator(
            _path("model_dir", model_dir), _str("device", device),
            _str("compute_type", compute_type), _int("intra_threads", intra_threads),
            _int("inter_threads", inter_threads), _int("max_batch_size", max_batch_size),
            _int("max_batch_tokens", max_batch_tokens))

    # --------------------------------------------------------------------- properties
    @property
    def model_info(self) -> ModelInfo:
        """The loaded model's ModelInfo (widths, layers, vocabularies, special ids, config)."""
        return self._impl.model_info

    @property
    def device(self) -> str:
        return self._impl.device

    @property
    def compute_type(self) -> str:
        """The compute type in use ("auto" resolved at load): "fp32", "bf16" or "int8"."""
        return self._impl.compute_type

    @property
    def intra_threads(self) -> int:
        """Threads of each batch (0 resolved at load)."""
        return self._impl.intra_threads

    @property
    def inter_threads(self) -> int:
        return self._impl.inter_threads

    @property
    def max_batch_size(self) -> int:
        return self._impl.max_batch_size

    @property
    def has_vocabularies(self) -> bool:
        """Whether the model has SentencePiece vocabularies (text input needs them)."""
        return self._impl.has_vocabularies

    def __repr__(self) -> str:
        return (f"tfm.Translator({self.model_info.directory!r}, device={self.device!r}, "
                f"compute_type={self.compute_type!r}, intra_threads={self.intra_threads}, "
                f"inter_threads={self.inter_threads})")

    # --------------------------------------------------------------------- translation
    def translate_batch(
        self,
        source: Source,
        beam_size: Optional[int] = None,
        num_hypotheses: Optional[int] = None,
        length_penalty: Optional[float] = None,
        normalize_scores: bool = False,
        max_decoding_length: Optional[int] = None,
        min_decoding_length: Optional[int] = None,
        max_length_factor: Optional[float] = None,
        max_length_extra: Optional[int] = None,
        max_new_tokens: Optional[int] = None,
        source_lang: Optional[str] = None,
        target_lang: Optional[str] = None,
        sampling_topk: int = 1,
        sampling_topp: float = 1.0,
        sampling_temperature: float = 1.0,
        seed: int = 0,
        return_scores: bool = False,
        target_prefix: Optional[Any] = None,
        return_attention: bool = False,
    ) -> List[TranslationResult]:
        """Translates a batch; one TranslationResult per source, in input order.

        source: a list of sentences (str; the vocabulary encodes them and the hypotheses are
          text), of token lists (SentencePiece pieces such as ["▁Ein", "▁Hund"], as
          CTranslate2 takes; the hypotheses are token lists; tokenize() makes them), or of
          token id lists without BOS/EOS (lists, tuples, 1-D NumPy integer arrays, or one 2-D
          NumPy array; the hypotheses are id lists). An empty sentence gives a result without
          hypotheses.
        Search arguments left None take the model's own value (default_options(): tfm's
        defaults, beam_size 1, length_penalty 0, max_decoding_length 1024, max_length_factor 2,
        max_length_extra 10; a model converted from Transformers: its generation config's, and
        it ranks and stops as generate() does, docs/convert.md).
        beam_size: 1 is greedy search (or sampling). num_hypotheses: returned per sentence, at
          most beam_size.
        length_penalty: GNMT alpha, score / ((5 + len) / 6)^alpha; 0: the raw log-probability
          (a converted model: generate()'s, score / length^alpha).
          normalize_scores: rank by log-probability / length instead.
        max_decoding_length: a cap on output tokens (with EOS); the output is also capped at
          max_length_factor * source length + max_length_extra (tfm's own models) and by the
          model's positions. max_new_tokens: a cap on the tokens after the target prefix.
        min_decoding_length: tokens before EOS is allowed.
        source_lang, target_lang: a multilingual converted model's language codes (NLLB's
          "deu_Latn", M2M100's "de", mBART's "de_DE"); None: the model's defaults.
        sampling_topk: as in CTranslate2: 1 (the default) is the argmax; any other value samples
          from the k most likely tokens (0: all), after sampling_temperature, then keeps the
          nucleus of mass sampling_topp. Sampling needs beam_size 1. seed: with a sentence's
          index in the call, keys its random stream.
        return_scores: fill each result's scores (ranking) and log_probs (log P(hyp + EOS)).
        target_prefix: one prefix per source, of the source's kind (a str for text, a token
          list for tokens, an id list for ids; None or empty: none), or None. Each hypothesis
          starts with its prefix, forced, and decoding continues from there (greedy, beam or
          sampling); the hypotheses include the prefix, and scores and log_probs count its
          tokens (so log_probs stay score_batch's score of the whole hypothesis), as does the
          length limit. A prefix must leave room for EOS within max_decoding_length.
        return_attention: fill each result's attention: per hypothesis, one row per target token
          (the prefix's included), the last decoder layer's cross-attention averaged over heads,
          over the source positions the model reads (the source tokens, then EOS by default;
          see ModelInfo.source_bos / source_eos). Each row sums to 1.
        """
        return self._submit(
            source, target_prefix, return_scores, beam_size=beam_size,
            num_hypotheses=num_hypotheses, length_penalty=length_penalty,
            normalize_scores=normalize_scores, max_decoding_length=max_decoding_length,
            min_decoding_length=min_decoding_length, max_length_factor=max_length_factor,
            max_length_extra=max_length_extra, max_new_tokens=max_new_tokens,
            source_lang=source_lang, target_lang=target_lang, sampling_topk=sampling_topk,
            sampling_topp=sampling_topp, sampling_temperature=sampling_temperature, seed=seed,
            return_attention=return_attention).result()

    def generate_batch(
        self,
        prompts: Source,
        beam_size: Optional[int] = None,
        num_hypotheses: Optional[int] = None,
        length_penalty: Optional[float] = None,
        normalize_scores: bool = False,
        max_decoding_length: Optional[int] = None,
        min_decoding_length: Optional[int] = None,
        max_new_tokens: Optional[int] = None,
        sampling_topk: int = 1,
        sampling_topp: float = 1.0,
        sampling_temperature: float = 1.0,
        seed: int = 0,
        return_scores: bool = False,
    ) -> List[TranslationResult]:
        """Continues each prompt with a decoder-only model; one TranslationResult per prompt.

        prompts: a list of texts (the target vocabulary encodes them; the hypotheses are text)
          or of token id lists without BOS/EOS (the hypotheses are id lists); an empty prompt
          starts from BOS alone. Each hypothesis holds its prompt and the continuation, and its
          log_probs are score_batch's (source=None) score of the whole.
        The options are translate_batch's; the output is capped by max_decoding_length (tokens
        with EOS, the prompt counted) and the model's positions. An encoder-decoder model
        raises tfm.Error (it translates).
        """
        options = self._options(
            beam_size=beam_size, num_hypotheses=num_hypotheses, length_penalty=length_penalty,
            normalize_scores=normalize_scores, max_decoding_length=max_decoding_length,
            min_decoding_length=min_decoding_length, max_new_tokens=max_new_tokens,
            sampling_topk=sampling_topk, sampling_topp=sampling_topp,
            sampling_temperature=sampling_temperature, seed=seed)
        return_scores = _bool("return_scores", return_scores)
        kind, items = _batch("prompts", prompts)
        if kind == _TOKENS:
            raise TypeError("prompts: give texts or token id lists (target_tokens_to_ids turns "
                            "token lists into ids)")
        fn = self._impl.generate_text if kind == _TEXT else self._impl.generate_ids
        return _call("prompts", kind, fn, items, options, return_scores)

    def translate_iterable(self, source: Iterable[Any],
                           target_prefix: Optional[Iterable[Any]] = None,
                           max_batch_size: Optional[int] = None, read_ahead: int = 16,
                           **options: Any) -> Iterator[TranslationResult]:
        """Translates an iterable of sentences (or of token id lists) lazily, in input order.

        Reads read_ahead * max_batch_size items at a time (max_batch_size: the translator's by
        default) and submits each such window to the translator's queue as one call (the
        library's translate_async: sorted by length and cut into the translator's batches, run
        on its inter_threads workers, the results of a translate_batch call on the window). The
        next window is read while one decodes; results are yielded in order. target_prefix:
        None, or an iterable of prefixes read alongside source, one per item (as translate_batch
        takes them). options: those of translate_batch.
        """
        size = self.max_batch_size if max_batch_size is None else _int("max_batch_size",
                                                                        max_batch_size)
        read_ahead = _int("read_ahead", read_ahead)
        self._impl.check_window(size, read_ahead)
        if isinstance(target_prefix, (str, bytes)):
            raise TypeError("target_prefix must be an iterable of prefixes, one per source, not "
                            f"a single {type(target_prefix).__name__}")
        prefixes = None if target_prefix is None else iter(target_prefix)
        missing = object()
        window = size * read_ahead
        chunk: list = []
        chunk_prefix: list = []
        in_flight: collections.deque = collections.deque()
        return_scores = options.pop("return_scores", False)

        def submit() -> None:
            in_flight.append(self._submit(
                chunk, None if prefixes is None else chunk_prefix, return_scores, **options))

        for item in source:
            chunk.append(item)
            if prefixes is not None:
                p = next(prefixes, missing)
                if p is missing:
                    raise _tfm.InvalidArgumentError("target_prefix has fewer entries than source")
                chunk_prefix.append(p)
            if len(chunk) == window:
                submit()
                chunk, chunk_prefix = [], []
                # One window decodes while the next is read.
                while len(in_flight) > 1:
                    yield from in_flight.popleft().result()
        if prefixes is not None and next(prefixes, missing) is not missing:
            raise _tfm.InvalidArgumentError("target_prefix has more entries than source")
        if chunk:
            submit()
        while in_flight:
            yield from in_flight.popleft().result()

    def translate_file(self, source_path: Union[str, os.PathLike],
                       output_path: Union[str, os.PathLike], ids: bool = False,
                       n_best: bool = False, read_ahead: int = 0,
                       target_path: Optional[Union[str, os.PathLike]] = None,
                       **options: Any) -> None:
        """Translates a file line by line into output_path, as `tfm translate` does.

        One output line per input line (ids=True: lines of space-separated token ids in and
        out); n_best=True writes every hypothesis as "index ||| hypothesis ||| score". Lines
        are read read_ahead at a time (0: 8 * max_batch_size) and written in order as soon as
        they and every earlier line are done. A source longer than the model's positions is cut,
        with a warning (warnings.warn). target_path (CTranslate2's name): a file with a target
        prefix for each input line (text, or ids with ids=True; an empty line for none) that
        every translation starts with, as `tfm translate --target-prefix`. options: those of
        translate_batch, without return_scores, target_prefix and return_attention.
        """
        if "return_scores" in options:
            raise TypeError("translate_file: return_scores does not apply (use n_best=True)")
        if "target_prefix" in options:
            raise TypeError("translate_file: target_prefix does not apply (use target_path, "
                            "a file of prefixes, or translate_batch)")
        if "return_attention" in options:
            raise TypeError("translate_file: return_attention does not apply (use "
                            "translate_batch or translate_iterable)")
        opts = self._options(**options)
        text = self._impl.translate_file(
            _path("source_path", source_path), _path("output_path", output_path), opts,
            _bool("ids", ids), _bool("n_best", n_best), _int("read_ahead", read_ahead),
            "" if target_path is None else _path("target_path", target_path))
        for line in text.splitlines():
            warnings.warn(line.removeprefix("tfm: warning: "), RuntimeWarning, stacklevel=2)

    def generate_file(self, prompt_path: Union[str, os.PathLike],
                      output_path: Union[str, os.PathLike], ids: bool = False,
                      n_best: bool = False, read_ahead: int = 0, **options: Any) -> None:
        """Continues each line of prompt_path with a decoder-only model, as `tfm generate` does.

        One output line per prompt: the prompt and its continuation (ids=True: token ids in and
        out; n_best=True: "index ||| text ||| score" lines), in order, each written as soon as it
        and every earlier line are done. options: those of generate_batch, without
        return_scores. An encoder-decoder model raises tfm.Error (it translates).
        """
        if "return_scores" in options:
            raise TypeError("generate_file: return_scores does not apply (use n_best=True)")
        opts = self._options(**options)
        self._impl.generate_file(
            _path("prompt_path", prompt_path), _path("output_path", output_path), opts,
            _bool("ids", ids), _bool("n_best", n_best), _int("read_ahead", read_ahead))

    # --------------------------------------------------------------------- scoring
    def score_batch(self, source: Optional[Source], target: Source) -> List[float]:
        """log P(target + EOS | source) of each pair, teacher-forced, as `tfm score` prints.

        source and target: both text (encoded by the vocabularies) or both token id lists
        (without BOS/EOS). A decoder-only model takes source=None (or []).
        (CTranslate2 returns per-token log-probabilities; tfm returns each pair's total.)
        """
        skind, sitems = _batch("source", source, allow_none=True)
        tkind, titems = _batch("target", target)
        # An empty token list reads as ids; it matches tokens on the other side too.
        if tkind == _TOKENS and skind == _IDS and not any(sitems):
            skind = _TOKENS
        if skind == _TOKENS and tkind == _IDS and not any(titems):
            tkind = _TOKENS
        if sitems and titems and skind != tkind:
            raise TypeError("source and target must both be text, both token lists or both "
                            "token ids")
        kind = tkind if titems else skind
        fn = {_TEXT: self._impl.score_text, _IDS: self._impl.score_ids,
              _TOKENS: self._impl.score_tokens}[kind]
        return _call("target", kind, fn, sitems, titems)

    def tokenize(self, text: str) -> List[str]:
        """The source vocabulary's SentencePiece pieces of one text (what translate_batch does to
        text before translating), for callers that pass token lists."""
        return self._impl.source_tokens(_str("text", text))

    # --------------------------------------------------------------------- helpers
    def _submit(self, source: Source, target_prefix: Optional[Any], return_scores: bool,
                **options: Any) -> "_tfm.AsyncTranslation":
        """One call submitted to the translator's queue (translate_batch's arguments); its
        result() waits for the TranslationResults."""
        opts = self._options(**options)
        return_scores = _bool("return_scores", return_scores)
        kind, items = _batch("source", source)
        prefix = _prefixes(kind, len(items), target_prefix)
        fn = {_TEXT: self._impl.submit_text, _IDS: self._impl.submit_ids,
              _TOKENS: self._impl.submit_tokens}[kind]
        return _call("source", kind, fn, items, prefix, opts, return_scores)

    def _options(self, beam_size: Optional[int] = None, num_hypotheses: Optional[int] = None,
                 length_penalty: Optional[float] = None, normalize_scores: bool = False,
                 max_decoding_length: Optional[int] = None,
                 min_decoding_length: Optional[int] = None,
                 max_length_factor: Optional[float] = None,
                 max_length_extra: Optional[int] = None, max_new_tokens: Optional[int] = None,
                 source_lang: Optional[str] = None, target_lang: Optional[str] = None,
                 sampling_topk: int = 1, sampling_topp: float = 1.0,
                 sampling_temperature: float = 1.0, seed: int = 0,
                 return_attention: bool = False) -> _tfm.TranslationOptions:
        """The call's options: the model's own (default_options: a converted model's generation
        config, tfm's defaults otherwise) with every argument that is not None over them."""
        o = self._impl.default_options()
        if beam_size is not None:
            o.beam_size = _int("beam_size", beam_size)
        if num_hypotheses is not None:
            o.num_hypotheses = _int("num_hypotheses", num_hypotheses)
        elif o.num_hypotheses > o.beam_size:
            o.num_hypotheses = o.beam_size
        if length_penalty is not None:
            o.length_penalty = _float("length_penalty", length_penalty)
        o.normalize_scores = _bool("normalize_scores", normalize_scores)
        for name, value, check in (("max_decoding_length", max_decoding_length, _int),
                                   ("min_decoding_length", min_decoding_length, _int),
                                   ("max_length_factor", max_length_factor, _float),
                                   ("max_length_extra", max_length_extra, _int),
                                   ("max_new_tokens", max_new_tokens, _int),
                                   ("source_lang", source_lang, _str),
                                   ("target_lang", target_lang, _str)):
            if value is not None:
                setattr(o, name, check(name, value))
        topk = _int("sampling_topk", sampling_topk)
        # CTranslate2's choice of search: sampling_topk 1 (the default) is the argmax.
        o.search = _tfm.search_for(o.beam_size, topk != 1)
        o.sampling_topk = topk
        o.sampling_topp = _float("sampling_topp", sampling_topp)
        o.sampling_temperature = _float("sampling_temperature", sampling_temperature)
        o.seed = _uint64("seed", seed)
        o.return_attention = _bool("return_attention", return_attention)
        return o

    def default_options(self) -> dict:
        """The model's own search settings, as translate_batch's keyword arguments: tfm's defaults
        for its own models; a converted Transformers model's generation config (num_beams,
        length_penalty, lengths), which translate_batch uses for every argument left None."""
        o = self._impl.default_options()
        return {k: getattr(o, k) for k in (
            "beam_size", "num_hypotheses", "length_penalty", "max_decoding_length",
            "min_decoding_length", "max_length_factor", "max_length_extra", "max_new_tokens")}
