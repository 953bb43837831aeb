"""tfm.convert_transformers and a converted model's Translator defaults, against the committed
fixtures of tools/make_hf_fixtures.py (Transformers' generate() outputs); pytorch_model.bin
through torch (Debian's python3-torch) equal to model.safetensors; text to text with the
directory's tokenizer against tools/make_hf_text_fixtures.py's (batch_decode of generate())."""
import json
import os
import shutil

import pytest

import tfm


def _fixture(source_dir, name):
    d = os.path.join(source_dir, "tests", "fixtures", "hf", name)
    with open(os.path.join(d, "reference.json")) as f:
        return os.path.join(d, "model"), json.load(f)


def test_converted_marian_decodes_as_generate_by_default(source_dir, tmp_path):
    hf, ref = _fixture(source_dir, "marian_shared")
    info = tfm.convert_transformers(hf, tmp_path / "m")
    assert (info.family, info.search_rule, info.compute_type) == ("marian", "transformers", "")
    t = tfm.Translator(tmp_path / "m", compute_type="fp32")
    assert t.default_options()["beam_size"] == 4  # the generation config's num_beams
    beam = t.translate_batch(ref["sources"], return_scores=True)
    assert [r.hypotheses[0] for r in beam] == [x["tokens"] for x in ref["beam"]]
    for r, x in zip(beam, ref["beam"]):
        assert abs(r.scores[0] - x["score"]) < 1e-4
    greedy = t.translate_batch(ref["sources"], beam_size=1)
    assert [r.hypotheses[0] for r in greedy] == [x["tokens"] for x in ref["greedy"]]
    with pytest.raises(tfm.Error, match="--force"):
        tfm.convert_transformers(hf, tmp_path / "m")
    assert tfm.convert_transformers(hf, tmp_path / "m", quantization="int8",
                                    force=True).compute_type == "int8"
    assert tfm.Translator(tmp_path / "m").compute_type == "int8"  # "auto" takes it
    with pytest.raises(tfm.Error, match="sampling"):
        t.translate_batch(ref["sources"][:1], sampling_topk=5)


def test_converted_gpt2_generates_as_generate(source_dir, tmp_path):
    hf, ref = _fixture(source_dir, "gpt2")
    tfm.convert_transformers(hf, tmp_path / "g")
    t = tfm.Translator(tmp_path / "g", compute_type="fp32")
    out = t.generate_batch(ref["sources"])
    assert [r.hypotheses[0] for r in out] == [x["tokens"] for x in ref["beam"]]


def test_pytorch_model_bin_converts_through_torch(source_dir, tmp_path):
    torch = pytest.importorskip("torch")
    hf, ref = _fixture(source_dir, "bart")
    from tfm import torch_checkpoint  # noqa: F401 (the module under test)
    import sys
    sys.path.insert(0, os.path.join(source_dir, "tools"))
    import safetensors_io
    bin_dir = tmp_path / "bin"
    shutil.copytree(hf, bin_dir)
    tensors, _ = safetensors_io.load_file(str(bin_dir / "model.safetensors"))
    torch.save({k: torch.from_numpy(v.copy()) for k, v in tensors.items()},
               bin_dir / "pytorch_model.bin")
    os.remove(bin_dir / "model.safetensors")
    info = tfm.convert_transformers(bin_dir, tmp_path / "from_bin")
    assert info.family == "bart"
    t = tfm.Translator(tmp_path / "from_bin", compute_type="fp32")
    out = t.translate_batch(ref["sources"])
    assert [r.hypotheses[0] for r in out] == [x["tokens"] for x in ref["beam"]]


def _text_fixture(source_dir, name, tmp_path):
    """tests/fixtures/hf_text/NAME (tools/make_hf_text_fixtures.py) as the Transformers directory
    it stands for: model/ and its tokenizer's files (tests/fixtures/hf_tokenizers/<tokenizer>)."""
    fixtures = os.path.join(source_dir, "tests", "fixtures")
    with open(os.path.join(fixtures, "hf_text", name, "reference.json"), encoding="utf-8") as f:
        ref = json.load(f)
    hf = tmp_path / (name + "_hf")
    shutil.copytree(os.path.join(fixtures, "hf_text", name, "model"), hf)
    tok = os.path.join(fixtures, "hf_tokenizers", ref["tokenizer"])
    for f in os.listdir(tok):
        if f != "reference.json":
            shutil.copy(os.path.join(tok, f), hf / f)
    return hf, ref


@pytest.mark.parametrize("name", ["marian", "nllb"])
def test_converted_text_equals_generate_and_batch_decode(source_dir, tmp_path, name):
    hf, ref = _text_fixture(source_dir, name, tmp_path)
    info = tfm.convert_transformers(hf, tmp_path / name)
    assert info.tokenizer == name
    assert os.path.exists(tmp_path / name / "tfm_tokenizer.json")
    t = tfm.Translator(tmp_path / name, compute_type="fp32")
    assert t.has_vocabularies
    for case in ref["cases"]:
        kw = {k: case[k] for k in ("src_lang", "tgt_lang") if case[k] is not None}
        kw = {{"src_lang": "source_lang", "tgt_lang": "target_lang"}[k]: v for k, v in kw.items()}
        if case["num_beams"] is not None:
            kw["beam_size"] = case["num_beams"]
        out = t.translate_batch(case["sources"], **kw)
        assert [r.hypotheses[0] for r in out] == case["outputs"], kw
