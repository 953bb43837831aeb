"""tfm.Trainer and tfm.train: `tfm train` from Python, over libtfm's tfm::Trainer.

The keyword options are the command's flags with '_' for '-' (compute_type is --precision);
their values are checked by the C++ library (tfm.InvalidArgumentError), their types here
(TypeError naming the option). Training runs in C++ with the GIL released.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, Optional, Union

from . import _tfm
from ._tfm import (ModelInfo, TrainResult, TrainStatsEvent, TrainUpdateEvent,
                   TrainValidationEvent)
from ._inputs import _path, _str
from ._options import _bool, _float, _int

_PATH, _STR, _INT, _FLOAT, _BOOL = "path", "str", "int", "float", "bool"
_UINT64, _INT32 = "uint64", "int32"  # the C++ fields of other widths (an _INT is an int64_t)

# Every option with its type and default (those of `tfm train`).
_OPTIONS: Dict[str, tuple] = {
    "overwrite": (_BOOL, False),
    "train_src": (_PATH, ""), "train_trg": (_PATH, ""), "train_tsv": (_PATH, ""),
    "decoder_only": (_BOOL, False),
    "valid_src": (_PATH, ""), "valid_trg": (_PATH, ""),
    "vocab": (_PATH, ""), "vocab_src": (_PATH, ""), "vocab_trg": (_PATH, ""),
    "preset": (_STR, "small"), "model_config": (_PATH, ""), "dropout": (_FLOAT, -1.0),
    "batch_tokens": (_INT, 4096), "update_freq": (_INT, 1), "max_length": (_INT, 256),
    "max_ratio": (_FLOAT, 3.0), "seed": (_UINT64, 1),
    "max_updates": (_INT, 0), "max_epochs": (_INT, 0), "max_minutes": (_FLOAT, 0.0),
    "lr_schedule": (_STR, "inverse_sqrt"), "lr": (_FLOAT, 5e-4), "lr_factor": (_FLOAT, 1.0),
    "warmup": (_INT, 4000), "optimizer": (_STR, "adam"), "weight_decay": (_FLOAT, 0.0),
    "label_smoothing": (_FLOAT, 0.1), "clip_norm": (_FLOAT, 0.0),
    "device": (_STR, "cpu"), "compute_type": (_STR, "fp32"), "threads": (_INT32, 0),
    "valid_every": (_INT, 1000), "valid_batch_tokens": (_INT, 8192), "valid_bleu": (_BOOL, False),
    "metric": (_STR, ""), "early_stopping": (_INT, 0), "save_every": (_INT, 1000),
    "keep_last": (_INT, 3), "log_every": (_INT, 100), "max_nonfinite": (_INT, 10),
    "tensorboard": (_PATH, ""),
}

def _ranged(lo: int, hi: int, what: str):
    """An int in the C++ field's range [lo, hi): past it the binding's conversion failed with a
    raw error that did not name the option."""
    def check(name: str, value: Any) -> int:
        value = _int(name, value)
        if not lo <= value < hi:
            raise _tfm.InvalidArgumentError(f"{name} must fit {what} (got {value})")
        return value
    return check


_CHECK = {_PATH: _path, _STR: _str, _INT: _ranged(-(1 << 63), 1 << 63, "a 64-bit integer"),
          _UINT64: _ranged(0, 1 << 64, "an unsigned 64-bit integer"),
          _INT32: _ranged(-(1 << 31), 1 << 31, "a 32-bit integer"), _FLOAT: _float, _BOOL: _bool}


def _callback(name: str, f: Any) -> Any:
    if f is not None and not callable(f):
        raise TypeError(f"{name} must be callable or None, not {type(f).__name__}")
    return f


class Trainer:
    """Trains a model directory on a parallel corpus; resumes it when it holds a training state.

    >>> trainer = tfm.Trainer("model/", train_src="train.de", train_trg="train.en",
    ...                       vocab="joint.model", valid_src="valid.de", valid_trg="valid.en",
    ...                       max_updates=20000, compute_type="auto", verbose=True)
    >>> result = trainer.train()
    >>> result.best_dir
    'model/best'

    Keyword options: those of `tfm train`, with '_' for '-' (docs/cli.md): data (train_src,
    train_trg or train_tsv; valid_src, valid_trg; vocab or vocab_src + vocab_trg; decoder_only
    with train_trg, valid_trg and vocab alone: a language model), model
    (preset, model_config, dropout), batches (batch_tokens, update_freq, max_length,
    max_ratio, seed), limits (max_updates, max_epochs, max_minutes), optimisation
    (lr_schedule, lr, lr_factor, warmup, optimizer, weight_decay, label_smoothing, clip_norm),
    compute (device, compute_type: "fp32" | "bf16" | "auto", threads), validation and
    checkpoints (valid_every, valid_batch_tokens, valid_bleu, metric, early_stopping,
    save_every, keep_last, log_every, max_nonfinite), tensorboard (a directory for TensorBoard
    event files of the logged scalars) and overwrite.

    Callbacks, called on the training thread with the GIL: on_log(line) for each line of
    train.log (verbose=True prints them to stderr when on_log is None), on_update(event) after
    each update (TrainUpdateEvent), on_stats(event) every log_every updates (TrainStatsEvent),
    on_validation(event) (TrainValidationEvent), on_checkpoint(update, model_dir).

    Ctrl-C (KeyboardInterrupt) or an exception raised by a callback stops training after the
    current update with a checkpoint saved, then is raised; the same call again resumes exactly.
    The constructor locks the directory (another Trainer on it is a tfm.Error) until the object
    is deleted. Errors: tfm.InvalidArgumentError for a bad option value, tfm.Error for the rest
    (a missing file, data that does not match a saved state), TypeError for a wrong type.
    """

    def __init__(self, model_dir: Union[str, os.PathLike], *,
                 on_log: Optional[Callable[[str], Any]] = None,
                 on_update: Optional[Callable[[TrainUpdateEvent], Any]] = None,
                 on_stats: Optional[Callable[[TrainStatsEvent], Any]] = None,
                 on_validation: Optional[Callable[[TrainValidationEvent], Any]] = None,
                 on_checkpoint: Optional[Callable[[int, str], Any]] = None,
                 verbose: bool = False, **options: Any) -> None:
        o = _tfm.TrainOptions()
        o.model_dir = _path("model_dir", model_dir)
        for name, value in options.items():
            if name not in _OPTIONS:
                raise TypeError(f"unknown training option '{name}' (see help(tfm.Trainer))")
            kind = _OPTIONS[name][0]
            if kind == _PATH and value is None:
                value = ""
            setattr(o, name, _CHECK[kind](name, value))
        if _bool("verbose", verbose) and on_log is None:
            def on_log(line: str) -> None:
                print(line, file=sys.stderr, flush=True)
        self._impl = _tfm.Trainer(o, _callback("on_log", on_log),
                                  _callback("on_update", on_update),
                                  _callback("on_stats", on_stats),
                                  _callback("on_validation", on_validation),
                                  _callback("on_checkpoint", on_checkpoint))

    def train(self) -> TrainResult:
        """Trains until a limit, early stopping or request_stop(); saves a checkpoint on the
        way out. Once per Trainer."""
        return self._live().train()

    def request_stop(self) -> None:
        """Ends train() after the current update, with a checkpoint (from any thread)."""
        self._live().request_stop()

    @property
    def resuming(self) -> bool:
        """The directory held a training state, which train() continues."""
        return self._live().resuming

    @property
    def model_info(self) -> ModelInfo:
        """The model being trained."""
        return self._live().model_info

    @property
    def options(self) -> Dict[str, Any]:
        """The effective options (compute_type resolved, metric filled in)."""
        o = self._live().options
        return {"model_dir": o.model_dir, **{name: getattr(o, name) for name in _OPTIONS}}

    def _live(self) -> Any:
        if self._impl is None:
            raise _tfm.Error("this Trainer is closed (its directory's lock is released): make a "
                             "new tfm.Trainer to train again")
        return self._impl

    def close(self) -> None:
        """Releases the directory's lock (the Trainer cannot train after)."""
        self._impl = None

    def __enter__(self) -> "Trainer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def train(model_dir: Union[str, os.PathLike], **options: Any) -> TrainResult:
    """Trains model_dir with tfm.Trainer(model_dir, **options) and returns its TrainResult; the
    directory's lock is released on return."""
    with Trainer(model_dir, **options) as t:
        return t.train()
