"""Errors and their Python types, help and stubs, and tfm.convert."""
import os
import pydoc
import subprocess

import pytest

import tfm
from conftest import run


@pytest.fixture(scope="module")
def translator(model_dir):
    return tfm.Translator(model_dir)


def test_exception_classes():
    assert issubclass(tfm.Error, RuntimeError)
    assert issubclass(tfm.InvalidArgumentError, tfm.Error)
    assert issubclass(tfm.InvalidArgumentError, ValueError)


def test_missing_model_is_error(tmp_path):
    with pytest.raises(tfm.Error, match="does not exist") as e:
        tfm.Translator(str(tmp_path / "nothing"))
    assert not isinstance(e.value, ValueError)
    assert ".cpp:" not in str(e.value)  # the message, not the source location
    with pytest.raises(tfm.Error):
        tfm.read_model_info(str(tmp_path / "nothing"))


def test_bad_option_values_are_value_errors(model_dir, translator):
    with pytest.raises(ValueError, match="fp64"):
        tfm.Translator(model_dir, compute_type="fp64")
    with pytest.raises(tfm.InvalidArgumentError, match="gpu"):
        tfm.Translator(model_dir, device="gpu")
    cases = [({"beam_size": 0}, "beam_size"), ({"beam_size": 2, "num_hypotheses": 3},
                                                "num_hypotheses"),
             ({"sampling_topk": 5, "beam_size": 2}, "sampling"),
             ({"sampling_topp": 0.0, "sampling_topk": 0}, "sampling_topp"),
             ({"max_decoding_length": 0}, "max_decoding_length"),
             ({"length_penalty": float("nan")}, "length_penalty")]
    for kwargs, word in cases:
        with pytest.raises(tfm.InvalidArgumentError, match=word):
            translator.translate_batch(["hund"], **kwargs)
    with pytest.raises(ValueError):
        list(translator.translate_iterable(["hund"], beam_size=-1))


def test_bad_option_messages_name_the_keywords(translator):
    """The library's one validator speaks Python's names: the keyword arguments, and for the
    search CTranslate2's choice of it (sampling_topk other than 1)."""
    cases = [({"beam_size": 2, "sampling_topk": 5},
              r"^sampling \(sampling_topk other than 1\) needs beam_size 1 \(got 2\)$"),
             ({"beam_size": 2, "num_hypotheses": 3}, r"^num_hypotheses 3 exceeds beam_size 2"),
             ({"sampling_topk": 0, "sampling_topp": 1.5}, r"^sampling_topp must be in \(0, 1\]"),
             ({"min_decoding_length": -1}, r"^min_decoding_length must be between 0 and")]
    for kwargs, message in cases:
        with pytest.raises(tfm.InvalidArgumentError, match=message):
            translator.translate_batch(["hund"], **kwargs)
    with pytest.raises(tfm.InvalidArgumentError, match=r"^max_batch_size must be between 1 and"):
        list(translator.translate_iterable(["hund"], max_batch_size=0))
    with pytest.raises(tfm.InvalidArgumentError, match=r"^read_ahead must be between 1 and"):
        list(translator.translate_iterable(["hund"], read_ahead=0))


def test_one_default_compute_type_and_one_version(model_dir, tfm_bin):
    """The default compute type is the library's (fp32), as tfm translate's; the version is
    libtfm's, as tfm --version prints it."""
    assert tfm.Translator(model_dir).compute_type == "fp32"
    out = subprocess.run([tfm_bin, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[0].startswith(f"tfm {tfm.__version__} (commit ")


def test_library_errors_are_runtime_errors(model_dir, ids_model_dir, translator):
    with pytest.raises(tfm.Error, match="outside the source vocabulary") as e:
        translator.translate_batch([[1, 2, 999]])
    assert not isinstance(e.value, ValueError)
    with pytest.raises(tfm.Error, match="vocabulary"):
        tfm.Translator(ids_model_dir).translate_batch(["hund"])
    with pytest.raises(tfm.Error, match="sources for"):
        translator.score_batch(["hund", "katze"], ["dog"])
    with pytest.raises(tfm.Error, match="inter_threads"):
        tfm.Translator(model_dir, inter_threads=0)
    # A worker per thread, each with its own buffers: 10000 is refused before any is started.
    with pytest.raises(tfm.InvalidArgumentError, match=r"inter_threads .*10000"):
        tfm.Translator(model_dir, inter_threads=10000)


def test_wrong_types_name_the_argument(model_dir, translator):
    checks = [
        (lambda: translator.translate_batch("ein hund"), "source"),
        (lambda: translator.translate_batch(5), "source"),
        (lambda: translator.translate_batch([1, 2]), "source"),
        (lambda: translator.translate_batch(["hund", [1, 2]]), "source"),
        (lambda: translator.translate_batch([[1, "x"]]), "source"),
        (lambda: translator.translate_batch([["▁hund", 3]]), "source"),
        (lambda: translator.translate_batch([["▁hund"], [1, 2]]), "source"),
        (lambda: translator.translate_batch(["hund"], beam_size="2"), "beam_size"),
        (lambda: translator.translate_batch(["hund"], beam_size=2.0), "beam_size"),
        (lambda: translator.translate_batch(["hund"], length_penalty="x"), "length_penalty"),
        (lambda: translator.translate_batch(["hund"], return_scores=1), "return_scores"),
        (lambda: translator.translate_batch(["hund"], return_attention=1), "return_attention"),
        (lambda: translator.translate_batch(["hund"], target_prefix=5), "target_prefix"),
        (lambda: translator.translate_batch(["hund"], no_such_option=1), "no_such_option"),
        (lambda: translator.score_batch(["hund"], [[1, 2]]), "both"),
        (lambda: translator.score_batch(["hund"], "dog"), "target"),
        (lambda: tfm.Translator(model_dir, inter_threads="2"), "inter_threads"),
        (lambda: tfm.Translator(42), "model_path"),
    ]
    for call, word in checks:
        with pytest.raises(TypeError, match=word):
            call()


def test_help_and_stubs():
    text = pydoc.render_doc(tfm.Translator, renderer=pydoc.plaintext)
    for word in ("translate_batch", "translate_iterable", "translate_file", "score_batch",
                 "model_info", "beam_size", "compute_type", "inter_threads", "target_prefix",
                 "return_attention"):
        assert word in text, word
    here = os.path.dirname(tfm.__file__)
    for f in ("_tfm.pyi", "py.typed"):
        assert os.path.isfile(os.path.join(here, f)), f
    assert tfm.Translator.translate_batch.__annotations__["return"]


def _torch_python():
    p = subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True)
    if p.returncode != 0:
        pytest.skip("Debian's /usr/bin/python3 has no torch (python3-torch): tfm.convert "
                    "cannot run")


def test_convert_torch_nn(source_dir, tmp_path):
    _torch_python()
    ck = tmp_path / "ck.pt"
    run(["/usr/bin/python3", "-c", f"""
import sys, torch
sys.path.insert(0, {os.path.join(source_dir, 'tools')!r})
import seed_models as sm
torch.manual_seed(0)
m = sm.TorchNNSeq2Seq(2, 2, 16, 4, 23, 19, dim_feedforward=32, dropout=0.0, pad_idx=1, maxlen=100)
torch.save(m.state_dict(), {str(ck)!r})
"""])
    info = tfm.convert(ck, tmp_path / "model", "torch-nn", heads=4)
    assert (info.heads, info.d_model, info.src_vocab_size, info.trg_vocab_size) == (4, 16, 23, 19)
    assert (info.pad_id, info.bos_id, info.eos_id) == (1, 2, 3)
    t = tfm.Translator(tmp_path / "model")
    scores = t.score_batch([[5, 6, 7]], [[8, 9]])
    assert scores[0] < 0
    with pytest.raises(tfm.Error, match="checkpoint|No such file|error"):
        tfm.convert(tmp_path / "missing.pt", tmp_path / "m2", "torch-nn")
    with pytest.raises(ValueError, match="layout"):
        tfm.convert(ck, tmp_path / "m3", "fairseq")
