"""tfm.Trainer / tfm.train against `tfm train`: the same weights for the same options, callbacks
that report what train.log says, stop-and-resume that is exact, and errors of the right types."""
import json
import os
import signal
import threading

import pytest

import tfm
from conftest import run


def _options(work, **kw):
    o = dict(train_src=str(work / "train.de"), train_trg=str(work / "train.en"),
             vocab=str(work / "voc.model"), preset="tiny", batch_tokens=200, max_updates=12,
             save_every=4, valid_every=0, keep_last=0, threads=1, seed=3, log_every=2)
    o.update(kw)
    return o


def _cli_train(tfm_bin, d, work, **kw):
    args = [tfm_bin, "train", "--model", d]
    for k, v in _options(work, **kw).items():
        args += ["--" + k.replace("_", "-"), str(v)]
    run(args)


def _weights(d):
    with open(os.path.join(d, "model.safetensors"), "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def vocab(model_dir, work):
    """The vocabulary model_dir's fixture trained (work/voc.model)."""
    assert (work / "voc.model").exists()
    return str(work / "voc.model")


def test_train_equals_cli(tfm_bin, work, vocab):
    _cli_train(tfm_bin, str(work / "t_cli"), work)
    r = tfm.train(str(work / "t_py"), **_options(work))
    assert r.updates == 12 and r.stop_reason == "max updates" and not r.interrupted
    assert r.model_dir == str(work / "t_py")
    assert _weights(work / "t_py") == _weights(work / "t_cli")
    # The result is a model the Translator loads.
    assert tfm.Translator(r.model_dir).model_info.src_vocab_size == 36


def test_decoder_only_equals_cli_and_generates(tfm_bin, work, vocab):
    o = _options(work, decoder_only=True, train_src="")
    run([tfm_bin, "train", "--decoder-only", "--model", str(work / "lm_cli")] +
        [a for k, v in o.items() if k not in ("decoder_only", "train_src")
         for a in ("--" + k.replace("_", "-"), str(v))])
    r = tfm.train(str(work / "lm_py"), **o)
    assert r.updates == 12
    assert _weights(work / "lm_py") == _weights(work / "lm_cli")
    lm = tfm.Translator(r.model_dir)
    assert lm.model_info.decoder_only and lm.model_info.encoder_layers == 0
    out = lm.generate_batch(["the", ""], max_decoding_length=8)
    assert out[0].hypotheses[0].startswith("the")
    assert len(out[1].hypotheses) == 1
    with pytest.raises(tfm.Error, match="decoder-only model trains on train_trg alone"):
        tfm.Trainer(work / "lm_bad", **_options(work, decoder_only=True))


def test_callbacks_report_the_log(work, vocab):
    lines, updates, stats, saved = [], [], [], []
    t = tfm.Trainer(work / "t_cb", on_log=lines.append, on_update=updates.append,
                    on_stats=stats.append, on_checkpoint=lambda u, d: saved.append(u),
                    **_options(work))
    assert not t.resuming
    assert t.options["compute_type"] == "fp32" and t.options["max_updates"] == 12
    t.train()
    with open(work / "t_cb" / "train.log") as f:
        assert f.read().splitlines() == lines
    assert [e.update for e in updates] == list(range(1, 13))
    assert updates[-1].fraction_done == 1.0
    assert [e.update for e in stats] == [2, 4, 6, 8, 10, 12]
    for e in stats:
        assert any(l.startswith("epoch") and f"| update {e.update} |" in l and
                   f"| loss {e.loss:.4f} |" in l for l in lines)
    assert saved == [4, 8, 12]
    with pytest.raises(tfm.Error):
        t.train()  # once per Trainer


def test_tensorboard_event_files_hold_the_stats(work, vocab):
    """tensorboard=DIR: the event file, read by the CLI tests' own decoder, holds each on_stats
    event's values (as float32) at its update."""
    import struct
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "cli"))
    import check_tfevents

    stats = []
    tfm.train(str(work / "t_tb"), on_stats=stats.append, tensorboard=str(work / "tb"),
              **_options(work))
    problems = []
    got = check_tfevents.read_own(str(work / "tb"), problems)
    assert not problems
    f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]  # noqa: E731
    for tag, field in [("train/loss", "loss"), ("train/perplexity", "perplexity"),
                       ("train/learning_rate", "learning_rate"), ("train/grad_norm", "grad_norm")]:
        assert got[tag] == [(e.update, f32(getattr(e, field))) for e in stats], tag
    with pytest.raises(TypeError):
        tfm.Trainer(work / "t_tb2", tensorboard=3, **_options(work))


def test_exception_in_callback_stops_with_checkpoint_and_resumes_exactly(work, vocab):
    tfm.train(str(work / "r_straight"), **_options(work))

    def stop_at_5(e):
        if e.update == 5:
            raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        tfm.train(str(work / "r_stopped"), on_update=stop_at_5, **_options(work))
    t = tfm.Trainer(work / "r_stopped", **_options(work))
    assert t.resuming
    assert t.train().updates == 12
    assert _weights(work / "r_stopped") == _weights(work / "r_straight")


def _state_updates(d):
    with open(os.path.join(d, "train_state", "state.json")) as f:
        return json.load(f)["updates"]


def test_keyboard_interrupt_saves_a_checkpoint(work, vocab):
    """SIGINT while training in C++ (the GIL released) becomes KeyboardInterrupt after the
    current update, with a checkpoint: nothing trained is lost."""
    def on_update(e):
        if e.update == 3:
            os.kill(os.getpid(), signal.SIGINT)

    # Python turns SIGINT into KeyboardInterrupt only when it started with SIGINT at its default;
    # a shell without job control starts background commands with it ignored (POSIX), and then
    # the signal would be dropped. Install Python's handler for this test, whoever launched it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            tfm.train(str(work / "k"), on_update=on_update, **_options(work, max_updates=1000))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert _state_updates(work / "k") == 3
    assert tfm.Trainer(work / "k", **_options(work, max_updates=1000)).resuming


def test_request_stop_from_another_thread(work, vocab):
    t = tfm.Trainer(work / "rs", **_options(work, max_updates=100000, save_every=0))
    threading.Timer(0.5, t.request_stop).start()
    r = t.train()
    assert r.interrupted and r.stop_reason == "interrupted" and 0 < r.updates < 100000
    assert _state_updates(work / "rs") == r.updates


def test_errors(work, vocab):
    with pytest.raises(tfm.InvalidArgumentError, match="max_updates"):
        tfm.Trainer(work / "e", **_options(work, max_updates=-1))
    with pytest.raises(tfm.InvalidArgumentError, match="train_src and train_trg go together"):
        tfm.Trainer(work / "e", **_options(work, train_trg=None))
    with pytest.raises(tfm.InvalidArgumentError, match="int8"):
        tfm.Trainer(work / "e", **_options(work, compute_type="int8"))
    with pytest.raises(TypeError, match="max_updates must be an int"):
        tfm.Trainer(work / "e", **_options(work, max_updates="10"))
    with pytest.raises(TypeError, match="unknown training option 'max_update'"):
        tfm.Trainer(work / "e", max_update=3, **_options(work))
    with pytest.raises(TypeError, match="on_update must be callable"):
        tfm.Trainer(work / "e", on_update=3, **_options(work))
    assert not (work / "e").exists()  # nothing was touched
    with pytest.raises(tfm.Error, match="no such file|does not exist|cannot open"):
        tfm.Trainer(work / "e2", **_options(work, train_src=str(work / "missing.de")))
    # One Trainer a directory.
    with tfm.Trainer(work / "lock", **_options(work)):
        with pytest.raises(tfm.Error, match="in use"):
            tfm.Trainer(work / "lock", **_options(work))
    tfm.Trainer(work / "lock", **_options(work)).close()  # released by the with block


def test_values_past_the_fields_width_and_a_closed_trainer(work, vocab):
    # Past the C++ field's width the binding's conversion failed with a raw TypeError naming no
    # option; a closed Trainer's methods raised AttributeError on None.
    with pytest.raises(tfm.InvalidArgumentError, match="seed must fit an unsigned 64-bit"):
        tfm.Trainer(work / "w", **_options(work, seed=2**64))
    with pytest.raises(tfm.InvalidArgumentError, match="threads must fit a 32-bit integer"):
        tfm.Trainer(work / "w", **_options(work, threads=2**40))
    with pytest.raises(tfm.InvalidArgumentError, match="max_updates must fit a 64-bit"):
        tfm.Trainer(work / "w", **_options(work, max_updates=2**63))
    assert not (work / "w").exists()
    t = tfm.Trainer(work / "closed", **_options(work))
    t.close()
    for call in (t.train, t.request_stop, lambda: t.model_info, lambda: t.options):
        with pytest.raises(tfm.Error, match="this Trainer is closed"):
            call()
