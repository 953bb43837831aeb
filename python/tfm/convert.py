"""tfm.convert: a PyTorch checkpoint into a tfm model directory, by tools/convert_pytorch.py;
tfm.convert_transformers: a Hugging Face Transformers model directory, by the library.

The converter needs PyTorch, which Debian packages for its own interpreter (python3-torch), not
for a virtual environment; so it runs as a child process of that interpreter (`python`), and
this module needs no torch. The package carries a copy of the converter (tfm/_tools, installed
from the repository's tools/ with the extension); TFM_TOOLS_DIR points elsewhere.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import tempfile
from typing import Optional, Union

from . import _tfm, torch_checkpoint
from ._tfm import Error, InvalidArgumentError, ModelInfo, read_model_info

LAYOUTS = ("seed000", "seed004", "torch-nn")


def _script() -> str:
    # Found through the import system: in an editable install tfm/_tools lies beside the extension,
    # not beside this file.
    spec = importlib.util.find_spec("tfm._tools")
    tools = os.path.dirname(spec.origin) if spec is not None and spec.origin else None
    for d in (os.environ.get("TFM_TOOLS_DIR"), tools):
        if d and os.path.isfile(os.path.join(d, "convert_pytorch.py")):
            return os.path.join(d, "convert_pytorch.py")
    raise Error("convert_pytorch.py not found: this tfm package was built without the "
                "repository's tools/ (set TFM_TOOLS_DIR to that directory)")


def convert(checkpoint: Union[str, os.PathLike], output_dir: Union[str, os.PathLike],
            layout: str, *, heads: Optional[int] = None, pad_id: Optional[int] = None,
            bos_id: Optional[int] = None, eos_id: Optional[int] = None,
            max_length: Optional[int] = None, embed_scale: Optional[str] = None,
            norm: Optional[str] = None, activation: Optional[str] = None,
            source_bos: Optional[bool] = None, source_eos: Optional[bool] = None,
            dropout: Optional[float] = None, attention_dropout: Optional[float] = None,
            python: str = "/usr/bin/python3") -> ModelInfo:
    """Converts a PyTorch state_dict (torch.save file) into a tfm model directory.

    layout: "seed004" (jadore801120/attention-is-all-you-need-pytorch), "seed000" (seed 000's
    transformer) or "torch-nn" (the nn.Transformer translation tutorial's Seq2SeqTransformer).
    The other options are convert_pytorch.py's flags (None: the layout's default): heads (not in
    a state dict; default 8), pad_id/bos_id/eos_id, max_length, embed_scale ("emb", "prj",
    "none"), norm ("pre", "post") and activation ("relu", "gelu") for torch-nn, source_bos and
    source_eos (the source framing), dropout and attention_dropout (for further training).
    python: an interpreter with torch and numpy (Debian's python3-torch is for /usr/bin/python3).

    Returns the new directory's ModelInfo. Copy the SentencePiece model in as vocab.model for
    text input. Raises tfm.Error with the converter's message when it fails, and
    InvalidArgumentError for an unknown layout.
    """
    if layout not in LAYOUTS:
        raise InvalidArgumentError(f"layout must be one of {', '.join(LAYOUTS)} (got {layout!r})")
    out = os.fspath(output_dir)
    cmd = [python, _script(), "--layout", layout, "--checkpoint", os.fspath(checkpoint),
           "--out", out]
    flags = {"--heads": heads, "--pad-id": pad_id, "--bos-id": bos_id, "--eos-id": eos_id,
             "--max-length": max_length, "--embed-scale": embed_scale, "--norm": norm,
             "--activation": activation, "--dropout": dropout,
             "--attention-dropout": attention_dropout}
    for flag, value in flags.items():
        if value is not None:
            cmd += [flag, str(value)]
    for name, value in (("source-bos", source_bos), ("source-eos", source_eos)):
        if value is not None:
            cmd.append(f"--{name}" if value else f"--no-{name}")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise Error(f"cannot run {python}: {e}") from None
    if proc.returncode != 0:
        message = proc.stderr.strip() or f"exit status {proc.returncode}"
        if "No module named 'torch'" in message:
            message = f"{python} has no torch (Debian: apt-get install python3-torch)"
        raise Error(f"convert: {message}")
    return read_model_info(out)


def convert_transformers(model_dir: Union[str, os.PathLike], output_dir: Union[str, os.PathLike],
                         *, quantization: Optional[str] = None, force: bool = False) -> ModelInfo:
    """Converts a Hugging Face Transformers model directory (MarianMT/OPUS-MT, M2M100, NLLB-200,
    BART, mBART/mBART-50, GPT-2, as save_pretrained or the hub writes it) into a tfm model
    directory that translates (GPT-2: generates) as Transformers' generate() does; `tfm convert
    --from transformers` in Python, over the same library function (docs/convert.md).

    quantization: "int8" or "bf16" makes that the precision the model runs in when a Translator
    asks for compute_type "auto" (the weights stay f32); None: fp32. force: replace output_dir
    when it exists and is not empty. A directory with only pytorch_model.bin needs torch in this
    interpreter: its weights are rewritten as model.safetensors (in a temporary directory) first.

    Returns the new directory's ModelInfo. Raises tfm.Error naming the problem, a config option
    tfm cannot run exactly included.
    """
    src = os.fspath(model_dir)
    out = os.fspath(output_dir)
    quant = "" if quantization is None else str(quantization)
    if not torch_checkpoint.has_torch_checkpoint_only(src):
        return _tfm.convert_transformers(src, out, quant, bool(force))
    try:
        import torch  # noqa: F401
    except ImportError:
        raise Error(f"convert_transformers: {src} holds pytorch_model.bin, which needs torch "
                    "to read (pip install torch), or a model.safetensors") from None
    with tempfile.TemporaryDirectory(prefix="tfm_convert_") as tmp:
        torch_checkpoint.to_safetensors_dir(src, tmp)
        return _tfm.convert_transformers(tmp, out, quant, bool(force))
