"""CTranslate2's result types over tfm's: ScoringResult, the asynchronous results, ExecutionStats,
and the per-call batches (max_batch_size / batch_type) a call's inputs are cut into."""
from __future__ import annotations

from typing import Any, Callable, List, Sequence


class ScoringResult(float):
    """The score of one (source, target) pair: CTranslate2's ScoringResult, and a float.

    tokens: the scored target tokens, then the end token (pieces for text or token input, ids
    for id input), from `offset` on; log_probs: the log-probability of each, given the source and
    the tokens before it. As a float it is their sum, log P(target + EOS | source), which is what
    tfm's score_batch returned before it returned these (so such code keeps working).
    """

    tokens: List[Any]
    log_probs: List[float]

    def __new__(cls, tokens: List[Any], log_probs: List[float]) -> "ScoringResult":
        # The sum in double, as the library's score_batch sums.
        self = super().__new__(cls, float(sum(float(x) for x in log_probs)))
        self.tokens = tokens
        self.log_probs = log_probs
        return self

    def normalized_score(self) -> float:
        """The mean log-probability per token (CTranslate2's score_file prints it)."""
        return float(self) / len(self.log_probs) if self.log_probs else 0.0

    def __repr__(self) -> str:
        return f"ScoringResult(tokens={self.tokens!r}, log_probs={self.log_probs!r})"

    def __reduce__(self):
        return (ScoringResult, (self.tokens, self.log_probs))


class _AsyncResult:
    """One example's result of an asynchronous call (CTranslate2's Async*Result): result() waits
    for it (raising the call's error, if it failed), done() says whether it is in."""

    def __init__(self, call: Any, index: int, convert: Callable[[Any], Any] = lambda x: x):
        self._call = call
        self._index = index
        self._convert = convert

    def result(self) -> Any:
        return self._convert(self._call.result()[self._index])

    def done(self) -> bool:
        return self._call.done()

    def _cancel(self) -> None:
        """Gives up the call this result belongs to (its work not yet done is dropped)."""
        self._call.cancel()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(done={self.done()})"


class AsyncTranslationResult(_AsyncResult):
    """An example's TranslationResult to come (translate_batch(..., asynchronous=True))."""


class AsyncScoringResult(_AsyncResult):
    """An example's ScoringResult to come (score_batch(..., asynchronous=True))."""


class ExecutionStats:
    """What translate_file and score_file did (CTranslate2's ExecutionStats): examples, tokens
    (of the best hypotheses, or scored), and the wall time in milliseconds."""

    def __init__(self, num_examples: int, num_tokens: int, total_time_in_ms: float):
        self.num_examples = num_examples
        self.num_tokens = num_tokens
        self.total_time_in_ms = total_time_in_ms

    def __repr__(self) -> str:
        return (f"ExecutionStats(num_examples={self.num_examples}, num_tokens={self.num_tokens}, "
                f"total_time_in_ms={self.total_time_in_ms:.3f})")


def length_chunks(lengths: Sequence[int], max_batch_size: int, batch_type: str) -> List[List[int]]:
    """A call's examples cut as CTranslate2 cuts them for max_batch_size (rebatch_input):
    sorted from the longest to the shortest (stable, as its sort of a small batch), then
    consecutive runs of at most max_batch_size examples, or of at most that many padded tokens
    (examples x the longest) for batch_type "tokens" (an example longer than that is alone).
    max_batch_size 0: one chunk. Each chunk goes to the library as one call, which batches it
    within the translator's own limits (the results do not depend on the chunks; a callback's
    steps, which CTranslate2 counts from its batch's shortest prompt, do)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    if not max_batch_size:
        return [order] if order else []
    chunks: List[List[int]] = []
    chunk: List[int] = []
    longest = 0
    for i in order:
        if batch_type == "tokens":
            fits = (len(chunk) + 1) * max(longest, lengths[i], 1) <= max_batch_size
        else:
            fits = len(chunk) != max_batch_size
        if chunk and not fits:
            chunks.append(chunk)
            chunk, longest = [], 0
        chunk.append(i)
        longest = max(longest, lengths[i])
    if chunk:
        chunks.append(chunk)
    return chunks
