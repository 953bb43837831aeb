"""Fixtures of the tfm package's tests: the installed `tfm` command and a tiny model it trains.

scripts/test_python.sh sets TFM_BIN (the command, from the same install as the libtfm the
package was built against), TFM_ROOT (that install prefix) and TFM_SOURCE_DIR (the repository).
"""
import _thread
import os
import random
import shutil
import signal
import subprocess
import threading
import time

import pytest

DE = "haus baum hund katze kind mann frau sieht spielt der".split()
EN = "house tree dog cat child man woman sees plays the".split()


def _env(name):
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set (run the suite through scripts/test_python.sh)")
    return value


@pytest.fixture(scope="session")
def tfm_bin():
    path = _env("TFM_BIN")
    assert os.access(path, os.X_OK), path
    return path


@pytest.fixture(scope="session")
def source_dir():
    return _env("TFM_SOURCE_DIR")


def run(cmd, **kw):
    """Runs a command; its stderr is in the assertion message when it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))}: {p.stderr}"
    return p.stdout


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("tfm")


@pytest.fixture(scope="session")
def corpus(work):
    """A toy word-for-word corpus, as tests/cli/install_test.sh makes."""
    rng = random.Random(7)
    de, en = [], []
    for _ in range(100):
        k = [rng.randrange(10) for _ in range(rng.randint(2, 5))]
        de.append(" ".join(DE[i] for i in k))
        en.append(" ".join(EN[i] for i in k))
    (work / "train.de").write_text("\n".join(de) + "\n")
    (work / "train.en").write_text("\n".join(en) + "\n")
    return de, en


@pytest.fixture(scope="session")
def model_dir(tfm_bin, work, corpus):
    """A tiny model with a vocabulary, trained in seconds (20 updates of --preset tiny)."""
    run([tfm_bin, "vocab", "--input", work / "train.de", work / "train.en", "--size", "36",
         "--out", work / "voc"])
    run([tfm_bin, "train", "--model", work / "m", "--train-src", work / "train.de",
         "--train-trg", work / "train.en", "--vocab", work / "voc.model", "--preset", "tiny",
         "--batch-tokens", "200", "--max-updates", "20", "--save-every", "0", "--valid-every",
         "0", "--keep-last", "0", "--threads", "1", "--seed", "3"])
    return str(work / "m")


@pytest.fixture(scope="session")
def lines(corpus):
    """Test input: sentences of the corpus and an empty line (which has no hypotheses)."""
    de, _ = corpus
    return de[:5] + [""] + de[5:12]


@pytest.fixture(scope="session")
def ids_model_dir(model_dir, work):
    """The same model without its vocabulary: only the id methods work."""
    d = work / "m_ids"
    if not d.exists():
        d.mkdir()
        for f in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(model_dir, f), d / f)
    return str(d)


def interrupted_within(call, bound=5.0, after=1.0):
    """Runs call() with Ctrl-C (SIGINT as the main thread sees it) `after` seconds in, once the
    call is in the library: it must raise KeyboardInterrupt within `bound` seconds."""
    # interrupt_main does nothing while SIGINT is ignored, as it is for a background job of a
    # non-interactive shell (a CI runner's): install Python's handler, whoever launched us.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(after, _thread.interrupt_main)
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    elapsed = time.monotonic() - start
    assert elapsed < bound, elapsed
