"""tfm.Translator against the `tfm` command on the same tiny model: translations, n-best lists,
scores, files, iterables, threads, and the release of the GIL."""
import threading
import time

import pytest

import tfm
from conftest import run


def cli_translate(tfm_bin, model, text, *flags):
    return run([tfm_bin, "translate", "--model", model, "--precision", "auto", *flags],
               input=text).splitlines()


def best(results):
    return [r.hypotheses[0] if r.hypotheses else "" for r in results]


@pytest.fixture(scope="module")
def translator(model_dir):
    return tfm.Translator(model_dir, compute_type="auto")


def test_translate_batch_equals_cli(tfm_bin, model_dir, translator, lines):
    for beam in (1, 2, 4):
        want = cli_translate(tfm_bin, model_dir, "\n".join(lines) + "\n", "--beam-size",
                             str(beam))
        got = best(translator.translate_batch(lines, beam_size=beam))
        assert got == want, f"beam {beam}"
        assert len(got) == len(lines) and got[0]


def test_empty_line_has_no_hypotheses(translator):
    r = translator.translate_batch(["", "hund"], return_scores=True)
    assert r[0].hypotheses == [] and r[0].scores == []
    assert len(r[1].hypotheses) == 1 and len(r[1].scores) == 1
    assert translator.translate_batch([]) == []


def test_ids_equal_cli(tfm_bin, ids_model_dir):
    src = [[5, 6, 7], [8, 9], [10, 11, 12, 13], [3]]
    want = cli_translate(tfm_bin, ids_model_dir,
                         "".join(" ".join(map(str, s)) + "\n" for s in src), "--ids",
                         "--beam-size", "2")
    t = tfm.Translator(ids_model_dir, compute_type="auto")
    got = [" ".join(map(str, r.hypotheses[0])) for r in t.translate_batch(src, beam_size=2)]
    assert got == want
    assert all(isinstance(x, int) for x in t.translate_batch(src)[0].hypotheses[0])
    assert not t.has_vocabularies


def test_numpy_ids_equal_lists(ids_model_dir):
    np = pytest.importorskip("numpy")
    t = tfm.Translator(ids_model_dir)
    src = [[5, 6, 7], [8, 9, 10]]
    want = [r.hypotheses for r in t.translate_batch(src)]
    for arr in (np.array(src, dtype=np.int64), np.array(src, dtype=np.int32),
                [np.array(s) for s in src]):
        assert [r.hypotheses for r in t.translate_batch(arr)] == want
    with pytest.raises(TypeError, match="source"):
        t.translate_batch(np.array(src, dtype=np.float32))


def test_n_best_scores_equal_cli(tfm_bin, model_dir, translator, lines):
    text = [line for line in lines if line][:6]
    want = [line.split(" ||| ") for line in
            cli_translate(tfm_bin, model_dir, "\n".join(text) + "\n", "--beam-size", "4",
                          "--n-best", "3", "--length-penalty", "0.6")]
    results = translator.translate_batch(text, beam_size=4, num_hypotheses=3,
                                         length_penalty=0.6, return_scores=True)
    got = [[str(i), h, s] for i, r in enumerate(results) for h, s in zip(r.hypotheses, r.scores)]
    assert [g[:2] for g in got] == [w[:2] for w in want]
    for g, w in zip(got, want):
        assert float(g[2]) == pytest.approx(float(w[2]), abs=2e-6)
    for r in results:
        assert len(r.hypotheses) == 3 and len(r.log_probs) == 3
        assert r.scores == sorted(r.scores, reverse=True)


def test_log_probs_equal_score_batch(ids_model_dir):
    """In ids: detokenised text need not encode back to the same pieces."""
    t = tfm.Translator(ids_model_dir)
    src = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
    results = t.translate_batch(src, return_scores=True)
    hyps = [r.hypotheses[0] for r in results]
    for r, s in zip(results, t.score_batch(src, hyps)):
        assert r.log_probs[0] == pytest.approx(s, abs=1e-4)


def test_score_batch_equals_cli(tfm_bin, model_dir, ids_model_dir, corpus, work):
    de, en = corpus
    src, trg = de[:10], en[:10]
    (work / "s.de").write_text("\n".join(src) + "\n")
    (work / "s.en").write_text("\n".join(trg) + "\n")
    want = [float(x) for x in run([tfm_bin, "score", "--model", model_dir, "--precision", "auto",
                                   "--src", work / "s.de", "--trg", work / "s.en"]).split()]
    got = tfm.Translator(model_dir, compute_type="auto").score_batch(src, trg)
    assert got == pytest.approx(want, rel=1e-7, abs=1e-7)
    sid, tid = [[5, 6, 7], [8, 9]], [[10, 11], [12]]
    (work / "s.ids").write_text("5 6 7\n8 9\n")
    (work / "t.ids").write_text("10 11\n12\n")
    want = [float(x) for x in run([tfm_bin, "score", "--model", ids_model_dir, "--ids",
                                   "--precision", "auto", "--src", work / "s.ids", "--trg",
                                   work / "t.ids"]).split()]
    got = tfm.Translator(ids_model_dir, compute_type="auto").score_batch(sid, tid)
    assert got == pytest.approx(want, rel=1e-7, abs=1e-7)


def test_translate_file_equals_cli(tfm_bin, model_dir, translator, lines, work):
    (work / "in.de").write_text("\n".join(lines) + "\n")
    want = run([tfm_bin, "translate", "--model", model_dir, "--precision", "auto",
                "--beam-size", "2", "--input", work / "in.de"])
    translator.translate_file(work / "in.de", work / "out.en", beam_size=2)
    assert (work / "out.en").read_text() == want
    # Other windows, other batches: the same ids (scores would differ by float rounding).
    translator.translate_file(work / "in.de", work / "out3.en", beam_size=2, read_ahead=3)
    assert (work / "out3.en").read_text() == want
    want = run([tfm_bin, "translate", "--model", model_dir, "--precision", "auto",
                "--beam-size", "2", "--n-best", "2", "--input", work / "in.de"])
    translator.translate_file(str(work / "in.de"), str(work / "nbest.en"), beam_size=2,
                              num_hypotheses=2, n_best=True)
    assert (work / "nbest.en").read_text() == want
    with pytest.raises(FileNotFoundError):
        translator.translate_file(work / "missing.de", work / "x.en")
    assert not (work / "x.en").exists()


def test_translate_iterable_in_order(translator, lines):
    want = translator.translate_batch(lines, beam_size=2)
    gen = translator.translate_iterable(iter(lines), max_batch_size=2, read_ahead=2,
                                        beam_size=2)
    got = list(gen)
    assert [r.hypotheses for r in got] == [r.hypotheses for r in want]
    assert list(translator.translate_iterable([])) == []


def test_inter_threads_and_python_threads_same_outputs(model_dir, lines):
    many = lines * 8
    want = best(tfm.Translator(model_dir, inter_threads=1, intra_threads=1,
                               max_batch_size=4).translate_batch(many, beam_size=2))
    t = tfm.Translator(model_dir, inter_threads=2, intra_threads=1, max_batch_size=4)
    assert t.inter_threads == 2
    assert best(t.translate_batch(many, beam_size=2)) == want
    got, errors = [None] * 4, []

    def work(k):
        try:
            got[k] = best(t.translate_batch(many, beam_size=2))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert got == [want] * 4


def _timed_load(model_dir, lines):
    """A translator and a batch that takes it a while (the tiny model rambles to max length).
    The batch is one batch of the translator's, so one call keeps one of its two workers busy:
    only a second calling thread can use the other."""
    t = tfm.Translator(model_dir, inter_threads=2, intra_threads=1, max_batch_size=128)
    batch = [line for line in lines if line] * 10
    start = time.perf_counter()
    t.translate_batch(batch, beam_size=4, max_length_extra=40)
    return t, batch, time.perf_counter() - start


def test_gil_released_while_translating(model_dir, lines):
    t, batch, _ = _timed_load(model_dir, lines)
    done, ticks = threading.Event(), [0]

    def translate():
        t.translate_batch(batch, beam_size=4, max_length_extra=40)
        done.set()

    th = threading.Thread(target=translate)
    th.start()
    while not done.is_set():  # runs only while the other thread does not hold the GIL
        ticks[0] += 1
        time.sleep(0)
    th.join()
    assert ticks[0] > 100


def test_two_python_threads_run_in_parallel(model_dir, lines):
    """inter_threads=2 with one thread each: two Python threads, each translating one batch,
    finish well before twice one call's time (generous bound: 0.8x). The machine is shared, so
    the library's own parallelism is measured alongside (one call of two batches on the same
    workers): when that shows no second core either, the test skips rather than fail."""
    t, batch, _ = _timed_load(model_dir, lines)

    def translate(b):
        t.translate_batch(b, beam_size=4, max_length_extra=40)

    def timed(fn):
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    def two_threads():
        threads = [threading.Thread(target=translate, args=(batch,)) for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()

    seen = []
    for _ in range(5):
        sequential = timed(lambda: (translate(batch), translate(batch)))
        threads = timed(two_threads) / sequential
        library = timed(lambda: translate(batch + batch)) / sequential  # two batches, one call
        seen.append((round(threads, 2), round(library, 2)))
        if threads < 0.8:
            return
    # Rounds where the library ran two batches at once and the Python threads did not: one is
    # noise on a shared machine, two are a finding.
    worse = [(th, lib) for th, lib in seen if lib < 0.75 and th > lib + 0.25]
    assert len(worse) < 2, f"(python threads, library) / sequential: {seen}"
    pytest.skip(f"no second core was free: (python threads, library) / sequential: {seen}")


def test_model_info(model_dir, translator):
    info = translator.model_info
    assert info.directory.rstrip("/") == model_dir.rstrip("/")
    assert info.src_vocab_size == 36 and info.trg_vocab_size == 36
    assert info.encoder_layers >= 1 and info.parameter_count > 0
    assert info.src_vocab_path.endswith(".model")
    assert '"d_model"' in info.config_json
    other = tfm.read_model_info(model_dir)
    assert (other.d_model, other.heads, other.max_length) == (info.d_model, info.heads,
                                                              info.max_length)
    assert translator.compute_type in ("fp32", "bf16")
    assert translator.device == "cpu"
    assert "d_model" in repr(info) and "Translator(" in repr(translator)


def test_token_lists_equal_text(tfm_bin, model_dir, translator, lines):
    """CTranslate2's token lists: the pieces of each line in, pieces out; detokenised, the same
    translations as text input, and the same scores."""
    tokens = [translator.tokenize(l) for l in lines]
    assert tokens[0] and all(isinstance(t, str) for t in tokens[0])
    assert tokens[0][0].startswith("\u2581")
    for beam in (1, 3):
        want = translator.translate_batch(lines, beam_size=beam, return_scores=True)
        got = translator.translate_batch(tokens, beam_size=beam, return_scores=True)
        for w, g in zip(want, got):
            assert ["".join(h).replace("\u2581", " ").strip() for h in g.hypotheses] == \
                w.hypotheses
            assert g.scores == w.scores
    src = [l for l in lines if l]
    src_tokens = [translator.tokenize(l) for l in src]
    targets = [r.hypotheses[0] for r in translator.translate_batch(src)]
    # The fixture's vocabulary is joint: tokenize() is the target's segmentation too.
    target_tokens = [translator.tokenize(t) for t in targets]
    assert translator.score_batch(src_tokens, target_tokens) == \
        translator.score_batch(src, targets)
    # A piece outside the vocabulary is <unk>, as in CTranslate2.
    assert translator.translate_batch([["\u2581nosuchpiece"]])[0].hypotheses
