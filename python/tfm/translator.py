"""tfm.Translator: CTranslate2's Translator API over libtfm's tfm::Translator.

This layer checks argument *types* (a TypeError names the argument), tells text input from token
ids, cuts a call into CTranslate2's per-call batches and rebatches iterables; every option *value*
is checked by the C++ library, and all compute (loading, tokenisation, the search, scoring) runs
there with the GIL released. tfm.ctranslate2.Translator is this class with CTranslate2's defaults.
"""
from __future__ import annotations

import collections
import concurrent.futures
import numbers
import os
import warnings
from typing import Any, Callable, Iterable, Iterator, List, Optional, Union

from . import _options, _steps, _tfm
from ._inputs import _IDS, _TEXT, _TOKENS, Source, _batch, _call, _path, _prefixes, _str
from ._options import _bool, _int
from ._results import AsyncScoringResult, AsyncTranslationResult, ScoringResult, length_chunks
from ._tfm import ModelInfo, TranslationResult
from . import _files


class Translator:
    """A model directory loaded once, translating and scoring text, token lists or token ids.

    >>> translator = tfm.Translator("model/", compute_type="auto", inter_threads=2)
    >>> results = translator.translate_batch(["Ein Hund läuft."], beam_size=4)
    >>> results[0].hypotheses[0]
    'A dog runs.'

    The constructor and the methods take CTranslate2's arguments (docs/python.md, "Migrating
    from CTranslate2") besides tfm's own; tfm's defaults apply (tfm.ctranslate2.Translator has
    CTranslate2's).

    Arguments:
      model_path: a tfm model directory (config.json, model.safetensors and, for text, the
        SentencePiece vocabularies: vocab.model, or vocab.src.model + vocab.trg.model).
        model_dir= is the same.
      device: "cpu", or "cuda" with a libtfm built with the CUDA backend on a machine with a
        GPU (inter_threads=1; docs/gpu.md); elsewhere "cuda" raises a tfm.Error.
      compute_type: of the linear layers: "default" (the type the model was saved in: float32,
        or the quantization a converted model was given by convert_transformers),
        "float32"/"fp32", "bfloat16"/"bf16", "int8", "auto" (a converted model's quantization,
        else bf16 where the CPU multiplies bf16, else float32), or CTranslate2's names; or a
        dict from device to compute type, as CTranslate2 takes.
      intra_threads: threads of each batch's ops; 0: all cores / inter_threads.
      inter_threads: batches translated at once, sharing the weights. Calls from several Python
        threads run at once (the GIL is released) on these workers.
      max_batch_size: sentences a batch. max_batch_tokens: padded source tokens a batch (0: no
        limit). Each call sorts its sentences by length and cuts them into such batches.
      device_index, max_queued_batches, flash_attention, tensor_parallel, files: CTranslate2's;
        tfm runs one device and loads from a directory, so only their defaults are accepted
        (device_index 0, max_queued_batches 0 or -1, the rest off); others raise
        NotImplementedError.

    Results do not depend on the batching or the thread counts. Every method may be called from
    several threads at once. Errors: tfm.Error (a RuntimeError) with the library's message;
    tfm.InvalidArgumentError (also a ValueError) for a bad option value; TypeError naming the
    argument for a wrong type; NotImplementedError naming a CTranslate2 option tfm does not
    implement.
    """

    _defaults = _options.TFM_DEFAULTS
    _ct2_lengths = False  # max_decoding_length without EOS (tfm.ctranslate2)

    def __init__(self, model_path: Union[str, os.PathLike, None] = None, device: str = "cpu",
                 compute_type: Union[str, dict] = "default", intra_threads: int = 0,
                 inter_threads: int = 1, max_batch_size: int = 32, max_batch_tokens: int = 0, *,
                 device_index: Union[int, List[int]] = 0, max_queued_batches: int = 0,
                 flash_attention: bool = False, tensor_parallel: bool = False,
                 files: Any = None, model_dir: Union[str, os.PathLike, None] = None) -> None:
        if (model_path is None) == (model_dir is None):
            raise TypeError("give the model directory once: model_path (or model_dir)")
        path = _path("model_path", model_path if model_path is not None else model_dir)
        _refuse_constructor(device_index, max_queued_batches, flash_attention, tensor_parallel,
                            files)
        if isinstance(compute_type, dict):
            compute_type = compute_type.get(device, "default")
        self._impl = _tfm.Translator(
            path, _str("device", device), _str("compute_type", compute_type),
            _int("intra_threads", intra_threads), _int("inter_threads", inter_threads),
            _int("max_batch_size", max_batch_size), _int("max_batch_tokens", max_batch_tokens))
        # score_batch(asynchronous=True) and score_iterable run scoring calls here.
        self._scorer = concurrent.futures.ThreadPoolExecutor(
            max_workers=self._impl.inter_threads, thread_name_prefix="tfm-score")

    # --------------------------------------------------------------------- properties
    @property
    def model_info(self) -> ModelInfo:
        """The loaded model's ModelInfo (widths, layers, vocabularies, special ids, config)."""
        return self._impl.model_info

    @property
    def device(self) -> str:
        return self._impl.device

    @property
    def device_index(self) -> List[int]:
        """CTranslate2's: the devices used, always [0] (tfm runs one device)."""
        return [0]

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
    def num_translators(self) -> int:
        """CTranslate2's name: the batches decoded at once (inter_threads)."""
        return self._impl.inter_threads

    @property
    def num_queued_batches(self) -> int:
        """CTranslate2's: always 0 here (tfm's queue reports sentences, not batches)."""
        return 0

    @property
    def num_active_batches(self) -> int:
        return 0

    @property
    def max_batch_size(self) -> int:
        return self._impl.max_batch_size

    @property
    def has_vocabularies(self) -> bool:
        """Whether the model has SentencePiece vocabularies (text input needs them)."""
        return self._impl.has_vocabularies

    def __repr__(self) -> str:
        return (f"tfm.{type(self).__name__}({self.model_info.directory!r}, "
                f"device={self.device!r}, compute_type={self.compute_type!r}, "
                f"intra_threads={self.intra_threads}, inter_threads={self.inter_threads})")

    # --------------------------------------------------------------------- translation
    def translate_batch(self, source: Source, target_prefix: Optional[Any] = None,
                        **options: Any) -> List[Any]:
        """Translates a batch; one TranslationResult per source, in input order (with
        asynchronous=True, one AsyncTranslationResult each, whose result() waits).

        source: a list of sentences (str; the vocabulary encodes them and the hypotheses are
          text), of token lists (SentencePiece pieces such as ["▁Ein", "▁Hund"], as
          CTranslate2 takes; the hypotheses are token lists; tokenize() makes them), or of
          token id lists without BOS/EOS (lists, tuples, 1-D NumPy integer arrays, or one 2-D
          NumPy array; the hypotheses are id lists). An empty sentence gives a result without
          hypotheses.
        target_prefix: one prefix per source, of the source's kind (a str for text, a token
          list for tokens, an id list for ids; None or empty: none), or None. Each hypothesis
          starts with its prefix, forced, and decoding continues from there; the hypotheses,
          scores, log_probs and length limits count its tokens.

        Options (tfm's defaults; docs/python.md lists CTranslate2's). Search options left None
        take the model's own value (default_options(): tfm's defaults, beam_size 1,
        length_penalty 0, max_decoding_length 1024, max_length_factor 2, max_length_extra 10; a
        model converted from Transformers: its generation config's, and it ranks and stops as
        generate() does, docs/convert.md):
          beam_size (1: greedy search, or sampling), num_hypotheses (at most beam_size),
          length_penalty α and length_penalty_form: "gnmt" (score / ((5 + len) / 6)^α, len with
          EOS) or "power" (score / len^α, len with EOS: CTranslate2's); normalize_scores
          (rank by log-probability / length instead).
          max_decoding_length (output tokens with EOS), max_length_factor, max_length_extra
          (the output is also capped at factor * source length + extra, and by the model's
          positions), max_new_tokens (a cap on the tokens after the target prefix),
          min_decoding_length (tokens before EOS is allowed), max_input_length (source positions
          kept, EOS counted; 0: the model's). source_lang, target_lang: a multilingual converted
          model's language codes (NLLB's "deu_Latn", M2M100's "de", mBART's "de_DE"); None: the
          model's defaults.
          sampling_topk (1, the default: the argmax; any other value samples from the k most
          likely, 0: all, after sampling_temperature, then the nucleus sampling_topp; needs
          beam_size 1), seed (with a sentence's index in the call, keys its random stream).
          return_scores (scores: ranking scores; log_probs: log P(hyp + EOS)), return_attention
          (per hypothesis, one row per target token: the last decoder layer's cross-attention
          averaged over heads, over the framed source; rows sum to 1), return_end_token (the
          hypotheses end with the end token), end_token (None: the model's EOS; a token, or a
          list of tokens or ids: decoding stops at any of them, and EOS is an ordinary token
          unless listed).
          max_batch_size (0: one call to the library, which batches by the translator's
          limits; else the sources are sorted by length and cut into chunks of at most this
          many examples, or padded tokens with batch_type="tokens", each batched apart),
          asynchronous.
          suppress_sequences (token or id lists never generated; CTranslate2's), disable_unk,
          patience (0: tfm's beam search; > 0: CTranslate2's stopping rule),
          renormalize_min_length, score_prefix, attention_framing (CTranslate2's ways when set
          as tfm.ctranslate2 sets them).
          repetition_penalty (> 0; the logit l of a token the hypothesis holds becomes l / p
          when positive, l * p otherwise), no_repeat_ngram_size (no n-gram twice; None: the
          model's own, a converted model's generation config's), both before the softmax as
          CTranslate2 applies them.
          return_alternatives (num_hypotheses alternatives at the first position after the
          target prefix, each continued by the search; min_alternative_expansion_prob drops
          the unlikely ones), as CTranslate2's.
          coverage_penalty (CTranslate2's β; greedy and beam search), force_end_token (False:
          a hypothesis reaching the max length ends there without the end token, CTranslate2's),
          search_rule ("tfm": CTranslate2's search on a converted model too).
          callback (CTranslate2's; greedy search and sampling): called with a
          GenerationStepResult for each token as soon as the search chooses it (the target
          prefix's too), from the library's decoding thread, one call at a time; True ends
          that sentence there (its hypothesis without an end token); an exception it raises
          ends the call and is raised here (or by result()).
          return_logits_vocab (result.logits: per hypothesis, one array.array('f') per decoder
          step, the prefix's and the end token's included: the vocabulary's logits the search
          chose from, after the logits processors, before the softmax; numpy.asarray reads
          each as float32), replace_unknowns (token lists only: each unknown target token
          becomes the source token it attends most), prefix_bias_beta (β in [0, 1): the target
          prefix is soft, each step's distribution mixed with it as (1 - β)·p + β·onehot while
          a beam slot follows it; a beam search), as CTranslate2's.
          use_vmap, the one CTranslate2 option tfm does not implement, is accepted at its
          'off' value and raises NotImplementedError otherwise.
        """
        o = _options.merged(self._defaults, options, "translate_batch")
        calls, n = self._submit_chunks(source, target_prefix, o)
        if _bool("asynchronous", o["asynchronous"]):
            out: List[Any] = [None] * n
            for idx, call in calls:
                for pos, i in enumerate(idx):
                    out[i] = AsyncTranslationResult(call, pos)
            return out
        return _gather(calls, n)

    def generate_batch(self, prompts: Source, **options: Any) -> List[TranslationResult]:
        """Continues each prompt with a decoder-only model; one TranslationResult per prompt.

        prompts: a list of texts (the target vocabulary encodes them; the hypotheses are text)
          or of token id lists without BOS/EOS (the hypotheses are id lists); an empty prompt
          starts from BOS alone. Each hypothesis holds its prompt and the continuation, and its
          log_probs are score_batch's (source=None) score of the whole.
        The options are translate_batch's search options; the output is capped by
        max_decoding_length (tokens with EOS, the prompt counted) and the model's positions. An
        encoder-decoder model raises tfm.Error (it translates).
        """
        _not_here("generate_batch", options, ("asynchronous", "max_batch_size", "batch_type"))
        o = _options.merged(self._defaults, options, "generate_batch")
        opts = self._search(o)
        return_scores = _bool("return_scores", o["return_scores"])
        kind, items = _batch("prompts", prompts)
        if kind == _TOKENS:
            raise TypeError("prompts: give texts or token id lists (target_tokens_to_ids turns "
                            "token lists into ids)")
        fn = self._impl.generate_text if kind == _TEXT else self._impl.generate_ids
        opts.step_callback = _steps.relay(o["callback"], range(len(items)), return_scores,
                                          score_prefix=opts.score_prefix)
        return _call("prompts", kind, fn, items, opts, return_scores)

    def generate_tokens(self, source: Any, target_prefix: Optional[Any] = None, *,
                        return_log_prob: bool = False, **options: Any
                        ) -> Iterator[_steps.GenerationStepResult]:
        """Yields the tokens of one source's translation (a sentence, token list or id list),
        one GenerationStepResult each, as the library's search chooses them (CTranslate2's
        Translator.generate_tokens: translate_batch with beam_size 1,
        return_scores=return_log_prob, asynchronous, and a callback that queues each step).
        target_prefix: that source's prefix (its tokens are reported too, as CTranslate2's
        are). options: translate_batch's (sampling, lengths, ...; callback sees each step
        first). Closing the generator early ends the search at the next token."""
        yield from _steps.generate_tokens(
            self.translate_batch, [source],
            [target_prefix] if target_prefix is not None else None,
            return_scores=return_log_prob, **options)

    def translate_iterable(self, source: Iterable[Any],
                           target_prefix: Optional[Iterable[Any]] = None,
                           max_batch_size: Optional[int] = None, batch_type: str = "examples",
                           read_ahead: int = 16, **options: Any) -> Iterator[TranslationResult]:
        """Translates an iterable of sentences (text, token lists or id lists) lazily, in order.

        Reads read_ahead * max_batch_size items at a time (max_batch_size: the translator's by
        default; with batch_type="tokens", that many source tokens) and submits each window as
        one asynchronous translate_batch call (cut into max_batch_size chunks when it is given;
        else batched by the translator's limits). The next window
        is read while one decodes; results are yielded in order. target_prefix: None, or an
        iterable of prefixes read alongside source, one per item. options: translate_batch's.
        """
        size = self.max_batch_size if max_batch_size is None else _int("max_batch_size",
                                                                        max_batch_size)
        self._impl.check_window(size, _int("read_ahead", read_ahead))
        # Without a max_batch_size, each window is one call, batched by the translator's limits.
        options.update(max_batch_size=0 if max_batch_size is None else size,
                       batch_type=batch_type, asynchronous=True)
        return self._windows(lambda items, prefixes: self.translate_batch(
            items, prefixes, **options), source, target_prefix, "target_prefix",
            size * read_ahead, batch_type)

    def translate_file(self, source_path: Union[str, os.PathLike],
                       output_path: Union[str, os.PathLike],
                       target_path: Optional[Union[str, os.PathLike]] = None,
                       **options: Any) -> Optional[Any]:
        """Translates a file line by line into output_path.

        tfm's form (the default of tfm.Translator): lines of text through the vocabularies,
        as `tfm translate` does, one output line per input line (ids=True: space-separated ids
        in and out; n_best=True: "index ||| hypothesis ||| score" lines), read read_ahead lines
        at a time (0: 8 * max_batch_size) and written in order as each is done; target_path: a
        file of target prefixes, one a line (empty: none). Returns None.

        CTranslate2's form (tfm.ctranslate2.Translator, or when one of its own keywords is given:
        with_scores, max_batch_size, read_batch_size, batch_type, or a tokenize function):
        lines of space-separated tokens (or source_tokenize_fn's, target_tokenize_fn's for
        target_path), each hypothesis a line, "score ||| " first with with_scores=True, joined
        by spaces or target_detokenize_fn; max_batch_size, read_batch_size and batch_type as
        CTranslate2 reads them. Returns an ExecutionStats.

        options: translate_batch's search options.
        """
        if self._ct2_files or any(k in options for k in _CT2_FILE_KEYWORDS):
            return _files.translate_tokens_file(self, source_path, output_path, target_path,
                                                options)
        return self._translate_text_file(source_path, output_path, target_path, **options)

    _ct2_files = False  # translate_file reads token lines (tfm.ctranslate2)

    def _translate_text_file(self, source_path, output_path, target_path=None, ids=False,
                             n_best=False, read_ahead=0, **options) -> None:
        for name, instead in (("return_scores", "use n_best=True"),
                              ("target_prefix", "use target_path, a file of prefixes"),
                              ("return_attention", "use translate_batch or translate_iterable"),
                              ("asynchronous", "call it from a thread")):
            if name in options:
                raise TypeError(f"translate_file: {name} does not apply ({instead})")
        _not_here("translate_file (tfm's form; read_ahead sets the window)", options,
                  ("max_batch_size", "batch_type"))
        o = _options.merged(self._defaults, options, "translate_file")
        opts = self._search(o)
        opts.step_callback = _steps.relay(o["callback"], None, True)  # batch_id: the line's
        text = self._impl.translate_file(
            _path("source_path", source_path), _path("output_path", output_path),
            opts, _bool("ids", ids), _bool("n_best", n_best),
            _int("read_ahead", read_ahead),
            "" if target_path is None else _path("target_path", target_path))
        for line in text.splitlines():
            warnings.warn(line.removeprefix("tfm: warning: "), RuntimeWarning, stacklevel=3)

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
        _not_here("generate_file", options, ("asynchronous", "max_batch_size", "batch_type"))
        o = _options.merged(self._defaults, options, "generate_file")
        opts = self._search(o)
        opts.step_callback = _steps.relay(o["callback"], None, True)  # batch_id: the line's
        self._impl.generate_file(
            _path("prompt_path", prompt_path), _path("output_path", output_path),
            opts, _bool("ids", ids), _bool("n_best", n_best),
            _int("read_ahead", read_ahead))

    # --------------------------------------------------------------------- scoring
    def score_batch(self, source: Optional[Source], target: Source, *, max_batch_size: int = 0,
                    batch_type: str = "examples", max_input_length: Optional[int] = None,
                    offset: int = 0, asynchronous: bool = False) -> List[Any]:
        """Scores each (source, target) pair, teacher-forced: one ScoringResult per pair.

        source and target: both text (encoded by the vocabularies), both token lists or both
        token id lists (without BOS/EOS); a decoder-only model takes source=None (or []).
        A ScoringResult has CTranslate2's tokens (the target's, then the end token) and
        log_probs (each token's log-probability), from `offset` on; as a float it is their sum
        (with offset 0, log P(target + EOS | source), as `tfm score` prints it).
        max_input_length: sources cut to that many positions (EOS counted) and targets to one
        less (None: tfm's default, 0, cuts nothing and refuses what the model cannot hold).
        max_batch_size / batch_type: the pairs are sorted by length and scored in such chunks.
        asynchronous=True: one AsyncScoringResult per pair, scored on a worker thread.
        """
        if max_input_length is None:
            max_input_length = self._defaults["max_input_length"]
        size, kind_b = _options.batching(dict(max_batch_size=max_batch_size,
                                              batch_type=batch_type))
        args = (source, target, _int("max_input_length", max_input_length),
                _int("offset", offset), size, kind_b)
        stop = _tfm.StopSource()
        if not _bool("asynchronous", asynchronous):
            return self._score(*args, stop)
        future = self._scorer.submit(self._score, *args, stop)
        return [AsyncScoringResult(_Future(future, stop), i) for i in range(_count(target))]

    def score_iterable(self, source: Optional[Iterable[Any]], target: Iterable[Any],
                       max_batch_size: int = 64, batch_type: str = "examples",
                       read_ahead: int = 16, **options: Any) -> Iterator[ScoringResult]:
        """Scores an iterable of pairs lazily, in order: windows of read_ahead * max_batch_size
        pairs, each scored on a worker thread while the next is read. options: score_batch's
        (max_input_length, offset). source None: a decoder-only model's targets alone."""
        size = _int("max_batch_size", max_batch_size)
        self._impl.check_window(size, _int("read_ahead", read_ahead))
        options.update(max_batch_size=size, batch_type=batch_type, asynchronous=True)
        if source is None:
            return self._windows(lambda items, _: self.score_batch(None, items, **options),
                                 target, None, "", size * read_ahead, batch_type)
        return self._windows(lambda items, targets: self.score_batch(items, targets, **options),
                             source, target, "target", size * read_ahead, batch_type)

    def score_file(self, source_path: Union[str, os.PathLike],
                   target_path: Union[str, os.PathLike], output_path: Union[str, os.PathLike],
                   **options: Any) -> Any:
        """Scores a parallel file of tokenized lines, as CTranslate2's score_file does: each
        output line "<mean log-prob> ||| <target tokens and the end token>", then with
        with_tokens_score=True " ||| " and each token's log-probability. Lines are tokens split
        on spaces, or source_tokenize_fn's and target_tokenize_fn's (target_detokenize_fn
        joins the output's). Options: max_batch_size (32), read_batch_size, batch_type,
        max_input_length, offset. Returns an ExecutionStats."""
        return _files.score_tokens_file(self, source_path, target_path, output_path, options)

    def default_options(self) -> dict:
        """The model's own search settings, as translate_batch's keyword arguments: tfm's defaults
        for its own models; a converted Transformers model's generation config (num_beams,
        length_penalty, lengths), which tfm.Translator uses for every argument left None."""
        o = self._impl.default_options()
        return {k: getattr(o, k) for k in (
            "beam_size", "num_hypotheses", "length_penalty", "max_decoding_length",
            "min_decoding_length", "max_length_factor", "max_length_extra", "max_new_tokens")}

    def tokenize(self, text: str) -> List[str]:
        """The source vocabulary's SentencePiece pieces of one text (what translate_batch does to
        text before translating), for callers that pass token lists."""
        return self._impl.source_tokens(_str("text", text))

    # --------------------------------------------------------------------- helpers
    def _search(self, o: dict) -> _tfm.TranslationOptions:
        t = _options.search_options(o, self._impl.default_options(), self._ct2_lengths)
        t.end_token = _options.end_token_ids(o["end_token"], self._known_target_ids)
        t.suppress_sequences = self._suppressed(o["suppress_sequences"],
                                                _bool("disable_unk", o["disable_unk"]))
        return t

    def _suppressed(self, sequences: Any, disable_unk: bool) -> List[List[int]]:
        """suppress_sequences as target id lists (token lists through the vocabulary; id
        lists as they are), with the unknown token alone for disable_unk."""
        out = []
        for seq in sequences or []:
            if isinstance(seq, (str, bytes)) or not isinstance(seq, (list, tuple)):
                raise TypeError("suppress_sequences must be a list of token lists (or of token "
                                f"id lists), not a list of {type(seq).__name__}")
            if all(isinstance(x, str) for x in seq) and seq:
                out.append(self._impl.target_tokens_to_ids(list(seq)))
            elif all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in seq):
                out.append([int(x) for x in seq])
            else:
                raise TypeError("suppress_sequences: each sequence holds str tokens or int ids")
        if disable_unk:
            if not self.has_vocabularies:
                raise _tfm.InvalidArgumentError(
                    "disable_unk needs the model's target vocabulary (its unknown token)")
            # A piece outside the vocabulary maps to the unknown token's id.
            out.append(self._impl.target_tokens_to_ids(["\x00"]))
        return out

    def _known_target_ids(self, tokens: List[str]) -> Optional[List[int]]:
        """The target vocabulary's ids of tokens, each of which it must know (None: the model
        has no vocabulary)."""
        if not self.has_vocabularies:
            return None
        ids = self._impl.target_tokens_to_ids(list(tokens))
        back = self._impl.target_ids_to_tokens(list(ids))
        for token, known in zip(tokens, back):
            if token != known:
                raise _tfm.InvalidArgumentError(
                    f"end_token: {token!r} is not in the target vocabulary")
        return ids

    def _submit_chunks(self, source: Source, target_prefix: Any, o: dict) -> tuple:
        """The call cut into max_batch_size chunks, each submitted to the library's queue:
        ([(indices, call)], count)."""
        opts = self._search(o)
        return_scores = _bool("return_scores", o["return_scores"])
        size, kind_b = _options.batching(o)
        kind, items = _batch("source", source)
        if opts.replace_unknowns and kind == _IDS:
            raise _tfm.InvalidArgumentError(
                "replace_unknowns replaces unknown target tokens by source tokens: give token "
                "lists (ids have no token to put in)")
        prefix = _prefixes(kind, len(items), target_prefix)
        fn = {_TEXT: self._impl.submit_text, _IDS: self._impl.submit_ids,
              _TOKENS: self._impl.submit_tokens}[kind]
        if not size:
            opts.step_callback = _steps.relay(o["callback"], range(len(items)), return_scores,
                                              score_prefix=opts.score_prefix)
            return [(range(len(items)), _call("source", kind, fn, items, prefix, opts,
                                               return_scores))], len(items)
        lengths = [len(self.tokenize(x)) if kind == _TEXT else len(x) for x in items]
        calls = []
        for idx in length_chunks(lengths, size, kind_b):
            # Each chunk's step indices mapped back to the caller's (as CTranslate2's are).
            opts.step_callback = _steps.relay(o["callback"], idx, return_scores,
                                              score_prefix=opts.score_prefix)
            calls.append((idx, _call("source", kind, fn, [items[i] for i in idx],
                                     [prefix[i] for i in idx] if prefix else [], opts,
                                     return_scores)))
        return calls, len(items)

    def _score(self, source, target, max_input_length, offset, size, batch_type,
               stop: _tfm.StopSource) -> List[Any]:
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
        fn = {_TEXT: self._impl.score_per_token_text, _IDS: self._impl.score_per_token_ids,
              _TOKENS: self._impl.score_per_token_tokens}[kind]
        if not size or (sitems and len(sitems) != len(titems)):  # one call (the library checks)
            return [ScoringResult(self._scored_tokens(kind, t, len(lp))[offset:], lp[offset:])
                    for t, lp in zip(titems, _call("target", kind, fn, sitems, titems,
                                                   max_input_length, stop))]
        lengths = [len(t) for t in titems]
        out: List[Any] = [None] * len(titems)
        for idx in length_chunks(lengths, size, batch_type):
            s = [sitems[i] for i in idx] if sitems else []
            t = [titems[i] for i in idx]
            for i, lp in zip(idx, _call("target", kind, fn, s, t, max_input_length, stop)):
                out[i] = ScoringResult(self._scored_tokens(kind, titems[i], len(lp))[offset:],
                                       lp[offset:])
        return out

    def _scored_tokens(self, kind: str, target: Any, n: int) -> List[Any]:
        """What CTranslate2's ScoringResult.tokens holds: the target as scored (cut to n - 1
        tokens), then the end token; pieces for text and token input, ids for id input."""
        eos = self.model_info.eos_id
        if kind == _IDS:
            return [int(x) for x in target][:n - 1] + [eos]
        ids = (self._impl.tokenize_target(target) if kind == _TEXT
               else self._impl.target_tokens_to_ids(list(target)))
        return self._impl.target_ids_to_tokens(list(ids)[:n - 1] + [eos])

    def _windows(self, submit: Callable, items: Iterable[Any], beside: Optional[Iterable[Any]],
                 beside_name: str, window: int, batch_type: str) -> Iterator[Any]:
        """Reads items (and `beside`, one each) in windows of `window` examples (tokens with
        batch_type "tokens"), submits each (submit(items, beside) -> async results) and yields
        the results in order, one window decoding while the next is read."""
        if isinstance(beside, (str, bytes)):
            raise TypeError(f"{beside_name} must be an iterable, one per source, not a single "
                            f"{type(beside).__name__}")
        others = None if beside is None else iter(beside)
        in_flight: collections.deque = collections.deque()
        try:
            yield from self._fill_windows(submit, items, others, window, batch_type,
                                          beside_name, in_flight)
        except BaseException:
            # Ctrl-C, an error, or the caller dropping the iterator: the windows still in
            # flight are given up, not decoded or scored behind the caller's back.
            for results in in_flight:
                for r in results:
                    r._cancel()
            raise

    def _fill_windows(self, submit: Callable, items: Iterable[Any], others: Optional[Iterator],
                      window: int, batch_type: str, beside_name: str,
                      in_flight: collections.deque) -> Iterator[Any]:
        missing = object()
        chunk: list = []
        chunk_beside: list = []
        filled = 0
        for item in items:
            chunk.append(item)
            filled += len(item) if batch_type == "tokens" else 1
            if others is not None:
                b = next(others, missing)
                if b is missing:
                    raise _tfm.InvalidArgumentError(f"{beside_name} has fewer entries than source")
                chunk_beside.append(b)
            if filled >= window:
                in_flight.append(submit(chunk, chunk_beside if others is not None else None))
                chunk, chunk_beside, filled = [], [], 0
                while len(in_flight) > 1:
                    yield from (r.result() for r in in_flight.popleft())
        if others is not None and next(others, missing) is not missing:
            raise _tfm.InvalidArgumentError(f"{beside_name} has more entries than source")
        if chunk:
            in_flight.append(submit(chunk, chunk_beside if others is not None else None))
        while in_flight:
            yield from (r.result() for r in in_flight.popleft())


# The keywords of CTranslate2's translate_file that tfm's form does not take.
_CT2_FILE_KEYWORDS = ("with_scores", "max_batch_size", "read_batch_size", "batch_type",
                      "source_tokenize_fn", "target_tokenize_fn", "target_detokenize_fn")


class _Future:
    """A scoring call on the Translator's scoring thread, as the asynchronous results read a
    call: result() waits in Python, and a caller giving up there (Ctrl-C) stops the call before
    its next batch, as the synchronous score_batch does."""

    def __init__(self, future: concurrent.futures.Future, stop: _tfm.StopSource):
        self._future = future
        self._stop = stop

    def result(self) -> Any:
        try:
            # In 50 ms slices, as the binding waits: a blocked wait wakes for a real SIGINT but
            # not for one only simulated (_thread.interrupt_main, a host embedding Python); each
            # slice returns to the interpreter, which runs the pending handler.
            while True:
                try:
                    return self._future.result(timeout=0.05)
                except concurrent.futures.TimeoutError:
                    if self._future.done():  # the call itself raised TimeoutError
                        raise
        except BaseException:
            if not self._future.done():
                self._stop.request_stop()
            raise

    def done(self) -> bool:
        return self._future.done()

    def cancel(self) -> None:
        self._future.cancel()
        self._stop.request_stop()


def _not_here(where: str, options: dict, names: tuple) -> None:
    """A TypeError for keywords that the call takes elsewhere but that do not apply to it."""
    for name in names:
        if name in options:
            raise TypeError(f"{where}: {name} does not apply")


def _gather(calls: list, n: int) -> List[TranslationResult]:
    out: List[Any] = [None] * n
    for idx, call in calls:
        for i, r in zip(idx, call.result()):
            out[i] = r
    return out


def _count(batch: Any) -> int:
    return len(batch) if hasattr(batch, "__len__") else len(list(batch))


def _refuse_constructor(device_index: Any, max_queued_batches: Any, flash_attention: Any,
                        tensor_parallel: Any, files: Any) -> None:
    """CTranslate2's constructor arguments tfm does not implement: NotImplementedError unless
    each has the value that asks for nothing tfm lacks."""
    if device_index not in (0, [0], (0,)):
        raise NotImplementedError(f"device_index={device_index!r}: tfm runs one device, index 0")
    if max_queued_batches not in (0, -1):
        raise NotImplementedError(
            f"max_queued_batches={max_queued_batches!r}: tfm's queue does not block callers at "
            "a number of batches (0 or -1: no limit)")
    if _bool("flash_attention", flash_attention):
        raise NotImplementedError("flash_attention=True: tfm's attention kernels are its own "
                                  "(fused on the CPU and the GPU); there is no such switch")
    if _bool("tensor_parallel", tensor_parallel):
        raise NotImplementedError("tensor_parallel=True: tfm runs a model on one device")
    if files is not None:
        raise NotImplementedError("files=: tfm loads a model from its directory only")
