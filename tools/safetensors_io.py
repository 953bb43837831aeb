#!/usr/bin/env python3
"""Minimal safetensors reader/writer (json + struct + numpy only; there is no safetensors package).

Format (https://github.com/huggingface/safetensors):
    u64 little-endian N | N bytes of UTF-8 JSON header | data buffer
The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
relative to the data buffer) plus an optional "__metadata__" object of string -> string.

The writer matches src/tfm/model/safetensors.cpp: the header is padded with spaces so the data
buffer starts at a multiple of 8, and tensors are laid out by element size, largest first, keeping
the caller's order among equal sizes, so every tensor is aligned to its element size. The output is
a pure function of the input (byte-identical on every run).

The reader checks what the spec requires: header length <= 100,000,000 and inside the file, a JSON
object without duplicate keys, entries with exactly dtype/shape/data_offsets, size agreement, and
tensors tiling the data buffer with no gap or overlap. Any violation raises SafetensorsError.
"""
from __future__ import annotations

import json
import os
import struct
from typing import Mapping

import numpy as np

MAX_HEADER = 100_000_000

# safetensors dtype name -> numpy dtype (little-endian). BF16 has no numpy type: it is read as
# raw uint16 and widened to float32 (the top 16 bits of a float32); it is never written.
_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"), "BF16": np.dtype("<u2"),
}
_NAMES = {np.dtype(v).newbyteorder("<"): k for k, v in _DTYPES.items() if k != "BF16"}


class SafetensorsError(ValueError):
    """A file (or tensors to write) that breaks the safetensors format."""


def _dtype_name(arr: np.ndarray) -> str:
    dt = arr.dtype.newbyteorder("<")  # the name only; values are converted when written
    if dt not in _NAMES:
        raise SafetensorsError(f"numpy dtype {arr.dtype} has no safetensors name")
    return _NAMES[dt]


def serialize(tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None) -> bytes:
    """The bytes of a safetensors file holding `tensors` (name -> array) and `metadata`."""
    for name in tensors:
        if not isinstance(name, str) or name == "__metadata__":
            raise SafetensorsError(f"bad tensor name {name!r}")
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise SafetensorsError(f"__metadata__ must map str to str, got {k!r}: {v!r}")
    arrays = [(name, np.asarray(a)) for name, a in tensors.items()]
    # Largest element first, stable among equals: every tensor starts at a multiple of its size.
    order = sorted(range(len(arrays)), key=lambda i: -arrays[i][1].dtype.itemsize)
    header: dict = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    chunks, offset = [], 0
    for i in order:
        name, a = arrays[i]
        dtype = _dtype_name(a)
        data = np.ascontiguousarray(a, dtype=_DTYPES[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": [int(d) for d in a.shape],
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def save_file(tensors: Mapping[str, np.ndarray], path: str,
              metadata: Mapping[str, str] | None = None) -> None:
    """Writes atomically: a temporary file in the same folder, fsync, rename."""
    data = serialize(tensors, metadata)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise SafetensorsError(f"duplicate key {k!r} in header")
        out[k] = v
    return out


def deserialize(data: bytes, what: str = "<bytes>") -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(tensors in file order, metadata) from the bytes of a safetensors file."""
    if len(data) < 8:
        raise SafetensorsError(f"{what}: {len(data)} bytes, too short for the header length")
    (n,) = struct.unpack_from("<Q", data, 0)
    if n > MAX_HEADER:
        raise SafetensorsError(f"{what}: header length {n} exceeds {MAX_HEADER}")
    if 8 + n > len(data):
        raise SafetensorsError(f"{what}: header length {n} runs past the end ({len(data)} bytes)")
    raw = data[8:8 + n]
    if not raw.startswith(b"{"):
        raise SafetensorsError(f"{what}: header does not start with '{{'")
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as e:
        raise SafetensorsError(f"{what}: header is not UTF-8 ({e})") from None
    except json.JSONDecodeError as e:
        raise SafetensorsError(f"{what}: header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{what}: header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise SafetensorsError(f"{what}: __metadata__ must be an object of string -> string")
    buf = memoryview(data)[8 + n:]
    entries = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError(f"{what}: tensor {name!r} needs exactly dtype, shape, data_offsets")
        dtype, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        if dtype not in _DTYPES:
            raise SafetensorsError(f"{what}: tensor {name!r} has unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise SafetensorsError(f"{what}: tensor {name!r} has a bad shape {shape!r}")
        if not (isinstance(offs, list) and len(offs) == 2 and all(
                isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offs)
                and offs[0] <= offs[1]):
            raise SafetensorsError(f"{what}: tensor {name!r} has bad data_offsets {offs!r}")
        nbytes = int(np.prod(shape, dtype=object)) * _DTYPES[dtype].itemsize
        if nbytes != offs[1] - offs[0]:
            raise SafetensorsError(f"{what}: tensor {name!r} is {dtype} {shape} = {nbytes} bytes "
                                   f"but data_offsets {offs} span {offs[1] - offs[0]}")
        entries.append((offs[0], offs[1], name, dtype, shape))
    # The tensors must tile the data buffer exactly.
    pos = 0
    for begin, end, name, _, _ in sorted(entries, key=lambda t: (t[0], t[1])):
        if begin != pos:
            raise SafetensorsError(f"{what}: tensor {name!r} starts at {begin}, expected {pos} "
                                   "(gap or overlap in the data buffer)")
        pos = end
    if pos != len(buf):
        raise SafetensorsError(f"{what}: tensors cover {pos} bytes of a {len(buf)}-byte data buffer")
    tensors = {}
    for begin, end, name, dtype, shape in sorted(entries, key=lambda t: (t[0], t[1])):
        a = np.frombuffer(buf[begin:end], dtype=_DTYPES[dtype]).reshape(shape).copy()
        if dtype == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = a
    return tensors, dict(metadata)


def load_file(path: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(tensors, metadata) of the safetensors file at `path`."""
    with open(path, "rb") as f:
        return deserialize(f.read(), path)
