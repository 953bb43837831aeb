"""pytorch_model.bin (a torch.save pickle, which only PyTorch reads) as model.safetensors.

tfm reads a Transformers model directory's model.safetensors natively; an older directory that has
only pytorch_model.bin (or its shards, pytorch_model.bin.index.json) is first rewritten by this
module into a directory that has model.safetensors, beside the same JSON files. It needs torch and
nothing of tfm, so tools/convert_transformers.py loads it by path too.
"""
from __future__ import annotations

import json
import os
import shutil
import struct

_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64",
           "int64": "I64", "int32": "I32", "int8": "I8", "uint8": "U8", "bool": "BOOL"}


def has_torch_checkpoint_only(model_dir: str) -> bool:
    """True when model_dir has pytorch_model.bin (or its index) and no model.safetensors."""
    st = any(os.path.exists(os.path.join(model_dir, f))
             for f in ("model.safetensors", "model.safetensors.index.json"))
    pt = any(os.path.exists(os.path.join(model_dir, f))
             for f in ("pytorch_model.bin", "pytorch_model.bin.index.json"))
    return pt and not st


def _state_dict(model_dir: str):
    import torch  # the reason this module exists: only PyTorch unpickles the checkpoint

    index = os.path.join(model_dir, "pytorch_model.bin.index.json")
    files = ["pytorch_model.bin"]
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    state = {}
    for name in files:
        part = torch.load(os.path.join(model_dir, name), map_location="cpu", weights_only=True)
        for key, t in part.items():
            if key in state:
                raise ValueError(f"{name}: tensor {key} is in two shards")
            state[key] = t
    return state


def write_safetensors(state, path: str) -> None:
    """The tensors of `state` (name -> torch.Tensor) as one safetensors file; tensors sharing
    storage (tied weights) are written once each, as copies."""
    header, blobs, offset = {}, [], 0
    for key in sorted(state):
        t = state[key].detach().contiguous().cpu()
        dtype = _DTYPES.get(str(t.dtype).replace("torch.", ""))
        if dtype is None:
            raise ValueError(f"tensor {key} has dtype {t.dtype}, which safetensors cannot hold")
        data = t.reshape(-1).view(dtype=__import__("torch").uint8).numpy().tobytes() \
            if t.numel() else b""
        header[key] = {"dtype": dtype, "shape": list(t.shape),
                       "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def to_safetensors_dir(model_dir: str, out_dir: str) -> None:
    """out_dir: model_dir's JSON and tokenizer files, and its pytorch_model.bin as
    model.safetensors."""
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(model_dir):
        src = os.path.join(model_dir, name)
        if os.path.isfile(src) and not name.startswith("pytorch_model.bin"):
            shutil.copy2(src, os.path.join(out_dir, name))
    write_safetensors(_state_dict(model_dir), os.path.join(out_dir, "model.safetensors"))
