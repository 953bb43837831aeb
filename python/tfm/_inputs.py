"""The inputs of tfm.Translator's calls: text, SentencePiece token lists or token ids told
apart, their containers' types checked (a TypeError names the argument), target prefixes of the
source's kind; the C++ conversion checks every element."""
from __future__ import annotations

import numbers
import os
from typing import Any, Sequence, Union

from . import _tfm

TextBatch = Sequence[str]
IdsBatch = Sequence[Sequence[int]]
Source = Union[TextBatch, IdsBatch, Any]  # Any: a 2-D NumPy integer array

_TEXT, _IDS, _TOKENS = "text", "ids", "tokens"


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


