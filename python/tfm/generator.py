"""tfm.Generator: CTranslate2's Generator API over libtfm's decoder-only generation.

A Generator holds a tfm.Translator on a decoder-only model (a GPT-2 converted by `tfm convert
--from transformers`, or one of tfm's own) and speaks CTranslate2's language: start tokens (token
lists or ids, the decoder's start token first where the model has one), max_length/min_length
counted as CTranslate2 counts them, include_prompt_in_result, static_prompt, GenerationResult.
The search runs in the library (generate_async); this layer maps the options and cuts the
prompt out of what the library returns. tfm.ctranslate2.Generator is this class with
CTranslate2's defaults.
"""
from __future__ import annotations

import numbers
import os
from typing import Any, Iterable, Iterator, List, Optional, Union

from . import _options, _steps, _tfm
from ._options import _bool, _int
from ._steps import GenerationStepResult
from ._results import AsyncScoringResult, ScoringResult, length_chunks
from .translator import Translator, _Future


class GenerationResult:
    """One prompt's generation (CTranslate2's): sequences (token lists, best first),
    sequences_ids (the same as ids), scores (with return_scores), logits (with
    return_logits_vocab: per sequence, one array.array('f') per decoder step whose token the
    sequence returns, the end token's included: the vocabulary's logits the search chose from,
    after the logits processors and before the softmax; numpy.asarray reads each as float32)."""

    def __init__(self, sequences: List[List[str]], sequences_ids: List[List[int]],
                 scores: List[float], logits: Optional[List[Any]] = None):
        self.sequences = sequences
        self.sequences_ids = sequences_ids
        self.scores = scores
        self.logits: List[Any] = logits if logits is not None else []

    def __repr__(self) -> str:
        return (f"GenerationResult(sequences={self.sequences!r}, "
                f"sequences_ids={self.sequences_ids!r}, scores={self.scores!r})")


class AsyncGenerationResult:
    """A prompt's GenerationResult to come (generate_batch(..., asynchronous=True))."""

    def __init__(self, call: Any, index: int):
        self._call = call
        self._index = index

    def result(self) -> GenerationResult:
        return self._call.result()[self._index]

    def done(self) -> bool:
        return self._call.done()

    def __repr__(self) -> str:
        return f"AsyncGenerationResult(done={self.done()})"


# translate_batch's options that generation does not take (it has its own lengths and no
# source); every other search option of the library (_options) is generate_batch's too.
_TRANSLATION_ONLY = {"max_decoding_length", "min_decoding_length", "max_length_factor",
                     "max_length_extra", "max_new_tokens", "source_lang", "target_lang",
                     "max_input_length", "return_attention", "attention_framing",
                     "score_prefix", "renormalize_min_length", "length_penalty_form",
                     "normalize_scores", "replace_unknowns", "prefix_bias_beta"}
# tfm's defaults (None: the model's own search settings, Translator.default_options()).
TFM_DEFAULTS = dict({k: v for k, v in _options.TFM_DEFAULTS.items()
                     if k not in _TRANSLATION_ONLY},
                    patience=None, max_length=None, min_length=None, static_prompt=None,
                    cache_static_prompt=True, include_prompt_in_result=True)
# CTranslate2 4.x's (Generator.generate_batch).
CT2_DEFAULTS = dict(TFM_DEFAULTS, beam_size=1, patience=1.0, num_hypotheses=1,
                    length_penalty=1.0, max_length=512, min_length=0)
# The generation options this layer maps itself (the others go to the library as they are).
_OWN = {"max_length", "min_length", "static_prompt", "cache_static_prompt",
        "include_prompt_in_result", "patience", "return_scores", "return_end_token",
        "max_batch_size", "batch_type", "asynchronous", "callback"}


class Generator:
    """A decoder-only model directory loaded once, continuing and scoring token sequences.

    >>> generator = tfm.Generator("gpt2-tfm/")
    >>> r = generator.generate_batch([["<|endoftext|>", "The"]], max_length=20)
    >>> r[0].sequences[0]

    The constructor takes CTranslate2's arguments (model_path, device, device_index,
    compute_type, inter_threads, intra_threads, max_queued_batches, flash_attention,
    tensor_parallel, files) and tfm.Translator's max_batch_size / max_batch_tokens; an
    encoder-decoder model raises tfm.Error (use Translator). docs/python.md, "Generator".
    """

    _defaults = TFM_DEFAULTS
    _translator = Translator

    def __init__(self, model_path: Union[str, os.PathLike], device: str = "cpu", *,
                 device_index: Union[int, List[int]] = 0, compute_type: Union[str, dict] =
                 "default", inter_threads: int = 1, intra_threads: int = 0,
                 max_queued_batches: int = 0, flash_attention: bool = False,
                 tensor_parallel: bool = False, files: Any = None, max_batch_size: int = 32,
                 max_batch_tokens: int = 0) -> None:
        self._t = self._translator(
            model_path, device, compute_type, intra_threads, inter_threads, max_batch_size,
            max_batch_tokens, device_index=device_index, max_queued_batches=max_queued_batches,
            flash_attention=flash_attention, tensor_parallel=tensor_parallel, files=files)
        info = self._t.model_info
        if not info.decoder_only:
            raise _tfm.Error(f"{info.directory} is an encoder-decoder model: it translates "
                             "(tfm.Translator), a Generator continues decoder-only models' prompts")
        # A converted model's decoder reads its prompt as given (the start token first); tfm's
        # own decoder-only models start every row from BOS.
        self._reads_prompt = info.search_rule == "transformers"

    # --------------------------------------------------------------------- properties
    model_info = property(lambda self: self._t.model_info)
    device = property(lambda self: self._t.device)
    device_index = property(lambda self: self._t.device_index)
    compute_type = property(lambda self: self._t.compute_type)
    num_generators = property(lambda self: self._t.inter_threads, doc="inter_threads")
    num_queued_batches = property(lambda self: 0)
    num_active_batches = property(lambda self: 0)
    tensor_parallel = property(lambda self: False)

    def __repr__(self) -> str:
        return (f"tfm.{type(self).__name__}({self.model_info.directory!r}, "
                f"device={self.device!r}, compute_type={self.compute_type!r})")

    # --------------------------------------------------------------------- generation
    def generate_batch(self, start_tokens: Any, **options: Any) -> List[Any]:
        """Continues each start sequence; one GenerationResult per sequence, in order (with
        asynchronous=True, one AsyncGenerationResult each).

        start_tokens: token lists (the model's vocabulary pieces, e.g. GPT-2's "Ġthe") or id
          lists. As in CTranslate2, the decoder reads them as given: for GPT-2 start with
          "<|endoftext|>" (the model's BOS) to generate from the start of a text, or give a
          text's own tokens. tfm's own decoder-only models always read BOS first: their start
          sequences must begin with it.
        Options (CTranslate2's meanings; tfm.Generator's defaults are the model's own search
        settings, tfm.ctranslate2.Generator's CTranslate2's): beam_size, patience,
        num_hypotheses, length_penalty (scores: sum of the generated log-probs / length^α, the
        length counting the returned tokens and the end token), max_length (tokens after the
        first start token, the rest of the prompt counted; with include_prompt_in_result=False,
        the generated tokens), min_length (the same count before the end token is allowed),
        static_prompt (tokens read before every start sequence, not returned),
        cache_static_prompt (accepted: tfm re-reads the static prompt, same results),
        include_prompt_in_result, return_scores, return_end_token, end_token (the model's EOS),
        disable_unk, suppress_sequences, sampling_topk/topp/temperature (sampling needs a tfm
        model: a converted model decodes as generate() does), seed (tfm's), max_batch_size,
        batch_type, asynchronous, callback (beam_size 1: a GenerationStepResult per token as
        the search chooses it, steps and batch_id as CTranslate2 numbers them; True ends that
        sequence; docs/python.md). CTranslate2 options the library does not implement raise
        NotImplementedError naming them (_options.UNSUPPORTED).
        """
        o = _options.merged(self._defaults, options, "generate_batch")
        calls, n = self._submit(start_tokens, o)
        out: List[Any] = [None] * n
        asynchronous = _bool("asynchronous", o["asynchronous"])
        for idx, call in calls:
            if asynchronous:
                for pos, i in enumerate(idx):
                    out[i] = AsyncGenerationResult(call, pos)
            else:
                for i, r in zip(idx, call.result()):
                    out[i] = r
        return out

    def generate_iterable(self, start_tokens: Iterable[Any], max_batch_size: int = 32,
                          batch_type: str = "examples", **options: Any
                          ) -> Iterator[GenerationResult]:
        """generate_batch over an iterable, lazily, in order: windows of 16 * max_batch_size
        sequences, each decoded while the next is read. options: generate_batch's."""
        size = _int("max_batch_size", max_batch_size)
        self._t._impl.check_window(size, 16)
        options.update(max_batch_size=size, batch_type=batch_type, asynchronous=True)
        return self._t._windows(lambda items, _: self.generate_batch(items, **options),
                                start_tokens, None, "", size * 16, batch_type)

    def generate_tokens(self, prompt: Any, max_batch_size: int = 0,
                        batch_type: str = "examples", *, max_length: int = 512,
                        min_length: int = 0, sampling_topk: int = 1, sampling_topp: float = 1,
                        sampling_temperature: float = 1, return_log_prob: bool = False,
                        repetition_penalty: float = 1, no_repeat_ngram_size: int = 0,
                        disable_unk: bool = False, suppress_sequences: Any = None,
                        end_token: Any = None, static_prompt: Any = None,
                        cache_static_prompt: bool = True, callback: Any = None,
                        **options: Any) -> Iterator[GenerationStepResult]:
        """Yields the generated tokens of a prompt (a token list) or of a batch of them, one
        GenerationStepResult each, as the library's search chooses them (CTranslate2's:
        generate_batch with beam_size 1, include_prompt_in_result=False,
        return_scores=return_log_prob, asynchronous, and a callback that queues each step; a
        thread waits for the call). callback (optional) sees each step first; True ends that
        prompt's generation. Closing the generator early ends every prompt at its next token.
        options: generate_batch's other options (tfm's, such as seed)."""
        if len(prompt) > 0 and isinstance(prompt[0], (str, numbers.Integral)):
            prompt = [prompt]  # one prompt (tokens or ids)
        yield from _steps.generate_tokens(
            self.generate_batch, prompt, max_batch_size=max_batch_size, batch_type=batch_type,
            max_length=max_length, min_length=min_length, sampling_topk=sampling_topk,
            sampling_topp=sampling_topp, sampling_temperature=sampling_temperature,
            return_scores=return_log_prob, repetition_penalty=repetition_penalty,
            no_repeat_ngram_size=no_repeat_ngram_size, disable_unk=disable_unk,
            suppress_sequences=suppress_sequences, end_token=end_token,
            static_prompt=static_prompt, cache_static_prompt=cache_static_prompt,
            include_prompt_in_result=False, callback=callback, **options)

    # --------------------------------------------------------------------- scoring
    def score_batch(self, tokens: Any, *, max_batch_size: int = 0, batch_type: str = "examples",
                    max_input_length: int = 1024, offset: int = 0,
                    asynchronous: bool = False) -> List[Any]:
        """Scores each sequence as the decoder reads it (the library's score_sequences): one
        ScoringResult per sequence, whose tokens are the sequence after its first token and
        log_probs each one's log-probability given those before it (CTranslate2's; no end token
        is added: end a sequence with it to score it). max_input_length cuts each sequence to
        that many tokens (0: no cut); offset (tfm's) drops the first log-probabilities;
        max_batch_size / batch_type: sorted by length and scored in such chunks;
        asynchronous=True: AsyncScoringResults, scored on a worker thread."""
        seqs = self._ids_of("tokens", tokens)
        as_tokens = self._token_input(tokens)
        limit, off = _int("max_input_length", max_input_length), _int("offset", offset)
        size, kind_b = _options.batching(dict(max_batch_size=max_batch_size,
                                              batch_type=batch_type))

        stop = _tfm.StopSource()  # a caller giving up (Ctrl-C) stops before the next batch

        def score() -> List[ScoringResult]:
            out: List[Any] = [None] * len(seqs)
            for idx in length_chunks([len(s) for s in seqs], size, kind_b):
                scored = self._t._impl.score_sequences([seqs[i] for i in idx], limit, stop)
                for i, (ids, lp) in zip(idx, scored):
                    names = self._names(ids) if as_tokens else list(ids)
                    out[i] = ScoringResult(names[off:], list(lp)[off:])
            return out

        if not _bool("asynchronous", asynchronous):
            return score()
        future = self._t._scorer.submit(score)
        return [AsyncScoringResult(_Future(future, stop), i) for i in range(len(seqs))]

    # --------------------------------------------------------------------- helpers
    def _token_input(self, batch: Any) -> bool:
        for seq in batch:
            return bool(seq) and isinstance(seq[0], str)
        return False

    def _ids_of(self, name: str, batch: Any) -> List[List[int]]:
        """A batch of token lists or id lists as id lists (tokens through the vocabulary)."""
        if isinstance(batch, (str, bytes)):
            raise TypeError(f"{name} must be a list of token lists, not a single "
                            f"{type(batch).__name__}")
        out = []
        for seq in batch:
            if isinstance(seq, (str, bytes)):
                raise TypeError(f"{name} must be a list of token lists (e.g. [['<|endoftext|>', "
                                f"'Hello']]), not a list of {type(seq).__name__}")
            seq = list(seq)
            if seq and all(isinstance(x, str) for x in seq):
                out.append(list(self._t._impl.target_tokens_to_ids(seq)))
            elif all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in seq):
                out.append([int(x) for x in seq])
            else:
                raise TypeError(f"{name}: each sequence holds str tokens or int ids")
        return out

    def _names(self, ids: List[int]) -> List[str]:
        if not self._t.has_vocabularies:
            return [str(i) for i in ids]
        return list(self._t._impl.target_ids_to_tokens(list(ids)))

    def _submit(self, start_tokens: Any, o: dict) -> tuple:
        """The call cut into per-call batches, each submitted to the library:
        ([(indices, call)], count, finish(library result, index) -> GenerationResult)."""
        starts = self._ids_of("start_tokens", start_tokens)
        as_tokens = self._token_input(start_tokens) or self._t.has_vocabularies
        static = self._ids_of("static_prompt", [o["static_prompt"]])[0] if o[
            "static_prompt"] else []
        _bool("cache_static_prompt", o["cache_static_prompt"])  # a cache: results are the same
        bos, eos_id = self.model_info.bos_id, self.model_info.eos_id
        include = _bool("include_prompt_in_result", o["include_prompt_in_result"])
        # CTranslate2 reads the prompts at once (and returns none of them) only when every start
        # sequence has more than its start token; else the decoding loop returns them.
        returns_prompt = include or any(len(s) <= 1 for s in starts)
        prompts = []
        for i, s in enumerate(starts):
            if not s:
                raise _tfm.InvalidArgumentError(f"start_tokens {i + 1} is empty: give at least "
                                                "the start token")
            if not self._reads_prompt and (static or s[0] != bos):
                raise NotImplementedError(
                    "start_tokens: this model (tfm's own) reads BOS first, so each start "
                    "sequence begins with it, and static_prompt is for converted models")
            prompts.append(static + s)
        return_scores = _bool("return_scores", o["return_scores"])
        end_token = _bool("return_end_token", o["return_end_token"])
        groups = self._groups(prompts, o, len(static), returns_prompt)
        stopped: set = set()  # the prompts the callback ended (from the decoding threads)
        alpha = groups[0][1].length_penalty if groups else 0.0
        return_logits = _bool("return_logits_vocab", o["return_logits_vocab"])
        # The logits of the prompt's steps that CTranslate2 leaves out: without the prompt in the
        # result, it reads its batch's shortest prompt but its last token at once (no logits).
        skipped = [0] * len(starts)
        if return_logits and not include:
            size, kind_b = _options.batching(o)
            for chunk in length_chunks([len(s) for s in starts], size, kind_b):
                shortest = min(len(starts[i]) for i in chunk)
                for i in chunk:
                    skipped[i] = shortest - 1

        def finish(r: Any, i: int, opts: Any) -> GenerationResult:
            s, prompt = starts[i], prompts[i]
            # The library returns the prompt it read (less a leading BOS), then the continuation.
            shown = len(prompt) - (1 if prompt[0] == bos else 0)
            head = ([s[0]] if include and s[0] != bos else []) + s[1:] if returns_prompt else []
            hyps = []
            steps = [list(x)[skipped[i]:] for x in r.logits] if return_logits else []
            for k, h in enumerate(r.hypotheses):
                gen = [int(x) for x in h][shown:]
                # A hypothesis the callback ended has no end token (the library's eos false).
                eos = i not in stopped and self._ended(len(prompt) + len(gen), opts, len(prompt))
                # CTranslate2's length: the tokens its loop returned, the end token counted.
                length = (len(s) - 1 if returns_prompt else 0) + len(gen) + eos
                score = (float(r.scores[k]) if not self._reads_prompt else
                         self._ct2_score(float(r.log_probs[k]), length, alpha))
                hyps.append((score, head + gen + ([eos_id] if end_token and eos else [])))
            if self._reads_prompt:  # CTranslate2 ranks by its score (stable: the library's order)
                hyps.sort(key=lambda x: -x[0])
            seqs = [h for _, h in hyps]
            names = [self._names(x) for x in seqs] if as_tokens else [list(x) for x in seqs]
            return GenerationResult(names, seqs, [x for x, _ in hyps] if return_scores else [],
                                    steps)

        def step_of(i: int, st: Any, first: int) -> Optional[int]:
            # CTranslate2's step of the token at position pos of start sequence s (len(s): the
            # first generated): its loop starts at position `first`, and reports the prompt's
            # tokens only when it did not read them at once (first 1).
            prompt = prompts[i]
            pos = len(starts[i]) + st.step - (len(prompt) - (1 if prompt[0] == bos else 0))
            return pos - first if first == 1 or pos >= len(starts[i]) else None

        calls = []
        for idx, opts in groups:
            # CTranslate2 reads the prompts of each of its batches at once, up to the shortest.
            shortest = min(len(starts[i]) for i in idx)
            first = 1 if include or shortest <= 1 else shortest
            opts.step_callback = _steps.relay(
                o["callback"], idx, return_scores,
                lambda k, st, idx=idx, first=first: step_of(idx[k], st, first),
                score_prefix=opts.score_prefix, stopped=stopped)
            call = self._t._impl.submit_generate_ids([prompts[i] for i in idx], opts, True)
            calls.append((idx, _Finished(call, [
                (lambda r, i=i, opts=opts: finish(r, i, opts)) for i in idx])))
        return calls, len(prompts)

    def _search_options(self, o: dict, static: int, returns_prompt: bool,
                        prompt_len: int = 0) -> _tfm.TranslationOptions:
        """The library's options for CTranslate2's generation options (o). prompt_len: the
        prompts' length, where min_length counts after the prompt."""
        t = dict(_options.TFM_DEFAULTS)
        t.update({k: v for k, v in o.items() if k in t and k not in _OWN})
        positions = self.model_info.max_length
        # CTranslate2 counts the tokens after the first start token; the library counts the
        # prompt it reads (a converted model's: all of it; tfm's: all but BOS) and the output.
        lead = 1 if self._reads_prompt else 0
        if o["max_length"] is not None:
            max_length = _int("max_length", o["max_length"])
            t["max_new_tokens"] = 0  # not the model's own cap (a generation config's)
            if returns_prompt:
                t["max_decoding_length"] = max_length + lead + static + (0 if lead else 1)
            else:
                t["max_decoding_length"] = positions + 1
                t["max_new_tokens"] = max_length + (0 if lead else 1)
        if o["min_length"] is not None:
            min_length = _int("min_length", o["min_length"])
            if returns_prompt:
                t["min_decoding_length"] = min_length + lead + static
            else:  # after each prompt: _groups gives each prompt length its own options
                t["min_decoding_length"] = min_length + prompt_len - 1 + lead if min_length else 0
        t["max_length_factor"], t["max_length_extra"] = 0.0, 1_000_000
        # CTranslate2 removes EOS from the softmax while min_length forbids it.
        t["renormalize_min_length"] = o["min_length"] is not None
        patience = o["patience"]
        if self._reads_prompt:
            # A converted model stops its beams as generate() does: CTranslate2's default
            # patience (1) is the only one it runs.
            if patience is not None and float(patience) != 1.0:
                raise NotImplementedError(
                    f"patience={patience!r}: a converted model stops its beam search as "
                    "generate() does (patience 1 only)")
        else:
            t.update(length_penalty_form="power", patience=1.0 if patience is None else patience,
                     score_prefix=False)
        return self._t._search(t)

    def _groups(self, prompts: list, o: dict, static: int, returns_prompt: bool) -> list:
        """[(indices, library options)]: the per-call batches (max_batch_size, batch_type); a
        min_length counted after each prompt (include_prompt_in_result=False) is one library
        option per prompt length."""
        size, kind_b = _options.batching(o)
        by_len: dict = {}
        per_length = not returns_prompt and bool(o["min_length"])
        for i, p in enumerate(prompts):
            by_len.setdefault(len(p) if per_length else 0, []).append(i)
        out = []
        for plen, members in sorted(by_len.items()):
            opts = self._search_options(o, static, returns_prompt, plen)
            for chunk in length_chunks([len(prompts[i]) for i in members], size, kind_b):
                out.append(([members[j] for j in chunk], opts))
        return out

    def _ended(self, total: int, t: _tfm.TranslationOptions, prompt_len: int) -> bool:
        """Whether a hypothesis of `total` decoder tokens (prompt and continuation) ended with
        the end token: a converted model's search finishes one that reaches the max length
        without it (transformers_search.cpp, make_sentence's max_length); tfm's end with it."""
        if not self._reads_prompt:
            return True
        cap = min(t.max_decoding_length, self.model_info.max_length + 1)
        if t.max_new_tokens:
            cap = min(cap, prompt_len + t.max_new_tokens)
        return total < max(cap, prompt_len + 1)

    @staticmethod
    def _ct2_score(log_prob: float, length: int, alpha: float) -> float:
        """CTranslate2's score: the generated tokens' log-probability / length^alpha (a
        converted model's library score is generate()'s; tfm's own models' is this already)."""
        return log_prob / (max(length, 1) ** alpha) if alpha else log_prob


class _Finished:
    """One library call's results, each converted by its own function (once)."""

    def __init__(self, call: Any, convert: list):
        self._call = call
        self._convert = convert
        self._out: Optional[list] = None

    def result(self) -> list:
        if self._out is None:
            self._out = [f(r) for f, r in zip(self._convert, self._call.result())]
        return self._out

    def done(self) -> bool:
        return self._call.done()
