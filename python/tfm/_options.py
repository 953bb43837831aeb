"""The search options of tfm.Translator's calls: tfm's and CTranslate2's keywords, their defaults,
and the CTranslate2 options tfm does not implement (a NotImplementedError naming each).

Only types are checked here; every value is checked by the library's one validator
(src/tfm/runtime/translation_options.cpp), which names the option in these keywords.
"""
from __future__ import annotations

import difflib
import numbers
from typing import Any, Dict, List, Mapping, Tuple

from . import _tfm
from ._inputs import _str

# tfm's defaults. None: the model's own (Translator::default_options: tfm translate's and the C++
# TranslationOptions' for tfm's models, beam_size 1, length_penalty 0, max_decoding_length 1024,
# max_length_factor 2, max_length_extra 10; a converted model's generation config).
TFM_DEFAULTS: Dict[str, Any] = dict(
    beam_size=None, num_hypotheses=None, length_penalty=None, length_penalty_form="gnmt",
    normalize_scores=False, max_decoding_length=None, min_decoding_length=None,
    max_length_factor=None, max_length_extra=None, max_new_tokens=None, source_lang=None,
    target_lang=None, max_input_length=0, sampling_topk=1,
    sampling_topp=1.0, sampling_temperature=1.0, seed=0, return_attention=False,
    return_end_token=False, end_token=None, patience=0.0, renormalize_min_length=False,
    score_prefix=True, attention_framing=True, disable_unk=False, suppress_sequences=None,
    repetition_penalty=1.0, no_repeat_ngram_size=None, return_alternatives=False,
    min_alternative_expansion_prob=0.0, search_rule="model", force_end_token=True,
    coverage_penalty=0.0, return_logits_vocab=False, replace_unknowns=False,
    prefix_bias_beta=0.0,
    # CTranslate2's per-step callback (_steps.relay: the library's step_callback).
    callback=None,
    # What a call returns and how it is batched (not search options).
    return_scores=False, max_batch_size=0, batch_type="examples", asynchronous=False)

# CTranslate2 4.x's (Translator.translate_batch), for tfm.ctranslate2.Translator. Its
# max_decoding_length counts the generated tokens without EOS and is not scaled by the source.
CT2_DEFAULTS: Dict[str, Any] = dict(
    TFM_DEFAULTS, beam_size=2, num_hypotheses=1, length_penalty=1.0,
    length_penalty_form="power",
    max_decoding_length=256, min_decoding_length=1, max_input_length=1024, patience=1.0,
    renormalize_min_length=True, score_prefix=False, attention_framing=False,
    no_repeat_ngram_size=0, search_rule="tfm", force_end_token=False,
    max_length_factor=0.0, max_length_extra=1_000_000)

# CTranslate2's options that tfm does not implement: each with the value that means "off" (any
# other raises NotImplementedError) and why.
UNSUPPORTED: Dict[str, Tuple[Any, str]] = {
    "use_vmap": (False, "tfm models have no vocabulary map"),
}
# Accepted and without effect because the option they qualify is off (as in CTranslate2).
INERT: set = set()


def _is_off(value: Any, off: Any) -> bool:
    if off is None:
        return value is None or (isinstance(value, (list, tuple)) and not value)
    if isinstance(off, bool):
        return value is False
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and value == off


def refuse_unsupported(given: Mapping[str, Any]) -> None:
    """NotImplementedError for a CTranslate2 option tfm does not implement, set to anything but
    its 'off' value."""
    for name, value in given.items():
        if name in UNSUPPORTED:
            off, why = UNSUPPORTED[name]
            if not _is_off(value, off):
                raise NotImplementedError(
                    f"{name}={value!r}: {why} (a CTranslate2 option tfm does not implement; "
                    f"leave it at {off!r}, see docs/python.md, 'Migrating from CTranslate2')")


def merged(defaults: Mapping[str, Any], given: Mapping[str, Any], where: str) -> Dict[str, Any]:
    """The call's options: `given` over `defaults`; an unknown keyword is a TypeError with the
    closest known ones."""
    known = set(defaults) | set(UNSUPPORTED) | INERT
    for name in given:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise TypeError(f"{where}() got an unexpected keyword argument '{name}'{hint}")
    refuse_unsupported(given)
    out = dict(defaults)
    out.update({k: v for k, v in given.items() if k in defaults})
    return out


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return int(value)


def _float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    return float(value)


def _bool(name: str, value: Any) -> bool:
    # NumPy's bool_ is not a bool subclass; accept it through its type name.
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return bool(value)


def _uint64(name: str, value: Any) -> int:
    """An int that fits the library's unsigned 64 bits (a representation, not a range: the values
    of the options are checked by the library)."""
    value = _int(name, value)
    if not 0 <= value < 1 << 64:
        raise _tfm.InvalidArgumentError(f"{name} must fit an unsigned 64-bit integer (got {value})")
    return value


# The library's fields set from the options of the same name, each through its type's check.
_FIELDS = (("beam_size", _int), ("num_hypotheses", _int), ("length_penalty", _float),
           ("max_new_tokens", _int), ("source_lang", _str), ("target_lang", _str),
           ("normalize_scores", _bool), ("max_decoding_length", _int),
           ("min_decoding_length", _int), ("renormalize_min_length", _bool),
           ("patience", _float), ("max_length_factor", _float), ("max_length_extra", _int),
           ("max_input_length", _int), ("return_end_token", _bool), ("sampling_topk", _int),
           ("sampling_topp", _float), ("sampling_temperature", _float), ("seed", _uint64),
           ("return_attention", _bool), ("score_prefix", _bool), ("attention_framing", _bool),
           ("repetition_penalty", _float), ("no_repeat_ngram_size", _int),
           ("return_alternatives", _bool), ("min_alternative_expansion_prob", _float),
           ("search_rule", _str), ("force_end_token", _bool), ("coverage_penalty", _float),
           ("return_logits_vocab", _bool), ("replace_unknowns", _bool),
           ("prefix_bias_beta", _float))


def search_options(o: Mapping[str, Any], base: _tfm.TranslationOptions,
                   ct2_lengths: bool = False) -> _tfm.TranslationOptions:
    """The library's TranslationOptions from merged() options over `base` (the model's own:
    what an option left None keeps).

    ct2_lengths: max_decoding_length as CTranslate2 means it (generated tokens without EOS): the
    library's cap, with EOS, is one more. (CT2_DEFAULTS lift the source-scaled cap.)"""
    if o["search_rule"] == "tfm":  # tfm's rule: a converted model's generation config aside
        base = _tfm.TranslationOptions()
    t = base
    for name, convert in _FIELDS:
        if o[name] is not None:
            setattr(t, name, convert(name, o[name]))
    if o["num_hypotheses"] is None and t.num_hypotheses > t.beam_size:
        t.num_hypotheses = t.beam_size  # the model's n-best, for a narrower beam asked for
    if not isinstance(o["length_penalty_form"], str):
        raise TypeError("length_penalty_form must be a str ('gnmt' or 'power')")
    t.length_penalty_form = o["length_penalty_form"]
    if ct2_lengths and o["max_decoding_length"] is not None:
        t.max_decoding_length += 1  # + EOS (a too large value still fails in the validator)
    # CTranslate2's choice of search: sampling_topk 1 (the default) is the argmax.
    t.search = _tfm.search_for(t.beam_size, t.sampling_topk != 1)
    return t


def end_token_ids(end_token: Any, to_ids: Any) -> List[int]:
    """end_token (CTranslate2's) as target ids: None (the model's EOS: []), a token, or a list of
    tokens or of ids. to_ids(tokens) -> ids, or None where the model has no vocabulary; a token
    it does not know is an error, as in CTranslate2."""
    if end_token is None:
        return []
    values = list(end_token) if isinstance(end_token, (list, tuple)) else [end_token]
    if not values:
        raise _tfm.InvalidArgumentError(
            "end_token: an empty list ends no hypothesis (give None for the model's EOS)")
    if all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        return [int(v) for v in values]
    if not all(isinstance(v, str) for v in values):
        raise TypeError("end_token must be a token, a list of tokens or a list of token ids")
    ids = to_ids(values)
    if ids is None:
        raise _tfm.InvalidArgumentError(
            f"end_token={end_token!r}: the model has no target vocabulary; give token ids")
    return ids


def batching(o: Mapping[str, Any]) -> Tuple[int, str]:
    """(max_batch_size, batch_type) of one call (0: the translator's batches)."""
    size = _int("max_batch_size", o["max_batch_size"])
    kind = o["batch_type"]
    if kind not in ("examples", "tokens"):
        raise _tfm.InvalidArgumentError(
            f"batch_type must be 'examples' or 'tokens' (got {kind!r})")
    return size, kind
