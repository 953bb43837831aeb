"""CTranslate2's per-step results: the `callback` option of translate_batch and generate_batch
(the library's TranslationOptions.step_callback, called from its decoding threads with the GIL
taken by the binding), and generate_tokens, which streams them through a queue.

The library reports each token as soon as its search chooses it (greedy search or sampling); this
layer only renames what it reports: the sentence's index in the caller's batch (a call cut into
chunks maps each chunk's back), CTranslate2's step numbering, and log_prob when return_scores.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Iterator, Optional, Sequence


class GenerationStepResult:
    """One generated token (CTranslate2's): step, batch_id (the index in the call's batch),
    token_id, hypothesis_id (0: greedy search and sampling keep one), token, log_prob (with
    return_scores / return_log_prob, else None), is_last."""

    def __init__(self, step: int, batch_id: int, token_id: int, hypothesis_id: int, token: str,
                 log_prob: Optional[float], is_last: bool):
        self.step = step
        self.batch_id = batch_id
        self.token_id = token_id
        self.hypothesis_id = hypothesis_id
        self.token = token
        self.log_prob = log_prob
        self.is_last = is_last

    def __repr__(self) -> str:
        return (f"GenerationStepResult(step={self.step}, batch_id={self.batch_id}, "
                f"token_id={self.token_id}, token={self.token!r}, log_prob={self.log_prob}, "
                f"is_last={self.is_last})")


def relay(callback: Optional[Callable[[GenerationStepResult], Any]],
          index: Optional[Sequence[int]], return_scores: bool,
          step_of: Optional[Callable[[int, Any], Optional[int]]] = None,
          score_prefix: bool = True, stopped: Optional[set] = None
          ) -> Optional[Callable[[Any], bool]]:
    """The library's step callback for one call of a chunk of the caller's batch: index[i] is
    the caller's index of the chunk's sentence i (None: the library's index, a file's line);
    step_of(i, step) is CTranslate2's step of the library's StepResult (None: CTranslate2 does
    not report that token); default: the library's. score_prefix False (CTranslate2's scores,
    which leave a target prefix out): a prefix token's log_prob is 0, as CTranslate2 reports it.
    stopped: gets the caller's index of each sentence the callback ended before its last token
    (a hypothesis without an end token). Returns the callback's truth (True ends that
    sentence); None without a callback."""
    if callback is None:
        return None
    if not callable(callback):
        raise TypeError(f"callback must be callable, not {type(callback).__name__}")

    def on_step(s: Any) -> bool:
        step = s.step if step_of is None else step_of(s.index, s)
        if step is None:
            return False
        log_prob = 0.0 if s.in_prefix and not score_prefix else s.log_prob
        i = s.index if index is None else index[s.index]
        stop = bool(callback(GenerationStepResult(
            step, i, s.token_id, 0, s.token or str(s.token_id),
            log_prob if return_scores else None, s.is_last)))
        if stop and not s.is_last and stopped is not None:
            stopped.add(i)
        return stop

    return on_step


def generate_tokens(submit: Callable[..., Sequence[Any]], *args: Any,
                    **kwargs: Any) -> Iterator[GenerationStepResult]:
    """CTranslate2's generate_tokens (extensions.py): submit(*args, **kwargs) with
    asynchronous=True, beam_size 1 and a callback that queues each step; a thread waits for the
    results (their errors, a callback's exception among them, end the stream raised here). The
    caller closing the generator, or an exception while it waits (Ctrl-C), ends every sentence
    at its next token and waits for the call to end."""
    steps: "queue.Queue[Any]" = queue.Queue()
    closed = threading.Event()
    user = kwargs.get("callback")
    if user is not None and not callable(user):
        raise TypeError(f"callback must be callable, not {type(user).__name__}")

    def on_step(step: GenerationStepResult) -> bool:
        stop = bool(user(step)) if user is not None else False
        steps.put(step)
        return closed.is_set() or stop

    kwargs.update(asynchronous=True, beam_size=1, callback=on_step)
    pending = submit(*args, **kwargs)
    done = object()

    def wait() -> None:
        try:
            for r in pending:
                r.result()
        except BaseException as e:  # the search's error (or the callback's exception)
            steps.put(e)
        steps.put(done)

    waiter = threading.Thread(target=wait, name="tfm-generate-tokens", daemon=True)
    waiter.start()
    try:
        while True:
            item = steps.get()
            if item is done:
                break
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        closed.set()  # the callback now ends each sentence at its next token
        waiter.join()
