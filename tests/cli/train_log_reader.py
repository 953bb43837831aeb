"""What DIR/train.log says, read independently of tfm's C++: the log windows' and validations'
values at each update, a resumed run's lines replacing those an interrupted run logged past its
last checkpoint. Shared by check_tfevents.py and check_plot.py (standard library only)."""
from __future__ import annotations

import re

# tag: (regex group, printed precision as (absolute, relative) tolerance)
TRAIN = re.compile(
    r"^epoch \d+ \| update (\d+) \| sents \S+ \| trg tok \S+ \| loss (\S+) \| ppl (\S+) \| "
    r"acc (\S+)% \| lr (\S+) \| gnorm (\S+) \| (\S+) tok/s \|")
VALID = re.compile(r"^valid \| update (\d+) \| loss (\S+) \| ppl (\S+) \| acc (\S+)%"
                   r"(?: \| bleu (\S+))?")
RESUME = re.compile(r"^resuming from update (\d+)")


def count(s: str) -> float:
    """format_count's "12.3k" / "4.56M" / "789"."""
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(s[-1])
    return float(s[:-1]) * scale if scale else float(s)


# The tolerance of each scalar against its printed value: (absolute, relative).
TOLERANCE = {
    "train/loss": (6e-5, 1e-6), "train/perplexity": (6e-3, 1e-6), "train/accuracy": (6e-4, 0),
    "train/learning_rate": (0, 6e-4), "train/grad_norm": (6e-4, 1e-6),
    "train/tokens_per_second": (0.6, 6e-3), "valid/loss": (6e-5, 1e-6),
    "valid/perplexity": (6e-4, 1e-6), "valid/accuracy": (6e-4, 0), "valid/bleu": (6e-3, 1e-6),
}


def read(path: str) -> dict[str, dict[int, float]]:
    """{tag: {update: value}} as TensorBoard should show it."""
    series: dict[str, dict[int, float]] = {}

    def put(tag: str, update: int, value: float) -> None:
        series.setdefault(tag, {})[update] = value

    with open(path, encoding="utf-8") as f:
        for line in f:
            if m := RESUME.match(line):
                start = int(m.group(1))
                for values in series.values():
                    for u in [u for u in values if u > start]:
                        del values[u]
            elif m := TRAIN.match(line):
                u = int(m.group(1))
                put("train/loss", u, float(m.group(2)))
                put("train/perplexity", u, float(m.group(3)))
                put("train/accuracy", u, float(m.group(4)) / 100)
                put("train/learning_rate", u, float(m.group(5)))
                put("train/grad_norm", u, float(m.group(6)))
                put("train/tokens_per_second", u, count(m.group(7)))
            elif m := VALID.match(line):
                u = int(m.group(1))
                put("valid/loss", u, float(m.group(2)))
                put("valid/perplexity", u, float(m.group(3)))
                put("valid/accuracy", u, float(m.group(4)) / 100)
                if m.group(5) is not None:
                    put("valid/bleu", u, float(m.group(5)))
    return series


def close(tag: str, got: float, want: float) -> bool:
    a, r = TOLERANCE[tag]
    return abs(got - want) <= a + r * abs(want) + 1e-7 * abs(want)  # + float32's rounding
